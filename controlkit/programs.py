"""Control programs as coroutines (the thesis' chapter 6).

A control program is a generator function or an ``async def`` taking a
:class:`Controller` handle. Between suspensions it adds and removes named
control equations, assigns quantities, sets costs and inequalities and reads
any quantity. It suspends with

- ``yield`` (or ``await ctl.tick()``): until the program's next tick (its own
  clock; default every integration step);
- ``yield ctl.until(condition)`` (or ``await``): until ``condition()`` becomes
  true — a *control event* that the simulator isolates in time like any other;
- ``yield ctl.after(seconds)`` (or ``await``): for a duration.

Direct assignments are held (zero-order hold) until the program changes them;
control equations act continuously, integrated with the dynamics.

The runtime talks to the simulator only through a small interface (``at``,
``add_source``, ``control_phase``, ``mech``, ``equations``, ``t``, ``q``,
``v``), so it lives in the core and the simulator imports it, not the reverse.
"""
from __future__ import annotations

import ctypes
import inspect
import threading
import time as _time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .errors import ControlkitError, ControlProgramError, UnknownNameError
from .events import EventKind, EventSource
from .quantities import (
    CenterOfMass,
    ConstraintForce,
    ControlTorque,
    FrameOrientation,
    FramePoint,
    JointAcceleration,
    JointAngle,
)


# ------------------------------------------------------------- wait requests
class _Request:
    def __await__(self):
        yield self


@dataclass
class Tick(_Request):
    """Wait for the program's next tick."""


@dataclass
class Until(_Request):
    """Wait until ``condition()`` is true; isolated in time to ``tolerance`` seconds."""

    condition: Callable[[], bool]
    tolerance: float = 1e-6
    label: str = ""


@dataclass
class After(_Request):
    """Wait ``seconds`` of simulation time."""

    seconds: float


# ------------------------------------------------------------------ programs
@dataclass
class Program:
    """A running control program and what it waits for."""

    name: str
    coroutine: Any
    period: float | None
    started: float
    waiting: Any = None
    next_tick: float = 0.0
    done: bool = False
    is_async: bool = False
    ticks: int = 0
    period_override: bool = False


