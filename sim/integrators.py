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
from typing import Callable

import numpy as np

from controlkit.errors import SimulationError, UnknownNameError

# re-exported: the shared parts and the adaptive pairs are importable from this module too
from .embedded_rk import DormandPrince5, DormandPrince853, _check_tolerances, _EmbeddedRK  # noqa: F401
from .integrator_base import (  # noqa: F401
    Integrator,
    IntegratorError,
    PinocchioSystem,
    Step,
    System,
    _check_h,
    _hermite_interp,
    _is_flat,
    _linear_interp,
    _rate,
    _scale,
    _scaled_norm,
    _start_accel,
)

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



class ExplicitEuler(Integrator):
    """Explicit Euler: q1 = q0 (+) h v0, v1 = v0 + h a0 (order 1; energy grows on oscillators)."""

    name, order = "euler", 1
    bare_ok = True

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
    bare_ok = True

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


_RK4_WEIGHTS = np.array([1.0, 2.0, 2.0, 1.0])  # times h / 6


def _rk4_core(system: System, t: float, q, v, h: float, a0: np.ndarray, scratch: "_RK4Scratch | None" = None):
    """Classic RK4 in the chart at q: returns q1, v1, u1 and the stage rates W, K (4, nv). 3 evaluations.

    On a flat group with ``scratch`` (:class:`_RK4Scratch`) the stages run in its preallocated
    buffers (:func:`_rk4_flat`: the same stage values; the end state within an ulp)."""
    if scratch is not None and scratch.fits(system, v):
        return _rk4_flat(system, t, q, v, h, a0, scratch)
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
    wts = _RK4_WEIGHTS * (h / 6.0)
    u1 = wts @ W
    v1 = v + wts @ K
    return system.integrate(q, u1), v1, u1, W, K


class _RK4Scratch:
    """RK4's stage storage on a flat group of nv coordinates, allocated once with its views.

    Row i of ``G`` (4, 3 nv) is stage i's (q_i, v_i, a_i): its state x_i = (q_i, v_i) = G[i, :2nv]
    and its derivative f_i = (v_i, a_i) = G[i, nv:] are contiguous, so a stage's
    ``x_i = x_0 + h_i f_{i-1}`` is one product and one sum over q and v together (elementwise
    the operations q + h_i W and v + h_i K), and the step's ``x_0 + (h/6) (f_0 + 2 f_1 + 2 f_2 + f_3)``
    one matrix-vector product over the rows' derivatives and one sum. Row 0 is the step's start.
    """

    def __init__(self, nv: int):
        G = np.zeros((4, 3 * nv))
        self.nv, self.G, self.Fs = nv, G, G[:, nv:]
        self.X = [G[i, :2 * nv] for i in range(4)]
        self.F = [G[i, nv:] for i in range(4)]
        self.Q = [G[i, :nv] for i in range(4)]
        self.V = [G[i, nv:2 * nv] for i in range(4)]
        self.A = [G[i, 2 * nv:] for i in range(4)]
        self.T = np.empty(2 * nv)

    def fits(self, system: System, v: np.ndarray) -> bool:
        """Whether these buffers serve a step of ``system`` from velocity v: a flat group of nv coordinates."""
        return v.shape[0] == self.nv and getattr(system, "flat", False) is True

    def stages(self, accel: Callable, borrows: bool, t: float, h: float) -> None:
        """Stages 1-3 of a step of h (s) from (t, Q[0], V[0]) with A[0] = a there: ``accel(t, q, v)``
        on views of the buffers (``borrows``) or on copies."""
        X, F, Q, V, A, T = self.X, self.F, self.Q, self.V, self.A, self.T
        X0 = X[0]
        multiply, add = np.multiply, np.add
        h2 = 0.5 * h
        for i, c in ((1, h2), (2, h2), (3, h)):
            multiply(F[i - 1], c, out=T)
            add(X0, T, out=X[i])
            A[i][...] = accel(t + c, Q[i], V[i]) if borrows else accel(t + c, Q[i].copy(), V[i].copy())

    def step_aba(self, aba: Callable, model, data, gen: np.ndarray, h: np.ndarray, h2: np.ndarray,
                 wts: np.ndarray, out: "_RK4Scratch") -> None:
        """One step of h (s) from row 0 (Q[0], V[0], A[0]) for ``a = aba(model, data, q, v, gen)``
        (time-invariant: Pinocchio's ``pin.aba`` with fixed generalized forces gen (nv,)), its end
        state into ``out``'s X[0]. ``h``, ``h2`` = h / 2 are 0-d arrays (numpy converts a Python
        float at every call), ``wts`` = (1, 2, 2, 1) h / 6. The operations of :meth:`stages` and
        :func:`_rk4_flat`, in their order."""
        X, F, Q, V, A, T = self.X, self.F, self.Q, self.V, self.A, self.T
        X0, multiply, add = X[0], np.multiply, np.add
        multiply(F[0], h2, T)
        add(X0, T, X[1])
        A[1][...] = aba(model, data, Q[1], V[1], gen)
        multiply(F[1], h2, T)
        add(X0, T, X[2])
        A[2][...] = aba(model, data, Q[2], V[2], gen)
        multiply(F[2], h, T)
        add(X0, T, X[3])
        A[3][...] = aba(model, data, Q[3], V[3], gen)
        add(X0, wts @ self.Fs, out.X[0])


