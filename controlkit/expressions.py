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

The assembly evaluates the same trees at every derivative evaluation, so it does not
walk them each time: :func:`compile_affine` flattens a tree once (per column layout) into
a :class:`Compiled` form — constant column blocks (selections of unknowns, constants) plus
a flat list of per-state terms (a quantity's Jacobian and drift, a value, a function of
time) with their coefficients — which writes its rows straight into the problem's buffers.
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

    # the compiled form (see compile_affine): a tree flattens into (coefficient, leaf) terms
    def _terms(self, coef, out: list) -> None:
        out.append((coef, self))

    def _leaf(self, ctx: Context) -> tuple:
        """How this leaf evaluates in the compiled form: ``(GENERIC, self)`` unless a subclass knows better."""
        return (GENERIC, self)

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
        v = np.asarray(value, dtype=float)
        self.value = v if v.ndim else v.reshape(1)  # (np.atleast_1d's generality costs more)

    def evaluate(self, ctx):
        return self.value

    def _leaf(self, ctx):
        return (CONST, self.value) if type(self).evaluate is Const.evaluate else (GENERIC, self)

    def describe(self):
        v = self.value
        return f"{v[0]:g}" if v.size == 1 else np.array2string(v, precision=4, suppress_small=True)


class TimeFunction(Expr):
    """A value given as a function of simulation time ``fn(t) -> array``."""

    def __init__(self, fn: Callable[[float], np.ndarray], label: str = "f(t)"):
        self.fn, self.label = fn, label

    def evaluate(self, ctx):
        return np.atleast_1d(np.asarray(self.fn(ctx.t), dtype=float))

    def _leaf(self, ctx):
        return (TIME, self.fn) if type(self).evaluate is TimeFunction.evaluate else (GENERIC, self)

    def describe(self):
        return self.label


class Sum(Expr):
    def __init__(self, x: Expr, y: Expr):
        self.x, self.y = x, y

    def evaluate(self, ctx):
        return _add(self.x.evaluate(ctx), self.y.evaluate(ctx))

    def _terms(self, coef, out):
        if type(self).evaluate is not Sum.evaluate:
            return super()._terms(coef, out)
        self.x._terms(coef, out)
        self.y._terms(coef, out)

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

    def _terms(self, coef, out):
        if type(self).evaluate is not Scaled.evaluate:
            return super()._terms(coef, out)
        self.x._terms(_compose(coef, self.s), out)

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

    def _leaf(self, ctx):
        if type(self).evaluate is not Level.evaluate:
            return (GENERIC, self)
        q = self.quantity
        if self.level == 0:
            return (STATE, q.position)
        if self.level == 1:
            return (STATE, q.velocity)
        form = getattr(q, "acceleration_form", None)
        leaf = None if form is None else form(ctx)
        return (GENERIC, self) if leaf is None else leaf

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
        return pin.log3(R.dot(T.T))

    def _leaf(self, ctx):
        T = self.target
        if type(self).evaluate is not OrientationError.evaluate or isinstance(T, Expr) or callable(T):
            return (GENERIC, self)
        return (STATE, self._error_to_fixed_target)  # a function of the state alone

    def _error_to_fixed_target(self, mech) -> np.ndarray:
        import pinocchio as pin
        return pin.log3(self.quantity.position(mech).dot(self.target.T))

    def describe(self):
        return f"err({self.quantity.name})"


# ------------------------------------------------------------ compiled form
# how a leaf evaluates (Expr._leaf): a constant array; a function of time; a function of the
# mechanism (a quantity's position or velocity); ``J a + Jdot v`` of a quantity (its jacobian and
# drift methods); a constant Lin (a selection of unknowns: depends on the layout only); anything else
CONST, TIME, STATE, JACOBIAN, LIN, GENERIC = range(6)


def _compose(outer, inner):
    """The one coefficient doing ``outer * (inner * v)`` (None: identity; float, row weights (m,) or matrix (k, m))."""
    if inner is None:
        return outer
    if outer is None:
        return inner
    no, ni = np.ndim(outer), np.ndim(inner)
    if no == 2:
        return outer @ inner if ni == 2 else outer * inner  # (k, m) * (m,) scales the columns
    if no == 1 and ni == 2:
        return outer[:, None] * inner
    return outer * inner


