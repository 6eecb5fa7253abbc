"""Integrators: convergence orders, energy behaviour, adaptivity, dense output, Lie-group correctness.

Physics checks on real Pinocchio models: a unit mass on a prismatic joint with a unit
spring (x = cos t), and a free rigid body (free-flyer joint, asymmetric inertia, no
gravity) whose energy and spatial momentum are invariants.
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from controlkit.errors import ControlkitError, SimulationError, UnknownNameError
from sim.integrators import (
    Integrator,
    IntegratorError,
    PinocchioSystem,
    Step,
    System,
    advance,
    integrator_names,
    make_integrator,
    step_until_accepted,
)

OMEGA = 1.0  # rad/s: spring stiffness 1 N/m on 1 kg


# ------------------------------------------------------------------------ fixtures
def oscillator_system() -> PinocchioSystem:
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelPX(), pin.SE3.Identity(), "slider")
    model.appendBodyToJoint(j, pin.Inertia(1.0, np.zeros(3), 0.01 * np.eye(3)), pin.SE3.Identity())
    data = model.createData()
    return PinocchioSystem(model, lambda t, q, v: pin.aba(model, data, q, v, -OMEGA**2 * q))


def oscillator_exact(t: float) -> tuple[float, float]:
    return math.cos(OMEGA * t), -OMEGA * math.sin(OMEGA * t)


Q0_OSC, V0_OSC = np.array([1.0]), np.array([0.0])


def free_body_system() -> PinocchioSystem:
    model = pin.Model()
    model.gravity = pin.Motion.Zero()
    j = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "base")
    inertia = np.diag([0.1, 0.2, 0.35]) + 0.01 * np.ones((3, 3))  # asymmetric, off-diagonal terms
    model.appendBodyToJoint(j, pin.Inertia(2.0, np.array([0.1, -0.05, 0.2]), inertia), pin.SE3.Identity())
    data = model.createData()
    tau = np.zeros(model.nv)
    return PinocchioSystem(model, lambda t, q, v: pin.aba(model, data, q, v, tau))


def free_body_start(model: pin.Model) -> tuple[np.ndarray, np.ndarray]:
    q0 = pin.integrate(model, pin.neutral(model), np.array([0.5, -0.3, 1.0, 0.2, -0.4, 0.3]))
    v0 = np.array([0.3, -0.2, 0.1, 1.0, 2.0, -1.5])  # m/s, rad/s (body frame): tumbling
    return q0, v0


def free_body_invariants(model: pin.Model, q: np.ndarray, v: np.ndarray) -> tuple[float, np.ndarray]:
    """Kinetic energy (J) and spatial momentum in the world frame (linear N s, angular about the origin N m s)."""
    data = model.createData()
    pin.forwardKinematics(model, data, q, v)
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    energy = 0.5 * float(v @ M @ v)
    momentum = data.oMi[1].act(model.inertias[1] * pin.Motion(v)).vector.copy()
    return energy, momentum


def final_error_osc(name: str, h: float, T: float = 2.0) -> float:
    system = oscillator_system()
    q, v, _ = advance(make_integrator(name), system, 0.0, Q0_OSC, V0_OSC, T, h)
    x, xd = oscillator_exact(T)
    return math.hypot(q[0] - x, v[0] - xd)


# ------------------------------------------------------------------------ registry
def test_registry_names_and_flags():
    assert integrator_names() == ["euler", "semi_implicit_euler", "rk4", "abm4", "dopri5", "dop853", "variational"]
    flags = {n: (make_integrator(n).order, make_integrator(n).adaptive, make_integrator(n).multistep)
             for n in integrator_names()}
    assert flags == {"euler": (1, False, False), "semi_implicit_euler": (1, False, False), "rk4": (4, False, False),
                     "abm4": (4, False, True), "dopri5": (5, True, False), "dop853": (8, True, False),
                     "variational": (2, False, False)}
    assert all(isinstance(make_integrator(n), Integrator) for n in integrator_names())


def test_unknown_integrator_lists_valid_names():
    with pytest.raises(UnknownNameError) as info:
        make_integrator("rk45")
    assert isinstance(info.value, ControlkitError)
    msg = str(info.value)
    assert "unknown integrator 'rk45'" in msg
    for n in integrator_names():
        assert n in msg


def test_bad_options_and_steps_raise():
    with pytest.raises(IntegratorError, match="takes no option.*rtol"):
        make_integrator("rk4", rtol=1e-6)
    with pytest.raises(IntegratorError, match="rtol and atol"):
        make_integrator("dopri5", rtol=-1.0)
    system = oscillator_system()
    with pytest.raises(IntegratorError, match="positive finite"):
        make_integrator("rk4").step(system, 0.0, Q0_OSC, V0_OSC, 0.0)
    s = make_integrator("rk4").step(system, 0.0, Q0_OSC, V0_OSC, 0.1)
    with pytest.raises(IntegratorError, match=r"theta must be in \[0, 1\]"):
        s.dense(1.5)


def test_pinocchio_system_detects_flat_groups():
    osc = oscillator_system()
    body = free_body_system()
    assert isinstance(osc, System) and isinstance(body, System)
    assert osc.flat and osc.dintegrate(Q0_OSC, np.array([0.3])) is None
    assert not body.flat
    q0, v0 = free_body_start(body.model)
    D = body.dintegrate(q0, 0.1 * v0)
    assert D.shape == (6, 6)
    # it is the Jacobian of q (+) dq in dq: check against a finite difference
    eps = 1e-7
    fd = np.column_stack([body.difference(body.integrate(q0, 0.1 * v0), body.integrate(q0, 0.1 * v0 + eps * e)) / eps
                          for e in np.eye(6)])
    np.testing.assert_allclose(D, fd, atol=1e-6)


def _mixed_tree() -> pin.Model:
    """A tree of 60 velocities: free-flyers, spherical, planar and unbounded-revolute joints, each
    with a revolute child (every kind of dIntegrate block, and identity ones between them)."""
    model = pin.Model()
    inertia = pin.Inertia.FromBox(1.0, 0.1, 0.2, 0.3)
    kinds = [pin.JointModelFreeFlyer, pin.JointModelSpherical, pin.JointModelPlanar, pin.JointModelRUBX] * 3
    for i, kind in enumerate(kinds):
        j = model.addJoint(0, kind(), pin.SE3.Identity(), f"root_{i}")
        model.appendBodyToJoint(j, inertia, pin.SE3.Identity())
        c = model.addJoint(j, pin.JointModelRY(), pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.2])), f"child_{i}")
        model.appendBodyToJoint(c, inertia, pin.SE3.Identity())
    return model


def test_rate_from_the_joint_blocks_agrees_with_the_whole_matrix():
    from sim.integrator_base import RATE_BLOCKS_MIN_NV, _rate
    model = _mixed_tree()
    system = PinocchioSystem(model, lambda t, q, v: np.zeros(model.nv))
    assert model.nv >= RATE_BLOCKS_MIN_NV and system.rate_blocks  # the block path is taken
    assert sorted(len(iv[0]) for _, iv in system.rate_blocks) == [3, 6]  # RUBX and RY give identity blocks
    rng = np.random.default_rng(3)
    for _ in range(5):
        q0 = pin.integrate(model, pin.neutral(model), rng.normal(size=model.nv))
        u, v = 0.3 * rng.normal(size=model.nv), rng.normal(size=model.nv)
        whole = np.linalg.solve(system.dintegrate(q0, u), v)
        np.testing.assert_allclose(_rate(system, q0, u, v), whole, rtol=1e-13, atol=1e-13)


class _SingularChart(PinocchioSystem):
    """A free-flyer whose chart's differential is singular at every increment (as a blown-up state's
    RK4 stage met it: a rotation of a multiple of 2 pi within the stage)."""

    def dintegrate(self, q, dq):
        return np.zeros((self.nv, self.nv))


def test_a_singular_rate_raises_a_simulation_error_naming_the_blow_up():
    from controlkit.errors import SimulationError
    from sim.integrator_base import _rate
    model = pin.Model()
    model.appendBodyToJoint(model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root"),
                            pin.Inertia.FromBox(1.0, 0.1, 0.2, 0.3), pin.SE3.Identity())
    system = _SingularChart(model, lambda t, q, v: np.zeros(6))
    u, v = np.full(6, 4e26), np.full(6, 1e40)
    with pytest.raises(SimulationError, match=r"singular at a stage increment of largest entry 4e\+26.*1e\+40"):
        _rate(system, pin.neutral(model), u, v)


# ------------------------------------------------------------------- orders (flat)
@pytest.mark.parametrize("name, low, high", [
    ("euler", 1.9, 2.1),
    ("semi_implicit_euler", 1.9, 2.1),
    ("rk4", 12.0, 20.0),
    ("abm4", 12.0, 20.0),
])
def test_order_on_harmonic_oscillator(name, low, high):
    errors = [final_error_osc(name, h) for h in (0.02, 0.01, 0.005)]
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    for r in ratios:
        assert low <= r <= high, (name, errors, ratios)


def _energy_history(name: str, h: float, T: float) -> np.ndarray:
    system = oscillator_system()
    integ = make_integrator(name)
    energies = []
    advance(integ, system, 0.0, Q0_OSC, V0_OSC, T, h,
            on_step=lambda s: energies.append(0.5 * (s.v1[0] ** 2 + OMEGA**2 * s.q1[0] ** 2)))
    return np.array(energies)


def test_semi_implicit_euler_energy_bounded_explicit_euler_grows():
    h, T, E0 = 0.05, 200.0, 0.5  # 4000 steps, ~32 periods
    semi = _energy_history("semi_implicit_euler", h, T)
    explicit = _energy_history("euler", h, T)
    # symplectic: the energy error oscillates with amplitude ~ h*omega/2 and never grows
    assert np.max(np.abs(semi - E0)) / E0 < 0.05
    first, last = np.max(np.abs(semi[:400] - E0)), np.max(np.abs(semi[-400:] - E0))
    assert last < 1.1 * first
    # explicit Euler multiplies the energy by (1 + h^2 omega^2) each step
    assert explicit[-1] / E0 > 1000.0
    np.testing.assert_allclose(explicit[-1] / E0, (1 + h**2 * OMEGA**2) ** 4000, rtol=1e-6)


# ------------------------------------------------------------ evaluation accounting
def test_evaluation_counts_and_a0_reuse():
    system = oscillator_system()
    a0 = system.accel(0.0, Q0_OSC, V0_OSC)
    expected = {"euler": (1, 0), "semi_implicit_euler": (1, 0), "rk4": (4, 3), "dopri5": (7, 6)}
    for name, (without, with_a0) in expected.items():
        assert make_integrator(name).step(system, 0.0, Q0_OSC, V0_OSC, 0.01).evaluations == without, name
        assert make_integrator(name).step(system, 0.0, Q0_OSC, V0_OSC, 0.01, a0).evaluations == with_a0, name
    before = system.evaluations
    s = make_integrator("dopri5").step(system, 0.0, Q0_OSC, V0_OSC, 0.01, a0)
    assert system.evaluations - before == s.evaluations == 6
    # FSAL: the end acceleration is the acceleration at (t1, q1, v1)
    np.testing.assert_allclose(s.a1, system.accel(s.t1, s.q1, s.v1), rtol=0, atol=1e-15)


def test_abm4_starts_with_rk4_and_restarts_after_reset_and_h_change():
    system = oscillator_system()
    abm = make_integrator("abm4")
    t, q, v, a = 0.0, Q0_OSC, V0_OSC, None
    counts = []
    for _ in range(6):
        s = abm.step(system, t, q, v, 0.01, a)
        counts.append(s.evaluations)
        t, q, v, a = s.t1, s.q1, s.v1, s.a1
    assert counts == [5, 4, 4, 2, 2, 2]  # 3 rk4 starting steps (+1 for a1), then PECE
    assert s.error < 1.0 and math.isfinite(s.error)
    abm.reset()
    assert abm.step(system, t, q, v, 0.01, a).evaluations == 4  # restarted by rk4
    abm2 = make_integrator("abm4")
    t, q, v = 0.0, Q0_OSC, V0_OSC
    for _ in range(4):
        s = abm2.step(system, t, q, v, 0.01)
        t, q, v = s.t1, s.q1, s.v1
    assert s.evaluations == 2
    assert abm2.step(system, t, q, v, 0.005).evaluations == 4  # h changed: restart
    # a call from a state that is not the last step's end also restarts
    abm3 = make_integrator("abm4")
    t, q, v = 0.0, Q0_OSC, V0_OSC
    for _ in range(4):
        s = abm3.step(system, t, q, v, 0.01)
        t, q, v = s.t1, s.q1, s.v1
    assert abm3.step(system, t, q + 1e-3, v, 0.01).evaluations == 5


# ------------------------------------------------------------------------- dopri5
@pytest.mark.parametrize("rtol", [1e-6, 1e-8, 1e-10])
def test_dopri5_accuracy_follows_rtol(rtol):
    system = oscillator_system()
    T = 10.0
    q, v, steps = advance(make_integrator("dopri5", rtol=rtol, atol=1e-2 * rtol), system, 0.0, Q0_OSC, V0_OSC, T, 0.01)
    x, xd = oscillator_exact(T)
    err = math.hypot(q[0] - x, v[0] - xd)
    assert err < 10 * rtol, (rtol, err, steps)
    assert err > 1e-3 * rtol  # the controller does not waste steps far beyond the tolerance


def test_dopri5_step_count_scales_like_fifth_root_of_tolerance():
    system = oscillator_system()
    n = [advance(make_integrator("dopri5", rtol=r, atol=1e-2 * r), system, 0.0, Q0_OSC, V0_OSC, 10.0, 0.01)[2]
         for r in (1e-6, 1e-11)]
    assert 0.5 * 10.0 < n[1] / n[0] < 2.0 * 10.0  # (1e5)^(1/5) = 10


def test_dopri5_rejects_too_large_step_and_proposes_smaller():
    system = oscillator_system()
    integ = make_integrator("dopri5", rtol=1e-8, atol=1e-10)
    s = integ.step(system, 0.0, Q0_OSC, V0_OSC, 2.0)
    assert not s.accepted and s.error > 1.0 and s.h_next < 2.0 and s.a1 is None
    assert s.h_next >= 0.2 * 2.0  # factor bound
    ok = step_until_accepted(integ, system, 0.0, Q0_OSC, V0_OSC, 2.0)
    assert ok.accepted and ok.error <= 1.0 and ok.h < 2.0
    assert ok.h_next <= ok.h  # no growth right after a rejection
    x, _ = oscillator_exact(ok.t1)
    assert abs(ok.q1[0] - x) < 1e-7


def test_step_until_accepted_gives_up_with_simulation_error():
    model = oscillator_system().model
    stiff = PinocchioSystem(model, lambda t, q, v: -1e30 * q)
    with pytest.raises(SimulationError, match="no acceptable step"):
        step_until_accepted(make_integrator("dopri5", rtol=1e-12, atol=1e-14), stiff, 0.0, Q0_OSC, V0_OSC, 1.0,
                            max_rejections=5)


def test_dopri5_dense_output_matches_analytic_solution():
    system = oscillator_system()
    steps: list[Step] = []
    advance(make_integrator("dopri5", rtol=1e-8, atol=1e-10), system, 0.0, Q0_OSC, V0_OSC, 10.0, 0.1,
            on_step=steps.append)
    assert len(steps) > 20
    worst_interior, worst_node = 0.0, 0.0
    for s in steps:
        q, v = s.dense(0.0)
        np.testing.assert_array_equal(q, s.q0)
        q, v = s.dense(1.0)
        np.testing.assert_array_equal(q, s.q1)
        np.testing.assert_array_equal(v, s.v1)
        x, xd = oscillator_exact(s.t1)
        worst_node = max(worst_node, abs(s.q1[0] - x), abs(s.v1[0] - xd))
        for theta in (0.2, 0.5, 0.8):
            q, v = s.dense(theta)
            x, xd = oscillator_exact(s.time(theta))
            worst_interior = max(worst_interior, abs(q[0] - x), abs(v[0] - xd))
    assert worst_node < 1e-7
    assert worst_interior < 2.0 * worst_node + 1e-9


@pytest.mark.parametrize("name", ["rk4", "abm4"])
def test_fixed_step_dense_output_is_accurate(name):
    system = oscillator_system()
    worst = [0.0]

    def check(s: Step):
        for theta in (0.25, 0.5, 0.75):
            q, v = s.dense(theta)
            x, xd = oscillator_exact(s.time(theta))
            worst[0] = max(worst[0], abs(q[0] - x), abs(v[0] - xd))

    advance(make_integrator(name), system, 0.0, Q0_OSC, V0_OSC, 10.0, 0.01, on_step=check)
    assert worst[0] < 1e-8


# ------------------------------------------------------------------ Lie group (SE(3))
def test_free_body_dopri5_conserves_energy_and_spatial_momentum():
    system = free_body_system()
    model = system.model
    q0, v0 = free_body_start(model)
    E0, h0 = free_body_invariants(model, q0, v0)
    drift = {"energy": 0.0, "momentum": 0.0, "quaternion": 0.0}

    def check(s: Step):
        E, h = free_body_invariants(model, s.q1, s.v1)
        drift["energy"] = max(drift["energy"], abs(E - E0) / E0)
        drift["momentum"] = max(drift["momentum"], np.linalg.norm(h - h0) / np.linalg.norm(h0))
        drift["quaternion"] = max(drift["quaternion"], abs(np.linalg.norm(s.q1[3:]) - 1.0))

    _, _, steps = advance(make_integrator("dopri5", rtol=1e-10, atol=1e-12), system, 0.0, q0, v0, 10.0, 0.01,
                          on_step=check)
    assert drift["energy"] < 1e-8, drift
    assert drift["momentum"] < 1e-8, drift
    assert drift["quaternion"] < 1e-14, drift  # pin.integrate stays on the group
    assert steps < 3000


def test_free_body_rk4_conserves_energy_and_spatial_momentum():
    system = free_body_system()
    model = system.model
    q0, v0 = free_body_start(model)
    E0, h0 = free_body_invariants(model, q0, v0)
    q, v, _ = advance(make_integrator("rk4"), system, 0.0, q0, v0, 10.0, 0.0025)
    E, h = free_body_invariants(model, q, v)
    assert abs(E - E0) / E0 < 1e-8
    assert np.linalg.norm(h - h0) / np.linalg.norm(h0) < 1e-8


@pytest.fixture(scope="module")
def free_body_reference():
    system = free_body_system()
    q0, v0 = free_body_start(system.model)
    qr, vr, _ = advance(make_integrator("dopri5", rtol=1e-13, atol=1e-15), system, 0.0, q0, v0, 2.0, 1e-3)
    return system, q0, v0, qr, vr


@pytest.mark.parametrize("name", ["rk4", "abm4"])
def test_fourth_order_convergence_on_se3(name, free_body_reference):
    system, q0, v0, qr, vr = free_body_reference
    errors = []
    for h in (0.02, 0.01, 0.005):
        q, v, _ = advance(make_integrator(name), system, 0.0, q0, v0, 2.0, h)
        errors.append(float(np.linalg.norm(np.concatenate([pin.difference(system.model, qr, q), v - vr]))))
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    for r in ratios:
        assert 13.0 <= r <= 19.0, (name, errors, ratios)


def test_dopri5_converges_on_se3(free_body_reference):
    system, q0, v0, qr, vr = free_body_reference
    err = {}
    for rtol in (1e-7, 1e-10):
        q, v, _ = advance(make_integrator("dopri5", rtol=rtol, atol=1e-2 * rtol), system, 0.0, q0, v0, 2.0, 0.01)
        err[rtol] = float(np.linalg.norm(pin.difference(system.model, qr, q)))
    assert err[1e-7] < 1e-6 and err[1e-10] < 1e-9
    assert err[1e-7] / err[1e-10] > 100.0


def test_dense_output_on_se3_matches_a_fine_solution():
    system = free_body_system()
    model = system.model
    q0, v0 = free_body_start(model)
    s = step_until_accepted(make_integrator("dopri5", rtol=1e-9, atol=1e-11), system, 0.0, q0, v0, 0.05)
    assert s.accepted and s.h > 0.005
    for theta in (0.3, 0.5, 0.9):
        q, v = s.dense(theta)
        assert abs(np.linalg.norm(q[3:]) - 1.0) < 1e-14
        qf, vf, _ = advance(make_integrator("rk4"), system, 0.0, q0, v0, s.time(theta), 1e-3)
        assert np.linalg.norm(pin.difference(model, qf, q)) < 1e-9
        assert np.linalg.norm(v - vf) < 1e-9
