"""Joint locking (seed 002): momentum-consistent transitions in redundant and minimal form, naive zeroing."""
from __future__ import annotations

import math
import time

import numpy as np
import pinocchio as pin
import pytest

from controlkit.constraints import JointLock, PointConstraint
from controlkit.errors import UnknownNameError
from controlkit.mechanism import Mechanism
from sim.locking import LockError, complement, lock_joint, transition, unlock_joint
from sim.simulator import Simulator

G = 9.81
T_LOCK2, T_LOCK3, T_END, DT = 0.8, 1.3, 1.5, 1e-4


def three_r_pendulum(n: int = 3) -> Mechanism:
    """Seed 002 section 6: planar chain of 1 m solid aluminium links, 0.2 x 0.2 m section.

    108 kg per link; principal inertias about the COM 0.72 kg m^2 (about the link's long
    axis, here local z) and 9.36 kg m^2 (the two transverse axes, one of them the joint
    axis y). Joint i sits at the end of link i-1 (the first at the world origin); at q = 0
    every link hangs straight down; q_i are relative angles (rad) about y. Gravity -z.
    """
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, 0.0, -G]), np.zeros(3))
    parent, place = 0, pin.SE3.Identity()
    for i in range(1, n + 1):
        j = model.addJoint(parent, pin.JointModelRY(), place, f"joint_{i}")
        model.appendBodyToJoint(j, pin.Inertia(108.0, np.array([0.0, 0.0, -0.5]), np.diag([9.36, 9.36, 0.72])),
                                pin.SE3.Identity())
        model.addBodyFrame(f"link_{i}", j, pin.SE3.Identity(), 0)
        parent, place = j, pin.SE3(np.eye(3), np.array([0.0, 0.0, -1.0]))
    model.addFrame(pin.Frame("tip", parent, 0, place, pin.FrameType.OP_FRAME))
    return Mechanism(model, name=f"{n}r_pendulum", actuated=[])


def energy(mech, q, v) -> float:
    """Total mechanical energy (J)."""
    m, d = mech.model, mech.model.createData()
    return float(pin.computeKineticEnergy(m, d, q, v) + pin.computePotentialEnergy(m, d, q))


def free_momentum(mech, q, v, locked) -> np.ndarray:
    """Generalized momentum rows (M v) of the joints not in ``locked`` (N m s)."""
    M = pin.crba(mech.model, mech.model.createData(), q)
    keep = [k for k in range(mech.nv) if k not in locked]
    return (M @ v)[keep]


def simulate(**options):
    mech = three_r_pendulum()
    q0 = np.full(3, math.pi / 6)
    sim = Simulator(mech, q0, dt=DT, integrator="rk4")
    sim.lock_at(T_LOCK2, "joint_2", **options)
    sim.lock_at(T_LOCK3, "joint_3", **options)
    wall = time.perf_counter()
    rec = sim.run(T_END)
    return mech, sim, rec, time.perf_counter() - wall


@pytest.fixture(scope="module")
def runs():
    return {
        "redundant": simulate(method="momentum", formulation="redundant"),
        "minimal": simulate(method="momentum", formulation="minimal"),
        "naive": simulate(method="naive"),
    }


def _events(rec):
    evs = rec.events_of("lock")
    assert [e.data["joint"] for e in evs] == ["joint_2", "joint_3"]
    assert [e.time for e in evs] == [pytest.approx(T_LOCK2, abs=1e-9), pytest.approx(T_LOCK3, abs=1e-9)]
    return evs


