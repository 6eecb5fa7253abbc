"""The equation set and its assembly into a problem for one state.

The unknowns of a step are ``x = [a (nv) | tau (ntau) | lam (constraint rows)]``.
An :class:`EquationSet` holds what control programs add by name:

- control equations ``lhs == rhs`` (rows of ``A x = b``),
- direct assignments of quantities (``tau`` of a joint, an acceleration, a force),
- quadratic costs ``1/2 |W (A x - b)|^2``,
- regularizations: costs of the same form that only choose among what the other statements
  leave free (the documented default, least squared torques then forces, fills what they leave),
- inequalities ``G x <= h``.

:func:`build_problem` evaluates them, together with the motion equations
``M a + h = S^T tau + J^T lam + f_ext`` and the active constraints'
acceleration equations ``J a + Jdot v = -(kv J v + kp phi)``, at the
mechanism's current state. The result is a plain :class:`Problem` that prints
and can be inspected; :mod:`controlkit.solver` solves it.

Assembly runs at every derivative evaluation, so it does not walk the statements'
expression trees each time: a statement is compiled once per column layout
(:func:`controlkit.expressions.compile_affine`, checked against its tree), and the
statements of each kind are stacked once per statement structure (``EquationSet.structure``)
into a plan whose constant rows (selections of unknowns, constants, weights) are built
once; an evaluation adds the Jacobians and values of the state into fresh arrays, so
every :class:`Problem` owns its rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .constraints import Constraint, static_labels
from .errors import ArgumentError, EquationError, UnknownNameError
from .expressions import (
    Compiled,
    Const,
    Context,
    Expr,
    Level,
    Lin,
    Scaled,
    Sum,
    as_expr,
    as_vector,
    compile_affine,
    fill_generic,
    fill_jacobians,
    fill_values,
    value_map,
)
from .singular import locked_directions, without_noise_rows


# --------------------------------------------------------------- statements
class Equation:
    """``lhs == rhs``: a control equation, affine in the unknowns at each state."""

    def __init__(self, lhs: Expr, rhs: Expr):
        self.lhs, self.rhs = lhs, rhs
        self.residual = lhs - rhs

    def __bool__(self):  # `if expr == 0:` is a mistake worth catching
        raise EquationError("an Equation has no truth value; pass it to add_equation()")

    def describe(self) -> str:
        return f"{self.lhs.describe()} = {self.rhs.describe()}"


class Inequality:
    """``expr <= 0`` (built from ``lhs <= rhs`` or ``lhs >= rhs``)."""

    def __init__(self, expr: Expr):
        self.expr = expr

    def __bool__(self):
        raise EquationError("an Inequality has no truth value; pass it to add_inequality()")

    def describe(self) -> str:
        return f"{self.expr.describe()} <= 0"


@dataclass
class Cost:
    """``1/2 * weight^2 * |expr|^2`` where expr is affine in the unknowns; weight scalar or (m,)."""

    expr: Expr
    weight: float | np.ndarray = 1.0

    def describe(self) -> str:
        w = self.weight
        ws = f"{w:g}" if np.ndim(w) == 0 else "W"
        return f"1/2 |{ws} * ({self.expr.describe()})|^2"


@dataclass
class Assignment:
    """A direct assignment ``quantity := value`` (value an array or an expression)."""

    quantity: object
    value: Expr

    def describe(self) -> str:
        return f"{self.quantity.name} := {self.value.describe()}"


def _same_held_value_slot(old: Assignment, quantity, value) -> bool:
    """Whether a re-assignment only changes a constant value: same quantity object, a constant of
    the same shape, and the old one never compiled into rows (it sets unknowns' columns)."""
    return (old.quantity is quantity and type(old.value) is Const and type(value) is Const
            and old.value.value.shape == value.value.shape and "_rows" not in old.__dict__)


def _check_finite(name: str, expr) -> None:
    """Raise ArgumentError when a constant inside a statement is NaN or infinite (a target computed
    from a failed measurement would otherwise surface steps later as a failed factorization)."""
    bad = _nonfinite_constant(expr, 0)
    if bad is not None:
        raise ArgumentError(f"control statement {name!r}: a value in it is not finite ({bad}); "
                            f"check the target or gain it was built from")


def _nonfinite_constant(x, depth: int):
    """The first non-finite constant (as text) in an expression tree, or None."""
    if type(x) is Const:
        v = x.value
        return None if np.isfinite(v).all() else np.array2string(v, precision=4)
    if depth > 50 or not isinstance(x, Expr):
        return None
    for item in vars(x).values():
        for y in (item if isinstance(item, (list, tuple)) else (item,)):
            if isinstance(y, Expr):
                bad = _nonfinite_constant(y, depth + 1)
                if bad is not None:
                    return bad
            elif isinstance(y, (float, np.floating)) and not np.isfinite(y):
                return repr(float(y))
    return None


# -------------------------------------------------------------- the layout
@dataclass
class Layout:
    """Column layout of the unknown vector x = [a | tau | lam]."""

    nv: int
    ntau: int
    lam: dict[str, slice]
    nlam: int

    @property
    def nx(self) -> int:
        return self.nv + self.ntau + self.nlam

    @property
    def a(self) -> slice:
        return slice(0, self.nv)

    @property
    def tau(self) -> slice:
        return slice(self.nv, self.nv + self.ntau)

    @classmethod
    def for_mechanism(cls, mech, extra: dict[str, int] | None = None) -> "Layout":
        lam, k = {}, mech.nv + mech.ntau
        sizes = [(name, c.size) for name, c in mech.constraints.items()] + list((extra or {}).items())
        for name, size in sizes:
            lam[name] = slice(k, k + size)
            k += size
        return cls(mech.nv, mech.ntau, lam, k - mech.nv - mech.ntau)


# ------------------------------------------------------------- the problem
class Block:
    """Named rows ``A x = b`` (equality) or ``A x <= b`` (inequality); ``kind`` says where they come from.

    ``A`` may be given dense, or by column blocks ``Aa`` (on a) and ``Aw`` (on [tau | lam]),
    None where zero, with the layout's ``nv`` and ``nx``; the solver works on the blocks,
    and ``A`` is built from them when asked for.
    """

    def __init__(self, name: str, kind: str, A: np.ndarray | None = None, b: np.ndarray | None = None,
                 labels: list[str] | None = None, weight: np.ndarray | None = None, *,
                 Aa: np.ndarray | None = None, Aw: np.ndarray | None = None,
                 nv: int | None = None, nx: int | None = None):
        self.name, self.kind, self.b = name, kind, b
        self.labels = [] if labels is None else labels
        self.weight = weight  # costs only
        self._A, self.Aa, self.Aw, self.nv, self.nx = A, Aa, Aw, nv, nx

    @property
    def A(self) -> np.ndarray:
        """The dense rows (m, nx)."""
        if self._A is None:
            A = np.zeros((len(self.b), self.nx))
            if self.Aa is not None:
                A[:, :self.nv] = self.Aa
            if self.Aw is not None:
                A[:, self.nv:] = self.Aw
            self._A = A
        return self._A

    def parts(self, nv: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The column blocks (on a, on [tau | lam]), None where zero."""
        if self._A is not None and self.Aa is None and self.Aw is None:
            return self._A[:, :nv], self._A[:, nv:]
        return self.Aa, self.Aw

    def __repr__(self) -> str:
        return f"Block({self.name!r}, {self.kind!r}, {len(self.b)} rows)"


class Rows:
    """The rows of several statements of one kind, stacked: ``Aa a + Aw w`` (=, <= or cost target) ``b``.

    ``Aa`` (m, nv) and ``Aw`` (m, nw) are None where zero; ``weight`` (m,) for costs, else None;
    ``spans``: (name, kind, first row, end row) per statement; ``labels``: row labels by statement
    name where there are any (the constraints'). :meth:`blocks` gives one :class:`Block` per statement.
    Arrays may be shared between problems (constant rows): treat them as read-only.
    """

    __slots__ = ("Aa", "Aw", "b", "spans", "nv", "nx", "weight", "labels", "_blocks")

    def __init__(self, Aa, Aw, b: np.ndarray, spans: list, nv: int, nx: int, weight=None, labels=None):
        self.Aa, self.Aw, self.b, self.spans = Aa, Aw, b, spans
        self.nv, self.nx, self.weight, self.labels = nv, nx, weight, labels
        self._blocks = None

    @classmethod
    def empty(cls, nv: int, nx: int) -> "Rows":
        return cls(None, None, np.zeros(0), [], nv, nx)

    def __len__(self) -> int:
        return len(self.b)

    def owners(self) -> list[str]:
        """The name of the statement each row comes from."""
        return [name for name, _, i, j in self.spans for _ in range(j - i)]

    def blocks(self) -> list[Block]:
        """One block per statement (views of the stacked rows), for printing and inspection."""
        if self._blocks is None:
            lab, w = self.labels or {}, self.weight
            self._blocks = [Block(name, kind, None, self.b[i:j], list(lab.get(name, [])),
                                  None if w is None else w[i:j],
                                  Aa=None if self.Aa is None else self.Aa[i:j],
                                  Aw=None if self.Aw is None else self.Aw[i:j], nv=self.nv, nx=self.nx)
                            for name, kind, i, j in self.spans]
        return self._blocks

    @staticmethod
    def stack(first: "Rows", second: "Rows") -> "Rows":
        """``first``'s rows above ``second``'s (equalities or inequalities: unweighted)."""
        if not len(second.spans):
            return first
        if not len(first.spans):
            return second
        k, m = len(first), len(second)
        out = []
        for x, y, width in ((first.Aa, second.Aa, first.nv), (first.Aw, second.Aw, first.nx - first.nv)):
            if x is None and y is None:
                out.append(None)
                continue
            A = np.empty((k + m, width))
            A[:k] = 0.0 if x is None else x
            A[k:] = 0.0 if y is None else y
            out.append(A)
        spans = first.spans + [(n, kind, i + k, j + k) for n, kind, i, j in second.spans]
        w = None if first.weight is None else np.concatenate([first.weight, second.weight])
        labels = {**(first.labels or {}), **(second.labels or {})} or None
        return Rows(out[0], out[1], np.concatenate([first.b, second.b]), spans, first.nv, first.nx, w, labels)


@dataclass
class Problem:
    """Everything one solve needs, at one state; printable.

    Motion equations: ``M a + bias = S^T tau + G^T lam`` with bias = h - f_ext (N, N m) and
    G = ``Jf`` (the force Jacobian) when given, else ``Jc``.
    ``eq_rows``, ``cost_rows``, ``ineq_rows``, ``reg_rows``: the equalities (constraints first),
    costs, inequalities and regularizations, each kind stacked (:class:`Rows`); ``equalities``, ``costs`` and
    ``inequalities`` list them as one :class:`Block` per statement.
    ``fixed``: (name, columns, values) of the direct assignments of unknowns.
    """

    time: float
    layout: Layout
    M: np.ndarray | None  # (nv, nv); None when ``mass_solve`` is given (the solves never need M itself)
    bias: np.ndarray
    S: np.ndarray
    Jc: np.ndarray
    eq_rows: Rows
    fixed: list[tuple[str, np.ndarray, np.ndarray]]
    cost_rows: Rows
    ineq_rows: Rows
    default_cost: bool = True
    mass_solve: object = None  # b -> M^-1 b (the mechanism's); None: factor M here
    Jf: np.ndarray | None = None  # force Jacobian when it differs from Jc (sliding friction)
    lam_labels: list[str] = field(default_factory=list)
    mass_inverse: object = None  # () -> M^-1 (nv, nv) at the state (the mechanism's), or None
    reg_rows: Rows | None = None  # regularizations: weighted like costs, used where the costs are flat
    # the solver's factors kept with the constraint rows (``Jc`` by identity); the mechanism's cache
    factors: dict | None = field(default=None, repr=False, compare=False)

    @property
    def equalities(self) -> list[Block]:
        return self.eq_rows.blocks()

    @property
    def costs(self) -> list[Block]:
        return self.cost_rows.blocks()

    @property
    def inequalities(self) -> list[Block]:
        return self.ineq_rows.blocks()

    def sizes(self) -> dict[str, int]:
        """Row counts per kind of statement."""
        return {
            "unknowns": self.layout.nx,
            "motion": self.layout.nv,
            "equalities": len(self.eq_rows),
            "assigned": sum(len(c) for _, c, _ in self.fixed),
            "costs": len(self.cost_rows),
            "regularizations": len(self.reg_rows) if self.reg_rows is not None else 0,
            "inequalities": len(self.ineq_rows),
        }

    def __str__(self) -> str:
        s = self.sizes()
        lines = [f"problem at t = {self.time:.9g} s: {s['unknowns']} unknowns "
                 f"(a {self.layout.nv}, tau {self.layout.ntau}, lam {self.layout.nlam})",
                 f"  motion equations: {s['motion']} rows"]
        kinds = [("equalities", self.eq_rows), ("costs", self.cost_rows)]
        if self.reg_rows is not None and self.reg_rows.spans:
            kinds.append(("regularizations", self.reg_rows))
        for title, rows in kinds + [("inequalities", self.ineq_rows)]:
            lines.append(f"  {title}: {len(rows)} rows")
            lines += [f"    {name} ({kind}, {j - i} rows)" for name, kind, i, j in rows.spans]
        lines.append(f"  assigned unknowns: {s['assigned']}")
        lines += [f"    {name} ({len(cols)} columns)" for name, cols, _ in self.fixed]
        return "\n".join(lines)


# ----------------------------------------------------------- equation set
class EquationSet:
    """The named control statements acting on one mechanism.

    Args:
        kp, kv: Baumgarte gains for constraint drift (1/s^2, 1/s).
        underdetermined: ``"default"`` completes an underdetermined set by minimizing
            the sum of squared control torques and constraint forces (so joints nobody
            controls are passive); ``"raise"`` raises :class:`UnderdeterminedError`.
        critical_forms: when constraints are redundant, lock the motions that a
            second-order analysis rules out (see :mod:`controlkit.singular`).
    """

    def __init__(self, kp: float = 100.0, kv: float = 20.0, underdetermined: str = "default",
                 critical_forms: bool = True):
        if underdetermined not in ("default", "raise"):
            raise EquationError(f"underdetermined must be 'default' or 'raise', got {underdetermined!r}")
        self.kp, self.kv = float(kp), float(kv)
        self.critical_forms = critical_forms
        self.underdetermined = underdetermined
        self.equations: dict[str, Equation] = {}
        self.assignments: dict[str, Assignment] = {}
        self.costs: dict[str, Cost] = {}
        self.regularizations: dict[str, Cost] = {}
        self.inequalities: dict[str, Inequality] = {}
        #: bumped by every change; ``structure`` only by changes of which statements are in force
        #: (a torque assignment's new value each controller tick keeps the compiled plan)
        self.version = 0
        self.structure = 0

    def _changed(self, structural: bool = True) -> None:
        self.version += 1
        if structural:
            self.structure += 1

    # statements are added and removed by name
    def _check_new(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise EquationError(f"a control statement needs a non-empty string name, got {name!r}")
        for d in self._kinds():
            if name in d:
                raise EquationError(f"a control statement named {name!r} already exists; remove it first")

    def add_equation(self, name: str, equation: Equation) -> None:
        """Add a named control equation (built with ``==`` from the quantity algebra)."""
        if not isinstance(equation, Equation):
            raise EquationError(f"add_equation({name!r}, ...) needs an Equation (lhs == rhs), got {type(equation).__name__}")
        _check_finite(name, equation.residual)
        self._check_new(name)
        self.equations[name] = equation
        self._changed()

    def assign(self, name: str, quantity, value) -> None:
        """Directly assign a quantity (a torque, a force, an acceleration) a value (array or expression)."""
        value = as_expr(value)
        _check_finite(name, value)
        old = self.assignments.get(name)
        if old is not None and _same_held_value_slot(old, quantity, value):
            # re-assigning at each controller tick is the common case: a new value for an
            # unknown's columns (torques) is read when the problem is stacked
            old.value = value
            self._changed(structural=False)
            return
        if old is not None:
            del self.assignments[name]
        self._check_new(name)
        self.assignments[name] = Assignment(quantity, value)
        self._changed()

    def add_cost(self, name: str, expr, weight=1.0) -> None:
        """Add a named cost ``1/2 |weight * expr|^2``; expr is affine in the unknowns (an acceleration, torque, ...)."""
        self._add_weighted(self.costs, "add_cost", name, expr, weight)

    def add_regularization(self, name: str, expr, weight=1.0) -> None:
        """Add a named regularization ``1/2 |weight * expr|^2``: it only chooses among what the
        equations and costs leave free (how two planted feet share a load, internal forces),
        never trading against a cost, and replaces the default (least squared torques, then
        forces) there; the default fills what regularizations leave free. Its weights only
        matter relative to each other's."""
        self._add_weighted(self.regularizations, "add_regularization", name, expr, weight)

    def _add_weighted(self, table: dict, what: str, name: str, expr, weight) -> None:
        from .expressions import Expr as _E
        if isinstance(expr, Equation):
            expr = expr.residual
        if not isinstance(expr, _E):
            raise EquationError(f"{what}({name!r}, ...) needs an expression, got {type(expr).__name__}")
        _check_finite(name, expr)
        if not np.isfinite(np.asarray(weight, dtype=float)).all():
            raise ArgumentError(f"{what}({name!r}, ...): the weight {weight!r} is not finite")
        self._check_new(name)
        table[name] = Cost(expr, weight)
        self._changed()

    def set_weight(self, name: str, weight) -> None:
        """Change a cost's or regularization's weight (scalar or (m,)) between solves.

        Cheap: the compiled statements stay (a controller may re-weight a task at every tick)."""
        for table in (self.costs, self.regularizations):
            cost = table.get(name)
            if cost is None:
                continue
            m = None
            plan = self.__dict__.get("_plan")
            if plan is not None and plan[0] == self.structure:
                m = plan[3].set_weight(name, weight)  # checks the size against the compiled rows
            if m is None and np.ndim(weight) > 1:
                raise EquationError(f"set_weight({name!r}, ...): the weight must be a scalar or a vector")
            cost.weight = weight
            self._changed(structural=m is None)  # (no compiled plan to update: compiled anew)
            return
        raise UnknownNameError("cost or regularization", name, list(self.costs) + list(self.regularizations))

    def add_inequality(self, name: str, inequality: Inequality) -> None:
        """Add named inequality rows (built with ``<=`` or ``>=``)."""
        if not isinstance(inequality, Inequality):
            raise EquationError(f"add_inequality({name!r}, ...) needs an Inequality (a <= b), got {type(inequality).__name__}")
        self._check_new(name)
        self.inequalities[name] = inequality
        self._changed()

    def remove(self, name: str) -> None:
        """Remove a control statement of any kind by name."""
        for d in self._kinds():
            if name in d:
                del d[name]
                self._changed()
                return
        raise UnknownNameError("control statement", name, self.names())

    def __contains__(self, name: str) -> bool:
        return name in self.names()

    def names(self) -> list[str]:
        """Names of every statement."""
        return [name for d in self._kinds() for name in d]

    def is_empty(self) -> bool:
        return not any(self._kinds())

    def _kinds(self) -> tuple[dict, ...]:
        return (self.equations, self.assignments, self.costs, self.regularizations, self.inequalities)


# --------------------------------------------------------------- assembly
def _lin(value, nx: int, name: str, what: str) -> Lin:
    if isinstance(value, Lin):
        return value
    raise EquationError(f"{what} {name!r} does not involve the unknowns (accelerations, torques or forces); "
                        f"write it at the acceleration level, e.g. acc(q) + ... == 0")


class _ConstraintPlan:
    """What the assembly of one set of active constraints keeps between evaluations.

    Valid while the same constraint objects are active with the same sizes: row slices,
    labels (when they depend on names and sizes only), whether the forces are ideal, the
    column layout, and the critical-form analysis' full-rank reference.
    """

    __slots__ = ("key", "cons", "slices", "rows", "labels", "ideal", "nonideal", "layout", "memo", "second_order")

    def __init__(self, mech, key):
        self.key = key
        self.cons = list(key[0])
        self.slices, k = [], 0
        for size in key[1]:
            self.slices.append(slice(k, k + size))
            k += size
        self.rows = k
        self.labels = ([lab for c in self.cons for lab in c.row_labels()]
                       if all(static_labels(c) for c in self.cons) else None)
        self.nonideal = [c for c in self.cons if type(c).force_jacobian is not Constraint.force_jacobian]
        self.ideal = not self.nonideal
        self.layout = Layout.for_mechanism(mech)
        self.memo: dict = {}
        # rows of the constraints whose redundancy the critical-form analysis examines (None: all)
        picked = [sl for c, sl in zip(self.cons, self.slices) if c.second_order]
        self.second_order = None if len(picked) == len(self.cons) else (
            [c for c in self.cons if c.second_order],
            np.concatenate([np.arange(sl.start, sl.stop) for sl in picked]) if picked else np.zeros(0, dtype=int))


def _constraint_plan(mech, cons: dict) -> _ConstraintPlan:
    vals = tuple(cons.values())
    sizes = []  # contact hinges change their size between events (a loop: 3 calls per step)
    for c in vals:
        sizes.append(c.size)
    key = (vals, tuple(sizes))
    plan = mech.cache.get("constraint_plan")
    if plan is None or plan.key != key:
        plan = mech.cache["constraint_plan"] = _ConstraintPlan(mech, key)
    return plan


def _assigned_columns(eqs: EquationSet, layout: Layout) -> dict[str, np.ndarray]:
    """Columns of x set directly by each assignment of a torque or force (cached per statement structure)."""
    c = eqs.__dict__.get("_assigned_cols")
    if c is None or c[0] != eqs.structure or c[1] is not layout:
        cols = {}
        for name, asg in eqs.assignments.items():
            q = asg.quantity
            if hasattr(q, "columns") and q.columns(layout)[0] >= layout.nv:
                cols[name] = q.columns(layout)
        c = eqs._assigned_cols = (eqs.structure, layout, cols)
    return c[2]


# ------------------------------------------------------- compiled statements
def _compiled(stmt, expr_of, ctx: Context, name: str, what: str) -> Compiled:
    """A statement's expression compiled for the context's layout and mechanism (kept on the statement).

    The first evaluation at a layout goes through the expression tree, which checks that the
    statement is affine in the unknowns (the same error as ever if not). A statement on the
    accelerations alone does not depend on the torque and force columns, so it stays compiled
    while constraints come and go (welds at every step of a walk).
    """
    c = stmt.__dict__.get("_compiled")
    L = ctx.layout
    if c is not None and c[1] is ctx.mech and (c[0] is L or c[0] == ("accelerations", L.nv)):
        return c[2]
    expr = expr_of(stmt)
    try:
        value = expr.evaluate(ctx)
    except ValueError as exc:  # (numpy's broadcast error: parts of different sizes)
        raise EquationError(f"{what} {name!r}: its parts do not have the same number of components ({exc}); "
                            f"check the size of its target: {stmt.describe()}") from None
    comp = compile_affine(expr, ctx, _lin(value, L.nx, name, what))
    on_a_only = comp.w0 is None and not comp.writes_w
    stmt._compiled = (("accelerations", L.nv) if on_a_only else L, ctx.mech, comp)
    return comp


def _assignment_rows(asg: Assignment) -> Expr:
    """``acc(quantity) - value``: an assignment of a quantity that is not an unknown, as rows ``A x = value - Jdot v``."""
    e = asg.__dict__.get("_rows")
    if e is None:
        e = asg._rows = Sum(Level(asg.quantity, 2), Scaled(-1.0, asg.value))
    return e


class _KindPlan:
    """The statements of one kind (equalities, costs or inequalities), compiled and stacked.

    Rows ``Aa a + Aw w = b``: the constant parts are stacked once (``a0``, ``w0``, ``b0``, the
    costs' ``weight``). :meth:`rows` copies them and adds the per-state terms: each Jacobian into
    its rows, and every value (drifts, functions of time, positions, velocities) at once as
    ``S @ concatenate(values)`` (``S`` from the coefficients), so a statement costs a few
    Python calls rather than a few numpy operations per term. Blocks nobody writes per
    state are shared by every problem built from the plan (read-only).
    """

    def __init__(self, items: list[tuple[str, str, Compiled, np.ndarray | None]], nv: int, nx: int):
        nw = nx - nv
        self.nv, self.nx = nv, nx
        self.m = m = sum(c.m for _, _, c, _ in items)
        self.spans, self.jac, self.vals, self.generic, sizes = [], [], [], [], []
        self.writes_a = any(c.writes_a for _, _, c, _ in items)
        self.writes_w = any(c.writes_w for _, _, c, _ in items)
        has_a = self.writes_a or any(c.a0 is not None for _, _, c, _ in items)
        has_w = self.writes_w or any(c.w0 is not None for _, _, c, _ in items)
        self.a0 = np.zeros((m, nv)) if has_a else None
        self.w0 = np.zeros((m, nw)) if has_w else None
        self.b0 = np.zeros(m)
        weights = []
        k = 0
        for name, kind, c, w in items:
            sl = slice(k, k + c.m)
            self.spans.append((name, kind, k, k + c.m))
            if c.a0 is not None:
                self.a0[sl] = c.a0
            if c.w0 is not None:
                self.w0[sl] = c.w0
            self.b0[sl] = c.b0
            jac, vals, generic = c.shifted(k)
            self.jac += jac
            self.vals += vals
            self.generic += generic
            sizes += c.sizes
            weights.append(w)
            k += c.m
        self.weight = np.concatenate(weights) if weights and weights[0] is not None else None
        for A, written in ((self.a0, self.writes_a), (self.w0, self.writes_w)):
            if A is not None and not written:
                A.setflags(write=False)  # shared by every problem built from this plan
        self._group_values(sizes)
        self.none = Rows.empty(nv, nx)  # (when there are no rows: one object for every problem)

    def _group_values(self, sizes) -> None:
        """Order the value functions (the mechanism's first, then time's) and build their map S."""
        self.S = None
        if not self.vals or len(sizes) != len(self.vals):
            return
        order = sorted(range(len(self.vals)), key=lambda i: self.vals[i][3])  # stable: state, then time
        vals = [self.vals[i] for i in order]
        sizes = [sizes[i] for i in order]
        S = value_map(vals, [s for s, _ in sizes], self.m)
        if S is None:
            return
        fns = [fn if vector else (lambda x, fn=fn: as_vector(fn(x))) for (_, _, fn, _), (_, vector) in zip(vals, sizes)]
        n_state = sum(1 for v in vals if not v[3])
        self.S, self.n_values = S, S.shape[1]
        self.state_fns, self.time_fns = fns[:n_state], fns[n_state:]

    def _values(self, ctx: Context, b: np.ndarray) -> np.ndarray:
        """b plus every value term (by the map S; one by one if a value's size has changed)."""
        if self.S is not None:
            mech, t, vs = ctx.mech, ctx.t, []  # (loops: every tick, no comprehension objects)
            for f in self.state_fns:
                vs.append(f(mech))
            for f in self.time_fns:
                vs.append(f(t))
            try:
                flat = np.concatenate(vs)
            except ValueError:
                flat = None
            if flat is not None and len(flat) == self.n_values:
                return b + self.S.dot(flat)
        b = b.copy()
        fill_values(self.vals, ctx, b)
        return b

    def rows(self, ctx: Context) -> Rows:
        """The stacked rows at the context's state and time."""
        if not self.m:
            return self.none
        Aa = self.a0.copy() if self.writes_a else self.a0
        Aw = self.w0.copy() if self.writes_w else self.w0
        fill_jacobians(self.jac, ctx.mech, Aa)
        b = self._values(ctx, self.b0) if self.vals else self.b0.copy()
        fill_generic(self.generic, ctx, Aa, Aw, b)
        np.negative(b, out=b)  # A x + b (affine) -> rows A x = -b
        return Rows(Aa, Aw, b, self.spans, self.nv, self.nx, self.weight)


def _weights(weight, m: int) -> np.ndarray:
    """A cost's weight per row (m,)."""
    if np.ndim(weight) == 0:
        return np.full(m, float(weight))
    return np.broadcast_to(np.asarray(weight, dtype=float), (m,)).copy()


class _SetPlan:
    """An equation set compiled for one layout and mechanism (valid for one statement structure)."""

    def __init__(self, eqs: EquationSet, ctx: Context):
        L = ctx.layout
        nv, nx = L.nv, L.nx
        unknown_cols = _assigned_columns(eqs, L) if eqs.assignments else {}
        eq_items = [(name, "control", _compiled(eq, lambda s: s.residual, ctx, name, "control equation"), None)
                    for name, eq in eqs.equations.items()]
        self.fixed = []
        for name, asg in eqs.assignments.items():
            cols = unknown_cols.get(name)
            if cols is None:
                eq_items.append((name, "assignment", _compiled(asg, _assignment_rows, ctx, name, "assignment"), None))
            else:
                self.fixed.append((name, cols, asg))
        self.equalities = _KindPlan(eq_items, nv, nx)
        self.costs = self._weighted(eqs.costs, "cost", ctx)
        self.regularizations = self._weighted(eqs.regularizations, "regularization", ctx)
        self.inequalities = _KindPlan(
            [(name, "inequality", _compiled(ineq, lambda s: s.expr, ctx, name, "inequality"), None)
             for name, ineq in eqs.inequalities.items()], nv, nx)

    def set_weight(self, name: str, weight) -> int | None:
        """A weighted statement's new weight in its kind's stacked weights (the stacked array is
        replaced: problems already built keep theirs); returns its row count, None if not here."""
        slots = self.__dict__.get("_weight_slots")
        if slots is None:  # (a controller may re-weight at every tick: found by name once)
            slots = self._weight_slots = {n: (kind, i, j) for kind in (self.costs, self.regularizations)
                                          for n, _, i, j in kind.spans}
        slot = slots.get(name)
        if slot is None:
            return None
        kind, i, j = slot
        stacked = kind.weight.copy()
        try:
            stacked[i:j] = weight  # a scalar or (j - i,) (numpy checks the shape)
        except ValueError as exc:
            raise EquationError(f"set_weight({name!r}, ...): {j - i} rows, weight shape "
                                f"{np.shape(weight)}") from exc
        kind.weight = stacked
        return j - i

    @staticmethod
    def _weighted(statements: dict, kind: str, ctx: Context) -> "_KindPlan":
        items = []
        for name, c in statements.items():
            comp = _compiled(c, lambda s: s.expr, ctx, name, kind)
            items.append((name, kind, comp, _weights(c.weight, comp.m)))
        return _KindPlan(items, ctx.layout.nv, ctx.layout.nx)

    def fixed_values(self, ctx: Context) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """(name, columns, values) of the assignments of unknowns at the context's time and state."""
        out = []
        for name, cols, asg in self.fixed:
            value = asg.value
            # a constant is already a float vector (Const.value); anything else is normalized
            val = value.value if type(value) is Const else np.atleast_1d(np.asarray(value.evaluate(ctx), dtype=float))
            if val.size == 1 and len(cols) > 1:
                val = np.full(len(cols), val[0])
            if val.shape != (len(cols),):
                raise EquationError(f"assignment {name!r}: {asg.quantity.name} has {len(cols)} components, value has {val.size}")
            out.append((name, cols, val))
        return out


def _set_plan(eqs: EquationSet, ctx: Context) -> _SetPlan:
    """The equation set's compiled plan for this layout and mechanism (cached per statement structure)."""
    c = eqs.__dict__.get("_plan")
    if c is not None and c[0] == eqs.structure and c[1] is ctx.layout and c[2] is ctx.mech:
        return c[3]
    plan = _SetPlan(eqs, ctx)
    eqs._plan = (eqs.structure, ctx.layout, ctx.mech, plan)
    return plan


# --------------------------------------------------------------- constraints
def _constraint_rows(mech, eqs: EquationSet, layout: Layout | None):
    """The active constraints' acceleration rows at the state.

    Returns (constraints, Jc (k, nv), Jf or None, rhs (k,), row labels, layout).
    """
    if not mech.constraints:
        if layout is None:
            # one layout object while nothing is constrained: caches keyed by it stay valid
            layout = mech.cache.get("free_layout")
            if layout is None or (layout.nv, layout.ntau) != (mech.nv, mech.ntau):
                layout = mech.cache["free_layout"] = Layout.for_mechanism(mech)
        return (), np.zeros((0, mech.nv)), None, np.zeros(0), [], layout
    plan = _constraint_plan(mech, mech.constraints)
    cons = plan.cons
    terms = []  # (a loop: Python 3.11 builds a function object for every comprehension)
    for c in cons:
        terms.append(c.terms())
    if mech.nv == 1:  # Pinocchio hands a one-column Jacobian over as a vector: rows (k, 1) here
        terms = [_as_rows(t) for t in terms]
    # solved again at the same state (a controller's new torques): the constraints that keep their
    # rows (the same arrays) give the same stacked rows, and the solver keeps its factors with them
    key = (mech.state_version, eqs.kp, eqs.kv, eqs.critical_forms)
    memo = plan.memo.get("rows")
    if memo is not None and memo[0] == key and memo[1] is layout and _same_terms(memo[2], terms):
        return memo[3]
    # (the plan's labels are shared by the problems, which only read them)
    labels = plan.labels
    if labels is None:  # (contact hinges' labels change with their rows; a loop: every step)
        labels = []
        for c in cons:
            labels += c.row_labels()
    # one buffer per kind of term, filled constraint by constraint (terms() gives all three
    # at once; numpy's vstack/concatenate of many small arrays cost more than the kernels)
    k = plan.rows
    if len(terms) == 1 and _rows_shaped(terms[0], k, mech.nv):
        phi, Jc, drift = terms[0]  # one constraint (a stance foot): its own arrays, only read from here on
    else:
        Jc, phi, drift = np.empty((k, mech.nv)), np.empty(k), np.empty(k)
        for t, sl in zip(terms, plan.slices):
            phi[sl], Jc[sl], drift[sl] = t
    Jc = without_noise_rows(Jc)  # (the same array unless a row is rounding noise: a redundant closure)
    Jf = None if plan.ideal or _all_ideal(plan.nonideal) else \
        np.vstack([np.reshape(c.force_jacobian(), (-1, mech.nv)) for c in cons])
    out = _stacked_constraint_rows(mech, eqs, plan, cons, Jc, Jf, phi, drift, labels, layout)
    # kept only for ideal forces: a sliding contact's force rows are not among its terms
    plan.memo["rows"] = (key, layout, terms, out) if out[2] is None else None
    return out


def _as_rows(t: tuple) -> tuple:
    """A constraint's ``terms()`` with its Jacobian as rows (k, 1) on a one-dof mechanism."""
    phi, J, drift = t
    return phi, np.reshape(J, (len(phi), 1)), drift


def _all_ideal(cons) -> bool:
    """Whether every one of these constraints' forces acts along its rows right now (none slides)."""
    for c in cons:  # (at every assembly: a loop, no generator)
        if not c.ideal:
            return False
    return True


def _rows_shaped(t: tuple, k: int, nv: int) -> bool:
    """Whether one constraint's ``terms()`` are already the stacked arrays: (k,), (k, nv), (k,)."""
    return getattr(t[1], "shape", None) == (k, nv) and getattr(t[0], "shape", None) == (k,) \
        and getattr(t[2], "shape", None) == (k,)


def _same_terms(old: list, new: list) -> bool:
    """Whether every constraint returned the very arrays it returned before (its rows are cached)."""
    for x, y in zip(old, new):
        for a, b in zip(x, y):
            if a is not b:
                return False
    return True


def _stacked_constraint_rows(mech, eqs, plan, cons, Jc, Jf, phi, drift, labels, layout):
    """The right-hand sides and the critical forms' rows of :func:`_constraint_rows`."""
    v = mech.v
    rhs = Jc.dot(v)  # -drift - kv J v - kp phi, with as few temporaries
    rhs *= -eqs.kv
    rhs -= drift
    if eqs.kp:
        rhs -= eqs.kp * phi
    R = None
    if eqs.critical_forms:
        if plan.second_order is None:
            R = locked_directions(mech, cons, Jc, plan.memo)
        elif len(plan.second_order[1]):
            R = locked_directions(mech, plan.second_order[0], Jc[plan.second_order[1]], plan.memo)
    if R is None:
        return cons, Jc, Jf, rhs, labels, layout or plan.layout
    # motions ruled out at second order: held like a constraint, with their own reactions
    Jc = np.vstack([Jc, R])
    Jf = None if Jf is None else np.vstack([Jf, R])
    rhs = np.concatenate([rhs, -eqs.kv * (R @ v)])
    labels = labels + [f"critical form[{i}]" for i in range(len(R))]
    if layout is None:
        # one layout per number of locked directions, so the caches keyed by it stay valid
        layout = plan.memo.get(("layout", len(R)))
        if layout is None:
            layout = plan.memo[("layout", len(R))] = Layout.for_mechanism(mech, {"critical form": len(R)})
    return cons, Jc, Jf, rhs, labels, layout


def _inequality_rows(cons, plan: _KindPlan, ctx: Context) -> Rows:
    """The inequalities: rows ``C lam <= d`` of the constraints that bound their own forces (contacts
    under control), then the statements' rows, in one allocation."""
    layout = ctx.layout
    parts = []
    for c in cons:
        rows = c.force_inequalities()
        if rows is not None:
            parts.append((c, *rows))
    statements = plan.rows(ctx)
    if not parts:
        return statements
    # the layout (spans, where each block goes, the statements' constant rows) is the same from
    # tick to tick while the constraints, their row counts and the statements' arrays are
    counts = []  # (every tick: a loop, no comprehension object)
    for part in parts:
        counts.append(len(part[2]))
    shape = (cons, layout, statements.Aw, statements.Aa, statements.spans, counts)
    memo = plan.__dict__.get("_ineq_layout")
    if memo is None or not _same_layout(memo[0], shape):
        memo = plan._ineq_layout = (shape, *_inequality_layout(parts, statements, layout))
    _, Aw0, Aa, places, spans = memo
    Aw, b = Aw0.copy(), np.empty(len(Aw0))
    for (rows, cols), (_, C, d) in zip(places, parts):
        Aw[rows, cols] = C
        b[rows] = d
    b[places[-1][0].stop:] = statements.b
    return Rows(Aa, Aw, b, spans, layout.nv, layout.nx)


def _same_layout(old: tuple, new: tuple) -> bool:
    """Whether :func:`_inequality_rows`' layout keys match (its arrays by identity)."""
    for a, b in zip(old[:5], new[:5]):
        if a is not b:
            return False
    return old[5] == new[5]


def _inequality_layout(parts, statements: Rows, layout: Layout):
    """:func:`_inequality_rows`' layout: Aw with zero constraint blocks and the statements' rows below,
    Aa (or None), each constraint's (rows, columns) in Aw, and the spans."""
    nv, nx = layout.nv, layout.nx
    r = sum(len(d) for *_, d in parts)
    m = r + len(statements)
    Aw = np.zeros((m, nx - nv))
    spans, places, k = [], [], 0
    for c, _, d in parts:
        sl, n = layout.lam[c.name], len(d)
        places.append((slice(k, k + n), slice(sl.start - nv, sl.stop - nv)))
        spans.append((f"{c.name} (unilateral)", "inequality", k, k + n))
        k += n
    Aa = None
    if statements.spans:
        if statements.Aw is not None:
            Aw[r:] = statements.Aw
        if statements.Aa is not None:
            Aa = np.zeros((m, nv))
            Aa[r:] = statements.Aa
        spans += [(n, kind, i + r, j + r) for n, kind, i, j in statements.spans]
    return Aw, Aa, places, spans


def build_problem(mech, eqs: EquationSet, t: float, f_ext: np.ndarray | None = None,
                  layout: Layout | None = None) -> Problem:
    """Assemble the equation set at the mechanism's current state.

    Args:
        mech: the mechanism (its state is the one assembled at).
        eqs: the control statements.
        t: simulation time (s), for time-varying targets.
        f_ext: generalized external force (nv,), N / N m.
    """
    h = mech.bias_forces()
    bias = h if f_ext is None else h - f_ext
    cons, Jc, Jf, rhs, labels, layout = _constraint_rows(mech, eqs, layout)
    nv, nx = layout.nv, layout.nx
    ctx = Context(mech, t, layout)
    plan = _set_plan(eqs, ctx)
    eq_rows = plan.equalities.rows(ctx)
    if len(Jc):
        eq_rows = Rows.stack(Rows(Jc, None, rhs, [("constraints", "constraint", 0, len(rhs))], nv, nx,
                                  labels={"constraints": labels}), eq_rows)
    ineq_rows = _inequality_rows(cons, plan.inequalities, ctx)
    return Problem(t, layout, None, bias, mech.S, Jc, eq_rows, plan.fixed_values(ctx) if plan.fixed else [],
                   plan.costs.rows(ctx), ineq_rows,
                   default_cost=eqs.underdetermined == "default", mass_solve=mech.mass_solve,
                   mass_inverse=getattr(mech, "mass_inverse", None),
                   Jf=Jf, lam_labels=labels, reg_rows=plan.regularizations.rows(ctx),
                   factors=mech.cache.setdefault("solver_factors", {}))
