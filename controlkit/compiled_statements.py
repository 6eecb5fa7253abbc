"""Control statements compiled for one column layout and stacked per kind.

A statement is compiled once per column layout (:func:`controlkit.expressions.compile_affine`,
checked against its tree); the statements of each kind (equalities, costs, regularizations,
inequalities) are stacked once per statement structure (``EquationSet.structure``) into a
:class:`_KindPlan` whose constant rows are built once; an evaluation adds the Jacobians and values
of the state into fresh arrays. :class:`_SetPlan` holds the four kinds of one equation set.
"""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np

from .errors import EquationError
from .expressions import (
    Compiled,
    Const,
    Context,
    Expr,
    Level,
    Lin,
    Scaled,
    Sum,
    as_vector,
    compile_affine,
    fill_generic,
    fill_jacobians,
    fill_values,
    value_map,
)
from .problem import Layout, Rows

if TYPE_CHECKING:
    from .equations import Assignment, EquationSet


def _lin(value, nx: int, name: str, what: str) -> Lin:
    if isinstance(value, Lin):
        return value
    raise EquationError(f"{what} {name!r} does not involve the unknowns (accelerations, torques or forces); "
                        f"write it at the acceleration level, e.g. acc(q) + ... == 0")


def _assigned_columns(eqs: EquationSet, layout: Layout) -> dict[str, np.ndarray]:
    """Columns of x set directly by each assignment of a torque or force (cached per statement structure)."""
    c = eqs.cache.get("assigned_cols")
    if c is None or c[0] != eqs.structure or c[1] is not layout:
        cols = {}
        for name, asg in eqs.assignments.items():
            q = asg.quantity
            if not hasattr(q, "columns"):
                continue
            c = q.columns(layout)
            # no columns (torques of an unactuated mechanism) is a fixed assignment of size 0:
            # its value's size check says what is wrong
            if len(c) == 0 or c[0] >= layout.nv:
                cols[name] = c
        c = eqs.cache["assigned_cols"] = (eqs.structure, layout, cols)
    return c[2]


# ------------------------------------------------------- compiled statements
def _compiled(stmt, expr_of, ctx: Context, name: str, what: str) -> Compiled:
    """A statement's expression compiled for the context's layout and mechanism (kept on the statement).

    The first evaluation at a layout goes through the expression tree, which checks that the
    statement is affine in the unknowns (the same error as ever if not). A statement on the
    accelerations alone does not depend on the torque and force columns, so it stays compiled
    while constraints come and go (welds at every step of a walk).
    """
    c = stmt.cache.get("compiled")
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
    stmt.cache["compiled"] = (("accelerations", L.nv) if on_a_only else L, ctx.mech, comp)
    return comp


def _assignment_rows(asg: Assignment) -> Expr:
    """``acc(quantity) - value``: an assignment of a quantity that is not an unknown, as rows ``A x = value - Jdot v``."""
    e = asg.cache.get("rows")
    if e is None:
        e = asg.cache["rows"] = Sum(Level(asg.quantity, 2), Scaled(-1.0, asg.value))
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
        #: (controlkit.equations) the inequality rows' layout, kept while the shape it was built for holds
        self.ineq_layout = None
        self.items = items  # (what it was built from: a later plan of the same statements reuses it)
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

    def for_columns(self, nx: int) -> "_KindPlan":
        """This plan (rows on the accelerations alone) for another number of unknowns nx."""
        plan = copy.copy(self)
        plan.nx, plan.none, plan.ineq_layout = nx, Rows.empty(self.nv, nx), None
        plan.__dict__.pop("_spans_below", None)
        return plan

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


    def rows_below(self, ctx: Context, Jc: np.ndarray, rhs: np.ndarray, labels: list) -> Rows:
        """The constraints' rows ``Jc a = rhs`` (k rows) above this kind's rows at the context's state and
        time: what ``Rows.stack`` makes of the two, built in one allocation per block."""
        nv, nx, k, m = self.nv, self.nx, len(rhs), self.m
        first = ("constraints", "constraint", 0, k)
        if not m:
            return Rows(Jc, None, rhs, [first], nv, nx, labels={"constraints": labels})
        Aa = np.empty((k + m, nv))
        Aa[:k] = Jc
        Aa[k:] = 0.0 if self.a0 is None else self.a0
        Aw = None
        if self.w0 is not None:
            Aw = np.empty((k + m, nx - nv))
            Aw[:k] = 0.0
            Aw[k:] = self.w0
        b = np.empty(k + m)
        b[:k] = rhs
        mine = b[k:]
        mine[:] = self._values(ctx, self.b0) if self.vals else self.b0
        if self.jac:
            fill_jacobians(self.jac, ctx.mech, Aa[k:])
        if self.generic:
            fill_generic(self.generic, ctx, Aa[k:], Aw[k:], mine)
        np.negative(mine, out=mine)
        spans = self.__dict__.get("_spans_below")
        if spans is None or spans[0] != k:  # (the spans moved down by k: kept while k is)
            spans = self._spans_below = (k, [first] + [(n, kind, i + k, j + k) for n, kind, i, j in self.spans])
        return Rows(Aa, Aw, b, spans[1], nv, nx, None, {"constraints": labels})


