"""The locking paper's 6R robot (seed 002, Sec. 7): the three transition formulations (eqs. 24, 32,
37) agree on the 3R and the 6R; the general switching map with an impulsive force U; brakes that
slide, then stick, each stick locking its joint as an event."""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from controlkit.constraints import JointLock
from controlkit.mechanism import Mechanism
from robots.rx130 import GEAR_RATIO, rx130
from sim.brakes import add_brakes
from sim.locking import complement, projector, transition
from sim.simulator import Simulator
from tests.test_locking import three_r_pendulum

FORMS = ("redundant", "projected", "minimal")
PAPER_LOCKS = ((0.05, "joint_1"), (0.1, "joint_2"), (0.15, "joint_3"))


def _locks(mech, joints):
    out = []
    for j in joints:
        c = JointLock(f"lock.{j}", j)
        c.bind(mech)
        out.append(c)
    return out


@pytest.mark.parametrize("robot", ["3r", "6r"])
def test_three_formulations_agree_to_1e_12_at_random_switches_with_and_without_impulse(robot):
    mech = three_r_pendulum() if robot == "3r" else rx130().mechanism
    rng = np.random.default_rng(11)
    names = [f"joint_{i}" for i in range(1, mech.nv + 1)]
    for trial in range(6):
        mech.set_state(rng.uniform(-2, 2, mech.nv))
        k = trial % (mech.nv - 1)
        persistent, new = _locks(mech, names[:k]), _locks(mech, names[k:k + 1 + trial % 2])
        F1 = complement(mech, persistent)
        v = F1 @ rng.standard_normal(F1.shape[1]) * 3.0  # admissible before the switch
        M = np.array(mech.mass_matrix())
        for U in (None, rng.standard_normal(mech.nv) * 5.0):
            vs = [transition(mech, v, persistent, new, "momentum", f, U)[0] for f in FORMS]
            scale = np.linalg.norm(v) + 1.0
            for other in vs[1:]:
                assert np.max(np.abs(other - vs[0])) < 1e-12 * scale
            F = complement(mech, persistent + new)
            J2 = np.vstack([c.jacobian() for c in new])
            assert np.max(np.abs(J2 @ vs[0])) < 1e-12 * scale  # the new constraints hold
            # the free motion's momentum jumps by exactly F^T U (continuous when U = 0)
            jump = F.T @ M @ (vs[0] - v)
            expected = np.zeros(F.shape[1]) if U is None else F.T @ U
            assert np.all(np.abs(jump - expected) < 1e-11 * (np.linalg.norm(M @ v) + 1.0))


def test_projector_removes_the_persistent_rows_and_keeps_their_null_space():
    mech = rx130().mechanism
    mech.set_state(np.array([0.3, -0.4, 0.9, 0.2, -1.1, 0.5]))
    persistent = _locks(mech, ["joint_2", "joint_5"])
    M = np.array(mech.mass_matrix())
    N = projector(mech, persistent, M)
    J1 = np.vstack([c.jacobian() for c in persistent])
    assert np.max(np.abs(J1 @ N)) < 1e-14
    x = complement(mech, persistent) @ np.arange(1.0, 5.0)
    assert np.max(np.abs(N @ x - x)) < 1e-13
    assert np.max(np.abs(N @ N - N)) < 1e-13


def _paper_run(**options):
    built = rx130()
    sim = Simulator(built.mechanism, built.q0, dt=1e-4, integrator="rk4")
    for t, j in PAPER_LOCKS:
        sim.lock_at(t, j, **options)
    sim.run(0.2)
    return sim


@pytest.fixture(scope="module")
def paper_runs():
    runs = {f: _paper_run(formulation=f) for f in FORMS}
    runs["naive"] = _paper_run(method="naive")
    return runs


def test_rx130_locks_agree_in_all_three_formulations_and_differ_from_naive_zeroing(paper_runs):
    ref = paper_runs["redundant"]
    evs = ref.recording.events_of("lock")
    assert [(round(e.time, 9), e.data["joint"]) for e in evs] == [(t, j) for t, j in PAPER_LOCKS]
    for f in ("projected", "minimal"):
        for a, b in zip(paper_runs[f].recording.events_of("lock"), evs):
            assert np.max(np.abs(np.subtract(a.data["v_after"], b.data["v_after"]))) < 1e-12
        assert np.max(np.abs(paper_runs[f].q - ref.q)) < 1e-12
    # the unlocked motors' momentum is continuous through every consistent lock and jumps when zeroed
    for e in evs:
        assert np.allclose(e.data["momentum_after"], e.data["momentum_before"], rtol=1e-9, atol=1e-9)
    naive = paper_runs["naive"].recording.events_of("lock")[2]
    pb, pa = np.array(naive.data["momentum_before"]), np.array(naive.data["momentum_after"])
    assert np.linalg.norm(pa - pb) > 0.05 * np.linalg.norm(pb)
    # where the robot comes to a halt differs (the paper's Fig. 8): joint 3's motor angle
    assert abs(paper_runs["naive"].q[2] - ref.q[2]) * GEAR_RATIO > 1.0


