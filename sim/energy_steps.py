"""Shorter steps where a passive run's energy rises: an error estimate for fixed-step RK4.

In a passive run (no control statements, no external force; gravity, constraints and contacts
only) kinetic plus potential energy cannot rise between two events: impacts and friction take
energy out, ideal constraints do no work. A step that raises it faster than ``ENERGY_RATE`` of the
run's energy scale per second shows an integration error that fixed-step RK4 has no estimate for:
a smooth drift (a ball rolling on the ground: 5e-11 J per 1 ms step, 32 times less per half step),
or a slide that stops, or a vertex that touches down and leaves, inside one step, where the guards
read at its ends see nothing (random drops of boxes and balls rose up to 1.7e-7 of their energy at
1 ms steps, and not at 0.25 ms). Such a step is taken again at half its length until it does not,
at most ``HALVINGS`` times; a rise that the shortest step keeps is the model's own (the rows'
feedback doing work, a near-singular sliding support), and the check rests until the next event.
A step shortened further to an event found in it (isolation) is not checked again.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

#: 1/s: a step may raise the energy at this rate, relative to the largest energy magnitude of the run
#: so far (a smooth drift of RK4's over 2 s: 5e-10 of the scale at most)
ENERGY_RATE = 2.5e-10
#: at most this many halvings of one step (a step of dt / 64 at the shortest)
HALVINGS = 6
#: ``checked``: steps whose energy was read; ``refined``: steps taken shorter;
#: ``halvings``: their halvings; ``model``: rises kept as the model's own
ENERGY_COUNTS = {"checked": 0, "refined": 0, "halvings": 0, "model": 0}


def passive(sim) -> bool:
    """Whether the run's energy cannot rise between events: fixed-step RK4, no control statements
    (no torques, costs or constraints of the user's), no external force, no fallback controller."""
    eqs = sim.equations
    return (sim.integrator.name == "rk4" and sim.external_force is None and not sim._fallback_active
            and not (eqs.equations or eqs.assignments or eqs.costs or eqs.regularizations or eqs.inequalities))


def refine_step(sim, step, h: float):
    """The simulator's ``step`` of h (s), taken again shorter where a passive run's energy rises
    (:meth:`EnergyWatch.refine`, with the simulator's watch); other runs' steps as they are."""
    if not passive(sim):
        return step
    if sim._energy_watch is None:
        sim._energy_watch = EnergyWatch(sim.mech)
    return sim._energy_watch.refine(sim, step, h)


class EnergyWatch:
    """The energy check of one simulator's steps (:meth:`refine`), with its own Pinocchio data.

    Keeps the largest energy magnitude seen (J, the tolerance's scale) and the energy of the last
    state it read (the next step starts there)."""

    def __init__(self, mech):
        self.model = mech.model
        self.data = mech.model.createData()
        self.scale = 0.0  # J
        self.resting = False  # (a rise the shortest step kept: no checks until the next event)
        self._events = -1  # the recording's event count at the last reference
        self._last: tuple = (None, None, 0.0)

    def energy(self, q: np.ndarray, v: np.ndarray) -> float:
        """Kinetic plus potential energy (J) at (q, v) (the last step's end's, kept)."""
        last = self._last
        if last[0] is not None and np.array_equal(last[0], q) and np.array_equal(last[1], v):
            return last[2]
        E = self._energy(q, v)
        self._last = (q.copy(), v.copy(), E)
        return E

    def refine(self, sim, step, h: float):
        """``step`` (of h s from the simulator's state), or the same step taken shorter: halved, at
        most ``HALVINGS`` times, while it raises the energy faster than ``ENERGY_RATE`` of the run's
        energy scale per second. A rise the shortest step keeps is not the step size's to take away
        (the model's own: the rows' feedback doing work): the check then rests until the next event."""
        ENERGY_COUNTS["checked"] += 1
        n = len(sim.recording.events)
        if n != self._events:
            self._events, self.resting = n, False
        if self.resting:
            return step
        E0 = self.energy(sim.q, sim.v)
        E1 = self._end_energy(step)
        if E1 - E0 <= ENERGY_RATE * self.scale * h:
            return step
        trial, k = step, 0
        while E1 - E0 > ENERGY_RATE * self.scale * trial.h and k < HALVINGS:
            k += 1
            trial = sim._attempt(h / 2.0 ** k, adaptive_retry=False)
            E1 = self._end_energy(trial)
        ENERGY_COUNTS["refined"] += 1
        ENERGY_COUNTS["halvings"] += k
        if E1 - E0 > ENERGY_RATE * self.scale * trial.h:
            ENERGY_COUNTS["model"] += 1
            self.resting = True
        return trial

    def _end_energy(self, step) -> float:
        E = self._energy(step.q1, step.v1)
        self._last = (step.q1.copy(), step.v1.copy(), E)  # (the next step starts there, unless a handler moves it)
        return E

    def _energy(self, q: np.ndarray, v: np.ndarray) -> float:
        m, d = self.model, self.data
        E = float(pin.computeKineticEnergy(m, d, q, v) + pin.computePotentialEnergy(m, d, q))
        self.scale = max(self.scale, abs(E), float(d.kinetic_energy))
        return E
