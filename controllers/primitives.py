"""The thesis' low-level controllers (Fig. 6.1 and 6.2) as control equations.

Each adds one named control equation that defines the second derivative of a
quantity from its first derivative and the quantity itself, and stays in force
until the program removes it by name.

PD controllers: ``a + (2/T) v + (1/T^2) (p - p_des) = 0`` (critically damped).
The thesis chooses ``T = -dt / ln 0.01`` so that the exponential envelope
``exp(-t/T)`` has fallen to 1% at ``dt``; from rest, a critically damped
response is then still 5.6% away. By default we choose ``T`` so that the
response *from rest* is within 1% at ``dt`` (``(1 + dt/T) exp(-dt/T) = 0.01``,
``dt/T = 6.6384``); pass ``thesis_time_constant=True`` for the thesis' value.

Quintic controllers: a quintic from the current position and velocity (zero
acceleration) to the target position and velocity at ``t0 + dt`` (zero
acceleration), tracked with its feedforward acceleration plus stiff feedback;
after ``dt`` the target moves on at the target velocity.

Angles in rad, positions in m, durations in s, rotations as 3x3 matrices.
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
from scipy.optimize import brentq

from controlkit.errors import ControlkitError
from controlkit.expressions import TimeFunction, acc, orientation_error, pos, vel

#: dt / T for which a critically damped response from rest is within 1% at dt
ONE_PERCENT_RATIO = brentq(lambda x: (1 + x) * math.exp(-x) - 0.01, 1.0, 20.0)


def pd_time_constant(dt: float, thesis_time_constant: bool = False) -> float:
    """Time constant T (s) of a critically damped PD reaching 1% of the error in dt seconds."""
    if dt <= 0:
        raise ControlkitError(f"a PD controller needs a positive time to target, got {dt} s")
    if thesis_time_constant:
        return -dt / math.log(0.01)
    return dt / ONE_PERCENT_RATIO


def rotation(angle_deg: float, axis=(0.0, 0.0, 1.0)) -> np.ndarray:
    """Rotation matrix (3, 3) of ``angle_deg`` degrees about ``axis`` (the thesis' "10 deg about (0 0 1)")."""
    axis = np.asarray(axis, dtype=float)
    return pin.exp3(math.radians(angle_deg) * axis / np.linalg.norm(axis))


# --------------------------------------------------------------------- PD
def _pd(ctl, name, quantity, target, dt, thesis_time_constant):
    T = pd_time_constant(dt, thesis_time_constant)
    ctl.add_equation(name, acc(quantity) + (2.0 / T) * vel(quantity) + (1.0 / T**2) * (pos(quantity) - target) == 0)
    return T


def position_with_pd(ctl, name: str, frame: str, x_desired, dt: float, *, thesis_time_constant=False) -> float:
    """Move a frame's origin (any frame: a body, a feature, a URDF link such as ``"tool0"``) to
    ``x_desired`` (3,), m, world frame, within 1% in ``dt`` s; returns T (s)."""
    return _pd(ctl, name, ctl.point(frame), np.asarray(x_desired, float), dt, thesis_time_constant)


def position_point_with_pd(ctl, name: str, body: str, point, x_desired, dt: float, *,
                           thesis_time_constant=False) -> float:
    """Move a point on a body (a feature name, or body coordinates (3,), m) to ``x_desired`` in ``dt`` s."""
    q = ctl.point(point) if isinstance(point, str) else ctl.point(body, point)
    return _pd(ctl, name, q, np.asarray(x_desired, float), dt, thesis_time_constant)


def orient_with_pd(ctl, name: str, frame: str, R_desired, dt: float, *, thesis_time_constant=False) -> float:
    """Turn a frame (a body, a feature, a URDF link) to orientation ``R_desired`` (3, 3), world
    frame, within 1% in ``dt`` s (error as a rotation vector); returns T (s)."""
    T = pd_time_constant(dt, thesis_time_constant)
    o = ctl.orientation(frame)
    ctl.add_equation(name, acc(o) + (2.0 / T) * vel(o) + (1.0 / T**2) * orientation_error(o, np.asarray(R_desired, float)) == 0)
    return T


def set_angle_with_pd(ctl, name: str, joint: str, angle_desired: float, dt: float, *,
                      thesis_time_constant=False) -> float:
    """Bring a one-dof joint to ``angle_desired`` (rad or m) within 1% in ``dt`` s; returns T (s)."""
    return _pd(ctl, name, ctl.angle(joint), np.array([float(angle_desired)]), dt, thesis_time_constant)


# ---------------------------------------------------------------- quintic
class Quintic:
    """Quintic p(t) from (p0, v0, a=0) at t0 to (p1, v1, a=0) at t0 + dt; linear in v1 after.

    Args:
        p0, v0, p1, v1: arrays of the same shape (m, m/s or rad, rad/s).
        t0: start time (s); dt: duration (s).
    """

    def __init__(self, p0, v0, p1, v1, t0: float, dt: float):
        if dt <= 0:
            raise ControlkitError(f"a quintic needs a positive duration, got {dt} s")
        p0, v0, p1, v1 = (np.atleast_1d(np.asarray(x, dtype=float)) for x in (p0, v0, p1, v1))
        self.t0, self.dt, self.p1, self.v1 = t0, dt, p1, v1
        T = dt
        # p(s) = c0 + c1 s + c2 s^2 + c3 s^3 + c4 s^4 + c5 s^5 with a(0) = a(T) = 0
        A = np.array([[T**3, T**4, T**5], [3 * T**2, 4 * T**3, 5 * T**4], [6 * T, 12 * T**2, 20 * T**3]])
        rhs = np.vstack([p1 - p0 - v0 * T, v1 - v0, np.zeros_like(p0)])
        c345 = np.linalg.solve(A, rhs)
        self.c = np.vstack([p0, v0, np.zeros_like(p0), c345])

    def __call__(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Position, velocity, acceleration at time t (s)."""
        s = t - self.t0
        if s >= self.dt:
            return self.p1 + self.v1 * (s - self.dt), self.v1.copy(), np.zeros_like(self.v1)
        s = max(s, 0.0)
        # read at every servo tick: one matrix product of the coefficients with s's powers
        s2 = s * s
        s3 = s2 * s
        powers = np.array([1.0, s, s2, s3, s3 * s, s3 * s2,
                           0.0, 1.0, 2.0 * s, 3.0 * s2, 4.0 * s3, 5.0 * s3 * s,
                           0.0, 0.0, 2.0, 6.0 * s, 12.0 * s2, 20.0 * s3]).reshape(3, 6)  # (flat: cheaper to build)
        p, v, a = powers.dot(self.c)
        return p, v, a


def _feedback_gains(dt: float):
    w = 40.0 / dt  # stiff enough to remove integration drift, slow next to the step
    return w * w, 2.0 * w


def track(ctl, name: str, quantity, traj, dt: float):
    """Add a control equation making ``quantity`` follow ``traj(t) -> (p, v, a)`` over ``dt`` s.

    The equation is ``acc + kv vel + kp pos = a_d + kv v_d + kp p_d``: exact on the
    trajectory, with stiff feedback (``40 / dt`` rad/s) against integration drift.
    """
    return _track(ctl, name, quantity, traj, dt)


def _track(ctl, name, quantity, traj, dt):
    kp, kv = _feedback_gains(dt)
    ref = TimeFunction(lambda t: (lambda p, v, a: a + kv * v + kp * p)(*traj(t)), f"quintic({name})")
    ctl.add_equation(name, acc(quantity) + kv * vel(quantity) + kp * pos(quantity) == ref)
    return traj


def position_with_quintic(ctl, name: str, frame: str, x_desired, v_desired, dt: float) -> Quintic:
    """Move a frame's origin (a body, a feature, a URDF link such as ``"tool0"``) along a quintic
    to ``x_desired`` (3,), m, world frame, arriving with ``v_desired`` (3,), m/s, at ``ctl.t + dt`` (s).

    The quintic starts at the frame's current position and velocity; the equation (named
    ``name``) stays in force until the program removes it. Returns the :class:`Quintic`.
    """
    q = ctl.point(frame)
    return _track(ctl, name, q, Quintic(ctl.value(q), ctl.velocity(q), x_desired, v_desired, ctl.t, dt), dt)


def position_point_with_quintic(ctl, name: str, body: str, point, x_desired, v_desired, dt: float) -> Quintic:
    """Move a point on a body (feature name or body coordinates) along a quintic to x_desired, v_desired."""
    q = ctl.point(point) if isinstance(point, str) else ctl.point(body, point)
    return _track(ctl, name, q, Quintic(ctl.value(q), ctl.velocity(q), x_desired, v_desired, ctl.t, dt), dt)


def set_angle_with_quintic(ctl, name: str, joint: str, angle_desired: float, rate_desired: float,
                           dt: float) -> Quintic:
    """Move a one-dof joint along a quintic to ``angle_desired`` (rad) with ``rate_desired`` (rad/s) in dt s."""
    q = ctl.angle(joint)
    return _track(ctl, name, q, Quintic(ctl.value(q), ctl.velocity(q), [angle_desired], [rate_desired], ctl.t, dt), dt)


def orient_with_quintic(ctl, name: str, frame: str, R_desired, w_desired, dt: float) -> Quintic:
    """Turn a frame (a body, a feature, a URDF link) along a quintic in its rotation vector to
    ``R_desired`` (3, 3) with angular velocity ``w_desired`` (3,), rad/s, at ``ctl.t + dt`` (s).

    The quintic runs on the rotation vector phi of ``R0^T R`` (body axes at the start); the
    target angular velocity is in world axes (rad/s).
    """
    o = ctl.orientation(frame)
    R0 = ctl.value(o)
    phi1 = pin.log3(R0.T @ np.asarray(R_desired, float))
    traj = Quintic(np.zeros(3), R0.T @ ctl.velocity(o), phi1, R0.T @ np.asarray(w_desired, float), ctl.t, dt)
    kp, kv = _feedback_gains(dt)

    def target(t):
        return R0 @ pin.exp3(traj(t)[0])

    def feedforward(t):
        p, v, a = traj(t)
        return R0 @ a + kv * (R0 @ v)

    ctl.add_equation(name, acc(o) + kv * vel(o) + kp * orientation_error(o, target) == TimeFunction(feedforward, f"quintic({name})"))
    return traj
