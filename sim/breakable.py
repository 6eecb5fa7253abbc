"""Breakable hinges (thesis 4.3: "programs can monitor these forces and model limited strength
hinges that break when specified force or torque values are exceeded").

:class:`BreakableHinges` watches constraints (loop closures, point or pin hinges between
bodies) with an acceleration-kind event source: guard ``strength - |f|`` where ``f`` is the
hinge's reaction force (its first three rows, N) solved at the state. When a guard crosses
zero the hinge breaks: the constraint is removed at the isolated time, the velocities do not
jump (removing a constraint applies no impulse: momentum is continuous) and the event is
logged with kind ``break``.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from controlkit.errors import ModelError

from .events import ACCELERATION, EventSource

__all__ = ["BreakableHinges", "add_breakable"]


class BreakableHinges(EventSource):
    """Event source breaking constraints whose force exceeds their strength.

    Args:
        strengths: ``{constraint name: strength (N)}``.
        tolerance: time tolerance of the break's isolation (s).
    """

    name = "breakable"
    kind = ACCELERATION

    def __init__(self, strengths: Mapping[str, float], tolerance: float = 1e-9):
        for n, s in strengths.items():
            if not s > 0:
                raise ModelError(f"breakable hinge {n!r}: strength must be positive (N), got {s!r}")
        self.strengths = dict(strengths)
        self.tolerance = float(tolerance)
        self.broken: list[tuple[float, str, float]] = []  # (time s, name, force N)

    def _names(self, sim) -> list[str]:
        return [n for n in self.strengths if n in sim.mech.constraints]

    def force(self, sim, name: str) -> float:
        """The hinge's force magnitude (N) in the last solve."""
        lam = sim.mech.solution.lam[name]
        return float(np.linalg.norm(lam[:3]))

    def guards(self, sim, t, q, v):
        names = self._names(sim)
        if not names:
            return np.zeros(0)
        sim.accelerations_at(t, q, v)
        return np.array([self.strengths[n] - self.force(sim, n) for n in names])

    def handle(self, sim, t, fired):
        names = self._names(sim)
        sim.accelerations_at(t, sim.q, sim.v)
        forces = {n: self.force(sim, n) for n in names}
        v_before = np.array(sim.v, dtype=float)
        for i in np.asarray(fired, dtype=int):  # indices of the crossed guards
            n = names[i]
            sim.mech.remove_constraint(n)
            self.broken.append((t, n, forces[n]))
        sim.set_state()
        for i in np.asarray(fired, dtype=int):
            n = names[i]
            sim.log("break", f"hinge {n} breaks at {forces[n]:.6g} N (strength {self.strengths[n]:.6g} N)",
                    constraint=n, force=forces[n], strength=self.strengths[n],
                    v_before=v_before.tolist(), v_after=np.asarray(sim.v, dtype=float).tolist())

    def active(self) -> bool:
        return bool(self.strengths)


def add_breakable(sim, strengths: Mapping[str, float], tolerance: float = 1e-9) -> BreakableHinges:
    """Make constraints of the simulated mechanism breakable; returns the event source."""
    for n in strengths:
        if n not in sim.mech.constraints:
            from controlkit.errors import UnknownNameError
            raise UnknownNameError("constraint", n, sim.mech.constraints, f"mechanism {sim.mech.name!r}")
    src = BreakableHinges(strengths, tolerance)
    sim.add_source(src)
    return src
