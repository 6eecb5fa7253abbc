"""The analysis loop (the thesis' Fig. 4.1 and 5.1).

::

    establish a consistent initial state (accelerations solved)
    until stop:
        run the control phase (programs due at this time resume)
        integrate one step (every derivative evaluation assembles and solves the equations)
        handle events: detect -> isolate the earliest -> velocity events ->
            new accelerations -> acceleration events -> restart the integrator
        report (recording)

The simulator owns three clocks, each a named setting: the integration step
``dt`` (s), the event tolerance ``event_tolerance`` (s) and, per control
program, the controller period. Timed actions (controller ticks, ``after``,
scheduled locks) are breakpoints the step never crosses.
"""
from __future__ import annotations

import heapq
import itertools
import math
import time as _time
from typing import Callable

import numpy as np

from controlkit.dynamics import evaluate
from controlkit.equations import EquationSet
from controlkit.errors import ArgumentError, ControlkitError, SimulationError, SolverError, StateError
from controlkit.programs import ProgramRuntime
from controlkit.quantities import ControlTorques
from controlkit.recording import Event, Recording

from . import validation as checked
from .energy_steps import refine_step
from .events import (
    ACCELERATION,
    VELOCITY,
    EventSource,
    crossed,
    fired_sources,
    guards_after_control,
    isolate,
    same_guard_key,
)
from .integrators import PinocchioSystem, make_integrator
from .plain_run import plain_step, run_plain
from .run_notes import keep_partial, watch_undetermined
from .stabilization import project_positions, project_state, project_velocities
from .validation import number as _number
from .validation import run_duration