def test_motor_inertias_enter_the_mass_matrix_as_n_squared_jm():
    with_motors, without = rx130(), rx130(motor_inertia=np.zeros(6))
    q = np.array([0.1, 0.2, -0.3, 0.4, 0.5, -0.6])
    Ma = pin.crba(with_motors.mechanism.model, with_motors.mechanism.model.createData(), q)
    Mb = pin.crba(without.mechanism.model, without.mechanism.model.createData(), q)
    assert np.allclose(np.diag(Ma - Mb), GEAR_RATIO**2 * with_motors.info["motor_inertia"], atol=1e-12)
    assert np.allclose(Ma - Mb - np.diag(np.diag(Ma - Mb)), 0.0, atol=1e-12)


# ---------------------------------------------------------------- brakes
def _wheel(inertia=0.5):
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "joint_1")
    model.appendBodyToJoint(j, pin.Inertia(1.0, np.zeros(3), np.diag([1.0, 1.0, inertia])), pin.SE3.Identity())
    return Mechanism(model, name="wheel", actuated=[])


def test_brake_on_a_spinning_wheel_stops_it_at_i_w_over_t_and_locks_there():
    I, w0, T, t_on = 0.5, 4.0, 2.0, 0.1
    sim = Simulator(_wheel(I), np.zeros(1), np.array([w0]), dt=1e-3, integrator="rk4")
    brakes = add_brakes(sim, {"joint_1": T})
    brakes.engage_at(t_on, "joint_1")
    sim.run(2.0)
    sticks = [h for h in brakes.history if h[2] == "stick"]
    assert len(sticks) == 1
    assert sticks[0][0] == pytest.approx(t_on + I * w0 / T, abs=1e-8)
    assert sim.q[0] == pytest.approx(w0 * t_on + I * w0**2 / (2 * T), abs=1e-9)
    assert sim.v[0] == 0.0 and "lock.joint_1" in sim.mech.constraints


def _pendulum():
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, 0.0, -9.81]), np.zeros(3))
    j = model.addJoint(0, pin.JointModelRY(), pin.SE3.Identity(), "joint_1")
    model.appendBodyToJoint(j, pin.Inertia(1.0, np.array([0.0, 0.0, -1.0]), np.diag([0.01, 0.01, 0.01])), pin.SE3.Identity())
    return Mechanism(model, name="pendulum", actuated=[])


def _energy(mech, q, v):
    mech.set_state(q, v)
    return 0.5 * float(v @ mech.mass_matrix() @ v) + mech.potential_energy()


@pytest.mark.parametrize("static,slips", [(8.0, False), (3.0, True)])
def test_braked_pendulum_loses_the_friction_work_then_holds_or_slips(static, slips):
    mech = _pendulum()
    T = 2.0
    sim = Simulator(mech, np.array([1.2]), dt=1e-3, integrator="rk4")
    brakes = add_brakes(sim, {"joint_1": T}, {"joint_1": static})
    brakes.engage_at(0.2, "joint_1")
    sim.run(0.2)
    e0, q0 = _energy(mech, sim.q, sim.v), sim.q[0]
    sim.run(3.0)
    first = [h for h in brakes.history if h[2] == "stick"][0][0]
    stick = sim.recording.events_of("stick")[0]
    i = np.flatnonzero(np.isclose(sim.recording.t, first, atol=1e-12))[-1]
    qs = sim.recording.q[i]
    # work-energy: the friction took T |dq| out of the energy while sliding
    assert _energy(mech, qs, np.zeros(1)) == pytest.approx(e0 - T * abs(qs[0] - q0), abs=1e-7)
    # holding torque at rest: the weight's moment m g l sin q
    assert abs(stick.data["holding"]) == pytest.approx(9.81 * math.sin(abs(qs[0])), rel=1e-9)
    assert bool(sim.recording.events_of("slip")) == slips


def test_rx130_brakes_lock_each_joint_when_its_brake_sticks():
    built = rx130()
    sim = Simulator(built.mechanism, built.q0, dt=1e-4, integrator="rk4")
    torques = {"joint_1": 1000.0, "joint_2": 1600.0, "joint_3": 1000.0}
    brakes = add_brakes(sim, torques)
    for t, j in PAPER_LOCKS:
        brakes.engage_at(t, j)
    sim.run(0.3)
    locks = sim.recording.events_of("lock")
    assert sorted(e.data["joint"] for e in locks) == ["joint_1", "joint_2", "joint_3"]
    engaged = dict((j, t) for t, j in PAPER_LOCKS)
    for e in locks:
        j = e.data["joint"]
        assert e.time > engaged[j] + 1e-6  # not at the engagement: when the brake sticks
        k = int(j[-1]) - 1
        assert abs(e.data["v_before"][k]) < 1e-6  # the joint had come to rest
        assert np.allclose(e.data["momentum_after"], e.data["momentum_before"], rtol=1e-9, atol=1e-9)
    assert brakes.stuck() == ["joint_1", "joint_2", "joint_3"]
    sim.solve_now()
    for j in brakes.stuck():
        assert abs(brakes.holding_torque(j)) <= brakes.static[j]


def test_locking_6r_demo_runs_and_plots(tmp_path):
    from pathlib import Path

    from sim.runner import load_script, run_scenario
    module = load_script(Path(__file__).parents[1] / "examples" / "locking_6r.py")
    scn = module.build(dt=1e-3)
    rec = run_scenario(scn, seconds=0.06, out=tmp_path, plot=tmp_path / "l.png", quiet=True)
    assert (tmp_path / "l.png").stat().st_size > 10_000
    assert [e.data["joint"] for e in rec.events_of("brake")] == ["joint_1"]
    assert rec.quantity("motor rates").shape == (len(rec.t), 3)