@pytest.mark.parametrize("form", ["redundant", "minimal"])
def test_momentum_of_unlocked_joints_is_continuous(runs, form):
    mech, sim, rec, _ = runs[form]
    locked: list[int] = []
    for ev in _events(rec):
        i = np.flatnonzero(np.isclose(rec.t, ev.time, atol=1e-9))[-1]
        q = rec.q[i]
        vb, va = np.array(ev.data["v_before"]), np.array(ev.data["v_after"])
        locked.append(int(ev.data["joint"][-1]) - 1)
        pb, pa = free_momentum(mech, q, vb, locked), free_momentum(mech, q, va, locked)
        assert np.linalg.norm(pa - pb) <= 1e-9 * np.linalg.norm(pb)
        np.testing.assert_allclose(va[locked], 0.0, atol=1e-12)  # the locked joints stop
        np.testing.assert_allclose(ev.data["momentum_after"], ev.data["momentum_before"], rtol=1e-9)
        np.testing.assert_array_equal(rec.v[i], va)  # the recording continues from v+
    assert list(mech.constraints) == ["lock.joint_2", "lock.joint_3"]


def test_naive_zeroing_makes_the_momentum_jump(runs):
    mech, sim, rec, _ = runs["naive"]
    locked: list[int] = []
    for ev in _events(rec):
        i = np.flatnonzero(np.isclose(rec.t, ev.time, atol=1e-9))[-1]
        locked.append(int(ev.data["joint"][-1]) - 1)
        vb, va = np.array(ev.data["v_before"]), np.array(ev.data["v_after"])
        pb = free_momentum(mech, rec.q[i], vb, locked)
        pa = free_momentum(mech, rec.q[i], va, locked)
        assert np.linalg.norm(pa - pb) > 0.05 * np.linalg.norm(pb)
        # only the locked joint's velocity changed
        others = [k for k in range(3) if k != locked[-1]]
        np.testing.assert_array_equal(va[others], vb[others])


@pytest.mark.parametrize("form", ["redundant", "minimal", "naive"])
def test_energy_drops_at_events_and_is_conserved_between(runs, form):
    mech, sim, rec, _ = runs[form]
    E = np.array([energy(mech, q, v) for q, v in zip(rec.q, rec.v)])
    scale = 3 * 108 * G * 1.5  # ~ the potential energy range of the chain (J)
    evs = _events(rec)
    bounds = [0.0] + [ev.time for ev in evs] + [T_END + 1]
    drops = [ev.data["kinetic_energy_before"] - ev.data["kinetic_energy_after"] for ev in evs]
    assert all(d > 0 for d in drops)
    for k in range(3):
        seg = (rec.t >= bounds[k] - 1e-12) & (rec.t < bounds[k + 1] - 1e-9)
        if k > 0:  # the sample at the event time carries v+
            seg &= rec.t > bounds[k] - 1e-9
            i0 = np.flatnonzero(np.isclose(rec.t, bounds[k], atol=1e-9))
            seg[i0[-1]] = True
        Es = E[seg]
        assert np.max(np.abs(Es - Es[0])) <= 1e-9 * scale, f"segment {k}: drift {np.ptp(Es):.3g} J"
        if k > 0:
            before = E[np.flatnonzero(rec.t < bounds[k] - 1e-9)[-1]]  # one step earlier, same energy
            assert before - Es[0] == pytest.approx(drops[k - 1], rel=1e-6)  # the jump is the kinetic energy lost


@pytest.mark.parametrize("form", ["redundant", "minimal", "naive"])
def test_locked_angles_stay_constant(runs, form):
    mech, sim, rec, _ = runs[form]
    for joint, t_lock in ((1, T_LOCK2), (2, T_LOCK3)):
        after = rec.t >= t_lock - 1e-9
        q_locked = rec.q[after][0, joint]
        assert np.max(np.abs(rec.q[after][:, joint] - q_locked)) <= 1e-12
        assert mech.constraints[f"lock.joint_{joint + 1}"].q_locked[0] == pytest.approx(q_locked, abs=1e-15)
        np.testing.assert_allclose(rec.v[after][:, joint], 0.0, atol=1e-12)


