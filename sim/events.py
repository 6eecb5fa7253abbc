"""Event sources and the isolation of event times (the thesis' Fig. 5.1).

An event source exposes guard functions whose sign change (from > 0 to <= 0)
marks an event, a time tolerance and a kind:

- ``"velocity"``: the state's velocities jump (impacts, joint locks);
- ``"acceleration"``: the equation set changes (contact made or broken,
  stick/slip, control-program conditions).

The simulator collects guards after every proposed step, isolates the earliest
crossing to within the tolerance by bisection on the step's dense output,
re-integrates to that time, handles velocity events first, recomputes the
accelerations, then handles acceleration events and restarts the integrator.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VELOCITY, ACCELERATION = "velocity", "acceleration"


class EventSource:
    """Base class for sources of events; subclasses implement ``guards`` and ``handle``.

    Attributes:
        name: label used in the recording.
        kind: ``"velocity"`` or ``"acceleration"``.
        tolerance: time tolerance of isolation (s).
    """

    name = "event"
    kind = ACCELERATION
    tolerance = 1e-6

    def guards(self, sim, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Guard values at a state (k,): an event happens when one goes from > 0 to <= 0."""
        raise NotImplementedError

    def handle(self, sim, t: float, fired: np.ndarray) -> None:
        """React at the event time (the simulator's state is there); may change v, constraints, equations."""
        raise NotImplementedError

    def max_step(self, sim, t: float, q: np.ndarray, v: np.ndarray) -> float:
        """Largest step (s) that cannot skip an event of this source (anti-tunnelling); inf if none."""
        return np.inf

    def active(self) -> bool:
        """Whether the source currently watches anything (inactive sources are skipped)."""
        return True


@dataclass
class Crossing:
    """A guard crossing found in a step: the source, which guards, bracket in step fraction."""

    source: EventSource
    theta: float
    fired: np.ndarray


def crossed(g0: np.ndarray, g1: np.ndarray) -> np.ndarray:
    """Boolean mask of guards that went from > 0 to <= 0."""
    return (g0 > 0.0) & (g1 <= 0.0)


def isolate(source: EventSource, sim, step, g0: np.ndarray, mask: np.ndarray) -> float:
    """Earliest step fraction theta in (0, 1] where one of the masked guards reaches <= 0.

    Bisection on the dense output; stops when the bracket is below the source's tolerance.
    Returns the upper end of the bracket, so the guard is already <= 0 there.
    """
    lo, hi = 0.0, 1.0
    h = step.h
    tol = max(source.tolerance, 1e-15) / max(h, 1e-300)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        q, v = step.dense(mid)
        g = source.guards(sim, step.t0 + mid * h, q, v)
        if np.any(crossed(g0[mask], g[mask])):
            hi = mid
        else:
            lo = mid
    return hi


def bool_guard(condition: bool) -> float:
    """A guard value for a boolean condition: +1 while false, -1 once true."""
    return -1.0 if condition else 1.0
