"""Constraint stabilization on a real pendulum: a free-flyer rod whose pivot frame is held at a world point.

Checks: position projection reaches |phi| < 1e-12 with the minimum mass-metric
correction, velocity projection gives J v = 0 with the kinetic-energy-minimal
(momentum-consistent) change, redundant rows are tolerated, contradictions are
reported by name, and Baumgarte feedback makes the error decay as the critically
damped law phi(t) = phi0 (1 + w t) e^{-w t}, w = sqrt(kp).
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
from scipy.linalg import null_space

from controlkit.constraints import PointConstraint
from controlkit.errors import ControlkitError, SimulationError
from controlkit.mechanism import Mechanism
from sim.integrators import PinocchioSystem, advance, make_integrator
from sim.stabilization import (
    DEFAULT_KP,
    DEFAULT_KV,
    ProjectionError,
    StabilizationError,
    baumgarte_rhs,
    project_positions,
    project_velocities,
    stack_drifts,
    stack_errors,
    stack_jacobians,
)

PIVOT_WORLD = np.array([0.2, -0.1, 1.0])  # m
PIVOT_LOCAL = np.array([0.05, 0.0, 0.1])  # m, pivot frame in the rod's joint frame


def pendulum_model() -> pin.Model:
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "rod")
    # 1.5 kg rod, centre of mass 0.5 m below the joint frame, asymmetric inertia
    model.appendBodyToJoint(j, pin.Inertia(1.5, np.array([0.0, 0.0, -0.5]), np.diag([0.12, 0.1, 0.01])),
                            pin.SE3.Identity())
    model.addFrame(pin.Frame("pivot", j, pin.SE3(np.eye(3), PIVOT_LOCAL), pin.FrameType.OP_FRAME))
    return model


def held_pendulum(n_holds: int = 1) -> tuple[Mechanism, list[PointConstraint], np.ndarray]:
    """Mechanism, the point constraint(s) holding the pivot at PIVOT_WORLD, and a configuration satisfying them."""
    mech = Mechanism(pendulum_model(), name="pendulum")
    target = pin.SE3(np.eye(3), PIVOT_WORLD)
    cons = [PointConstraint(f"hold{i}", "pivot", None, target=target) for i in range(n_holds)]
    for c in cons:
        mech.add_constraint(c)
    R = pin.exp3(np.array([0.4, -0.3, 0.2]))
    q = np.concatenate([PIVOT_WORLD - R @ PIVOT_LOCAL, pin.Quaternion(R).coeffs()])
    return mech, cons, q


def perturbed(mech: Mechanism, q: np.ndarray, scale: float, seed: int = 0) -> np.ndarray:
    return mech.integrate(q, scale * np.random.default_rng(seed).standard_normal(mech.nv))


def state_of(mech: Mechanism, q, v=None):
    mech.set_state(q, v)
    M, _ = mech.dynamics()
    return stack_errors(mech.constraints), stack_jacobians(mech.constraints), M.copy()


# ------------------------------------------------------------------- positions
def test_reference_configuration_satisfies_the_constraint():
    mech, cons, q = held_pendulum()
    phi, _, _ = state_of(mech, q)
    assert np.max(np.abs(phi)) < 1e-15


@pytest.mark.parametrize("metric", ["mass", "euclidean"])
def test_project_positions_reaches_tolerance(metric):
    mech, cons, q_ok = held_pendulum()
    q = perturbed(mech, q_ok, 0.05)
    phi0, _, _ = state_of(mech, q)
    assert np.max(np.abs(phi0)) > 1e-2
    v_before = np.array([0.1, 0.2, -0.3, 0.4, 0.5, -0.6])
    mech.set_state(q, v_before)
    qp = project_positions(mech, cons, q, metric=metric)
    # the mechanism's state is untouched
    np.testing.assert_array_equal(mech.q, q)
    np.testing.assert_array_equal(mech.v, v_before)
    phi, _, _ = state_of(mech, qp)
    assert np.max(np.abs(phi)) < 1e-12
    assert abs(np.linalg.norm(qp[3:]) - 1.0) < 1e-14  # still a unit quaternion (pin.integrate)
    # already feasible: returned unchanged
    np.testing.assert_array_equal(project_positions(mech, cons, qp), qp)


def test_project_positions_is_the_minimum_mass_norm_correction():
    mech, cons, q_ok = held_pendulum()
    eps = 1e-5
    q = perturbed(mech, q_ok, eps, seed=3)
    _, J, M = state_of(mech, q)
    qp = project_positions(mech, cons, q)
    dq = mech.difference(q, qp)
    # optimality: M dq lies in range(J^T) (an "impulse" J^T lam), i.e. dq is M-orthogonal to null(J)
    N = null_space(J)
    assert N.shape == (6, 3)
    assert np.linalg.norm(N.T @ M @ dq) < 1e-4 * np.linalg.norm(M @ dq)
    # and it is smaller in the mass norm than the Euclidean-metric projection's correction
    dq_e = mech.difference(q, project_positions(mech, cons, q, metric="euclidean"))
    assert dq @ M @ dq < dq_e @ M @ dq_e
    # whereas the Euclidean one is the minimum in the plain norm
    assert np.linalg.norm(N.T @ dq_e) < 1e-4 * np.linalg.norm(dq_e)


def test_project_positions_handles_redundant_constraints():
    mech, cons, q_ok = held_pendulum(n_holds=2)  # the same point held twice: J has rank 3 of 6 rows
    q = perturbed(mech, q_ok, 0.05, seed=1)
    _, J, _ = state_of(mech, q)
    assert J.shape == (6, 6) and np.linalg.matrix_rank(J) == 3
    qp = project_positions(mech, cons, q)
    phi, _, _ = state_of(mech, qp)
    assert np.max(np.abs(phi)) < 1e-12
    # same answer as with the single constraint
    mech1, cons1, _ = held_pendulum()
    np.testing.assert_allclose(qp, project_positions(mech1, cons1, q), atol=1e-12)


def test_contradictory_constraints_raise_projection_error_naming_them():
    mech = Mechanism(pendulum_model(), name="pendulum")
    a = PointConstraint("left", "pivot", None, target=pin.SE3(np.eye(3), np.array([0.0, 0.0, 1.0])))
    b = PointConstraint("right", "pivot", None, target=pin.SE3(np.eye(3), np.array([0.1, 0.0, 1.0])))
    mech.add_constraint(a)
    mech.add_constraint(b)
    with pytest.raises(ProjectionError) as info:
        project_positions(mech, [a, b], mech.neutral(), time=1.25)
    err = info.value
    assert isinstance(err, SimulationError) and isinstance(err, ControlkitError)
    assert err.constraints == ["left", "right"]
    assert err.residual == pytest.approx(0.05, rel=1e-6)  # least-squares compromise halfway
    assert err.time == 1.25
    msg = str(err)
    assert "'left'" in msg and "'right'" in msg and "did not converge" in msg and "t = 1.25 s" in msg
    assert "max |phi| = 0.05" in msg


def test_projection_argument_validation():
    mech, cons, q = held_pendulum()
    with pytest.raises(StabilizationError, match="tolerance"):
        project_positions(mech, cons, q, tol=0.0)
    with pytest.raises(StabilizationError, match="metric"):
        project_positions(mech, cons, perturbed(mech, q, 0.1), metric="riemann")
    unbound = PointConstraint("loose", "pivot", None)
    with pytest.raises(StabilizationError, match="not bound"):
        project_positions(mech, [unbound], q)
    with pytest.raises(ControlkitError, match="nq = 7"):
        project_positions(mech, cons, q[:3])


# ------------------------------------------------------------------- velocities
def test_project_velocities_is_momentum_consistent():
    mech, cons, q = held_pendulum()
    v = np.random.default_rng(7).standard_normal(mech.nv)
    _, J, M = state_of(mech, q, v)
    assert np.linalg.norm(J @ v) > 0.1
    vp = project_velocities(mech, cons, q, v)
    assert np.linalg.norm(J @ vp) < 1e-12 * np.linalg.norm(v)
    # idempotent
    np.testing.assert_allclose(project_velocities(mech, cons, q, vp), vp, atol=1e-14)
    # momentum-consistent: the change is an impulse J^T lam, so the generalized momentum
    # along every admissible direction is unchanged: N^T M (vp - v) = 0
    N = null_space(J)
    dv = vp - v
    assert np.linalg.norm(N.T @ M @ dv) < 1e-12 * np.linalg.norm(M @ dv)
    lam, *_ = np.linalg.lstsq(J.T, M @ dv, rcond=None)
    np.testing.assert_allclose(J.T @ lam, M @ dv, atol=1e-12)
    # and vp minimizes the kinetic energy of the difference over all admissible velocities
    best = 0.5 * dv @ M @ dv
    for z in np.random.default_rng(8).standard_normal((50, N.shape[1])):
        w = vp + 0.1 * N @ z
        d = w - v
        assert 0.5 * d @ M @ d > best
    # kinetic energy can only drop (the constraint impulse does no positive work)
    assert vp @ M @ vp < v @ M @ v


def test_project_velocities_with_redundant_rows_and_euclidean_metric():
    mech2, cons2, q = held_pendulum(n_holds=2)
    mech1, cons1, _ = held_pendulum()
    v = np.random.default_rng(11).standard_normal(6)
    vp2 = project_velocities(mech2, cons2, q, v)
    np.testing.assert_allclose(vp2, project_velocities(mech1, cons1, q, v), atol=1e-13)
    _, J, _ = state_of(mech2, q, v)
    assert np.linalg.norm(J @ vp2) < 1e-12
    ve = project_velocities(mech1, cons1, q, v, metric="euclidean")
    assert np.linalg.norm(J[:3] @ ve) < 1e-12
    np.testing.assert_allclose(ve, v - np.linalg.pinv(J[:3]) @ (J[:3] @ v), atol=1e-13)


def test_empty_constraint_list_is_identity():
    mech, _, q = held_pendulum()
    v = np.arange(6.0)
    np.testing.assert_array_equal(project_positions(mech, [], q), q)
    np.testing.assert_array_equal(project_velocities(mech, [], q, v), v)
    assert baumgarte_rhs([]).shape == (0,)


# --------------------------------------------------------------------- Baumgarte
def test_default_gains_are_critically_damped():
    assert DEFAULT_KV == pytest.approx(2.0 * math.sqrt(DEFAULT_KP))


def test_baumgarte_rhs_formula():
    mech, cons, q_ok = held_pendulum()
    q = perturbed(mech, q_ok, 0.02, seed=5)
    v = np.array([0.3, -0.1, 0.2, 0.5, -0.4, 0.1])
    mech.set_state(q, v)
    phi, J, drift = stack_errors(cons), stack_jacobians(cons), stack_drifts(cons)
    np.testing.assert_allclose(baumgarte_rhs(cons, kp=49.0, kv=14.0), -(14.0 * J @ v + 49.0 * phi) - drift, atol=1e-14)
    np.testing.assert_allclose(baumgarte_rhs(mech.constraints), -(DEFAULT_KV * J @ v + DEFAULT_KP * phi) - drift,
                               atol=1e-14)
    with pytest.raises(StabilizationError, match="kp=-1.0"):
        baumgarte_rhs(cons, kp=-1.0)


def _constrained_system(mech: Mechanism, cons, kp: float, kv: float) -> PinocchioSystem:
    """Gravity-driven pendulum: a from [M -J^T; J 0] [a; lam] = [-h; baumgarte_rhs] (lam least-norm)."""
    nv = mech.nv

    def accel(t, q, v):
        mech.set_state(q, v, check=False)
        M, h = mech.dynamics()
        J = stack_jacobians(cons, nv)
        k = J.shape[0]
        K = np.block([[M, -J.T], [J, np.zeros((k, k))]])
        rhs = np.concatenate([-h, baumgarte_rhs(cons, kp, kv)])
        return np.linalg.lstsq(K, rhs, rcond=1e-12)[0][:nv]  # a is unique even when rows are redundant

    return PinocchioSystem(mech.model, accel)


def test_baumgarte_error_decays_critically_damped():
    mech, cons, q_ok = held_pendulum()
    q0 = perturbed(mech, q_ok, 0.02, seed=2)
    v0 = np.zeros(mech.nv)
    mech.set_state(q0, v0)
    phi0 = stack_errors(cons)
    assert np.linalg.norm(phi0) > 1e-3
    system = _constrained_system(mech, cons, DEFAULT_KP, DEFAULT_KV)
    w = math.sqrt(DEFAULT_KP)
    for T in (0.1, 0.3, 0.6):
        q, v, _ = advance(make_integrator("rk4"), system, 0.0, q0, v0, T, 1e-3)
        mech.set_state(q, v)
        expected = phi0 * (1.0 + w * T) * math.exp(-w * T)  # phi'' + 2 w phi' + w^2 phi = 0, phi'(0) = 0
        np.testing.assert_allclose(stack_errors(cons), expected, atol=1e-9 * np.linalg.norm(phi0) + 1e-12)


@pytest.mark.parametrize("name", ["euler", "rk4", "dopri5"])
def test_lie_group_step_keeps_the_pivot_exactly(name):
    """Without any feedback, SE(3) integration keeps phi = 0: motions fixing a point form a subgroup."""
    mech, cons, q0 = held_pendulum()
    system = _constrained_system(mech, cons, 0.0, 0.0)
    v0 = project_velocities(mech, cons, q0, np.array([0.0, 0.0, 0.0, 2.0, -1.0, 0.5]))
    q, v, _ = advance(make_integrator(name), system, 0.0, q0, v0, 0.5, 0.01)
    phi, J, _ = state_of(mech, q, v)
    assert np.max(np.abs(phi)) < 1e-12
    assert np.linalg.norm(J @ v) < 1e-12


def planar_pendulum() -> tuple[Mechanism, list[PointConstraint], np.ndarray]:
    """A rod on flat coordinates (x, z, theta): slider x, slider z, hinge about y.

    The pivot sits off the hinge axis, so phi is nonlinear in theta; it is held where it is at q = 0.
    """
    model = pin.Model()
    jx = model.addJoint(0, pin.JointModelPX(), pin.SE3.Identity(), "x")
    jz = model.addJoint(jx, pin.JointModelPZ(), pin.SE3.Identity(), "z")
    jt = model.addJoint(jz, pin.JointModelRY(), pin.SE3.Identity(), "theta")
    model.appendBodyToJoint(jt, pin.Inertia(1.0, np.array([0.0, 0.0, -0.4]), np.diag([0.02, 0.02, 0.001])),
                            pin.SE3.Identity())
    model.addFrame(pin.Frame("pivot", jt, pin.SE3(np.eye(3), np.array([0.1, 0.0, 0.05])), pin.FrameType.OP_FRAME))
    mech = Mechanism(model, name="planar pendulum")
    con = PointConstraint("hold", "pivot", None)  # target: the pivot's placement at the neutral q
    mech.add_constraint(con)
    return mech, [con], np.zeros(3)


def test_projection_after_integration_restores_constraints_exactly():
    """On flat coordinates a step without feedback drifts; projecting q then v puts the state back."""
    mech, cons, q0 = planar_pendulum()
    system = _constrained_system(mech, cons, 0.0, 0.0)
    assert system.flat
    v0 = project_velocities(mech, cons, q0, np.array([0.0, 0.0, 3.0]))
    q, v, _ = advance(make_integrator("euler"), system, 0.0, q0, v0, 0.5, 0.01)
    phi, J, _ = state_of(mech, q, v)
    assert np.linalg.matrix_rank(J) == 2  # the y row is identically zero: a redundant row
    assert np.max(np.abs(phi)) > 1e-4 and np.linalg.norm(J @ v) > 1e-4
    qp = project_positions(mech, cons, q)
    vp = project_velocities(mech, cons, qp, v)
    phi, J, _ = state_of(mech, qp, vp)
    assert np.max(np.abs(phi)) < 1e-12
    assert np.linalg.norm(J @ vp) < 1e-12
    assert abs(vp[2]) > 1.0  # the swing survives; only the constraint-violating part is removed
