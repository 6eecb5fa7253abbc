"""Event sources and the isolation of event times (the thesis' Fig. 5.1).

An event source (:class:`controlkit.events.EventSource`, re-exported here) exposes guard
functions whose sign change (from > 0 to <= 0) marks an event, a time tolerance and a kind:

- ``"velocity"``: the state's velocities jump (impacts, joint locks);
- ``"acceleration"``: the equation set changes (contact made or broken,
  stick/slip, control-program conditions).

The simulator collects guards after every proposed step, isolates the earliest
crossing to within the tolerance on the step's dense output (safeguarded regula falsi),
re-integrates to that time, handles velocity events first, recomputes the
accelerations, then handles acceleration events and restarts the integrator.
"""
from __future__ import annotations

import numpy as np

from controlkit.events import EventKind, EventSource  # noqa: F401  (the protocol lives in the core)

VELOCITY, ACCELERATION = EventKind.VELOCITY, EventKind.ACCELERATION


def crossed(g0: np.ndarray, g1: np.ndarray) -> np.ndarray:
    """Boolean mask of guards that went from > 0 to <= 0."""
    return (g0 > 0.0) & (g1 <= 0.0)


def isolate(source: EventSource, sim, step, g0: np.ndarray, mask: np.ndarray,
            g1: np.ndarray | None = None) -> float:
    """Earliest step fraction theta in (0, 1] where one of the masked guards reaches <= 0.

    Args:
        source: the event source; sim: the simulator (passed to its guards); step: the step
            (dense output ``step.dense(theta) -> (q, v)``, ``t0``, ``h`` in s).
        g0: the source's guards at the step's start; mask: those that crossed in the step.
        g1: the guards at the step's end (evaluated here when not given).

    The bracket ``[lo, hi]`` (all masked guards > 0 at lo, one <= 0 at hi) shrinks by the
    Anderson-Bjorck variant of regula falsi: the next trial is where the first masked guard
    reaches zero on the chords between the ends, half a tolerance past it away from the end that
    moved last (near convergence it lands beyond the root and closes the bracket); an end kept
    twice in a row has its guards scaled down so the other end moves too; a trial that has not
    halved the bracket over two iterations is a bisection instead (guards that jump, like a
    program's boolean conditions). Smooth guards take a handful
    of trials where bisection takes log2(h / tolerance) (about 20 at 1 ns in a 1 ms step).
    Stops when the bracket is below the source's tolerance; returns its upper end, where the
    guard is already <= 0.
    """
    h = step.h
    tol = max(source.tolerance, 1e-15) / max(h, 1e-300)
    if g1 is None:
        q, v = step.dense(1.0)
        g1 = source.guards(sim, step.t0 + h, q, v)
    lo, hi = 0.0, 1.0
    glo, ghi = np.asarray(g0, dtype=float)[mask], np.asarray(g1, dtype=float)[mask]
    kept = 0  # -1: lo kept last time (hi moved), +1: hi kept last time (lo moved)
    widths: list[float] = []  # the bracket's width before each trial
    while hi - lo > tol:
        width = hi - lo
        if len(widths) >= 2 and width > 0.5 * widths[-2]:  # not halved over two trials: bisect
            mid = lo + 0.5 * width
        else:
            # half a tolerance past the chord's root, away from the end that moved last: near
            # convergence that trial lands on the other side of the root and closes the bracket
            mid = lo + width * _first_chord_root(glo, ghi) + 0.5 * tol * kept
            mid = min(max(mid, lo + 0.25 * tol), hi - 0.25 * tol)  # strictly inside
        widths.append(width)
        q, v = step.dense(mid)
        g = source.guards(sim, step.t0 + mid * h, q, v)[mask]
        if np.any(g <= 0.0):  # masked guards were all > 0 at the start: this is a crossing
            if kept == -1:
                glo = glo * _shrink(g, ghi)
            hi, ghi, kept = mid, g, -1
        else:
            if kept == 1:
                ghi = ghi * _shrink(g, glo)
            lo, glo, kept = mid, g, 1
    return hi


def _shrink(g_new: np.ndarray, g_old: np.ndarray) -> np.ndarray:
    """Anderson-Bjorck factor for the kept end's guards, when the other end moved twice: how much
    the moving end's guard shrank, ``1 - g_new / g_old``, or 1/2 where that is not in (0, 1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        m = 1.0 - g_new / g_old
    return np.where((m > 0.0) & (m < 1.0), m, 0.5)


def _first_chord_root(glo: np.ndarray, ghi: np.ndarray) -> float:
    """Fraction in [0, 1] of the bracket where the first guard reaches zero on the chord from its
    value at the lower end (> 0) to that at the upper end (the guards <= 0 there only)."""
    c = ghi <= 0.0
    a, b = glo[c], ghi[c]
    return float(np.min(a / (a - b))) if a.size else 0.5


def bool_guard(condition: bool) -> float:
    """A guard value for a boolean condition: +1 while false, -1 once true."""
    return -1.0 if condition else 1.0


def same_guard_key(a: tuple, b: tuple) -> bool:
    """Two guard-cache keys of :meth:`sim.simulator.Simulator._guard_key` name the same sources, time, state
    arrays, statement version and solution (objects by identity)."""
    return (len(a[0]) == len(b[0]) and all(x is y for x, y in zip(a[0], b[0])) and a[1] == b[1]
            and a[2] is b[2] and a[3] is b[3] and a[4] == b[4] and a[5] is b[5] and a[6] == b[6])


def fired_sources(sources, before: list[np.ndarray], now: list[np.ndarray]) -> list:
    """``(source, guards before, crossed mask)`` of the sources whose guards crossed between
    ``before`` and ``now`` at one instant (a source whose guard count changed is its own business)."""
    fired = []  # (every step: a loop, no comprehension objects)
    for s, g, g1 in zip(sources, before, now):
        if g.shape == g1.shape:
            mask = crossed(g, g1)
            if True in mask.tolist():
                fired.append((s, g, mask))
    return fired


def guards_after_control(source: EventSource, sim, before: np.ndarray) -> np.ndarray:
    """A source's guards at the simulator's state after a control phase (an
    :class:`EventSource` may recompute only what changed since ``before``)."""
    return source.guards_after_control(sim, sim.t, sim.q, sim.v, before)