def test_formulations_agree(runs):
    _, _, r1, w1 = runs["redundant"]
    _, _, r2, w2 = runs["minimal"]
    np.testing.assert_allclose(r1.t, r2.t, atol=1e-12)
    np.testing.assert_allclose(r1.q, r2.q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(r1.v, r2.v, rtol=0, atol=1e-9)
    _, _, r3, _ = runs["naive"]
    assert np.max(np.abs(r3.q[-1] - r1.q[-1])) > 1e-2  # the naive run ends elsewhere
    print(f"wall time per 1.5 s run at dt = 1e-4 s: redundant {w1:.2f} s, minimal {w2:.2f} s, naive {runs['naive'][3]:.2f} s")


# --------------------------------------------------------------- the API
def _pendulum_sim():
    mech = three_r_pendulum()
    sim = Simulator(mech, np.full(3, math.pi / 6), np.array([0.5, -0.3, 0.8]), dt=1e-3)
    return mech, sim


def test_lock_unlock_and_errors():
    mech, sim = _pendulum_sim()
    sim.run(0.05)
    res = lock_joint(sim, "joint_2")
    assert res.constraint == "lock.joint_2" and isinstance(mech.constraints["lock.joint_2"], JointLock)
    assert sim.v[1] == 0.0 or abs(sim.v[1]) < 1e-14
    with pytest.raises(LockError, match=r"t = 0.05 s: joint 'joint_2' of '3r_pendulum' is already locked"):
        sim.lock("joint_2")
    with pytest.raises(UnknownNameError, match="unknown joint 'joint_9'"):
        sim.lock("joint_9")
    with pytest.raises(LockError, match="method must be one of momentum, naive, got 'brake'"):
        sim.lock("joint_1", method="brake")
    with pytest.raises(LockError, match="formulation must be one of redundant, minimal"):
        sim.lock("joint_1", formulation="maximal")
    sim.run(0.05)
    v_locked = sim.v
    sim.unlock("joint_2")
    assert "lock.joint_2" not in mech.constraints
    np.testing.assert_array_equal(sim.v, v_locked)  # no jump at release
    sim.run(0.05)
    assert abs(sim.v[1]) > 1e-3  # it moves again
    with pytest.raises(LockError, match="joint 'joint_2' of '3r_pendulum' is not locked \\(locked joints: none\\)"):
        unlock_joint(sim, "joint_2")
    kinds = [e.kind for e in sim.recording.events]
    assert kinds == ["lock", "unlock"]
    assert sim.recording.events[0].data["v_before"] != sim.recording.events[0].data["v_after"]


def test_transition_with_a_loop_closure_agrees_in_both_formulations():
    """A 5R chain with its tip pinned to the world (2 dof, a redundant point-constraint row):
    locking joint 3 leaves 1 dof; the null-space (minimal) and the KKT (redundant) forms agree
    and the momentum along the remaining free motion is continuous."""
    mech = three_r_pendulum(5)
    q = np.array([0.4, 0.5, -0.3, 0.6, 0.2])
    mech.set_state(q, np.zeros(5))
    mech.add_constraint(PointConstraint("pin", "tip"))
    persistent = list(mech.constraints.values())
    F1 = complement(mech, persistent)
    assert F1.shape == (5, 3)
    v = F1 @ np.array([0.7, -0.4, 0.9])
    lock = JointLock("lock.joint_3", "joint_3")
    lock.bind(mech)
    v_red, lam = transition(mech, v, persistent, [lock], "momentum", "redundant")
    v_min, lam2 = transition(mech, v, persistent, [lock], "momentum", "minimal")
    np.testing.assert_allclose(v_red, v_min, atol=1e-12)
    assert abs(v_red[2]) < 1e-12
    np.testing.assert_allclose(persistent[0].jacobian() @ v_red, 0.0, atol=1e-12)
    F = complement(mech, persistent + [lock])
    M, _ = mech.dynamics()
    np.testing.assert_allclose(F.T @ M @ v_red, F.T @ M @ v, rtol=1e-10, atol=1e-10)
    assert 0.5 * v_red @ M @ v_red < 0.5 * v @ M @ v
