"""The walk's plan: footsteps and a centre-of-mass path whose zero-moment point stays in the support.

:class:`WalkPlan` places the footsteps of a :class:`~controllers.gait.Gait` (Fig. 6.7's rule, in a
walk frame that may turn at every step) and computes the centre of mass's path from a linear
inverted pendulum whose ZMP rests in the stance sole (a noncausal ZMP preview, one banded solve
over the whole walk). :mod:`controllers.walking_fd` follows it. Units: m, s, rad.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.linalg import solve_banded

from controlkit.errors import ControlkitError
from controllers.arm import smooth_ramp
from controllers.gait import Gait
from controllers.primitives import Quintic

__all__ = ["WalkPlan", "Step", "DIRECTION"]

G = 9.81  # m/s^2: the pendulum's gravity
DIRECTION = np.array([1.0, 0.0, 0.0])  # the walk's direction at the start
_OTHER = {"l": "r", "r": "l"}  # the other foot


@dataclass
class Step:
    """One planned step: the swing leg's side, its heel target (m), lift-off and touchdown times (s),
    and the landed foot's heading (rad about z from the walk's start)."""

    side: str
    target: np.ndarray
    lift: float
    land: float
    heading: float = 0.0


def _yaw(angle: float) -> np.ndarray:
    """Rotation (3, 3) by ``angle`` (rad) about z."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