class Controller:
    """The handle a control program receives: its view of the mechanism and the equation set.

    Args:
        runtime: the program runtime.
        program: the program this handle belongs to (its name is used in messages).
    """

    def __init__(self, runtime: "ProgramRuntime", name: str):
        self._rt = runtime
        self.name = name
        self.mech = runtime.sim.mech
        self.equations = runtime.sim.equations
        self._quantities: dict = {}

    # time and waiting
    @property
    def t(self) -> float:
        """Simulation time (s) at which the program is running (or a condition is tested)."""
        return self._rt.now

    @property
    def q(self) -> np.ndarray:
        """The measured configuration now (nq,), a copy."""
        return self._rt.sim.q.copy()

    @property
    def v(self) -> np.ndarray:
        """The measured velocity now (nv,), a copy."""
        return self._rt.sim.v.copy()

    def tick(self) -> Tick:
        """Suspend until the next tick: ``await ctl.tick()`` or ``yield``."""
        return Tick()

    def until(self, condition: Callable[[], bool], tolerance: float | None = None, label: str = "") -> Until:
        """Suspend until ``condition()`` is true; the moment is isolated to ``tolerance`` s (default the simulator's)."""
        if not callable(condition):
            raise ControlkitError(f"program {self.name!r}: until() needs a callable condition, got {condition!r}")
        tol = self._rt.sim.event_tolerance if tolerance is None else float(tolerance)
        return Until(condition, tol, label or getattr(condition, "__name__", "condition"))

    def after(self, seconds: float) -> After:
        """Suspend for ``seconds`` of simulation time."""
        try:
            ok = not isinstance(seconds, (str, bytes)) and float(seconds) >= 0 and float(seconds) != float("inf")
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ControlkitError(f"program {self.name!r}: after() needs a finite duration >= 0 (s), got {seconds!r}")
        return After(float(seconds))

    # quantities
    def point(self, frame: str, offset=None) -> FramePoint:
        """World position (m) of a frame's origin or of a point on it."""
        if offset is not None:
            return FramePoint(self.mech, frame, offset)
        return self._quantity(FramePoint, frame)

    def orientation(self, frame: str) -> FrameOrientation:
        """Orientation of a frame (rotation matrix; angular velocity in rad/s)."""
        return self._quantity(FrameOrientation, frame)

    def _quantity(self, kind, frame: str):
        """One quantity object per kind and frame (they hold no state): a condition reads a point
        at every guard evaluation, twice a step."""
        key = (kind, frame)
        q = self._quantities.get(key)
        if q is None:
            q = self._quantities[key] = kind(self.mech, frame)
        return q

    def angle(self, joint: str) -> JointAngle:
        """Angle (rad) or displacement (m) of a one-dof joint."""
        return JointAngle(self.mech, joint)

    def com(self) -> CenterOfMass:
        """Centre of mass (m) of the mechanism."""
        return CenterOfMass(self.mech)

    def torque(self, joint: str) -> ControlTorque:
        """Control torque (N m) or force (N) of an actuated joint."""
        return ControlTorque(self.mech, joint)

    def force(self, constraint: str) -> ConstraintForce:
        """Force of an active constraint (N, N m)."""
        return ConstraintForce(self.mech, constraint)

    def joint_acceleration(self, joint: str) -> JointAcceleration:
        """Acceleration of a joint's degrees of freedom (rad/s^2, m/s^2)."""
        return JointAcceleration(self.mech, joint)

    def value(self, quantity) -> np.ndarray:
        """The quantity's value now (position level; torques and forces from the last solve)."""
        self._rt.sync()
        return np.asarray(quantity.position(self.mech))

    def velocity(self, quantity) -> np.ndarray:
        """The quantity's velocity now."""
        self._rt.sync()
        return np.asarray(quantity.velocity(self.mech))

    # statements
    def add_equation(self, name: str, equation) -> None:
        """Add a named control equation (acts continuously until removed)."""
        self.equations.add_equation(name, equation)

    def assign(self, name: str, quantity, value) -> None:
        """Directly assign a quantity; the value is taken now and held until changed (zero-order hold)."""
        if callable(value):
            value = value(self.t)
        self.equations.assign(name, quantity, np.array(value, dtype=float))

    def add_cost(self, name: str, expr, weight=1.0) -> None:
        """Add a named quadratic cost ``1/2 |weight * expr|^2``."""
        self.equations.add_cost(name, expr, weight)

    def add_inequality(self, name: str, inequality) -> None:
        """Add named inequality rows."""
        self.equations.add_inequality(name, inequality)

    def remove(self, *names: str) -> None:
        """Remove control statements by name."""
        for n in names:
            self.equations.remove(n)

    def has(self, name: str) -> bool:
        """Whether a statement of that name is in force."""
        return name in self.equations

    # constraints the program manages (magnetic shoes, locks)
    def weld(self, name: str, frame: str, to: str | None = None, kind: str = "weld") -> None:
        """Hold a frame where it is now, to the world (or to another frame): a constraint named ``name``.

        ``kind="weld"`` holds its whole placement (6 rows); ``"point"`` only its origin (3 rows).
        Velocities jump to satisfy it (momentum-consistent, plastic), logged as an event.
        """
        from .constraints import PointConstraint, WeldConstraint
        if kind not in ("weld", "point"):
            raise ControlkitError(f"program {self.name!r}: weld kind must be 'weld' or 'point', got {kind!r}")
        cls = WeldConstraint if kind == "weld" else PointConstraint
        self._rt.sim.add_constraint(cls(name, frame, to))

    def hold_angle(self, name: str, joint: str) -> None:
        """Hold a joint at its current angle by a constraint named ``name`` (released with :meth:`release`)."""
        from .constraints import JointLock
        self._rt.sim.add_constraint(JointLock(name, joint))

    def release(self, name: str) -> None:
        """Remove a constraint added with :meth:`weld` (or any constraint) by name."""
        self._rt.sim.remove_constraint(name)

    def lock(self, joint: str, **options) -> None:
        """Lock a joint now (momentum-consistent transition, see the simulator's joint locking)."""
        self._rt.sim.lock(joint, **options)

    def unlock(self, joint: str) -> None:
        """Unlock a joint locked with :meth:`lock`."""
        self._rt.sim.unlock(joint)

    # other programs
    def start(self, program: Callable, name: str | None = None, period: float | None = None) -> str:
        """Start another program now; returns its name."""
        return self._rt.start(program, name, period)

    def stop(self, name: str) -> None:
        """Stop a running program by name."""
        self._rt.stop(name)

    def stop_simulation(self) -> None:
        """End the run after the current step."""
        self._rt.sim.stop()

    def log(self, description: str, **data) -> None:
        """Write a ``control`` event to the recording."""
        self._rt.sim.log("control", f"{self.name}: {description}", **data)


def _waits_until(p: "Program") -> bool:
    """Whether a program is waiting on an ``until`` condition (its guard is watched)."""
    return isinstance(p.waiting, Until) and not p.done


