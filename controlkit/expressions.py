"""The quantity algebra: lazy expressions that evaluate, at a state, to numbers or
to affine functions of the step's unknowns.

At the acceleration level every quantity is affine in the unknowns
``x = [a | tau | lam]``: ``acc(p) = J a + Jdot v``. An expression such as
``acc(p) + (2/T) * vel(p) + (1/T**2) * (pos(p) - p_des)`` is kept as a tree and
re-evaluated at every derivative evaluation, so a control equation acts
continuously, integrated with the dynamics.

Evaluation returns either a numpy array (a value known at this state) or a
:class:`Lin` ``A x + b`` with ``A`` of shape (m, nx).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .errors import EquationError


class Lin:
    """An affine function ``A x + b`` of the unknowns: A (m, nx), b (m,)."""

    __slots__ = ("A", "b")

    def __init__(self, A: np.ndarray, b: np.ndarray):
        self.A, self.b = A, b

    def __add__(self, o):
        if isinstance(o, Lin):
            return Lin(self.A + o.A, self.b + o.b)
        return Lin(self.A, self.b + o)

    __radd__ = __add__

    def __neg__(self):
        return Lin(-self.A, -self.b)

    def scale(self, s):
        if np.ndim(s) == 2:
            return Lin(s @ self.A, s @ self.b)
        if np.ndim(s) == 1 and len(s) != 1:
            return Lin(s[:, None] * self.A, s * self.b)
        return Lin(s * self.A, s * self.b)


@dataclass
class Context:
    """What an expression needs to evaluate: the mechanism at its state, time, column layout."""

    mech: object
    t: float
    layout: object


def _add(x, y):
    if isinstance(x, Lin) or isinstance(y, Lin):
        return x + y if isinstance(x, Lin) else y + x
    return np.asarray(x, dtype=float) + np.asarray(y, dtype=float)


def _scale(s, x):
    if isinstance(x, Lin):
        return x.scale(s)
    if np.ndim(s) == 2:
        return s @ np.asarray(x, dtype=float)
    return s * np.asarray(x, dtype=float)


class Expr:
    """Base of the expression tree; supports ``+ - *`` (scalar, vector, matrix ``@``), ``==``, ``<=``, ``>=``."""

    __hash__ = object.__hash__
    __array_ufunc__ = None  # numpy defers to our operators: `K @ acc(p)`, `np.float64(2) * vel(p)`

    def evaluate(self, ctx: Context):
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__

    def __add__(self, o):
        return Sum(self, as_expr(o))

    def __radd__(self, o):
        return Sum(as_expr(o), self)

    def __sub__(self, o):
        return Sum(self, Scaled(-1.0, as_expr(o)))

    def __rsub__(self, o):
        return Sum(as_expr(o), Scaled(-1.0, self))

    def __neg__(self):
        return Scaled(-1.0, self)

    def __mul__(self, s):
        return Scaled(s, self)

    __rmul__ = __mul__

    def __rmatmul__(self, m):
        return Scaled(np.asarray(m, dtype=float), self)

    def __truediv__(self, s):
        return Scaled(1.0 / s, self)

    def __eq__(self, o):  # type: ignore[override]
        from .equations import Equation
        return Equation(self, as_expr(o))

    def __le__(self, o):
        from .equations import Inequality
        return Inequality(self - as_expr(o))

    def __ge__(self, o):
        from .equations import Inequality
        return Inequality(as_expr(o) - self)

    def __str__(self) -> str:
        return self.describe()


class Const(Expr):
    """A constant value (array or scalar)."""

    def __init__(self, value):
        self.value = np.atleast_1d(np.asarray(value, dtype=float))

    def evaluate(self, ctx):
        return self.value

    def describe(self):
        v = self.value
        return f"{v[0]:g}" if v.size == 1 else np.array2string(v, precision=4, suppress_small=True)


class TimeFunction(Expr):
    """A value given as a function of simulation time ``fn(t) -> array``."""

    def __init__(self, fn: Callable[[float], np.ndarray], label: str = "f(t)"):
        self.fn, self.label = fn, label

    def evaluate(self, ctx):
        return np.atleast_1d(np.asarray(self.fn(ctx.t), dtype=float))

    def describe(self):
        return self.label


class Sum(Expr):
    def __init__(self, x: Expr, y: Expr):
        self.x, self.y = x, y

    def evaluate(self, ctx):
        return _add(self.x.evaluate(ctx), self.y.evaluate(ctx))

    def describe(self):
        ys = self.y.describe()
        if isinstance(self.y, Scaled) and np.ndim(self.y.s) == 0 and self.y.s == -1.0:
            return f"{self.x.describe()} - {self.y.x.describe()}"
        return f"{self.x.describe()} + {ys}"


class Scaled(Expr):
    def __init__(self, s, x: Expr):
        self.s = s if np.ndim(s) == 0 else np.asarray(s, dtype=float)
        if np.ndim(self.s) == 0:
            self.s = float(self.s)
        self.x = x

    def evaluate(self, ctx):
        return _scale(self.s, self.x.evaluate(ctx))

    def describe(self):
        inner = self.x.describe()
        if isinstance(self.x, Sum):
            inner = f"({inner})"
        if np.ndim(self.s) == 0:
            return f"-{inner}" if self.s == -1.0 else f"{self.s:g}*{inner}"
        return f"K*{inner}"


class Level(Expr):
    """A quantity taken at one level: ``pos`` (0), ``vel`` (1) or ``acc`` (2)."""

    names = ("pos", "vel", "acc")

    def __init__(self, quantity, level: int):
        self.quantity, self.level = quantity, level

    def evaluate(self, ctx):
        q = self.quantity
        if self.level == 0:
            return q.position(ctx.mech)
        if self.level == 1:
            return q.velocity(ctx.mech)
        return q.acceleration(ctx)

    def describe(self):
        return f"{self.names[self.level]}({self.quantity.name})"


class OrientationError(Expr):
    """Rotation vector ``log3(R R_des^T)`` (3,), rad, of an orientation quantity from a target."""

    def __init__(self, quantity, target):
        self.quantity = quantity
        self.target = target if isinstance(target, Expr) or callable(target) else np.asarray(target, dtype=float)

    def evaluate(self, ctx):
        import pinocchio as pin
        R = self.quantity.position(ctx.mech)
        T = self.target
        if isinstance(T, Expr):
            T = T.evaluate(ctx).reshape(3, 3)
        elif callable(T):
            T = np.asarray(T(ctx.t), dtype=float)
        return pin.log3(R @ T.T)

    def describe(self):
        return f"err({self.quantity.name})"


def as_expr(x) -> Expr:
    """Wrap a number, array or callable of time as an expression."""
    if isinstance(x, Expr):
        return x
    if callable(x):
        return TimeFunction(x)
    try:
        return Const(x)
    except (TypeError, ValueError) as exc:
        raise EquationError(f"cannot use {x!r} in a control expression") from exc


def pos(q) -> Expr:
    """The position-level value of a quantity (m, rad, ...) at the state."""
    return Level(q, 0)


def vel(q) -> Expr:
    """The velocity of a quantity (m/s, rad/s) at the state."""
    return Level(q, 1)


def acc(q) -> Expr:
    """The acceleration of a quantity: affine in the unknowns (``J a + Jdot v``)."""
    return Level(q, 2)


def orientation_error(q, target) -> Expr:
    """Orientation error (rad, world axes) of an orientation quantity from a target rotation (3, 3)."""
    return OrientationError(q, target)
