"""What the time integrators share: the simulated system's protocol, a step's result and its
interpolants, error norms, and the :class:`Integrator` base class.

The methods themselves are in :mod:`sim.integrators` (fixed-step and multistep) and
:mod:`sim.embedded_rk` (the adaptive embedded Runge--Kutta pairs). Times in seconds.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Callable, Protocol, runtime_checkable

import numpy as np
import pinocchio as pin

from controlkit.errors import ControlkitError, SimulationError


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


_F64 = np.dtype(float)


def _probe(model: pin.Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A probe of the configuration group: neutral q, a step dq (nv,) and dIntegrate(q, dq) (nv, nv)."""
    q = pin.neutral(model)
    dq = np.linspace(0.3, 0.7, model.nv)
    return q, dq, pin.dIntegrate(model, q, dq, pin.ArgumentPosition.ARG1)


def _is_flat(model: pin.Model) -> bool:
    """True when every joint integrates as a vector space (nq == nv and dIntegrate == identity)."""
    if model.nq != model.nv:
        return False
    if model.nv == 0:
        return True
    q, dq, D = _probe(model)
    return bool(np.allclose(D, np.eye(model.nv), atol=1e-14) and np.allclose(pin.integrate(model, q, dq), q + dq))


class PinocchioSystem:
    """A :class:`System` on a Pinocchio model's configuration group.

    Args:
        model: the ``pinocchio.Model`` whose group (free-flyer, spherical, ...) q lives on.
        accel_fn: ``accel_fn(t, q, v) -> a`` (s, model units) — e.g. ``pin.aba`` with some torques.

    ``evaluations`` counts calls to :meth:`accel`. ``flat`` is True when nq == nv and all
    joints are Euclidean; then :meth:`dintegrate` returns None and q (+) dq = q + dq.
    ``borrows`` is True when ``accel_fn`` reads q and v during the call only (keeps no reference
    to them): an integrator may then pass views of its own scratch buffers (see
    :meth:`with_accel`); False (the default) passes arrays nothing overwrites later.
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
        self.rate_blocks = None if self.flat or self.nv < RATE_BLOCKS_MIN_NV else _rate_blocks(model)
        self.borrows = False
        self.evaluations = 0
        self._arg1 = pin.ArgumentPosition.ARG1

    def with_accel(self, accel_fn: Callable[[float, np.ndarray, np.ndarray], np.ndarray],
                   borrows: bool = False) -> "PinocchioSystem":
        """The same model's system with another ``accel_fn`` (the group's flatness is not tested again)."""
        other = copy.copy(self)
        other.accel_fn, other.borrows, other.evaluations = accel_fn, bool(borrows), 0
        return other

    def accel(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        self.evaluations += 1
        a = self.accel_fn(t, q, v)
        # (Pinocchio returns float64 ndarrays: np.asarray's call costs more than this test, every stage)
        return a if type(a) is np.ndarray and a.dtype is _F64 else np.asarray(a, dtype=float)

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


#: velocities from which :func:`_rate` solves dIntegrate's joint blocks rather than the whole matrix
#: (measured per call: 18 velocities 16 vs 12 us, 30: 16 vs 15, 72: 51 vs 24, 120: 172 vs 39)
RATE_BLOCKS_MIN_NV = 48


def _rate_blocks(model: pin.Model) -> list[tuple[np.ndarray, np.ndarray]]:
    """The diagonal blocks of ``dIntegrate`` that are not the identity, grouped by size: per size s,
    ``(rows, cols)`` index arrays of shape (k, s, s) and ``(k, s)`` velocity indices, k the joints.

    Each joint's q (+) dq depends on its own coordinates alone, so ``dIntegrate`` is block-diagonal
    by joint; Euclidean joints (revolute, prismatic, translation) give identity blocks, free-flyers
    6 x 6 and spherical or planar joints 3 x 3 ones. Solving those blocks alone costs k small
    solves instead of one nv x nv (a 20-ball cradle, nv = 120: ~0.1 ms per RK stage)."""
    D = _probe(model)[2]
    starts: dict[int, list[int]] = {}
    for j in model.joints[1:]:
        i, n = j.idx_v, j.nv
        if n and not np.allclose(D[i:i + n, i:i + n], np.eye(n), atol=1e-14):
            starts.setdefault(n, []).append(i)
    out = []
    for n, ss in sorted(starts.items()):
        s0 = np.array(ss)[:, None]
        r = np.arange(n)
        out.append(((s0[:, :, None] + r[None, :, None], s0[:, :, None] + r[None, None, :]), s0 + r[None, :]))
    return out


def _rate(system: System, q0: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """u' = dintegrate(q0, u)^{-1} v: the local-coordinate rate of q0 (+) u moving with velocity v.

    On a :class:`PinocchioSystem` of ``RATE_BLOCKS_MIN_NV`` velocities or more only the joints'
    non-identity diagonal blocks are solved (:func:`_rate_blocks`); otherwise the whole matrix.
    (The two agree to round-off: a few ulp.)"""
    D = system.dintegrate(q0, u)
    if D is None:
        return v
    blocks = getattr(system, "rate_blocks", None)
    try:
        if blocks is None:
            return np.linalg.solve(D, v)
        w = v.copy()
        for (rows, cols), iv in blocks:
            w[iv] = np.linalg.solve(D[rows, cols], v[iv][..., None])[..., 0]
        return w
    except np.linalg.LinAlgError:
        # (dintegrate is singular where a free or spherical joint turns by a multiple of 2 pi within
        # one stage: only a blown-up state, or a step far too long for its rotations, gets there)
        raise SimulationError(
            f"the configuration's local-coordinate rate is singular at a stage increment of largest "
            f"entry {float(np.abs(u).max()):.3g} (m or rad), velocities up to {float(np.abs(v).max()):.3g} "
            "(m/s or rad/s): the state blew up, or the step is too long for its rotations") from None


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
    #: whether the method needs nothing from the system but :meth:`System.accel` and the group
    #: operations (a system with a bare ``accel_fn``, not the simulator's own, may step it)
    bare_ok: bool = False

    def reset(self) -> None:
        """Forget any history (multistep methods restart, adaptive ones forget controller state)."""

    def step(self, system: System, t: float, q: np.ndarray, v: np.ndarray, h: float, a0: np.ndarray | None = None) -> Step:
        """Attempt a step of h seconds from (t, q, v); ``a0`` is a(t, q, v) if the caller has it."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, order={self.order})"
