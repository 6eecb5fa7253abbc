"""The project's exception types: one root, specific subclasses.

Every error a user can cause is raised as a subclass of :class:`ControlkitError`
with a message that says what went wrong, where (simulation time, program,
equation, frame or body names) and, where there is one, what to do.
"""
from __future__ import annotations

import difflib
from typing import Iterable


class ControlkitError(Exception):
    """Root of every error controlkit raises on purpose.

    An error raised while a simulation runs carries ``recording``: the run's recording up to and
    including the state where it failed (None elsewhere), and ``time``: the simulation time (s)."""

    recording = None
    time: float | None = None


class ArgumentError(ControlkitError, ValueError):
    """An argument of a public function or of the command line is invalid (type, value, range)."""


class RecordingError(ControlkitError):
    """A recording cannot be read or written (not a controlkit recording, an unwritable folder)."""


class ModelError(ControlkitError):
    """A model definition or a loaded robot description is invalid."""


class UnknownNameError(ControlkitError, KeyError):
    """A frame, feature, joint, body, equation or demo name does not exist."""

    def __init__(self, kind: str, name: str, valid: Iterable[str], where: str = ""):
        valid = sorted(set(valid))
        close = difflib.get_close_matches(name, valid, n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        shown = ", ".join(valid[:40]) + (" ..." if len(valid) > 40 else "")
        place = f" in {where}" if where else ""
        listing = f" Valid {kind} names: {shown}" if valid else f" There is no {kind} yet."
        super().__init__(f"unknown {kind} {name!r}{place}.{hint}{listing}")
        self.kind, self.name, self.valid = kind, name, valid

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])


class StateError(ControlkitError, ValueError):
    """A state vector (q, v, tau, ...) has the wrong size or is not finite."""


class EquationError(ControlkitError):
    """An equation set cannot be solved as posed."""


class InconsistentEquationsError(EquationError):
    """The equalities contradict each other; ``conflicting`` names them."""

    def __init__(self, message: str, conflicting: list[str], problem=None):
        super().__init__(message)
        self.conflicting = conflicting
        self.problem = problem


class UnderdeterminedError(EquationError):
    """Unknowns are left free by the equalities and no cost fixes them."""

    def __init__(self, message: str, free: int, problem=None):
        super().__init__(message)
        self.free = free
        self.problem = problem


class SolverError(EquationError):
    """The QP solver failed (infeasible inequalities, numerical failure).

    ``problem`` carries the assembled problem; ``str(problem)`` prints it.
    """

    def __init__(self, message: str, problem=None, time: float | None = None):
        super().__init__(message)
        self.problem = problem
        self.time = time


class QPError(ControlkitError):
    """A quadratic program has no solution (:func:`controlkit.qp.solve_qp`): its constraints cannot
    all hold, or its Hessian is not positive definite.

    Carries the problem as posed, ``1/2 x^T H x + c^T x`` with ``A_eq x = b_eq`` and ``G x <= h``
    (arrays; empty rows for constraints not given), and ``reason``: why it failed.
    """

    def __init__(self, reason: str, H=None, c=None, A_eq=None, b_eq=None, G=None, h=None):
        n = None if c is None else len(c)
        m_eq = 0 if b_eq is None else len(b_eq)
        m_in = 0 if h is None else len(h)
        super().__init__(f"QP with {n} unknowns, {m_eq} equalities and {m_in} inequalities: {reason}")
        self.reason = reason
        self.H, self.c, self.A_eq, self.b_eq, self.G, self.h = H, c, A_eq, b_eq, G, h


class ControlProgramError(ControlkitError):
    """A control program raised; names the program and the simulation time."""

    def __init__(self, message: str, program: str = "", time: float | None = None, recording=None):
        super().__init__(message)
        self.program = program
        self.time = time
        self.recording = recording


class SimulationError(ControlkitError):
    """The simulation loop could not continue (step failure, reset storm, ...)."""

    def __init__(self, message: str, time: float | None = None, recording=None):
        super().__init__(message)
        self.time = time
        self.recording = recording
