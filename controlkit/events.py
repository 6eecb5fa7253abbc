"""The event-source protocol: what the simulator asks of anything that can cause an event.

An event source exposes guard functions whose sign change (from > 0 to <= 0) marks an event,
a time tolerance (s) to which the event's time is isolated, and a kind (:class:`EventKind`):

- ``velocity``: the state's velocities jump (impacts, joint locks);
- ``acceleration``: the equation set changes (contact made or broken, stick/slip,
  control-program conditions).

The simulator (``sim``) runs the sources; the core defines the protocol so that the core's own
source, the control programs' ``until`` conditions (:mod:`controlkit.programs`), and the
simulator's sources share one base class.
"""
from __future__ import annotations

from enum import StrEnum

import numpy as np

__all__ = ["EventKind", "EventSource"]


class EventKind(StrEnum):
    """What an event changes. A string enum: ``EventKind.VELOCITY == "velocity"``."""

    #: the velocities jump (handled first at an event time)
    VELOCITY = "velocity"
    #: the equation set changes (handled after the accelerations are recomputed)
    ACCELERATION = "acceleration"


class EventSource:
    """Base class for sources of events; subclasses implement :meth:`guards` and :meth:`handle`.

    Attributes:
        name: label used in the recording.
        kind: an :class:`EventKind` (``"velocity"`` or ``"acceleration"``).
        tolerance: time tolerance of isolation (s).
    """

    name = "event"
    kind = EventKind.ACCELERATION
    tolerance = 1e-6

    def guards(self, sim, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Guard values at a state (k,): an event happens when one goes from > 0 to <= 0.

        Args: sim: the simulator; t: time (s); q (nq,), v (nv,): the state."""
        raise NotImplementedError

    def handle(self, sim, t: float, fired: np.ndarray) -> None:
        """React at the event time (the simulator's state is there); may change v, constraints, equations.

        ``fired``: the indices of the guards that crossed."""
        raise NotImplementedError

    def guards_after_control(self, sim, t: float, q: np.ndarray, v: np.ndarray,
                             before: np.ndarray) -> np.ndarray:
        """Guard values at an unchanged state after a control phase changed the statements.

        ``before`` (k,) are their values at this state under the old statements: a source whose
        guards partly depend on the state alone may recompute only the rest. Default: all again."""
        return self.guards(sim, t, q, v)

    def max_step(self, sim, t: float, q: np.ndarray, v: np.ndarray) -> float:
        """Largest step (s) that cannot skip an event of this source (anti-tunnelling); inf if none."""
        return np.inf

    def active(self) -> bool:
        """Whether the source currently watches anything (inactive sources are skipped)."""
        return True

    def contacts_of(self, body: str) -> list:
        """The contacts this source holds that touch ``body`` (a geometry or body name), each a
        state with the other body, region, points, mode and forces of the last solve; none by
        default (contact sources answer: :class:`sim.contact.ContactSource`)."""
        return []