def _apply(c, x: np.ndarray) -> np.ndarray:
    """``c * x`` for a coefficient of the compiled form and a vector (m,) or a matrix (m, n)."""
    if c is None:
        return x
    if type(c) is float:
        return c * x
    if c.ndim == 2:
        return c.dot(x)
    return c[:, None] * x if x.ndim == 2 else c * x


def _scalar_coef(s):
    """Scaled's factor as a coefficient: a float, or an array (a length-1 vector acts as a scalar)."""
    if np.ndim(s) == 0:
        return float(s)
    s = np.asarray(s, dtype=float)
    return float(s[0]) if s.shape == (1,) else s


class Compiled:
    """An affine expression flattened for one column layout: ``A x + b`` as constant blocks
    (``a0`` (m, nv) or None, ``w0`` (m, nw) or None, ``b0`` (m,)) plus per-state terms.

    Each term starts with its row slice: ``jac`` (rows, coefficient, quantity) add a quantity's
    ``J a``; ``vals`` (rows, coefficient, function, uses time) add a value to b (a function of
    time, a quantity's position or velocity, and the drift ``Jdot v`` of each ``jac`` term);
    ``generic`` (rows, coefficient, expression) add what the tree evaluates to.
    ``sizes``: (size, is a vector) of each value when compiled (a function of time may give a scalar).
    ``writes_w``: whether the per-state terms may touch the torque/force columns.
    """

    __slots__ = ("m", "a0", "w0", "b0", "jac", "vals", "generic", "writes_w", "sizes")

    def __init__(self, m: int, a0, w0, b0, jac, vals, generic, writes_w: bool):
        self.m, self.a0, self.w0, self.b0 = m, a0, w0, b0
        self.jac, self.vals, self.generic = jac, vals, generic
        self.writes_w = writes_w
        self.sizes: list = []

    @property
    def writes_a(self) -> bool:
        """Whether the per-state terms touch the acceleration columns."""
        return bool(self.jac or self.generic)

    def shifted(self, k: int) -> tuple[list, list, list]:
        """The per-state terms with their rows moved down by k (for stacking statements)."""
        def move(terms):
            return [(slice(sl.start + k, sl.stop + k), *rest) for sl, *rest in terms]
        return move(self.jac), move(self.vals), move(self.generic)

    def fill(self, ctx: Context, Aa, Aw, b, record: list | None = None) -> None:
        """Add the per-state terms to rows ``Aa`` (m, nv), ``Aw`` (m, nw), ``b`` (m,) holding the constants."""
        fill_jacobians(self.jac, ctx.mech, Aa)
        fill_values(self.vals, ctx, b, record)
        fill_generic(self.generic, ctx, Aa, Aw, b)


def fill_jacobians(jac, mech, Aa) -> None:
    """Add the ``J a`` part of ``jac`` terms (see :class:`Compiled`) to stacked rows."""
    for sl, c, q in jac:
        J = q.jacobian(mech)
        if J.ndim != 2:  # a size-1 quantity's Jacobian given as (nv,) (as Quantity.acceleration allows)
            J = np.broadcast_to(J, (q.size, J.shape[-1]))
        Aa[sl] += J if c is None else _apply(c, J)


def fill_values(vals, ctx: Context, b, record: list | None = None) -> None:
    """Add value terms (see :class:`Compiled`) to stacked rows' b, one by one; ``record`` collects the raw values."""
    mech, t = ctx.mech, ctx.t
    for sl, c, fn, timed in vals:
        raw = fn(t) if timed else fn(mech)
        if record is not None:
            record.append(raw)
        v = np.asarray(raw, dtype=float)
        b[sl] += v if c is None else _apply(c, v)


def fill_generic(generic, ctx: Context, Aa, Aw, b) -> None:
    """Add what generic terms' trees evaluate to (see :class:`Compiled`) to stacked rows."""
    nv = ctx.layout.nv
    for sl, c, e in generic:
        r = e.evaluate(ctx)
        if isinstance(r, Lin):
            ra, rw = r.parts(nv)
            if ra is not None:
                Aa[sl] += _apply(c, ra)
            if rw is not None:
                Aw[sl] += _apply(c, rw)
            b[sl] += _apply(c, r.b)
        else:
            b[sl] += _apply(c, np.asarray(r, dtype=float))


