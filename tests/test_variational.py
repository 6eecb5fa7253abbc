"""The midpoint variational integrator (seed 001, section VI): discrete momentum, bounded energy error,
discrete constraint forces, impacts on the discrete momentum."""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

import robots
from controlkit.mechanism import Mechanism
from sim.integrators import PinocchioSystem, make_integrator
from sim.simulator import Simulator
from sim.stabilization import stack_errors
from sim.variational import VariationalMidpoint


def free_floating_chain(n: int = 5, length: float = 0.5) -> pin.Model:
    """A planar chain floating in the x-y plane (base: x, y slides and a z hinge), no gravity."""
    model = pin.Model()
    model.gravity = pin.Motion.Zero()
    j = model.addJoint(0, pin.JointModelPX(), pin.SE3.Identity(), "x")
    model.appendBodyToJoint(j, pin.Inertia.Zero(), pin.SE3.Identity())
    j = model.addJoint(j, pin.JointModelPY(), pin.SE3.Identity(), "y")
    model.appendBodyToJoint(j, pin.Inertia.Zero(), pin.SE3.Identity())
    for i in range(n):
        place = pin.SE3.Identity() if i == 0 else pin.SE3(np.eye(3), np.array([length, 0.0, 0.0]))
        j = model.addJoint(j, pin.JointModelRZ(), place, f"hinge_{i}")
        m = 1.0 + 0.3 * i
        model.appendBodyToJoint(j, pin.Inertia(m, np.array([length / 2, 0, 0]), np.diag([1e-3, 1.0, 1.0]) * m * length ** 2 / 12),
                                pin.SE3.Identity())
    return model


