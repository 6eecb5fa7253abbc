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
every :class:`Problem` owns its rows. The parts live in their own modules, re-exported here:
:mod:`controlkit.problem` (``Layout``, ``Rows``, ``Problem``), :mod:`controlkit.compiled_statements`
(the statements' plans) and :mod:`controlkit.constraint_rows` (the constraints' rows).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .cache import Cache
from .compiled_statements import _assigned_columns, _compiled, _KindPlan, _set_plan, _SetPlan  # noqa: F401
from .constraint_rows import _constraint_plan, _constraint_rows, _ConstraintPlan  # noqa: F401
from .errors import ArgumentError, EquationError, UnknownNameError
from .expressions import Const, Context, Expr, as_expr
from .problem import Block, Layout, Problem, Rows  # noqa: F401

#: the entries of a statement's ``cache`` (:class:`~controlkit.cache.Cache`): key -> what it holds
STATEMENT_CACHE_ENTRIES: dict[str, str] = {
    "compiled": "(controlkit.compiled_statements) (layout or ('accelerations', nv), mechanism, the compiled "
                "expression); recompiled when the layout (or nv) or the mechanism differ",
    "rows": "(controlkit.compiled_statements) an assignment's rows acc(quantity) - value as an expression; "
            "never invalidated (the statement is replaced, not changed, when its quantity changes)",
}
#: the entries of :attr:`EquationSet.cache`: key -> what it holds, what invalidates it
EQUATION_CACHE_ENTRIES: dict[str, str] = {
    "plan": "(controlkit.compiled_statements) (structure, layout, mechanism, the compiled plan); rebuilt when "
            "any of them changes",
    "assigned_cols": "(controlkit.compiled_statements) (structure, layout, the columns each assignment of a "
                     "torque or force sets); rebuilt when the structure or layout changes",
}


def _statement_cache() -> Cache:
    return Cache(STATEMENT_CACHE_ENTRIES, "controlkit.equations.STATEMENT_CACHE_ENTRIES")


# --------------------------------------------------------------- statements
class Equation:
    """``lhs == rhs``: a control equation, affine in the unknowns at each state."""

    def __init__(self, lhs: Expr, rhs: Expr):
        self.lhs, self.rhs = lhs, rhs
        self.residual = lhs - rhs
        self.cache = _statement_cache()

    def __bool__(self):  # `if expr == 0:` is a mistake worth catching
        raise EquationError("an Equation has no truth value; pass it to add_equation()")

    def describe(self) -> str:
        return f"{self.lhs.describe()} = {self.rhs.describe()}"


class Inequality:
    """``expr <= 0`` (built from ``lhs <= rhs`` or ``lhs >= rhs``)."""

    def __init__(self, expr: Expr):
        self.expr = expr
        self.cache = _statement_cache()

    def __bool__(self):
        raise EquationError("an Inequality has no truth value; pass it to add_inequality()")

    def describe(self) -> str:
        return f"{self.expr.describe()} <= 0"


@dataclass
class Cost:
    """``1/2 * weight^2 * |expr|^2`` where expr is affine in the unknowns; weight scalar or (m,)."""

    expr: Expr
    weight: float | np.ndarray = 1.0
    cache: Cache = field(default_factory=_statement_cache, repr=False, compare=False)

    def describe(self) -> str:
        w = self.weight
        ws = f"{w:g}" if np.ndim(w) == 0 else "W"
        return f"1/2 |{ws} * ({self.expr.describe()})|^2"


@dataclass
class Assignment:
    """A direct assignment ``quantity := value`` (value an array or an expression)."""

    quantity: object
    value: Expr
    cache: Cache = field(default_factory=_statement_cache, repr=False, compare=False)

    def describe(self) -> str:
        return f"{self.quantity.name} := {self.value.describe()}"


def _same_held_value_slot(old: Assignment, quantity, value) -> bool:
    """Whether a re-assignment only changes a constant value: same quantity object, a constant of
    the same shape, and the old one never compiled into rows (it sets unknowns' columns)."""
    return (old.quantity is quantity and type(old.value) is Const and type(value) is Const
            and old.value.value.shape == value.value.shape and "rows" not in old.cache)


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

    #: ``"plan"``: the solver keeps per-structure decisions between evaluations (see
    #: docs/architecture.md, "Evaluation speed"); ``"reference"``: every evaluation decides afresh
    evaluation: str = "plan"

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
        #: values other modules keep with this set (declared in EQUATION_CACHE_ENTRIES)
        self.cache = Cache(EQUATION_CACHE_ENTRIES, "controlkit.equations.EQUATION_CACHE_ENTRIES")
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
            plan = self.cache.get("plan")
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
    memo = plan.ineq_layout
    if memo is None or not _same_layout(memo[0], shape):
        memo = plan.ineq_layout = (shape, *_inequality_layout(parts, statements, layout))
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
    ctx = Context(mech, t, layout)
    plan = _set_plan(eqs, ctx)
    # (the constraints' rows above the equalities', in one allocation)
    eq_rows = plan.equalities.rows_below(ctx, Jc, rhs, labels) if len(Jc) else plan.equalities.rows(ctx)
    ineq_rows = _inequality_rows(cons, plan.inequalities, ctx)
    return Problem(t, layout, None, bias, mech.S, Jc, eq_rows, plan.fixed_values(ctx) if plan.fixed else [],
                   plan.costs.rows(ctx), ineq_rows,
                   default_cost=eqs.underdetermined == "default", mass_solve=mech.mass_solve,
                   mass_inverse=getattr(mech, "mass_inverse", None),
                   Jf=Jf, lam_labels=labels, reg_rows=plan.regularizations.rows(ctx),
                   factors=mech.cache.setdefault("solver_factors", {}), plan=eqs.evaluation == "plan")