class _ConditionSource(EventSource):
    """The runtime's event source: one guard per program waiting on ``until``."""

    name = "control"
    kind = EventKind.ACCELERATION

    def __init__(self, runtime: "ProgramRuntime"):
        self.rt = runtime

    @property
    def tolerance(self) -> float:
        w = self._waiting()
        return min((p.waiting.tolerance for p in w), default=self.rt.sim.event_tolerance)

    def _waiting(self):
        out = []  # (every step: a loop, no comprehension object)
        for p in self.rt.programs.values():
            if _waits_until(p):
                out.append(p)
        return out

    def active(self) -> bool:
        for p in self.rt.programs.values():  # (asked several times per step: no list built)
            if _waits_until(p):
                return True
        return False

    def guards(self, sim, t, q, v):
        mech = sim.mech
        mech.set_state(q, v, check=False)
        self.rt.now = t
        out = []
        dog = self.rt.watchdog
        try:
            for p in self._waiting():
                dog.arm()
                try:
                    try:
                        out.append(-1.0 if p.waiting.condition() else 1.0)
                    finally:
                        dog.disarm()
                except _Overrun:
                    raise self.rt.overrun(p, "its until() condition") from None
                except Exception as exc:  # a condition is program code too
                    raise self.rt.program_error(p, exc) from exc
        finally:
            self.rt.now = sim.t
        return np.array(out)

    def handle(self, sim, t, fired):
        waiting = self._waiting()
        for i in fired:
            p = waiting[i]
            sim.log("control", f"{p.name}: until({p.waiting.label}) became true", program=p.name)
            self.rt.resume(p)


class _Overrun(BaseException):
    """Raised inside a program step that overran its wall time (a BaseException: a program's own
    ``except Exception`` does not swallow it)."""


class Watchdog:
    """Stops a program step that runs longer than ``limit`` seconds of wall time.

    A daemon thread (started at the first step, stopped by :meth:`stop` at the end of each run)
    checks the running step's deadline a few times per limit; past it, it raises
    :class:`_Overrun` in the thread running the step (``PyThreadState_SetAsyncExc``), which
    interrupts even a loop that never calls anything."""

    def __init__(self, limit: float | None):
        self.limit = limit
        self._lock = threading.Lock()
        self._deadline = None
        self._fired = False
        self._target = 0
        self._thread = None
        self._stopped = threading.Event()

    IDLE = 1.0  # s without a step after which the thread ends (the next step starts it again)

    def arm(self) -> None:
        """A step starts now in this thread."""
        if self.limit is None or self.limit == float("inf"):
            return
        with self._lock:
            if self._thread is None:
                self._stopped.clear()
                self._thread = threading.Thread(target=self._watch, name="controlkit program watchdog", daemon=True)
                self._thread.start()
            self._target = threading.get_ident()
            self._deadline = _time.perf_counter() + self.limit
            self._fired = False

    def disarm(self) -> bool:
        """The step ended; whether it overran (a pending interruption is withdrawn)."""
        if self._deadline is None:
            return False
        with self._lock:
            self._deadline = None
            fired, self._fired = self._fired, False
            if fired:  # (delivered already, or withdrawn here before it is)
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._target), None)
        return fired

    def stop(self) -> None:
        """End the watching thread (it starts again at the next step)."""
        with self._lock:
            thread, self._thread = self._thread, None
            self._stopped.set()
        if thread is not None:
            thread.join()

    def _watch(self) -> None:
        poll = min(0.05, self.limit / 4)
        stopped, idle = self._stopped, 0.0
        while not stopped.wait(poll):
            with self._lock:
                if self._deadline is None:
                    idle += poll
                    if idle > self.IDLE:  # (a simulator that no longer runs keeps no thread)
                        if self._thread is threading.current_thread():
                            self._thread = None
                        return
                    continue
                idle = 0.0
                if _time.perf_counter() > self._deadline and not self._fired:
                    self._fired = True
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._target), ctypes.py_object(_Overrun))


