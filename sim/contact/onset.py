"""A slide's onset from rest along a direction its slip will follow, or Painlevé's jam where none does.

A sticking contact whose static friction leaves its cone slides from rest, first along the static
force (Coulomb's maximal dissipation at zero slip). With several contacts coupled through the bodies
(a box on one corner leaning on another) the slip that kinetic friction along that direction lets
develop can run off it, or even against it and against its reverse: no sliding direction is
consistent, Painlevé's inconsistency. Modes chosen one contact at a time then chatter (stick fails,
the slide's slip stops within ~0.1 ms, it sticks, stick fails ...: ~2000 events per simulated
second). Here the onset direction is the one along which the slip accelerates: the slip's
acceleration ``a_t`` is measured under the trial direction (:func:`slip_acceleration`), and where
it is more than ``acos(ALONG_COS)`` off, the tangent directions are scanned for one that ``a_t``
runs along (:func:`consistent_direction`). Where none exists the contact jams: it keeps sticking
(:meth:`ContactHinge.jam`), its friction outside its cone, until that friction returns inside the
cone or the next contact event judges it again (its guard: :meth:`ContactSource._force_guards`)."""
from __future__ import annotations

import math

import numpy as np

from controlkit.errors import InconsistentEquationsError

from .hinge import ContactHinge

#: a slip's acceleration within acos(0.99) (8.1 degrees) of its onset direction runs along it
ALONG_COS = 0.99
#: tangent directions tried (evenly spaced) when it does not
SCAN = 16
#: bisections of a bracketed consistent direction (2 pi / SCAN / 2**12: 0.1 mrad)
BISECT = 12
#: s: the time step of the slip acceleration's finite difference
FD_STEP = 1e-6
#: m/s^2: a slip accelerating slower than this develops in no direction (any onset is consistent)
STILL = 1e-9


def slip_acceleration(sim, h: ContactHinge) -> np.ndarray:
    """The acceleration (3,) (m/s^2, world, in the tangent plane) of ``h``'s slip at its support
    centroid under the simulator's statements and the hinges' current modes: its tangential
    velocity's finite difference over ``FD_STEP`` along the solved accelerations."""
    mech, q, v = sim.mech, sim.q, sim.v
    a = sim.solve_now().a
    mech.set_state(q, v, check=False)
    vt0 = h.tangential_velocity()
    mech.set_state(mech.integrate(q, FD_STEP * v), v + FD_STEP * a, check=False)
    vt1 = h.tangential_velocity()
    mech.set_state(q, v, check=False)
    return (vt1 - vt0) / FD_STEP


def _turn(sim, h: ContactHinge, d: np.ndarray, onset_speed: float) -> float:
    """The angle (rad, in (-pi, pi]) from ``d`` (world, unit) to the slip's acceleration with ``h``
    sliding from rest along ``d``, about the contact normal; NaN where the statements cannot be
    solved with that friction (the supports' rows inconsistent: no acceleration to follow)."""
    h.slide(d, onset_speed=onset_speed)
    try:
        at = slip_acceleration(sim, h)
    except InconsistentEquationsError:
        return math.nan
    n = h.sides()[0][2]
    return math.atan2(float(at @ np.cross(n, d)), float(at @ d))


def consistent_direction(sim, h: ContactHinge, d: np.ndarray, onset_speed: float) -> np.ndarray | None:
    """The onset direction (world, unit) nearest ``d`` along which ``h``'s slip from rest
    accelerates (within ``acos(ALONG_COS)``), or None when no tangent direction is (Painlevé's
    inconsistency). Leaves ``h`` sliding from rest along the last direction tried.

    ``d`` itself when its slip runs along it (one solve); else ``SCAN`` directions, and each
    bracket where the angle from direction to acceleration changes sign below 90 degrees
    bisected ``BISECT`` times (each trial one solve). A trial whose statements cannot be solved
    (the supports' rows inconsistent with that friction) brackets nothing; ``d`` itself is then taken
    (the support choice gives up a point, as for any slide)."""
    h.slide(d, onset_speed=onset_speed)
    try:
        at = slip_acceleration(sim, h)
    except InconsistentEquationsError:
        return d  # (no acceleration to follow: the support choice gives up a point, as for any slide)
    size = float(np.linalg.norm(at))
    if size <= STILL or at @ d >= ALONG_COS * size:
        return d
    n = h.sides()[0][2]
    t1 = d - (d @ n) * n
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(n, t1)

    def along(th: float) -> np.ndarray:
        return math.cos(th) * t1 + math.sin(th) * t2

    angles = [2.0 * math.pi * i / SCAN - math.pi for i in range(SCAN + 1)]
    turns = [_turn(sim, h, along(th), onset_speed) for th in angles[:-1]]
    turns.append(turns[0])  # (-pi and pi: one direction)
    roots = []
    for i in range(SCAN):
        lo, hi, flo, fhi = angles[i], angles[i + 1], turns[i], turns[i + 1]
        if not (abs(flo) < 0.5 * math.pi and abs(fhi) < 0.5 * math.pi and (flo <= 0.0) != (fhi <= 0.0)):
            continue  # (a sign change through +-pi is the acceleration against the direction: no root; NaN: none)
        for _ in range(BISECT):
            mid = 0.5 * (lo + hi)
            fm = _turn(sim, h, along(mid), onset_speed)
            if math.isnan(fm):
                break  # (the bracket's best estimate so far stands)
            if (fm <= 0.0) == (flo <= 0.0):
                lo, flo = mid, fm
            else:
                hi = mid
        roots.append(0.5 * (lo + hi))
    if not roots:
        return None
    best = min(roots, key=lambda th: abs(math.remainder(th, 2.0 * math.pi)))
    return along(best)


def stick_guard(h: ContactHinge, margin: float) -> float:
    """A sticking hinge's friction guard from its static margin (N: ``mu_s f_n - |f_t|``): the margin,
    which crosses 0 where static friction leaves its cone; for a jammed hinge (friction outside
    its cone, ``ContactHinge.jammed``) its negation, which crosses 0 where friction returns inside."""
    return -margin if h.jammed else margin