def as_vector(x) -> np.ndarray:
    """A value as a float vector (a scalar becomes a vector of one)."""
    return np.asarray(x, dtype=float).reshape(-1)


def value_map(vals, sizes, m: int) -> np.ndarray | None:
    """The matrix S (m, sum of sizes) with ``S @ concatenate(values)`` = what ``vals`` add to b.

    None when a term's coefficient and value size do not make a fixed linear map of its value.
    """
    S = np.zeros((m, sum(s for s in sizes)))
    j = 0
    for (sl, c, _, _), s in zip(vals, sizes):
        k = sl.stop - sl.start
        try:
            S[sl, j:j + s] = np.broadcast_to(_apply(c, np.eye(s)), (k, s))
        except ValueError:
            return None
        j += s
    return S


def compile_affine(expr: Expr, ctx: Context, ref: Lin) -> Compiled:
    """Flatten an expression affine in the unknowns for repeated evaluation at ``ctx.layout``.

    ``ref`` is the expression evaluated by its tree at ``ctx``: it gives the row count, and the
    compiled form is checked against it; an expression the flattening does not reproduce
    (to 1e-12) is compiled as one generic term, evaluated by its tree every time.
    """
    L = ctx.layout
    nv, nw = L.nv, L.nx - L.nv
    m = len(ref.b)
    terms: list = []
    expr._terms(None, terms)
    a0 = np.zeros((m, nv))
    w0 = np.zeros((m, nw))
    b0 = np.zeros(m)
    has_a = has_w = writes_w = False
    jac, vals, generic = [], [], []
    rows = slice(0, m)
    for c, leaf in terms:
        c = None if c is None else _scalar_coef(c)
        kind, obj = leaf._leaf(ctx)
        if kind == CONST:
            b0 += _apply(c, obj)
        elif kind == TIME or kind == STATE:
            vals.append((rows, c, obj, kind == TIME))
        elif kind == JACOBIAN:
            jac.append((rows, c, obj))
            vals.append((rows, c, obj.drift, False))
        elif kind == LIN:
            ra, rw = obj.parts(nv)
            if ra is not None:
                a0 += _apply(c, ra)
                has_a = True
            if rw is not None:
                w0 += _apply(c, rw)
                has_w = True
            b0 += _apply(c, obj.b)
        else:
            generic.append((rows, c, obj))
            writes_w = True  # a generic term may give a Lin with torque/force columns
    comp = Compiled(m, a0 if has_a else None, w0 if has_w or writes_w else None, b0, jac, vals, generic, writes_w)
    raw: list = []
    if not _reproduces(comp, ctx, ref, raw):
        comp = Compiled(m, None, np.zeros((m, nw)), np.zeros(m), [], [], [(rows, None, expr)], True)
    else:
        comp.sizes = [(np.size(v), type(v) is np.ndarray and v.ndim == 1) for v in raw]
    return comp


def _reproduces(comp: Compiled, ctx: Context, ref: Lin, record: list) -> bool:
    """Whether the compiled form gives the tree's value at ctx (to 1e-12 relative)."""
    nv, nw = ctx.layout.nv, ctx.layout.nx - ctx.layout.nv
    m = comp.m
    Aa = np.zeros((m, nv)) if comp.a0 is None else comp.a0.copy()
    Aw = np.zeros((m, nw)) if comp.w0 is None else comp.w0.copy()
    b = comp.b0.copy()
    try:
        comp.fill(ctx, Aa, Aw, b, record)
    except (ValueError, TypeError, IndexError):  # shapes the flattening does not handle
        return False
    ra, rw = ref.parts(nv)
    for mine, theirs in ((Aa, ra), (Aw, rw), (b, ref.b)):
        theirs = np.zeros_like(mine) if theirs is None else np.asarray(theirs, dtype=float)
        if mine.shape != theirs.shape or not np.allclose(mine, theirs, rtol=1e-12, atol=1e-12 * (1.0 + np.abs(theirs).max(initial=0.0)), equal_nan=True):
            return False
    return True


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