def _weights(weight, m: int) -> np.ndarray:
    """A cost's weight per row (m,)."""
    if np.ndim(weight) == 0:
        return np.full(m, float(weight))
    return np.broadcast_to(np.asarray(weight, dtype=float), (m,)).copy()


class _SetPlan:
    """An equation set compiled for one layout and mechanism (valid for one statement structure)."""

    def __init__(self, eqs: EquationSet, ctx: Context, previous: "_SetPlan | None" = None):
        L = ctx.layout
        nv, nx = L.nv, L.nx
        # a kind whose statements are the very ones compiled before (only another kind changed at an
        # event: a walk's phase swaps control equations, its costs stay) keeps its stacked plan
        self._previous = previous
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
        self.equalities = self._kind("equalities", eq_items, nv, nx)
        self.costs = self._weighted(eqs.costs, "cost", ctx)
        self.regularizations = self._weighted(eqs.regularizations, "regularization", ctx)
        self.inequalities = self._kind("inequalities", [
            (name, "inequality", _compiled(ineq, lambda s: s.expr, ctx, name, "inequality"), None)
            for name, ineq in eqs.inequalities.items()], nv, nx)
        self._previous = None

    def _kind(self, attr: str, items: list, nv: int, nx: int) -> _KindPlan:
        """The kind's stacked plan: the previous plan's when made of the same compiled statements (by
        identity), names, kinds, weights and sizes; else a new one."""
        old = None if self._previous is None else getattr(self._previous, attr)
        # (rows on the accelerations alone do not depend on the torque and force columns: kept while
        # constraints come and go, as their compiled statements are)
        on_a = old is not None and old.w0 is None and not old.writes_w
        if old is not None and old.nv == nv and (old.nx == nx or on_a) and len(old.items) == len(items):
            for (n0, k0, c0, w0), (n1, k1, c1, w1) in zip(old.items, items):
                if n0 != n1 or k0 != k1 or c0 is not c1 or (w1 is not None and not np.array_equal(w0, w1)):
                    break
            else:
                if old.weight is None or np.array_equal(old.weight, np.concatenate([w for *_, w in items])):
                    return old if old.nx == nx else old.for_columns(nx)
        return _KindPlan(items, nv, nx)

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

    def _weighted(self, statements: dict, kind: str, ctx: Context) -> "_KindPlan":
        items = []
        for name, c in statements.items():
            comp = _compiled(c, lambda s: s.expr, ctx, name, kind)
            items.append((name, kind, comp, _weights(c.weight, comp.m)))
        return self._kind("costs" if kind == "cost" else "regularizations", items, ctx.layout.nv, ctx.layout.nx)

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
    c = eqs.cache.get("plan")
    if c is not None and c[0] == eqs.structure and c[1] is ctx.layout and c[2] is ctx.mech:
        return c[3]
    plan = _SetPlan(eqs, ctx, c[3] if c is not None and c[2] is ctx.mech else None)
    eqs.cache["plan"] = (eqs.structure, ctx.layout, ctx.mech, plan)
    return plan
