"""Time integrators for the second-order dynamics of a mechanism on its configuration Lie group.

The simulated system is

    q' = v            (q on the configuration Lie group: free-flyer = SE(3), spherical = SO(3))
    v' = a(t, q, v)   (one derivative evaluation = one assembly and solve of the equation set)

with ``q (+) dq = pin.integrate(model, q, dq)``. Every method here is written in the
Runge--Kutta--Munthe-Kaas form: within a step the configuration is expressed in local
coordinates ``u`` around the step's start, ``q(t) = q0 (+) u(t)``, which obey the plain ODE

    u' = dexp^{-1}_u v = dintegrate(q0, u)^{-1} v,      v' = a(t, q0 (+) u, v),

in a vector space, so the classical order of a method is kept on the group (no loss to
2nd order for free-flyers and spherical joints). When the group is flat (``nq == nv``,
every joint Euclidean) ``dintegrate`` returns None and ``u' = v`` directly.

Methods (see :func:`make_integrator`):

==========================  =====  ========  =========  =====================================
name                        order  adaptive  multistep  evaluations per step
==========================  =====  ========  =========  =====================================
``euler``                   1      no        no         1 (0 when ``a0`` is given)
``semi_implicit_euler``     1      no        no         1 (0 when ``a0`` is given); symplectic
``rk4``                     4      no        no         4 (3 when ``a0`` is given)
``abm4``                    4      no        yes        2 (PECE), rk4 + 1 while (re)starting
``dopri5``                  5(4)   yes       no         6 with FSAL ``a0`` (7 without)
``dop853``                  8      yes       no         12 with FSAL ``a0`` (13 without);
                                                        dense output +3 on first use
==========================  =====  ========  =========  =====================================

``dop853`` (:class:`DormandPrince853`) is constructed directly for now; it is not yet in
:func:`make_integrator`'s registry (so not selectable by name in the Simulator).

Times are in seconds; ``q``, ``v``, ``a`` in the model's units (m, rad, m/s, rad/s, ...).
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Callable, Protocol, runtime_checkable

import numpy as np
import pinocchio as pin

from controlkit.errors import ControlkitError, SimulationError, UnknownNameError

__all__ = [
    "System",
    "PinocchioSystem",
    "Step",
    "Integrator",
    "ExplicitEuler",
    "SemiImplicitEuler",
    "RK4",
    "AdamsBashforthMoulton4",
    "DormandPrince5",
    "DormandPrince853",
    "IntegratorError",
    "make_integrator",
    "integrator_names",
    "step_until_accepted",
    "advance",
]


class IntegratorError(ControlkitError, ValueError):
    """Invalid integrator options or step arguments (non-positive step, theta outside [0, 1], ...)."""


# --------------------------------------------------------------------------- systems
@runtime_checkable
class System(Protocol):
    """What an integrator needs from the simulated system."""

    def accel(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Acceleration a (nv,) at time t (s), configuration q (nq,), velocity v (nv,): one evaluation."""
        ...

    def integrate(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """q (+) dq on the configuration group."""
        ...

    def difference(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        """q1 (-) q0: the tangent vector dq (nv,) with q0 (+) dq = q1."""
        ...

    def dintegrate(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray | None:
        """d integrate(q, dq) / d dq (nv, nv), or None when the group is flat."""
        ...


def _is_flat(model: pin.Model) -> bool:
    """True when every joint integrates as a vector space (nq == nv and dIntegrate == identity)."""
    if model.nq != model.nv:
        return False
    if model.nv == 0:
        return True
    q = pin.neutral(model)
    dq = np.linspace(0.3, 0.7, model.nv)
    D = pin.dIntegrate(model, q, dq, pin.ArgumentPosition.ARG1)
    return bool(np.allclose(D, np.eye(model.nv), atol=1e-14) and np.allclose(pin.integrate(model, q, dq), q + dq))


class PinocchioSystem:
    """A :class:`System` on a Pinocchio model's configuration group.

    Args:
        model: the ``pinocchio.Model`` whose group (free-flyer, spherical, ...) q lives on.
        accel_fn: ``accel_fn(t, q, v) -> a`` (s, model units) — e.g. ``pin.aba`` with some torques.

    ``evaluations`` counts calls to :meth:`accel`. ``flat`` is True when nq == nv and all
    joints are Euclidean; then :meth:`dintegrate` returns None and q (+) dq = q + dq.
    """

    def __init__(self, model: pin.Model, accel_fn: Callable[[float, np.ndarray, np.ndarray], np.ndarray]):
        if not isinstance(model, pin.Model):
            raise IntegratorError(f"PinocchioSystem: expected a pinocchio.Model, got {type(model).__name__}")
        if not callable(accel_fn):
            raise IntegratorError("PinocchioSystem: accel_fn must be callable as accel_fn(t, q, v) -> a")
        self.model = model
        self.accel_fn = accel_fn
        self.nq, self.nv = model.nq, model.nv
        self.flat = _is_flat(model)
        self.evaluations = 0
        self._arg1 = pin.ArgumentPosition.ARG1

    def accel(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        self.evaluations += 1
        return np.asarray(self.accel_fn(t, q, v), dtype=float)

    def integrate(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        if self.flat:
            return q + dq
        return pin.integrate(self.model, q, dq)

    def difference(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        if self.flat:
            return q1 - q0
        return pin.difference(self.model, q0, q1)

    def dintegrate(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray | None:
        if self.flat:
            return None
        return pin.dIntegrate(self.model, q, dq, self._arg1)

    def __repr__(self) -> str:
        return f"PinocchioSystem(nq={self.nq}, nv={self.nv}, flat={self.flat})"


def _rate(system: System, q0: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """u' = dintegrate(q0, u)^{-1} v: the local-coordinate rate of q0 (+) u moving with velocity v."""
    D = system.dintegrate(q0, u)
    if D is None:
        return v
    return np.linalg.solve(D, v)


# ----------------------------------------------------------------------------- steps
@dataclass(eq=False)
class Step:
    """The result of one attempted step from (t0, q0, v0) over h seconds.

    ``a0``/``a1`` are the accelerations at the start/end (``a1`` None when the method did
    not evaluate it). ``error`` is the scaled local-error norm (<= 1 is within tolerance)
    for methods with an estimator, NaN otherwise. ``h_next`` (s) is the proposed next step.
    ``evaluations`` counts calls to ``system.accel`` made by this step.
    """

    t0: float
    h: float
    q0: np.ndarray
    v0: np.ndarray
    a0: np.ndarray
    t1: float
    q1: np.ndarray
    v1: np.ndarray
    a1: np.ndarray | None
    accepted: bool
    error: float
    h_next: float
    evaluations: int
    _interp: Callable[[float], tuple[np.ndarray, np.ndarray]] | None = field(default=None, repr=False)

    def dense(self, theta: float) -> tuple[np.ndarray, np.ndarray]:
        """State (q, v) at time t0 + theta * h, theta in [0, 1]; exact at 0 and 1."""
        if not (-1e-12 <= theta <= 1.0 + 1e-12):
            raise IntegratorError(f"dense output: theta must be in [0, 1], got {theta}")
        if theta <= 0.0:
            return self.q0.copy(), self.v0.copy()
        if theta >= 1.0:
            return self.q1.copy(), self.v1.copy()
        if self._interp is None:
            raise IntegratorError("dense output: this step carries no interpolant")
        return self._interp(float(theta))

    def time(self, theta: float) -> float:
        """t0 + theta * h (s)."""
        return self.t0 + theta * self.h


def _linear_interp(system: System, q0, u1, v0, v1):
    """First-order interpolant in the chart at q0 (for the Euler methods)."""
    dv = v1 - v0

    def interp(theta: float):
        return system.integrate(q0, theta * u1), v0 + theta * dv

    return interp


def _hermite_interp(system: System, q0, u1, v0, v1, a0, a1, h):
    """Cubic Hermite interpolant in the chart at q0 (u' ends are v0 and dexp^-1 v1, v' ends a0, a1)."""
    cache: list[np.ndarray] = []

    def interp(theta: float):
        if not cache:
            cache.append(_rate(system, q0, u1, v1))
        w1 = cache[0]
        t2, t3 = theta * theta, theta * theta * theta
        h00, h10, h01, h11 = 2 * t3 - 3 * t2 + 1, t3 - 2 * t2 + theta, -2 * t3 + 3 * t2, t3 - t2
        u = h10 * h * v0 + h01 * u1 + h11 * h * w1
        v = h00 * v0 + h10 * h * a0 + h01 * v1 + h11 * h * a1
        return system.integrate(q0, u), v

    return interp


# ----------------------------------------------------------------------- integrators
def _check_h(h: float, name: str) -> float:
    h = float(h)
    if not (0.0 < h < math.inf):
        raise IntegratorError(f"{name}: the step h must be a positive finite time in s, got {h}")
    return h


def _start_accel(system: System, t: float, q, v, a0) -> tuple[np.ndarray, int]:
    if a0 is not None:
        return np.asarray(a0, dtype=float), 0
    return system.accel(t, q, v), 1


def _scale(y0: np.ndarray, y1: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """Error scale atol + rtol * max(|y0_i|, |y1_i|) (Hairer's)."""
    sc = np.maximum(np.abs(y0), np.abs(y1))
    sc *= rtol
    sc += atol
    return sc


def _scaled_norm(e: np.ndarray, y0: np.ndarray, y1: np.ndarray, rtol: float, atol: float) -> float:
    """RMS of e_i / (atol + rtol * max(|y0_i|, |y1_i|)) (Hairer's norm)."""
    if e.size == 0:
        return 0.0
    r = e / _scale(y0, y1, rtol, atol)
    return math.sqrt(r.dot(r) / r.size)


class Integrator:
    """Base class. ``step`` attempts one step; ``reset`` forgets history (after events)."""

    name: str = ""
    order: int = 0
    adaptive: bool = False
    multistep: bool = False

    def reset(self) -> None:
        """Forget any history (multistep methods restart, adaptive ones forget controller state)."""

    def step(self, system: System, t: float, q: np.ndarray, v: np.ndarray, h: float, a0: np.ndarray | None = None) -> Step:
        """Attempt a step of h seconds from (t, q, v); ``a0`` is a(t, q, v) if the caller has it."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, order={self.order})"


class ExplicitEuler(Integrator):
    """Explicit Euler: q1 = q0 (+) h v0, v1 = v0 + h a0 (order 1; energy grows on oscillators)."""

    name, order = "euler", 1

    def step(self, system, t, q, v, h, a0=None):
        h = _check_h(h, self.name)
        a0, n = _start_accel(system, t, q, v, a0)
        u1 = h * v
        v1 = v + h * a0
        return Step(t, h, q, v, a0, t + h, system.integrate(q, u1), v1, None, True, math.nan, h, n,
                    _linear_interp(system, q, u1, v, v1))


class SemiImplicitEuler(Integrator):
    """Symplectic (semi-implicit) Euler: v1 = v0 + h a0, q1 = q0 (+) h v1 (order 1, bounded energy error)."""

    name, order = "semi_implicit_euler", 1

    def step(self, system, t, q, v, h, a0=None):
        h = _check_h(h, self.name)
        a0, n = _start_accel(system, t, q, v, a0)
        v1 = v + h * a0
        u1 = h * v1
        return Step(t, h, q, v, a0, t + h, system.integrate(q, u1), v1, None, True, math.nan, h, n,
                    _linear_interp(system, q, u1, v, v1))


# RK4's third-order continuous extension: weights b_i(theta), exact (1/6, 1/3, 1/3, 1/6) at theta = 1.
def _rk4_dense_weights(theta: float) -> np.ndarray:
    t2, t3 = theta * theta, theta * theta * theta
    b1 = theta - 1.5 * t2 + (2.0 / 3.0) * t3
    b2 = t2 - (2.0 / 3.0) * t3
    b4 = -0.5 * t2 + (2.0 / 3.0) * t3
    return np.array([b1, b2, b2, b4])


def _rk4_core(system: System, t: float, q, v, h: float, a0: np.ndarray):
    """Classic RK4 in the chart at q: returns q1, v1, u1 and the stage rates W, K (4, nv). 3 evaluations."""
    nv = v.shape[0]
    W = np.empty((4, nv))
    K = np.empty((4, nv))
    W[0], K[0] = v, a0
    h2 = 0.5 * h
    for i, (c, hi) in enumerate(((h2, h2), (h2, h2), (h, h)), start=1):
        u = hi * W[i - 1]
        vi = v + hi * K[i - 1]
        K[i] = system.accel(t + c, system.integrate(q, u), vi)
        W[i] = _rate(system, q, u, vi)
    wts = np.array([1.0, 2.0, 2.0, 1.0]) * (h / 6.0)
    u1 = wts @ W
    v1 = v + wts @ K
    return system.integrate(q, u1), v1, u1, W, K


class RK4(Integrator):
    """Classic 4th-order Runge--Kutta (Munthe-Kaas form on Lie groups); 3rd-order dense output."""

    name, order = "rk4", 4

    def step(self, system, t, q, v, h, a0=None):
        h = _check_h(h, self.name)
        a0, n = _start_accel(system, t, q, v, a0)
        q1, v1, u1, W, K = _rk4_core(system, t, q, v, h, a0)

        def interp(theta: float):
            b = h * _rk4_dense_weights(theta)
            return system.integrate(q, b @ W), v + b @ K

        return Step(t, h, q, v, a0, t + h, q1, v1, None, True, math.nan, h, n + 3, interp)


class AdamsBashforthMoulton4(Integrator):
    """Adams--Bashforth--Moulton 4th order, PECE, fixed step; started and restarted by rk4.

    The history (t, q, v, a) of the last four points is kept; the u-equation's past
    derivatives are transported into the chart at the newest point q_n
    (w_k = dexp^{-1}_{u_k} v_k with u_k = q_k (-) q_n), which keeps 4th order on Lie groups.
    The first 3 steps after construction, :meth:`reset`, a change of h (relative 1e-9) or a
    call from a state that is not the last step's end are rk4 steps (+1 evaluation for a1).

    Options: ``rtol``, ``atol`` scale the Milne local-error estimate reported in ``Step.error``.
    """

    name, order, multistep = "abm4", 4, True
    _P = np.array([-9.0, 37.0, -59.0, 55.0]) / 24.0  # on f_{n-3}, f_{n-2}, f_{n-1}, f_n
    _C = np.array([1.0, -5.0, 19.0, 9.0]) / 24.0     # on f_{n-2}, f_{n-1}, f_n, f_{n+1}

    def __init__(self, rtol: float = 1e-6, atol: float = 1e-9):
        _check_tolerances(self.name, rtol, atol)
        self.rtol, self.atol = float(rtol), float(atol)
        self.reset()

    def reset(self) -> None:
        self._hist: list[tuple[float, np.ndarray, np.ndarray, np.ndarray]] = []
        self._h: float | None = None

    def _at_last_point(self, t: float, q, v, h: float) -> bool:
        if not self._hist:
            return False
        tn, qn, vn, _ = self._hist[-1]
        return abs(t - tn) <= 1e-9 * h + 4e-16 * abs(t) and np.array_equal(q, qn) and np.array_equal(v, vn)

    def step(self, system, t, q, v, h, a0=None):
        h = _check_h(h, self.name)
        if not self._at_last_point(t, q, v, h):
            self._hist, self._h = [], h
        elif self._h is None or abs(h - self._h) > 1e-9 * self._h:
            self._hist, self._h = self._hist[-1:], h  # new step size: restart from the current point
        if a0 is None and self._hist:
            a0 = self._hist[-1][3]
        a0, n = _start_accel(system, t, q, v, a0)
        if not self._hist:
            self._hist.append((t, q.copy(), v.copy(), a0))
        if len(self._hist) < 4:
            q1, v1, u1, _, _ = _rk4_core(system, t, q, v, h, a0)
            a1 = system.accel(t + h, q1, v1)
            self._hist.append((t + h, q1.copy(), v1.copy(), a1))
            return Step(t, h, q, v, a0, t + h, q1, v1, a1, True, math.nan, h, n + 4,
                        _hermite_interp(system, q, u1, v, v1, a0, a1, h))
        return self._pece(system, t, q, v, h, a0, n)

    def _pece(self, system, t, q, v, h, a0, n):
        nv = v.shape[0]
        W = np.empty((4, nv))
        A = np.empty((4, nv))
        for i, (_, qk, vk, ak) in enumerate(self._hist[:3]):
            A[i] = ak
            W[i] = _rate(system, q, system.difference(q, qk), vk)
        W[3], A[3] = v, a0
        hp = h * self._P
        u_p = hp @ W
        v_p = v + hp @ A
        a_p = system.accel(t + h, system.integrate(q, u_p), v_p)
        w_p = _rate(system, q, u_p, v_p)
        hc = h * self._C
        u_c = hc[:3] @ W[1:] + hc[3] * w_p
        v_c = v + hc[:3] @ A[1:] + hc[3] * a_p
        q_c = system.integrate(q, u_c)
        a_c = system.accel(t + h, q_c, v_c)
        e = (19.0 / 270.0) * np.concatenate([u_c - u_p, v_c - v_p])
        err = _scaled_norm(e, np.concatenate([np.zeros(nv), v]), np.concatenate([u_c, v_c]), self.rtol, self.atol)
        self._hist.pop(0)
        self._hist.append((t + h, q_c.copy(), v_c.copy(), a_c))
        return Step(t, h, q, v, a0, t + h, q_c, v_c, a_c, True, err, h, n + 2,
                    _hermite_interp(system, q, u_c, v, v_c, a0, a_c, h))


def _check_tolerances(name: str, rtol: float, atol: float) -> None:
    if not (rtol >= 0.0 and atol >= 0.0 and (rtol > 0.0 or atol > 0.0)) or not (math.isfinite(rtol) and math.isfinite(atol)):
        raise IntegratorError(f"{name}: rtol and atol must be finite, >= 0 and not both 0; got rtol={rtol}, atol={atol}")


def _rk_stages(system: System, t: float, q, y0: np.ndarray, h: float, hA: np.ndarray, C: list[float],
               K: np.ndarray, nv: int, rows: range):
    """Explicit Runge--Kutta stages ``rows`` into K (one evaluation each), in the chart at q.

    Stage i is at ``y_i = y0 + (h A)_i K``, ``y = (u, v)``, and stores
    ``K_i = (dexp^{-1}_u v, a(t + C_i h, q (+) u, v))``; on a flat group ``q (+) u = q + u`` and
    ``u' = v``, so a stage costs one product, one sum and the evaluation. Rows of ``hA`` span all
    of K (zero past the diagonal). Returns the last stage's ``y``, ``q`` and ``v``; ``q`` and ``v``
    are the very arrays the evaluation saw, so a caller can tell the mechanism is at that state.
    """
    flat = getattr(system, "flat", False)
    accel = system.accel
    for i in rows:
        y = y0 + hA[i].dot(K)
        u, vi = y[:nv], y[nv:]
        qi = q + u if flat else system.integrate(q, u)
        K[i, nv:] = accel(t + C[i] * h, qi, vi)
        K[i, :nv] = vi if flat else _rate(system, q, u, vi)
    return y, qi, vi


def _first_stage(q, v: np.ndarray, a0: np.ndarray, stages: int) -> tuple[np.ndarray, np.ndarray]:
    """Stage storage K (stages, 2 nv) with K_0 = (v, a0), and y0 = (u = 0, v) in the chart at q."""
    nv = v.shape[0]
    K = np.zeros((stages, 2 * nv))
    K[0, :nv], K[0, nv:] = v, a0
    y0 = np.zeros(2 * nv)
    y0[nv:] = v
    return K, y0


class _EmbeddedRK(Integrator):
    """What the adaptive embedded Runge--Kutta pairs share: options and step-size control.

    A step is accepted when its scaled error norm is <= 1. Next step
    ``h * clip(safety * err^exponent, fac_min, fac_max)`` (no growth right after a
    rejection), capped at ``h_max`` (s); ``exponent = -1 / (estimator order + 1)``.
    """

    adaptive = True
    _exponent = -0.2

    def __init__(self, rtol: float = 1e-6, atol: float = 1e-9, safety: float = 0.9, fac_min: float = 0.2,
                 fac_max: float = 10.0, h_max: float = math.inf):
        _check_tolerances(self.name, rtol, atol)
        if not (0.0 < safety <= 1.0 and 0.0 < fac_min < 1.0 < fac_max and h_max > 0.0):
            raise IntegratorError(
                f"{self.name}: need 0 < safety <= 1, 0 < fac_min < 1 < fac_max, h_max > 0; "
                f"got safety={safety}, fac_min={fac_min}, fac_max={fac_max}, h_max={h_max}")
        self.rtol, self.atol = float(rtol), float(atol)
        self.safety, self.fac_min, self.fac_max, self.h_max = float(safety), float(fac_min), float(fac_max), float(h_max)
        self.reset()

    def reset(self) -> None:
        self._rejected = False

    def _decide(self, h: float, err: float) -> tuple[bool, float]:
        """(accepted, proposed next step in s) for a step of h s with error norm err."""
        accepted = err <= 1.0
        h_next = self._propose(h, err, accepted)
        self._rejected = not accepted
        return accepted, h_next

    def _propose(self, h: float, err: float, accepted: bool) -> float:
        if not math.isfinite(err):
            return h * self.fac_min
        fac = self.fac_max if err == 0.0 else self.safety * err ** self._exponent
        fac = min(self.fac_max, max(self.fac_min, fac))
        if not accepted or self._rejected:
            fac = min(fac, 1.0)
        return min(h * fac, self.h_max)


class DormandPrince5(_EmbeddedRK):
    """Dormand--Prince 5(4), FSAL, adaptive, with its native 4th-order dense output.

    Error control on the stacked local-coordinate state y = (u, v), u = q (-) q0:
    ``err = RMS(e_i / (atol + rtol * max(|y0_i|, |y1_i|)))``, so the position tolerance is
    relative to the step's displacement (invariant to where the robot is in the world) and
    ``atol`` is in the units of q's tangent and v (m, rad, m/s, rad/s). A step is accepted
    when err <= 1. Next step ``h * clip(safety * err^(-1/5), fac_min, fac_max)`` (no growth
    right after a rejection), capped at ``h_max`` (s).
    """

    name, order = "dopri5", 5
    _C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
    _Cl = _C.tolist()
    _A = np.array([
        [0, 0, 0, 0, 0, 0, 0],
        [1 / 5, 0, 0, 0, 0, 0, 0],
        [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
        [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
        [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
        [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
        [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0],
    ])
    _B = _A[6]
    _E = np.array([71 / 57600, 0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40])  # b - b_hat
    _D = np.array([-12715105075 / 11282082432, 0, 87487479700 / 32700410799, -10690763975 / 1880347072,
                   701980252875 / 199316789632, -1453857185 / 822651844, 69997945 / 29380423])

    def step(self, system, t, q, v, h, a0=None):
        h = _check_h(h, self.name)
        a0, n = _start_accel(system, t, q, v, a0)
        nv = v.shape[0]
        K, y0 = _first_stage(q, v, a0, 7)
        # stage 7 is evaluated at y1 = y0 + h * B @ K (FSAL)
        y1, q1, v1 = _rk_stages(system, t, q, y0, h, h * self._A, self._Cl, K, nv, range(1, 7))
        err = _scaled_norm(h * self._E.dot(K), y0, y1, self.rtol, self.atol)
        accepted, h_next = self._decide(h, err)
        interp = self._interp(system, q, y0, h, K, y1, nv)
        return Step(t, h, q, v, a0, t + h, q1, v1, K[6, nv:].copy() if accepted else None, accepted, err,
                    h_next, n + 6, interp)

    def _interp(self, system, q0, y0, h, K, y1, nv):
        """Hairer's continuous extension (contd5) in the chart at q0; coefficients built on first use."""
        coef: list[np.ndarray] = []

        def interp(theta: float):
            if not coef:
                r2 = y1 - y0
                r3 = h * K[0] - r2
                coef.extend((r2, r3, r2 - h * K[6] - r3, h * (self._D @ K)))
            r2, r3, r4, r5 = coef
            s = 1.0 - theta
            y = y0 + theta * (r2 + s * (r3 + theta * (r4 + s * r5)))
            return system.integrate(q0, y[:nv]), y[nv:]

        return interp


@dataclass(frozen=True)
class _Tableau:
    A: np.ndarray
    C: list
    E3: np.ndarray
    E5: np.ndarray
    D: np.ndarray


_DOP853: list[_Tableau] = []


def _dop853_tableau() -> _Tableau:
    """Hairer's DOP853 coefficients (16 stages: 12 + FSAL + 3 for dense output), taken from SciPy."""
    if not _DOP853:
        from scipy.integrate._ivp import dop853_coefficients as c
        _DOP853.append(_Tableau(np.array(c.A, dtype=float), [float(x) for x in c.C], np.array(c.E3, dtype=float),
                                np.array(c.E5, dtype=float), np.array(c.D, dtype=float)))
    return _DOP853[0]


class DormandPrince853(_EmbeddedRK):
    """Dormand--Prince 8(5,3) (Hairer's DOP853), FSAL, adaptive, with a 7th-order dense output.

    Twelve evaluations per step (eleven stages and the FSAL one at the step's end); for the
    same accuracy it takes far fewer steps than dopri5 at tight tolerances. The error norm
    is Hairer's: the 5th- and 3rd-order estimates e5, e3 scaled as in :class:`DormandPrince5`,
    ``err = h |e5|^2 / sqrt(N (|e5|^2 + 0.01 |e3|^2))``, step exponent -1/8. The dense output
    needs three more evaluations, made on its first use (event isolation), not counted in
    ``Step.evaluations``; the system must not change between the step and that use.
    Options as :class:`DormandPrince5`. Coefficients from SciPy's ``dop853_coefficients``.
    """

    name, order = "dop853", 8
    _exponent = -1.0 / 8.0

    def __init__(self, rtol: float = 1e-6, atol: float = 1e-9, safety: float = 0.9, fac_min: float = 0.2,
                 fac_max: float = 10.0, h_max: float = math.inf):
        super().__init__(rtol, atol, safety, fac_min, fac_max, h_max)
        self._tab = _dop853_tableau()

    def step(self, system, t, q, v, h, a0=None):
        h = _check_h(h, self.name)
        a0, n = _start_accel(system, t, q, v, a0)
        nv = v.shape[0]
        tab = self._tab
        K, y0 = _first_stage(q, v, a0, 16)
        hA = h * tab.A  # row 12 is B: stage 12 is the FSAL evaluation at y1
        y1, q1, v1 = _rk_stages(system, t, q, y0, h, hA, tab.C, K, nv, range(1, 13))
        err = self._error(K, h, y0, y1)
        accepted, h_next = self._decide(h, err)
        interp = self._interp(system, t, q, y0, h, hA, K, y1, nv)
        return Step(t, h, q, v, a0, t + h, q1, v1, K[12, nv:].copy() if accepted else None, accepted, err,
                    h_next, n + 12, interp)

    def _error(self, K: np.ndarray, h: float, y0: np.ndarray, y1: np.ndarray) -> float:
        sc = _scale(y0, y1, self.rtol, self.atol)
        e5 = self._tab.E5.dot(K[:13]) / sc
        e3 = self._tab.E3.dot(K[:13]) / sc
        n5, n3 = float(e5.dot(e5)), float(e3.dot(e3))
        if n5 == 0.0 and n3 == 0.0:
            return 0.0
        return h * n5 / math.sqrt((n5 + 0.01 * n3) * sc.size)

    def _interp(self, system, t, q0, y0, h, hA, K, y1, nv):
        """DOP853's 7th-order continuous extension in the chart at q0 (3 evaluations on first use)."""
        coef: list[np.ndarray] = []
        tab = self._tab

        def interp(theta: float):
            if not coef:
                _rk_stages(system, t, q0, y0, h, hA, tab.C, K, nv, range(13, 16))
                d = y1 - y0
                coef.extend([d, h * K[0] - d, 2.0 * d - h * (K[12] + K[0]), *(h * tab.D.dot(K))])
            y = np.zeros_like(y0)
            for i, f in enumerate(reversed(coef)):
                y += f
                y *= theta if i % 2 == 0 else 1.0 - theta
            return system.integrate(q0, (y0 + y)[:nv]), (y0 + y)[nv:]

        return interp


# -------------------------------------------------------------------------- registry
_REGISTRY: dict[str, type[Integrator]] = {
    cls.name: cls for cls in (ExplicitEuler, SemiImplicitEuler, RK4, AdamsBashforthMoulton4, DormandPrince5,
                              DormandPrince853)
}


def _registry() -> dict[str, type[Integrator]]:
    """The registry, with the variational integrator (its own module: it needs the model, not only a(t, q, v))."""
    if "variational" not in _REGISTRY:
        from .variational import VariationalMidpoint
        _REGISTRY[VariationalMidpoint.name] = VariationalMidpoint
    return _REGISTRY


def integrator_names() -> list[str]:
    """The names :func:`make_integrator` accepts."""
    return list(_registry())


def make_integrator(name: str, **options) -> Integrator:
    """A new integrator by name (``euler``, ``semi_implicit_euler``, ``rk4``, ``abm4``, ``dopri5``, ``dop853``).

    Options go to the method's constructor (``dopri5``, ``dop853``: rtol, atol, safety, fac_min, fac_max,
    h_max; ``abm4``: rtol, atol). Raises UnknownNameError for an unknown name and
    IntegratorError for an option the method does not take.
    """
    cls = _registry().get(name)
    if cls is None:
        raise UnknownNameError("integrator", str(name), _REGISTRY)
    params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    bad = sorted(set(options) - set(params))
    if bad:
        allowed = ", ".join(params) if params else "none"
        raise IntegratorError(f"integrator {name!r} takes no option(s) {', '.join(bad)}; its options: {allowed}")
    return cls(**options)


# ----------------------------------------------------------------------------- drivers
def step_until_accepted(integrator: Integrator, system: System, t: float, q, v, h: float, a0=None, *,
                        h_min: float = 1e-12, max_rejections: int = 60) -> Step:
    """Repeat ``integrator.step`` with ``h_next`` until a step is accepted; raises SimulationError."""
    for _ in range(max_rejections + 1):
        s = integrator.step(system, t, q, v, h, a0)
        if s.accepted:
            return s
        a0 = s.a0
        h = s.h_next
        if h < h_min:
            break
    raise SimulationError(
        f"{integrator.name}: no acceptable step from t = {t:.9g} s (last h = {h:.3g} s, error norm {s.error:.3g}); "
        "the dynamics may be stiff or non-smooth here: loosen rtol/atol or check the model", time=t)


def advance(integrator: Integrator, system: System, t0: float, q0, v0, t_end: float, h: float,
            on_step: Callable[[Step], None] | None = None, max_steps: int = 10_000_000) -> tuple[np.ndarray, np.ndarray, int]:
    """Integrate from t0 to exactly t_end (s) starting with step h (s); returns (q, v, accepted steps).

    Adaptive methods follow ``h_next``; the last step is shortened to land on t_end. The end
    acceleration of a step is passed on as the next ``a0`` (the system must not change in
    between). ``on_step`` sees every accepted step.
    """
    h = _check_h(h, integrator.name)
    t, q, v, a = float(t0), np.asarray(q0, dtype=float), np.asarray(v0, dtype=float), None
    steps = 0
    while t_end - t > 1e-12 * max(1.0, abs(t_end)):
        if steps >= max_steps:
            raise SimulationError(f"{integrator.name}: more than {max_steps} steps before t_end = {t_end} s", time=t)
        remaining = t_end - t
        h_try = remaining if h >= remaining * (1.0 - 1e-9) else h
        s = step_until_accepted(integrator, system, t, q, v, h_try, a)
        if on_step is not None:
            on_step(s)
        t = t_end if s.h == remaining else s.t1
        q, v, a = s.q1, s.v1, s.a1
        if integrator.adaptive:
            h = s.h_next
        steps += 1
    return q, v, steps