class ProgramRuntime:
    """Runs control programs inside a simulator: ticks, timers, control events."""

    def __init__(self, sim):
        self.sim = sim
        self.watchdog = Watchdog(getattr(sim, "program_timeout", None))
        self.programs: dict[str, Program] = {}
        self.now = sim.t
        self.source = _ConditionSource(self)
        sim.add_source(self.source)
        sim.control_phase.append(self._control_phase)

    running = False  # True while a program's code runs at the simulator's current state

    def sync(self) -> None:
        """Make the mechanism's state the simulator's current state, when program code runs.

        Outside a program's own code — while conditions are probed at trial states during
        isolation, or while an expression's time function is evaluated inside an assembly at
        an integrator stage — quantities read the mechanism's state as it is.
        """
        s = self.sim
        if not self.running:
            return
        if not s.mech.state_is(s.q, s.v):
            s.mech.set_state(s.q, s.v, check=False)

    def start(self, fn: Callable, name: str | None = None, period: float | None = None) -> str:
        """Start a program (generator function or ``async def`` taking a Controller)."""
        if not callable(fn):
            raise ControlkitError(f"a control program must be a function taking the controller, got {fn!r}")
        name = name or getattr(fn, "__name__", "program")
        if name in self.programs and not self.programs[name].done:
            raise ControlkitError(f"a control program named {name!r} is already running")
        if period is not None and period <= 0:
            raise ControlkitError(f"program {name!r}: period must be positive (s), got {period}")
        ctl = Controller(self, name)
        coro = fn(ctl)
        is_async = inspect.iscoroutine(coro)
        if not (is_async or inspect.isgenerator(coro)):
            raise ControlkitError(f"control program {name!r} must be a generator function (with yield) "
                                  f"or an async def; it returned {type(coro).__name__}")
        p = Program(name, coro, period, self.sim.t, is_async=is_async, next_tick=self.sim.t)
        self.programs[name] = p
        self.resume(p)
        return name

    def stop(self, name: str) -> None:
        if name not in self.programs:
            raise UnknownNameError("control program", name, self.programs)
        p = self.programs[name]
        if not p.done:
            p.done = True
            p.coroutine.close()

    def program_error(self, p: Program, exc: BaseException) -> ControlProgramError:
        tb = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        p.done = True
        return ControlProgramError(f"control program {p.name!r} raised at t = {self.sim.t:.6g} s: {tb}",
                                   p.name, self.sim.t)

    def overrun(self, p: Program, what: str) -> ControlProgramError:
        """The error for a program whose step (or condition) the watchdog stopped."""
        p.done = True
        return ControlProgramError(
            f"control program {p.name!r}: {what} ran for more than {self.watchdog.limit:g} s of wall time without "
            f"yielding (at t = {self.sim.t:.6g} s); a program must yield (or await) between its steps, a condition "
            f"must return. The limit is Simulator(program_timeout=...)", p.name, self.sim.t)

    def resume(self, p: Program) -> None:
        """Run a program until its next suspension and register what it waits for."""
        if p.done:
            return
        was_running, self.running = self.running, True
        self.sync()
        self.now = self.sim.t
        p.ticks += 1
        dog = self.watchdog
        dog.arm()
        try:
            try:
                req = p.coroutine.send(None)
            finally:
                dog.disarm()
        except StopIteration:
            p.done, p.waiting = True, None
            return
        except _Overrun:
            raise self.overrun(p, "a step") from None
        except ControlkitError as exc:
            if isinstance(exc, ControlProgramError):
                raise
            raise self.program_error(p, exc) from exc
        except Exception as exc:
            raise self.program_error(p, exc) from exc
        finally:
            self.running = was_running
        self._wait(p, req)

    def _wait(self, p: Program, req) -> None:
        t = self.sim.t
        if req is None or isinstance(req, Tick):
            p.waiting = Tick()
            if p.period is not None:
                p.next_tick += p.period
                while p.next_tick <= t + 1e-12:  # a late start or a long event: skip missed ticks
                    p.next_tick += p.period
                self.sim.at(p.next_tick, lambda sim, p=p: self._timer(p))
        elif isinstance(req, After):
            p.waiting = req
            self.sim.at(t + req.seconds, lambda sim, p=p: self._timer(p))
        elif isinstance(req, Until):
            p.waiting = req
            was_running, self.running = self.running, True
            self.sync()
            self.watchdog.arm()
            try:
                try:
                    already = req.condition()
                finally:
                    self.watchdog.disarm()
            except _Overrun:
                raise self.overrun(p, "its until() condition") from None
            except Exception as exc:
                raise self.program_error(p, exc) from exc
            finally:
                self.running = was_running
            if already:
                p.waiting = Tick()  # true right away: resume at the next control phase
                p.period_override = True
        else:
            raise self.program_error(p, ControlkitError(
                f"yielded {req!r}; yield nothing, ctl.until(...), ctl.after(...) or ctl.tick()"))

    def _timer(self, p: Program) -> None:
        if not p.done and isinstance(p.waiting, (Tick, After)):
            if isinstance(p.waiting, After) and p.period is not None:
                p.next_tick = self.sim.t
            self.resume(p)

    def _control_phase(self, sim) -> None:
        for p in list(self.programs.values()):
            if p.done:
                continue
            if isinstance(p.waiting, Tick) and (p.period is None or getattr(p, "period_override", False)):
                p.period_override = False
                if p.period is not None:
                    p.next_tick = sim.t
                self.resume(p)
