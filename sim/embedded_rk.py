"""The adaptive embedded Runge--Kutta pairs: Dormand--Prince 5(4) and DOP853 8(5,3), with
their step-size control and dense outputs, in Munthe-Kaas form on the configuration group
(see :mod:`sim.integrators`). Times in seconds."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .integrator_base import (
    Integrator,
    IntegratorError,
    Step,
    System,
    _check_h,
    _rate,
    _scale,
    _scaled_norm,
    _start_accel,
)


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
    bare_ok = True
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