def planar_momentum(q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Linear momentum (N s) and angular momentum about the world origin (N m s) from the base's
    generalized momenta: p_theta + x p_y - y p_x (rotations act on x, y and the base hinge)."""
    return np.array([p[0], p[1], p[2] + q[0] * p[1] - q[1] * p[0]])


def test_variational_is_selectable_and_second_order():
    """Harmonic oscillator: the error falls 4x per halving of the step (order 2)."""
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelPX(), pin.SE3.Identity(), "slider")
    model.appendBodyToJoint(j, pin.Inertia(1.0, np.zeros(3), 0.01 * np.eye(3)), pin.SE3.Identity())
    data = model.createData()
    system = PinocchioSystem(model, lambda t, q, v: pin.aba(model, data, q, v, -q))
    errs = []
    for h in (0.1, 0.05, 0.025):
        vi = make_integrator("variational")
        assert isinstance(vi, VariationalMidpoint) and vi.order == 2
        q, v = np.array([1.0]), np.array([0.0])
        for _ in range(int(round(2.0 / h))):
            s = vi.step(system, 0.0, q, v, h)
            q, v = s.q1, s.v1
        errs.append(math.hypot(q[0] - math.cos(2.0), v[0] + math.sin(2.0)))
    assert errs[0] / errs[1] == pytest.approx(4.0, rel=0.02) and errs[1] / errs[2] == pytest.approx(4.0, rel=0.02)


def test_free_floating_chain_conserves_discrete_momentum():
    """No gravity, 1e4 steps through the Simulator: linear and angular discrete momentum kept to 1e-12."""
    model = free_floating_chain()
    mech = Mechanism(model, None, None, name="floating chain", actuated=[])
    rng = np.random.default_rng(4)
    q0 = np.concatenate([[0.2, -0.1], rng.uniform(-1, 1, 5)])
    v0 = rng.uniform(-1, 1, model.nv)
    sim = Simulator(mech, q0, v0, dt=1e-3, integrator="variational")
    vi = sim.integrator
    J0 = planar_momentum(sim.q, vi.momentum(sim.system, sim.q, sim.v))
    worst = []
    sim.control_phase.append(lambda s: worst.append(np.abs(planar_momentum(s.q, vi.momentum(s.system, s.q, s.v)) - J0).max()))
    sim.run(10.0)
    assert sim.steps == 10_000
    assert np.abs(J0).max() > 0.5  # something to conserve
    assert max(worst) <= 1e-12, max(worst)
    # the discrete momentum is not M v of the integrator's own velocity by accident: the chain moved
    assert np.abs(sim.q[2:] - q0[2:]).max() > 1.0


def test_free_flyer_body_conserves_spatial_momentum():
    """On SE(3) (a free-flyer tumbling, no gravity) the world-frame momentum stays to 1e-11 over 1000 steps."""
    model = pin.Model()
    model.gravity = pin.Motion.Zero()
    j = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "base")
    inertia = np.diag([0.1, 0.2, 0.35]) + 0.01 * np.ones((3, 3))
    model.appendBodyToJoint(j, pin.Inertia(2.0, np.array([0.1, -0.05, 0.2]), inertia), pin.SE3.Identity())
    data = model.createData()
    system = PinocchioSystem(model, lambda t, q, v: pin.aba(model, data, q, v, np.zeros(6)))
    q = pin.integrate(model, pin.neutral(model), np.array([0.5, -0.3, 1.0, 0.2, -0.4, 0.3]))
    v = np.array([0.3, -0.2, 0.1, 1.0, 2.0, -1.5])

    def world_momentum(q, v):
        pin.forwardKinematics(model, data, q, v)
        return data.oMi[1].act(model.inertias[1] * pin.Motion(v)).vector.copy()

    h0 = world_momentum(q, v)
    vi = make_integrator("variational")
    worst = 0.0
    for _ in range(1000):
        s = vi.step(system, 0.0, q, v, 1e-2)
        q, v = s.q1, s.v1
        worst = max(worst, np.abs(world_momentum(q, v) - h0).max())
    assert worst <= 1e-11, worst


def pendulum_energy_errors(integrator: str, steps: int, h: float = 0.01) -> np.ndarray:
    built = robots.pendulum_chain(5)
    model = built.mechanism.model
    data = model.createData()
    system = PinocchioSystem(model, lambda t, q, v: pin.aba(model, data, q, v, np.zeros(model.nv)))
    q = built.q0.copy()
    q[0] = -1.2  # released 1.2 rad below the horizontal
    v = np.zeros(model.nv)

    def energy(q, v):
        return pin.computeKineticEnergy(model, data, q, v) + pin.computePotentialEnergy(model, data, q)

    e0 = energy(q, v)
    it = make_integrator(integrator)
    errs = np.empty(steps)
    for k in range(steps):
        s = it.step(system, 0.0, q, v, h)
        q, v = s.q1, s.v1
        errs[k] = abs(energy(q, v) - e0)
    return errs


def test_pendulum_chain_energy_error_stays_bounded():
    """5-link chain at h = 10 ms over 50 s: the variational integrator's energy error over the run is within
    2x its maximum over the first tenth (no drift); RK4 at the same step drifts past that
    (bench/variational.py: 1e5 steps against the first 1e3)."""
    vi = pendulum_energy_errors("variational", 5000)
    assert vi.max() <= 2.0 * vi[:500].max(), (vi.max(), vi[:500].max())
    rk = pendulum_energy_errors("rk4", 5000)
    assert rk.max() > 2.0 * rk[:500].max()


def test_four_bar_loop_held_by_discrete_constraint_forces():
    """The four-bar's loop closure through the variational integrator: phi(q) stays at round-off (SHAKE)
    and the velocity on its tangent space (RATTLE); the energy error stays small and bounded."""
    built = robots.four_bar()
    mech = built.mechanism
    sim = Simulator(mech, built.q0, built.v0, dt=1e-2, integrator="variational")
    model, data = mech.model, mech.model.createData()

    def energy(q, v):
        return pin.computeKineticEnergy(model, data, q, v) + pin.computePotentialEnergy(model, data, q)

    e0 = energy(sim.q, sim.v)
    phis, errs = [], []

    def watch(s):
        mech.set_state(s.q, s.v, check=False)
        phis.append(np.abs(stack_errors(mech.constraints)).max())
        errs.append(abs(energy(s.q, s.v) - e0))
    sim.control_phase.append(watch)
    sim.run(4.0)
    assert max(phis) <= 1e-10, max(phis)
    assert np.abs(built.q0 - sim.q).max() > 0.3  # it swung
    assert max(errs) <= 2.0 * max(errs[:100]) and max(errs) < 1e-2 * abs(e0 if e0 else 1.0) + 1e-2


def cradle_run(integrator: str):
    built = robots.newtons_cradle(n=5, speed=1.0)
    mech = built.mechanism
    sim = Simulator(mech, built.q0, built.v0, dt=1e-2, integrator=integrator)
    sim.enable_impacts(law="propagative", restitution=1.0)
    rec = sim.run(0.1)
    return sim, rec


def test_cradle_through_the_variational_integrator_equals_the_propagative_law():
    """The impact applied to the discrete momentum at the isolated time: the outcome is the propagative
    law's (only the last ball leaves, at 1 m/s) to 1e-12, as with RK4."""
    sim, rec = cradle_run("variational")
    ref, rec_ref = cradle_run("rk4")
    (ev,) = rec.events_of("impact")
    (ev_ref,) = rec_ref.events_of("impact")
    assert ev.time == pytest.approx(ev_ref.time, abs=1e-9)
    np.testing.assert_allclose(ev.data["v_after"], ev_ref.data["v_after"], atol=1e-12)
    np.testing.assert_allclose(sim.v, ref.v, atol=1e-12)
    assert ev.data["kinetic_energy_after"] == pytest.approx(ev.data["kinetic_energy_before"], rel=1e-12)


@pytest.mark.parametrize("dt", [1 / 60, 1 / 600])
def test_three_spheres_through_the_variational_integrator(dt):
    """Seed 001 Fig. 2a through the variational integrator: A passes all its momentum to C (energy kept to 1e-12)."""
    for speed in (0.5, 2.0):
        built = robots.three_spheres(speed=speed)
        mech = built.mechanism
        sim = Simulator(mech, built.q0, built.v0, dt=dt, integrator="variational")
        sim.enable_impacts(law="propagative", restitution=1.0)
        mech.set_state(built.q0, built.v0)
        k0 = mech.kinetic_energy()
        rec = sim.run(0.2)
        assert len(rec.events_of("impact")) == 1
        mech.set_state(sim.q, sim.v)
        assert mech.kinetic_energy() == pytest.approx(k0, rel=1e-12)
        cols = [mech.model.joints[mech.model.frames[mech.frame_id(b)].parentJoint].idx_v
                for b in ("sphere_a", "sphere_b", "sphere_c")]
        np.testing.assert_allclose(sim.v[cols], [0.0, 0.0, speed], atol=1e-12)


def test_bad_options():
    from sim.integrators import IntegratorError
    with pytest.raises(IntegratorError, match="tolerance"):
        make_integrator("variational", tolerance=0.5)