class Simulator:
    """Simulate a mechanism under its control statements, with events.

    Args:
        mech: the mechanism (``controlkit.mechanism.Mechanism``).
        q0, v0: initial configuration (nq,) and velocity (nv,); default: neutral, at rest.
        dt: integration step (s); the initial step for adaptive integrators.
        integrator: ``euler``, ``semi_implicit_euler``, ``rk4``, ``abm4``, ``dopri5`` or ``dop853``
            (Dormand-Prince 8(5,3): the cheapest at tight energy tolerances, see bench/peers.py).
        rtol, atol: tolerances for the adaptive integrator.
        kp, kv: Baumgarte gains (1/s^2, 1/s) of the constraint equations.
        project: project positions and velocities onto the constraint manifold after each step.
        evaluation: ``"plan"`` (default: the fast paths, see docs/architecture.md "Evaluation speed")
            or ``"reference"`` (the reference implementation they are tested against).
        event_tolerance: time tolerance (s) of event isolation.
        external_force: ``f(t, mech) -> (nv,)`` generalized force (N, N m), or None.
        record: named quantities to record at every sample, ``{name: quantity}``.
        record_every: record one step in this many (events and the last step always).
        max_step: upper bound on adaptive steps (s).
        fallback: ``None`` (default: a failed solve stops the run with the error) or
            ``"hold_last_torques"``: when the control statements cannot be solved, keep the
            last solved torques (forward dynamics) until they can; each entry into and exit
            from the fallback is logged as a ``fallback`` event.
        program_timeout: wall time (s) one step of a control program (its code between two
            suspensions) may take before it is stopped with a ``ControlProgramError`` naming it
            (a loop that never yields); None: no limit.

    Every ``ControlkitError`` raised by :meth:`run` carries the recording up to and including
    the state where the run failed (``exc.recording``) and the simulation time (``exc.time``).

    A passive run under ``rk4`` (no control statements, no external force) takes a step again
    shorter where it raises kinetic plus potential energy (:mod:`sim.energy_steps`); set the
    attribute ``energy_steps = False`` to take every step at its full length.
    """

    def __init__(self, mech, q0=None, v0=None, *, dt: float = 1e-3, integrator: str = "rk4",
                 rtol: float = 1e-8, atol: float = 1e-10, kp: float = 100.0, kv: float = 20.0,
                 project: bool = False, event_tolerance: float = 1e-6,
                 external_force: Callable | None = None, record: dict | None = None,
                 record_every: int = 1, max_step: float = np.inf, t0: float = 0.0,
                 fallback: str | None = None, program_timeout: float | None = 10.0, evaluation: str = "plan"):
        mech = checked.mechanism(mech)
        dt = _number("dt", dt, "s", positive=True)
        event_tolerance = _number("event_tolerance", event_tolerance, "s", positive=True)
        rtol, atol = _number("rtol", rtol, "", positive=True), _number("atol", atol, "", positive=True)
        kp, kv = _number("kp", kp, "1/s^2", minimum=0.0), _number("kv", kv, "1/s", minimum=0.0)
        max_step = _number("max_step", max_step, "s", positive=True, infinite=True)
        t0 = _number("t0", t0, "s")
        if program_timeout is not None:
            program_timeout = _number("program_timeout", program_timeout, "s", positive=True, infinite=True)
        self.program_timeout = program_timeout
        if isinstance(record_every, np.integer):
            record_every = int(record_every)
        checked.options(external_force=external_force, record=record, record_every=record_every,
                        fallback=fallback, evaluation=evaluation)
        self.fallback = fallback
        self._last_tau = np.zeros(mech.ntau)
        self._in_fallback = self._fallback_active = False
        self.mech = mech
        self.dt = float(dt)
        self.equations = EquationSet(kp=kp, kv=kv)
        self.evaluation = self.equations.evaluation = evaluation
        opts = {"rtol": rtol, "atol": atol} if integrator in ("dopri5", "dop853") else {}
        self.integrator = make_integrator(integrator, **opts)
        self.project = project
        self.event_tolerance = float(event_tolerance)
        self.external_force = external_force
        self.max_step = float(max_step)
        self.t = float(t0)
        self.q = mech.check_q(mech.neutral() if q0 is None else q0, "q0")
        self.v = mech.check_v(np.zeros(mech.nv) if v0 is None else v0, "v0")
        self.sources: list[EventSource] = []
        self.record_quantities = dict(record or {})
        self.record_every = max(1, int(record_every))
        self.system = PinocchioSystem(mech.model, self._accel)
        self._timers: list = []
        self._timer_seq = itertools.count()
        self.control_phase: list[Callable[["Simulator"], None]] = []
        self.recording = Recording(mech.nq, mech.nv, mech.ntau, {"model": getattr(mech, "source", {"name": mech.name}),
                                                                 "integrator": integrator, "dt": dt})
        self.steps = 0
        self._a = None
        self._restart = True
        self._stop = False
        self._eq_version = -1
        self.programs: ProgramRuntime | None = None
        #: spring-damper elements added by :func:`sim.springs.add_springs` (their force is in external_force)
        self.springs: list = []
        #: the results of joint locks made by :func:`sim.locking.lock_joint`, in order
        self.lock_results: list = []

    # ----------------------------------------------------------- derivative
    def _accel(self, t, q, v):
        f = None
        if self.external_force is not None:
            self.mech.set_state(q, v, check=False)  # the force may depend on the state evaluated
            f = self._external(t)
        try:
            return evaluate(self.mech, self.equations, t, q, v, f).a
        except SolverError as exc:
            if self.fallback is None:
                raise
            return self._hold_last(t, q, v, f, exc)

    def _external(self, t: float) -> np.ndarray:
        """The external force at (t, the mechanism's state), checked: (nv,) and finite."""
        fn = self.external_force
        try:
            f = fn(t, self.mech)
        except ControlkitError:
            raise
        except Exception as exc:
            raise SimulationError(f"t = {t:.9g} s: external_force {getattr(fn, '__name__', fn)!r} raised "
                                  f"{type(exc).__name__}: {exc}", t) from exc
        try:
            f = np.asarray(f, dtype=float)
        except (TypeError, ValueError):
            f = None
        nv = self.mech.nv
        if f is None or f.shape != (nv,):
            raise StateError(f"t = {t:.9g} s: external_force must return the generalized force as a vector of nv = {nv} "
                             f"numbers (N, N m), got {'a non-numeric value' if f is None else f'shape {f.shape}'}")
        if not np.isfinite(f).all():
            raise StateError(f"t = {t:.9g} s: external_force returned a non-finite force {f.tolist()} "
                             f"(components {np.flatnonzero(~np.isfinite(f)).tolist()})")
        return f

    def _hold_last(self, t, q, v, f, exc):
        self._in_fallback = True
        if not self._fallback_active:
            self._fallback_active = True
            self.recording.log_event(Event(t, "fallback", f"holding the last torques: {str(exc).splitlines()[0]}",
                                           {"tau": self._last_tau.tolist()}))
        eqs = EquationSet(kp=self.equations.kp, kv=self.equations.kv)
        eqs.assign("held torques", ControlTorques(self.mech), self._last_tau)
        return evaluate(self.mech, eqs, t, q, v, f).a

    # ------------------------------------------------- read by event sources
    @property
    def accelerations(self) -> np.ndarray | None:
        """The accelerations (nv,) solved at the current state; None after a state change until
        the next solve (:meth:`solve_now`)."""
        return self._a

    def accelerations_at(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Solve the statements at time t (s) and state q (nq,), v (nv,) (``mech.solution`` is
        set, the simulator's own state is not changed); the accelerations (nv,)."""
        return self._accel(t, q, v)

    @property
    def restarting(self) -> bool:
        """Whether the state changed (an event, :meth:`set_state`) since the last step: the
        integrator restarts from it."""
        return self._restart

    @property
    def step_horizon(self) -> float:
        """How far (s) the next step can reach: ``dt``, or the adaptive integrator's last step if longer."""
        return max(self.dt, self._h_adapt or 0.0)

    def solve_now(self):
        """Solve the equations at the current state (sets ``mech.solution``) and return it."""
        self._in_fallback = False
        self._a = self._accel(self.t, self.q, self.v)
        return self._solved()

    def _solved(self):
        """After a solve at the current state: the fallback's end, the torques held for it."""
        if self._fallback_active and not self._in_fallback:
            self._fallback_active = False
            self.log("fallback", "control statements solvable again; fallback ended")
        if not self._in_fallback:
            self._last_tau = self.mech.solution.tau.copy()
        return self.mech.solution

    def _solution_at_end(self):
        """The mechanism's solution when a guard solved the statements at the accepted step's end
        (the step left no acceleration there, nor moved the state by a projection); else None."""
        mech = self.mech
        if self._a is None and mech.state_is(self.q, self.v) and mech.solved(self.equations):
            return mech.solution
        return None

    def _still_solved(self, solution) -> bool:
        """Whether ``solution`` (:meth:`_solution_at_end`) still is the solve :meth:`solve_now` would
        repeat: no timer, event or state change since (``_restart``), same statements and state."""
        mech = self.mech
        return not self._restart and self._a is None and mech.solution is solution and \
            mech.state_is(self.q, self.v) and mech.solved(self.equations)

    def _take_solution(self):
        """:meth:`solve_now` with the mechanism's solution at this state and statements (not solved again)."""
        self._in_fallback = False
        self._a = self.mech.solution.a
        return self._solved()

    # ------------------------------------------------------------- programs
    def add_program(self, program: Callable, name: str | None = None, period: float | None = None) -> str:
        """Start a control program (generator function or ``async def`` taking the controller).

        Args:
            program: the program function.
            name: its name (default the function's name).
            period: its clock period (s); default every integration step.
        """
        if self.programs is None:
            self.programs = ProgramRuntime(self)
        return self.programs.start(program, name, period)

    # --------------------------------------------------------- constraints
    def add_constraint(self, constraint, impulsive: bool = True) -> None:
        """Activate a constraint now (a weld, a pin, a held joint).

        With ``impulsive`` (default) the velocities jump to satisfy all active constraints by
        the momentum-consistent (plastic) transition ``v+ = v - M^-1 J^T (J M^-1 J^T)^+ J v``,
        as when a foot is planted; the event, with the kinetic energy lost, is logged.
        """
        mech = self.mech
        mech.set_state(self.q, self.v, check=False)
        mech.add_constraint(constraint)
        if impulsive:
            cons = list(mech.constraints.values())
            v_new = project_velocities(mech, cons, self.q, self.v)
            mech.set_state(self.q, self.v, check=False)
            k0 = mech.kinetic_energy()
            mech.set_state(self.q, v_new, check=False)
            k1 = mech.kinetic_energy()
            self.log("constraint_added", f"{constraint.describe()}; kinetic energy {k0:.6g} -> {k1:.6g} J",
                     constraint=constraint.name, energy_before=k0, energy_after=k1)
            self.v = v_new
        self.set_state()

    def remove_constraint(self, name: str):
        """Deactivate a constraint by name (no velocity jump); returns it."""
        c = self.mech.remove_constraint(name)
        self.log("constraint_removed", c.describe(), constraint=name)
        self.set_state()
        return c

    # ------------------------------------------------- events: locks, impacts
    def lock(self, joint: str, **options) -> None:
        """Lock a joint now with the momentum-consistent transition (see :mod:`sim.locking`)."""
        from .locking import lock_joint
        lock_joint(self, joint, **options)

    def unlock(self, joint: str) -> None:
        """Unlock a joint locked with :meth:`lock`."""
        from .locking import unlock_joint
        unlock_joint(self, joint)

    def lock_at(self, t: float, joint: str, **options) -> None:
        """Schedule a joint lock at simulation time t (s)."""
        self.at(t, lambda sim: sim.lock(joint, **options))

    def enable_impacts(self, **options):
        """Watch collisions between bodies and resolve impacts (see :func:`sim.impact.add_impacts`)."""
        from .impact import add_impacts
        return add_impacts(self, **options)

    # ------------------------------------------------------------- schedule
    def at(self, t: float, action: Callable[["Simulator"], None]) -> None:
        """Schedule ``action(sim)`` at simulation time t (s), now or later; steps land exactly on it."""
        t = _number("at: time", t, "s")
        if t < self.t - 1e-12:
            raise ArgumentError(f"Simulator.at({t:g}, ...): {t:g} s is before the current simulation time "
                                f"{self.t:g} s; schedule at a time >= {self.t:g} s")
        if not callable(action):
            raise ArgumentError(f"Simulator.at({t:g}, ...): the action must be a function action(sim), "
                                f"got {type(action).__name__}")
        heapq.heappush(self._timers, (t, next(self._timer_seq), action))

    def add_source(self, source: EventSource) -> None:
        """Watch an event source (a :class:`controlkit.events.EventSource`) from now on."""
        if not isinstance(source, EventSource):
            raise ArgumentError(f"add_source: expected a controlkit.events.EventSource subclass (guards, handle, ...), "
                                f"got {type(source).__name__}")
        self.sources.append(source)

    def contacts_of(self, body: str) -> list:
        """What touches ``body`` (a geometry or body name) now: every event source's contacts with
        it (:class:`sim.contact.ContactState`: the other body, region, support points (m, world),
        mode, forces (N) of the last solve); empty when nothing touches it."""
        return [c for src in self.sources for c in src.contacts_of(body)]

    def stop(self) -> None:
        """Ask the loop to stop after the current step."""
        self._stop = True

    def log(self, kind: str, description: str, **data) -> None:
        """Log an event in the recording at the current time."""
        self.recording.log_event(Event(self.t, kind, description, data))

    def set_state(self, q=None, v=None) -> None:
        """Change the state between steps (e.g. an impact handler); restarts the integrator."""
        if q is not None:
            self.q = self.mech.check_q(q)
        if v is not None:
            self.v = self.mech.check_v(v)
        self._restart = True
        self._a = None

    # ----------------------------------------------------------------- loop
    def run(self, duration: float, progress=None, *, until: Callable[["Simulator"], bool] | None = None) -> Recording:
        """Advance by ``duration`` seconds (or until ``until(sim)`` is true after a step); returns the recording.

        ``duration`` must be a number >= 0; ``inf`` only with ``until`` (an explicit stop
        condition). A ``ControlkitError`` raised during the run carries the recording up to and
        including the state where it failed (``exc.recording``) and the time (``exc.time``).
        """
        duration = run_duration(duration, until is not None)
        if until is not None and not callable(until):
            raise ArgumentError(f"Simulator.run: until must be a function until(sim) -> bool, got {type(until).__name__}")
        t_end = self.t + duration
        wall0 = _time.perf_counter()
        try:
            if self.steps == 0 and len(self.recording) == 0:
                self._run_due_timers()
                self._control()
                self.solve_now()
                self._record(force=True)
            while self.t < t_end - 1e-12 and not self._stop:
                if until is not None or not run_plain(self, t_end):
                    self._one_step(t_end)
                if progress is not None:
                    progress.update(self.t)
                if until is not None and until(self):
                    break
        except ControlkitError as exc:
            self._keep_partial(exc)
            raise
        finally:
            if self.programs is not None:
                self.programs.watchdog.stop()
            self._finish(wall0)
        return self.recording

    def _keep_partial(self, exc: ControlkitError) -> None:
        """Attach the recording, up to and including the state where the run failed, to the error."""
        keep_partial(self, exc)

    def _finish(self, wall0):
        T = self.mech.times
        s = self.recording.stats
        s["wall_time"] = s.get("wall_time", 0.0) + _time.perf_counter() - wall0
        s.update(sim_time=self.t, steps=self.steps, evaluations=T.calls, pinocchio_time=T.pinocchio,
                 assembly_time=T.assembly, solve_time=T.solve)

    def _control(self):
        for hook in list(self.control_phase):
            hook(self)

    def _run_due_timers(self):
        while self._timers and self._timers[0][0] <= self.t + 1e-12:
            _, _, action = heapq.heappop(self._timers)
            action(self)
            self._restart = True
            self._a = None

    def _next_h(self, t_end):
        h = self.dt if not self.integrator.adaptive else self._h_adapt
        h = min(h, self.max_step, t_end - self.t)
        if self._timers:
            h = min(h, self._timers[0][0] - self.t)
        for s in self.sources:
            if s.active():
                h = min(h, s.max_step(self, self.t, self.q, self.v))
        return max(h, 1e-14)

    _h_adapt = None
    _energy_watch = None  # (sim.energy_steps.refine_step's, made at its first check)
    #: passive runs under RK4 take a step again shorter where their energy rises (sim.energy_steps)
    energy_steps: bool = True

    def _one_step(self, t_end):
        if self._h_adapt is None:
            self._h_adapt = self.dt
        if self._restart:
            self.integrator.reset()
            self._restart = False
        if self._a is None:
            self.solve_now()
        h = self._next_h(t_end)
        if not self.sources:
            return plain_step(self, h, t_end)
        sources = self._active_sources()
        g0 = self._start_guards(sources)
        step = self._attempt(h)
        if self.energy_steps:
            step = refine_step(self, step, h)
            h = step.h  # (an event in it is isolated within the step taken)
        # detect events in the step
        first, g_end = None, []
        for s, g in zip(sources, g0):
            g1 = s.guards(self, step.t1, step.q1, step.v1)
            g_end.append(g1)
            mask = crossed(g, g1)
            if True in mask.tolist():  # (ndarray.any's Python wrapper costs more on a few guards)
                theta = isolate(s, self, step, g, mask, g1)
                if first is None or theta < first[0] - 1e-15:
                    first = (theta, [(s, g, mask)])
                elif abs(theta - first[0]) <= 1e-15:
                    first[1].append((s, g, mask))
        if first is not None and first[0] < 1.0:
            theta = first[0]
            self.integrator.reset()
            step = self._attempt(theta * h, adaptive_retry=False)
        self._accept(step)
        if first is not None:
            before = [(s, s.guards(self, self.t, self.q, self.v)) for s in self.sources if s.active()]
            self._handle(first[1])
        version = self.equations.version
        # a guard that needs the forces solved at the step's end (contacts under a method with no
        # end evaluation, RK4): that solve stands for the end's, unless something changes first
        end_solution = self._solution_at_end() if first is None else None
        self._run_due_timers()
        self._control()
        if end_solution is not None and self._still_solved(end_solution):
            self._take_solution()
        elif self._a is None or self.equations.version != self._eq_version or not self.mech.state_is(self.q, self.v):
            self.solve_now()
        if first is not None:
            self._caused_by_handling(before)
        else:
            if self.equations.version != version or self._a is not step.a1:
                self._instant_events(sources, g_end)
            else:  # nothing changed since the step's end: its guards start the next step
                self._guards_now = (self._guard_key(sources), g_end)
        self._record(force=first is not None or self.t >= t_end - 1e-12)

    _bare = (None, -1, None)  # (equation set, its version, its bare system or None): sim.plain_run.bare_system

    def _active_sources(self) -> list:
        out = []  # (every step: a loop, no comprehension object)
        for s in self.sources:
            if s.active():
                out.append(s)
        return out

    def _start_guards(self, sources) -> list[np.ndarray]:
        """Guards at the step's start: those computed after the last control phase when nothing
        has changed since (same sources, state, statements and solution), else evaluated now."""
        cached = self._guards_now
        if cached is not None and same_guard_key(cached[0], self._guard_key(sources)):
            return cached[1]
        return [s.guards(self, self.t, self.q, self.v) for s in sources]

    def _guard_key(self, sources):
        # the objects themselves, compared by identity: a key of id()s could match a new array
        # that took a freed one's address at the same instant (a handler's new v)
        return (tuple(sources), self.t, self.q, self.v, self.equations.version, self.mech.solution,
                self._a is not None)

    _guards_now = None

    def _instant_events(self, sources, g_end) -> None:
        """Events caused by the control phase itself, at this instant.

        New statements (a servo's torques, a released weld) change the accelerations and forces
        at an unchanged state: a contact force can become tensile right now. Its guard is then
        already <= 0 at the next step's start, where no crossing would ever be seen; compared
        with the guards at the end of the step (the old statements), it is handled here."""
        # the state is the step's end: what depends on it alone (distances, vertex gaps) stands
        now = []  # (every step: a loop, no comprehension object)
        for s, g in zip(sources, g_end):
            now.append(guards_after_control(s, self, g))
        fired = fired_sources(sources, g_end, now)
        if fired:
            self._handle(fired)
            self.solve_now()
            sources = self._active_sources()
            now = [s.guards(self, self.t, self.q, self.v) for s in sources]
        self._guards_now = (self._guard_key(sources), now)

    def _caused_by_handling(self, before) -> None:
        """Events caused by handling events, at this instant (one pass).

        A handler changes the state's velocities (an impact) or the statements (a contact made,
        a program resumed): another source's guard may cross right now (a program waiting until a
        foot's contact is a face, a slide stopped by an impact). Compared with the guards just
        before the handling, such a crossing is handled here; at the next step's start it would
        already be <= 0 and never seen."""
        before = [(s, g) for s, g in before if s.active()]
        fired = fired_sources([s for s, _ in before], [g for _, g in before],
                       [s.guards(self, self.t, self.q, self.v) for s, _ in before])
        if fired:
            self._handle(fired)
            self._control()
            self.solve_now()
        self._guards_now = None

    def _attempt(self, h, adaptive_retry=True, system=None):
        system = self.system if system is None else system
        while True:
            step = self.integrator.step(system, self.t, self.q, self.v, h, self._a)
            if step.accepted or not adaptive_retry:
                if self.integrator.adaptive and adaptive_retry:
                    self._h_adapt = step.h_next
                return step
            h = step.h_next
            if h < 1e-14:
                raise SimulationError(f"t = {self.t:.9g} s: step size underflow in {self.integrator.name}",
                                      self.t, self.recording)

    def _accept(self, step):
        q, v = step.q1, step.v1
        # (a sum is finite only if every term is; an overflow falls back to the exact check. Python's
        # sum of the floats: numpy's reduction wrapper costs more on a few dozen, at every step)
        if not (math.isfinite(sum(q.tolist())) and math.isfinite(sum(v.tolist()))) and \
                not (np.isfinite(q).all() and np.isfinite(v).all()):
            raise SimulationError(f"t = {step.t1:.9g} s: the state became non-finite (NaN/inf) in "
                                  f"{self.integrator.name}", step.t1, self.recording)
        if self.project and self.mech.constraints:
            cons = list(self.mech.constraints.values())
            if self.evaluation == "plan":
                q, v = project_state(self.mech, cons, q, v, time=step.t1)
            else:
                q = project_positions(self.mech, cons, q)
                v = project_velocities(self.mech, cons, q, v)
            self._a = None
        else:
            # FSAL methods end on an evaluation at (t1, q1, v1): reuse it unless the equations change
            self._a = step.a1
        self.t, self.q, self.v = step.t1, q, v
        self.steps += 1
        self._eq_version = self.equations.version

    def _handle(self, fired):
        """Velocity events first, then new accelerations, then acceleration events (one pass)."""
        for kind in (VELOCITY, ACCELERATION):
            for s, _, mask in fired:
                if s.kind == kind:
                    g1 = s.guards(self, self.t, self.q, self.v)
                    s.handle(self, self.t, np.flatnonzero(mask & (g1 <= 0)))
            if kind == VELOCITY:
                self.solve_now()
        self._restart = True
        self._a = None

    #: speed (rad/s or m/s) the motion the default chooses may gain over its first value before a warning
    FREE_SPEED = 0.1
    _free_since = None  # (t, speed) when the statements last started to leave motion to the default
    _free_warned = False

    def _watch_undetermined(self) -> None:
        """Warn once when the statements leave motion to the default and it speeds up
        (:func:`sim.run_notes.watch_undetermined`)."""
        if getattr(self.mech.solution, "undetermined", None) is None or self._free_warned:
            self._free_since = None
            return
        watch_undetermined(self)

    def _record(self, force=False):
        self._watch_undetermined()
        if not force and self.steps % self.record_every:
            return
        mech = self.mech
        vals = {name: np.atleast_1d(qty.position(mech)).ravel() for name, qty in self.record_quantities.items()} \
            if self.record_quantities else None
        self.recording.append(self.t, self.q, self.v, mech.solution.tau, vals)