def _rk4_flat(system: System, t: float, q, v, h: float, a0: np.ndarray, s: _RK4Scratch):
    """:func:`_rk4_core` on a flat group in ``s``'s buffers: the stages' operations are the same
    (the stage rates W, K bit-identical); the step's sum is one product over both, (u1, dv) =
    (h/6) (1, 2, 2, 1) (W | K), rounded as one BLAS call rounds it (within an ulp of u1, dv
    formed apart). W and K returned are a copy (the step's interpolant keeps them; the buffers
    serve the next step). A system that ``borrows`` evaluates on views of the buffers; others get copies."""
    s.Q[0][:] = q
    s.V[0][:] = v
    s.A[0][:] = a0
    s.stages(system.accel, getattr(system, "borrows", False), t, h)
    nv = s.nv
    W, K = s.Fs[:, :nv].copy(), s.Fs[:, nv:].copy()
    d = (_RK4_WEIGHTS * (h / 6.0)) @ s.Fs
    u1 = d[:nv]
    return q + u1, v + d[nv:], u1, W, K


class RK4(Integrator):
    """Classic 4th-order Runge--Kutta (Munthe-Kaas form on Lie groups); 3rd-order dense output."""

    name, order = "rk4", 4
    bare_ok = True

    def __init__(self):
        self._scratch: _RK4Scratch | None = None

    def scratch_for(self, system: System, v: np.ndarray) -> _RK4Scratch | None:
        """The stage buffers for steps of ``system`` from velocity v (nv,), or None when its group is
        not flat (then each step allocates its own)."""
        s = self._scratch
        if s is not None and s.fits(system, v):
            return s
        if getattr(system, "flat", False) is not True or not v.shape[0]:
            return None
        self._scratch = s = _RK4Scratch(v.shape[0])
        return s

    def scratch_pair(self, system: System, v: np.ndarray) -> tuple[_RK4Scratch, _RK4Scratch] | None:
        """Two stage-buffer sets for steps that alternate between them (:meth:`_RK4Scratch.step_aba`
        from one into the other keeps the step's start), or None when the group is not flat."""
        s = self.scratch_for(system, v)
        if s is None:
            return None
        other = self._other
        if other is None or other.nv != s.nv:
            self._other = other = _RK4Scratch(s.nv)
        return s, other

    _other: _RK4Scratch | None = None

    def step(self, system, t, q, v, h, a0=None):
        h = _check_h(h, self.name)
        a0, n = _start_accel(system, t, q, v, a0)
        q1, v1, u1, W, K = _rk4_core(system, t, q, v, h, a0, self.scratch_for(system, v))

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
    bare_ok = True
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
