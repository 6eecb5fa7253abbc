"""Forward dynamic control: programs that compute joint torques at their own clock.

Both controllers read the measured state at each tick, compute torques with
the controller's own model (which may differ from the simulated one, to study
model error) and assign them; the simulator holds them until the next tick.

- :func:`joint_pd_gravity`: ``tau = g(q) + Kp (q_d - q) + Kd (v_d - v)``;
- :func:`computed_torque`: ``tau = rnea(q, v, a_d + Kp (q_d - q) + Kd (v_d - v))``.

Trajectories are callables of time: ``q_des`` returns a configuration (nq,), ``v_des`` and
``a_des`` tangent vectors (nv,), rad, rad/s, rad/s^2; ``q_d - q`` is the tangent vector
``difference(q, q_d)`` (the plain difference on one-coordinate joints).

On a fixed-base, fully actuated arm without constraints the torques are the model's
inverse dynamics. When the mechanism has active constraints (feet welded to the ground,
joint locks) or unactuated coordinates (a free-floating torso), the controller uses the
constraints' Jacobian ``J_c`` (kinematics, which the controller knows exactly):
the desired accelerations are first made consistent with them (``J_c a + Jdot_c v = 0``,
least change), then the torques are the smallest that produce them, up to constraint
forces: ``Q^T (S^T tau - (M a + h)) = 0`` with ``Q`` a basis of ``J_c``'s null space
(projected inverse dynamics). Gravity compensation is the same with ``a = 0, v = 0``.
A mechanism whose constraints and actuators cannot produce the accelerations (a floating
body with no support) raises :class:`~controlkit.errors.ControlkitError`.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pinocchio as pin

from controlkit.errors import ControlkitError
from controlkit.quantities import ControlTorques

Trajectory = Callable[[float], np.ndarray]


def _controller_model(ctl, model: pin.Model | None) -> pin.Model:
    model = ctl.mech.model if model is None else model
    if model.nv != ctl.mech.nv or model.nq != ctl.mech.nq:
        raise ControlkitError(f"program {ctl.name!r}: the controller's model must have the mechanism's "
                              f"nq = {ctl.mech.nq}, nv = {ctl.mech.nv} (got nq = {model.nq}, nv = {model.nv})")
    return model


def constraint_rows(mech) -> tuple[np.ndarray, np.ndarray]:
    """The active constraints' stacked Jacobian (m, nv) and drift ``Jdot v`` (m,) at the mechanism's state."""
    cons = list(mech.constraints.values())
    if not cons:
        return np.zeros((0, mech.nv)), np.zeros(0)
    return np.vstack([c.jacobian() for c in cons]), np.concatenate([c.drift() for c in cons])


def _needs_projection(mech) -> bool:
    return bool(mech.constraints) or mech.ntau != mech.nv


def _split(Jc: np.ndarray, nv: int) -> tuple[np.ndarray, np.ndarray]:
    """Pseudo-inverse (nv, m) of ``Jc`` and an orthonormal basis (nv, nv - rank) of its null space (one SVD)."""
    if Jc.shape[0] == 0:
        return np.zeros((nv, 0)), np.eye(nv)
    U, s, Vt = np.linalg.svd(Jc)
    r = int(np.sum(s > 1e-10 * max(s[0], 1.0)))
    return Vt[:r].T @ (U[:, :r].T / s[:r, None]), Vt[r:].T


def projected_torques(mech, generalized: np.ndarray, Jc: np.ndarray, tol: float = 1e-8,
                      null: np.ndarray | None = None) -> np.ndarray:
    """The smallest torques (ntau,) that balance ``generalized`` forces (nv,) up to constraint forces.

    Solves ``Q^T S^T tau = Q^T generalized`` (``Q``: orthonormal basis of ``Jc``'s null space,
    or ``null`` if given) in least norm; raises ControlkitError when no torques can (the
    residual exceeds ``tol`` relative to ``generalized``).
    """
    Q = _split(Jc, mech.nv)[1] if null is None else null
    A, b = Q.T @ mech.S.T, Q.T @ generalized
    tau = np.linalg.lstsq(A, b, rcond=None)[0]
    residual = float(np.linalg.norm(A @ tau - b))
    if residual > tol * max(1.0, float(np.linalg.norm(generalized))):
        raise ControlkitError(f"mechanism {mech.name!r}: its actuators and active constraints cannot balance the "
                              f"required generalized forces (residual {residual:.3g}); is it supported?")
    return tau


def joint_pd_gravity(q_des: Trajectory, kp, kd, v_des: Trajectory | None = None,
                     model: pin.Model | None = None):
    """A control program: joint-space PD with gravity compensation.

    Args:
        q_des, v_des: desired configuration (nq,) and velocities (nv,), rad and rad/s, as functions of t (s).
        kp, kd: gains on the actuated coordinates, scalars or (ntau,) (N m / rad, N m s / rad).
        model: the controller's model (default the simulated one).
    """

    def program(ctl):
        m = _controller_model(ctl, model)
        data = m.createData()
        mech = ctl.mech
        tau = ControlTorques(mech)
        idx = mech.tau_index
        while True:
            q, v, t = ctl.q, ctl.v, ctl.t
            vd = v_des(t) if v_des is not None else np.zeros(m.nv)
            g = pin.computeGeneralizedGravity(m, data, q)
            if _needs_projection(mech):
                mech.set_state(q, v, check=False)
                g = projected_torques(mech, g, constraint_rows(mech)[0])
            else:
                g = g[idx]
            u = g + kp * pin.difference(m, q, q_des(t))[idx] + kd * (vd - v)[idx]
            ctl.assign("joint pd", tau, u)
            yield

    program.__name__ = "joint_pd_gravity"
    return program


def computed_torque(q_des: Trajectory, v_des: Trajectory, a_des: Trajectory, kp, kd,
                    model: pin.Model | None = None):
    """A control program: computed torque through the controller model's inverse dynamics (rnea).

    Args:
        q_des, v_des, a_des: desired trajectory (configuration (nq,), rad/s and rad/s^2 (nv,)) as functions of t (s).
        kp, kd: feedback gains (1/s^2, 1/s), scalars or (nv,).
        model: the controller's model (default the simulated one).
    """

    def program(ctl):
        m = _controller_model(ctl, model)
        data = m.createData()
        mech = ctl.mech
        tau = ControlTorques(mech)
        while True:
            q, v, t = ctl.q, ctl.v, ctl.t
            a = a_des(t) + kp * pin.difference(m, q, q_des(t)) + kd * (v_des(t) - v)
            if _needs_projection(mech):
                mech.set_state(q, v, check=False)
                Jc, drift = constraint_rows(mech)
                Jpinv, Q = _split(Jc, mech.nv)
                a = a - Jpinv @ (Jc @ a + drift)  # consistent with the constraints, least change
                u = projected_torques(mech, pin.rnea(m, data, q, v, a), Jc, null=Q)
            else:
                u = pin.rnea(m, data, q, v, a)
            ctl.assign("computed torque", tau, u)
            yield

    program.__name__ = "computed_torque"
    return program
