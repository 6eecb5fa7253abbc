"""The quantity algebra: lazy expressions that evaluate, at a state, to numbers or
to affine functions of the step's unknowns.

At the acceleration level every quantity is affine in the unknowns
``x = [a | tau | lam]``: ``acc(p) = J a + Jdot v``. An expression such as
``acc(p) + (2/T) * vel(p) + (1/T**2) * (pos(p) - p_des)`` is kept as a tree and
re-evaluated at every derivative evaluation, so a control equation acts
continuously, integrated with the dynamics.

Evaluation returns either a numpy array (a value known at this state) or a
:class:`Lin` ``A x + b`` with ``A`` of shape (m, nx), kept as its acceleration and
torque/force column blocks.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .errors import EquationError


def _plus(x, y):
    """Sum of two column blocks, None standing for zero."""
    if x is None:
        return y
    return x if y is None else x + y


class Lin:
    """An affine function ``A x + b`` of the unknowns x = [a (nv) | w (nw)], w = [tau | lam].

    ``A`` is kept by column blocks: ``a`` (m, nv) on the accelerations and ``w`` (m, nw) on
    the torques and forces, each None when zero. A quantity's acceleration involves only
    ``a`` and a torque only ``w``, so sums and scalings never touch the zero columns, and
    the solver multiplies only the blocks there are. ``A`` (m, nx) is built on demand;
    ``Lin(A, b)`` with a dense A is accepted as well.
    """

    __slots__ = ("dense", "a", "w", "b", "nv", "nw")

    def __init__(self, A: np.ndarray | None = None, b: np.ndarray | None = None, *,
                 a: np.ndarray | None = None, w: np.ndarray | None = None,
                 nv: int | None = None, nw: int | None = None):
        self.dense, self.b = A, b
        self.a, self.w, self.nv, self.nw = a, w, nv, nw

    @property
    def A(self) -> np.ndarray:
        """The dense matrix (m, nx)."""
        if self.dense is not None:
            return self.dense
        A = np.zeros((len(self.b), self.nv + self.nw))
        if self.a is not None:
            A[:, :self.nv] = self.a
        if self.w is not None:
            A[:, self.nv:] = self.w
        return A

    def parts(self, nv: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The column blocks (on a, on w), None where zero."""
        if self.dense is not None:
            return self.dense[:, :nv], self.dense[:, nv:]
        return self.a, self.w

    def _like(self, a, w, b) -> "Lin":
        return Lin(b=b, a=a, w=w, nv=self.nv, nw=self.nw)

    def __add__(self, o):
        if isinstance(o, Lin):
            if self.dense is None and o.dense is None:
                return self._like(_plus(self.a, o.a), _plus(self.w, o.w), self.b + o.b)
            return Lin(self.A + o.A, self.b + o.b)
        if self.dense is not None:
            return Lin(self.dense, self.b + o)
        return self._like(self.a, self.w, self.b + o)

    __radd__ = __add__

    def __neg__(self):
        return self.scale(-1.0)

    def scale(self, s, nd: int | None = None):
        """``s * (A x + b)`` for a scalar, a vector (row weights) or a matrix s; nd = np.ndim(s) if known."""
        nd = np.ndim(s) if nd is None else nd
        if self.dense is not None:
            A, b = self.dense, self.b
            if nd == 2:
                return Lin(s.dot(A), s.dot(b))
            if nd == 1 and len(s) != 1:
                return Lin(s[:, None] * A, s * b)
            return Lin(s * A, s * b)
        a, w = self.a, self.w
        if nd == 2:
            return self._like(None if a is None else s.dot(a), None if w is None else s.dot(w), s.dot(self.b))
        if nd == 1 and len(s) != 1:
            c = s[:, None]
            return self._like(None if a is None else c * a, None if w is None else c * w, s * self.b)
        return self._like(None if a is None else s * a, None if w is None else s * w, s * self.b)


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


def _scale(s, x, nd: int | None = None):
    nd = np.ndim(s) if nd is None else nd
    if isinstance(x, Lin):
        return x.scale(s, nd)
    if nd == 2:
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
        self.nd = np.ndim(self.s)  # once: np.ndim at every evaluation adds up
        self.x = x

    def evaluate(self, ctx):
        return _scale(self.s, self.x.evaluate(ctx), self.nd)

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