class WalkPlan:
    """Footsteps by part 1's rule and a centre-of-mass path whose ZMP stays in the support.

    Footsteps: each lands ``gait.stride`` ahead of the other heel and a share of the hips' width
    beside it, in the walk's frame, which turns by ``gait.turn`` at every step (``Step.heading``;
    :meth:`heading` is the walk's heading in time, which the torso follows).

    Args:
        heels: the heels' start positions ``{"l": (3,), "r": (3,)}`` (m).
        com0: the centre of mass at the start (m); steps: how many; first: the first swing side.
        gait: the steps' lengths and times, the centre of mass's height (default ``Gait()``).
        zmp_from_heel: how far ahead of a stance heel its ZMP rests (m): mid-sole.

    The ZMP reference ``p(t)`` rests at mid-sole of the stance foot during a swing and moves
    (quintic ramp) to the landed foot during double support; the horizontal centre of mass
    is the bounded solution of the linear inverted pendulum ``x'' = w^2 (x - p)``, ``w^2 = g / z``,
    computed on a 5 ms grid as one banded (tridiagonal) system over the whole walk, the noncausal
    ZMP preview. Its first ``gait.start`` s are a quintic from rest onto that solution (the
    weight shift before the first lift-off). Height: lowered to ``gait.com_height`` (or by
    ``gait.com_drop``) in the first second.
    """

    def __init__(self, heels: dict, com0, steps: int, first: str = "r", *, gait: Gait | None = None,
                 zmp_from_heel: float = 0.1, h: float = 5e-3):
        if set(heels) != {"l", "r"} or first not in heels:
            raise ControlkitError(f"WalkPlan: heels must be given for sides 'l' and 'r', first one of them; "
                                  f"got {sorted(heels)}, first {first!r}")
        self.gait = gait = gait or Gait()
        double_support, start = gait.double_support, gait.start
        self.com0 = np.asarray(com0, dtype=float)
        squat = gait.com_drop if gait.com_height is None else float(self.com0[2]) - gait.com_height
        self.z = self.com0[2] - squat
        self.w = math.sqrt(G / self.z)
        self.squat = squat
        self.steps = self._footsteps(heels, steps, first)
        self.end = (self.steps[-1].land if self.steps else start) + double_support + 1.0
        self.knots = self._zmp_knots(heels, first, zmp_from_heel)
        self._fit_com(h)
        # the weight shift from rest: a quintic onto the pendulum's solution at gait.start
        ts = start if self.steps else 0.0
        if ts > 0:
            self._shift = Quintic(self.com0[:2], np.zeros(2), self._spline(ts), self._spline(ts, 1), 0.0, ts)
            self._shift_a = self._spline(ts, 2)
        self._ts = ts

    def _footsteps(self, heels: dict, steps: int, first: str) -> list[Step]:
        """The ``steps`` footsteps from the standing heels (m), alternating from ``first``."""
        gait = self.gait
        heel = {s: np.asarray(p, dtype=float).copy() for s, p in heels.items()}
        for p in heel.values():
            p[2] = 0.0
        out: list[Step] = []
        swing, t, heading = first, gait.start, 0.0
        for _ in range(steps):
            stance = _OTHER[swing]
            hip_to_hip = heels[swing] - heels[stance]  # the standing feet are below the hips
            sideways = hip_to_hip - (hip_to_hip @ DIRECTION) * DIRECTION
            sideways[2] = 0.0
            forward = DIRECTION
            if gait.turn:  # each step turns the walk's frame by gait.turn about z
                heading += gait.turn
                forward, sideways = _yaw(heading) @ DIRECTION, _yaw(heading) @ sideways
            target = heel[stance] + gait.stride * forward + (1.0 - gait.inside_step_fraction) * sideways
            out.append(Step(swing, target, t, t + gait.step_time, heading))
            heel[swing] = target
            t += gait.step_time + gait.double_support
            swing = stance
        return out

    def _zmp_knots(self, heels: dict, first: str, zmp_from_heel: float) -> list:
        """ZMP knots (time s, point (2,) m), joined by quintic ramps: between the feet at rest,
        in the stance foot during each swing, moved over during each double support."""
        double_support = self.gait.double_support

        def zmp_of(p, heading=0.0):  # mid-sole of a foot whose heel is at p
            d = DIRECTION if heading == 0.0 else _yaw(heading) @ DIRECTION
            return (p + zmp_from_heel * d)[:2]

        h0 = {s: np.asarray(p, dtype=float).copy() for s, p in heels.items()}
        mid = 0.5 * (zmp_of(h0["l"]) + zmp_of(h0["r"]))
        knots = [(0.0, mid)]
        stand = {s: (p, 0.0) for s, p in h0.items()}  # heel, heading
        if self.steps:
            knots.append((self.gait.start, zmp_of(*stand[_OTHER[first]])))
        for st in self.steps:
            stance = _OTHER[st.side]
            knots.append((st.land, zmp_of(*stand[stance])))  # rest in the stance foot during the swing
            stand[st.side] = (st.target, st.heading)
            knots.append((st.land + double_support, zmp_of(st.target, st.heading)))  # moved over in double support
        if self.steps:
            knots[-1] = (self.steps[-1].land + double_support,
                         0.5 * (zmp_of(*stand["l"]) + zmp_of(*stand["r"])))  # the last: back between the feet
        return knots

    def _fit_com(self, h: float) -> None:
        """The COM path of the linear inverted pendulum over the ZMP path, solved as a
        boundary-value problem on a grid of step ``h`` (s) and kept as a cubic spline."""
        n = int(math.ceil(self.end / h)) + 1
        tg = np.arange(n) * h
        P = np.array([self.zmp(t) for t in tg])
        # (x[i+1] - 2 x[i] + x[i-1]) / h^2 - w^2 x[i] = -w^2 p[i]; x[0] = p[0], x[n-1] = p[n-1]
        w2h2 = (self.w * h) ** 2
        ab = np.zeros((3, n))
        ab[0, 2:] = 1.0
        ab[1, :] = -(2.0 + w2h2)
        ab[2, :-2] = 1.0
        ab[1, 0] = ab[1, -1] = 1.0
        rhs = -w2h2 * P
        rhs[0], rhs[-1] = P[0], P[-1]
        X = solve_banded((1, 1), ab, rhs)
        self._spline = CubicSpline(tg, X, axis=0)
        # breakpoints and coefficients as plain arrays: read at every servo tick (scipy's
        # properties convert on each access)
        # (per piece: the x and y coefficients, highest power first, as floats)
        self._knots = np.asarray(self._spline.x).tolist()
        self._coef = np.asarray(self._spline.c).transpose(1, 0, 2).reshape(len(self._knots) - 1, 8).tolist()

    def heading(self, t: float) -> float:
        """The walk's heading at t (rad about z): it turns to each step's heading from the step's
        lift-off to the end of its double support (a smooth ramp)."""
        return self.heading_path(t)[0]

    def heading_path(self, t: float) -> tuple[float, float, float]:
        """The walk's heading at t, its rate and acceleration (rad, rad/s, rad/s^2)."""
        out, rate, accel = 0.0, 0.0, 0.0
        for st in self.steps:
            if t <= st.lift:
                break
            T = st.land + self.gait.double_support - st.lift
            s, ds, dds = smooth_ramp(min((t - st.lift) / T, 1.0))
            turn = st.heading - out
            out, rate, accel = out + s * turn, ds * turn / T, dds * turn / T**2
        return out, rate, accel

    def zmp(self, t: float) -> np.ndarray:
        """The ZMP reference (x, y) at t (m)."""
        k = self.knots
        if t <= k[0][0]:
            return k[0][1].copy()
        for (t0, p0), (t1, p1) in zip(k, k[1:]):
            if t < t1:
                s = smooth_ramp((t - t0) / (t1 - t0))[0] if t1 > t0 else 1.0
                return p0 + s * (p1 - p0)
        return k[-1][1].copy()

    def _horizontal(self, t: float):
        if t < self._ts:
            return self._blend(t)
        return self._cubic(min(t, self.end))

    def _cubic(self, t: float):
        """The spline's value, rate and acceleration at t from its coefficients (one piece, one
        pass, in floats: read at every servo tick), as three [x, y] lists."""
        x = self._knots
        i = min(max(bisect.bisect_right(x, t) - 1, 0), len(x) - 2)
        d = t - x[i]
        out = ([], [], [])
        c = self._coef[i]
        for k in (0, 1):
            c3, c2, c1, c0 = c[k], c[2 + k], c[4 + k], c[6 + k]
            out[0].append(((c3 * d + c2) * d + c1) * d + c0)
            out[1].append((3.0 * c3 * d + 2.0 * c2) * d + c1)
            out[2].append(6.0 * c3 * d + 2.0 * c2)
        return out

    def _blend(self, t):
        # quintic with matched end acceleration: add a cubic-in-s correction for a1 (p, v unchanged at ends)
        p, v, a = self._shift(t)
        T = self._ts
        s = t / T
        # b(s) = s^3 (1 - s)^2 ... gives b(1) = b'(1) = 0, b''(1) = 2; b(0) = b'(0) = b''(0) = 0
        c = 0.5 * T * T * self._shift_a
        b, db, ddb = s**3 * (1 - s) ** 2, 3 * s**2 * (1 - s) ** 2 - 2 * s**3 * (1 - s), \
            6 * s * (1 - s) ** 2 - 12 * s**2 * (1 - s) + 2 * s**3
        return p + c * b, v + c * db / T, a + c * ddb / T**2

    def com(self, t: float):
        """The centre of mass reference (p, v, a) at t: (3,) each (m, m/s, m/s^2)."""
        x, xd, xdd = self._horizontal(t)
        s, ds, dds = smooth_ramp(t / 1.0)
        z = float(self.com0[2]) - self.squat * s
        # (one array for the three rows: read at every servo tick)
        p, v, a = np.array([x[0], x[1], z, xd[0], xd[1], -self.squat * ds,
                            xdd[0], xdd[1], -self.squat * dds]).reshape(3, 3)
        return p, v, a

    __call__ = com


