"""The equation set and its assembly into a problem for one state.

The unknowns of a step are ``x = [a (nv) | tau (ntau) | lam (constraint rows)]``.
An :class:`EquationSet` holds what control programs add by name:

- control equations ``lhs == rhs`` (rows of ``A x = b``),
- direct assignments of quantities (``tau`` of a joint, an acceleration, a force),
- quadratic costs ``1/2 |W (A x - b)|^2``,
- inequalities ``G x <= h``.

:func:`build_problem` evaluates them, together with the motion equations
``M a + h = S^T tau + J^T lam + f_ext`` and the active constraints'
acceleration equations ``J a + Jdot v = -(kv J v + kp phi)``, at the
mechanism's current state. The result is a plain :class:`Problem` that prints
and can be inspected; :mod:`controlkit.solver` solves it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import EquationError, UnknownNameError
from .expressions import Const, Context, Expr, Lin, as_expr
from .constraints import Constraint, static_labels
from .singular import locked_directions


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

    @property
    def lam_all(self) -> slice:
        return slice(self.nv + self.ntau, self.nx)

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

    @classmethod
    def of(cls, name: str, kind: str, L: Lin, b: np.ndarray, nv: int, nx: int, **kw) -> "Block":
        """Rows of an affine expression, keeping its column blocks."""
        Aa, Aw = L.parts(nv)
        return cls(name, kind, None, b, Aa=Aa, Aw=Aw, nv=nv, nx=nx, **kw)

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


@dataclass
class Problem:
    """Everything one solve needs, at one state; printable.

    Motion equations: ``M a + bias = S^T tau + G^T lam`` with bias = h - f_ext (N, N m) and
    G = ``Jf`` (the force Jacobian) when given, else ``Jc``.
    ``fixed``: blocks whose rows select single unknown columns (direct assignments of unknowns).
    """

    time: float
    layout: Layout
    M: np.ndarray
    bias: np.ndarray
    S: np.ndarray
    Jc: np.ndarray
    equalities: list[Block]
    fixed: list[tuple[str, np.ndarray, np.ndarray]]
    costs: list[Block]
    inequalities: list[Block]
    default_cost: bool = True
    mass_solve: object = None  # b -> M^-1 b (the mechanism's factor); None: factor M here
    Jf: np.ndarray | None = None  # force Jacobian when it differs from Jc (sliding friction)
    lam_labels: list[str] = field(default_factory=list)
    mass_factor: object = None  # () -> (U, D) with M = U diag(D) U^T (Pinocchio's tree factor), or None

    def sizes(self) -> dict[str, int]:
        """Row counts per kind of statement."""
        return {
            "unknowns": self.layout.nx,
            "motion": self.layout.nv,
            "equalities": sum(len(b.b) for b in self.equalities),
            "assigned": sum(len(c) for _, c, _ in self.fixed),
            "costs": sum(len(b.b) for b in self.costs),
            "inequalities": sum(len(b.b) for b in self.inequalities),
        }

    def __str__(self) -> str:
        s = self.sizes()
        lines = [f"problem at t = {self.time:.9g} s: {s['unknowns']} unknowns "
                 f"(a {self.layout.nv}, tau {self.layout.ntau}, lam {self.layout.nlam})",
                 f"  motion equations: {s['motion']} rows"]
        for title, blocks in (("equalities", self.equalities), ("costs", self.costs),
                              ("inequalities", self.inequalities)):
            lines.append(f"  {title}: {sum(len(b.b) for b in blocks)} rows")
            lines += [f"    {b.name} ({b.kind}, {len(b.b)} rows)" for b in blocks]
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
        self.inequalities: dict[str, Inequality] = {}
        self.version = 0

    # statements are added and removed by name
    def _check_new(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise EquationError(f"a control statement needs a non-empty string name, got {name!r}")
        for d in (self.equations, self.assignments, self.costs, self.inequalities):
            if name in d:
                raise EquationError(f"a control statement named {name!r} already exists; remove it first")

    def add_equation(self, name: str, equation: Equation) -> None:
        """Add a named control equation (built with ``==`` from the quantity algebra)."""
        if not isinstance(equation, Equation):
            raise EquationError(f"add_equation({name!r}, ...) needs an Equation (lhs == rhs), got {type(equation).__name__}")
        self._check_new(name)
        self.equations[name] = equation
        self.version += 1

    def assign(self, name: str, quantity, value) -> None:
        """Directly assign a quantity (a torque, a force, an acceleration) a value (array or expression)."""
        if name in self.assignments:  # re-assigning at each controller tick is the common case
            del self.assignments[name]
        self._check_new(name)
        self.assignments[name] = Assignment(quantity, as_expr(value))
        self.version += 1

    def add_cost(self, name: str, expr, weight=1.0) -> None:
        """Add a named cost ``1/2 |weight * expr|^2``; expr is affine in the unknowns (an acceleration, torque, ...)."""
        from .expressions import Expr as _E
        if isinstance(expr, Equation):
            expr = expr.residual
        if not isinstance(expr, _E):
            raise EquationError(f"add_cost({name!r}, ...) needs an expression, got {type(expr).__name__}")
        self._check_new(name)
        self.costs[name] = Cost(expr, weight)
        self.version += 1

    def add_inequality(self, name: str, inequality: Inequality) -> None:
        """Add named inequality rows (built with ``<=`` or ``>=``)."""
        if not isinstance(inequality, Inequality):
            raise EquationError(f"add_inequality({name!r}, ...) needs an Inequality (a <= b), got {type(inequality).__name__}")
        self._check_new(name)
        self.inequalities[name] = inequality
        self.version += 1

    def remove(self, name: str) -> None:
        """Remove a control statement of any kind by name."""
        for d in (self.equations, self.assignments, self.costs, self.inequalities):
            if name in d:
                del d[name]
                self.version += 1
                return
        raise UnknownNameError("control statement", name, self.names())

    def __contains__(self, name: str) -> bool:
        return name in self.names()

    def names(self) -> list[str]:
        """Names of every statement."""
        return [*self.equations, *self.assignments, *self.costs, *self.inequalities]

    def is_empty(self) -> bool:
        return not (self.equations or self.assignments or self.costs or self.inequalities)


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

    __slots__ = ("key", "cons", "slices", "rows", "labels", "ideal", "layout", "memo", "second_order")

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
        self.ideal = all(type(c).force_jacobian is Constraint.force_jacobian for c in self.cons)
        self.layout = Layout.for_mechanism(mech)
        self.memo: dict = {}
        # rows of the constraints whose redundancy the critical-form analysis examines (None: all)
        picked = [sl for c, sl in zip(self.cons, self.slices) if c.second_order]
        self.second_order = None if len(picked) == len(self.cons) else (
            [c for c in self.cons if c.second_order],
            np.concatenate([np.arange(sl.start, sl.stop) for sl in picked]) if picked else np.zeros(0, dtype=int))


def _constraint_plan(mech, cons: dict) -> _ConstraintPlan:
    vals = tuple(cons.values())
    key = (vals, tuple([c.size for c in vals]))  # contact hinges change their size between events
    plan = mech.__dict__.get("_constraint_plan")
    if plan is None or plan.key != key:
        plan = mech._constraint_plan = _ConstraintPlan(mech, key)
    return plan


def _assigned_columns(eqs: EquationSet, layout: Layout) -> dict[str, np.ndarray]:
    """Columns of x set directly by each assignment of a torque or force (cached per statement version)."""
    c = eqs.__dict__.get("_assigned_cols")
    if c is None or c[0] != eqs.version or c[1] is not layout:
        cols = {}
        for name, asg in eqs.assignments.items():
            q = asg.quantity
            if hasattr(q, "columns") and q.columns(layout)[0] >= layout.nv:
                cols[name] = q.columns(layout)
        c = eqs._assigned_cols = (eqs.version, layout, cols)
    return c[2]


def build_problem(mech, eqs: EquationSet, t: float, f_ext: np.ndarray | None = None,
                  layout: Layout | None = None) -> Problem:
    """Assemble the equation set at the mechanism's current state.

    Args:
        mech: the mechanism (its state is the one assembled at).
        eqs: the control statements.
        t: simulation time (s), for time-varying targets.
        f_ext: generalized external force (nv,), N / N m.
    """
    M, h = mech.dynamics()
    bias = h if f_ext is None else h - f_ext
    equalities: list[Block] = []
    if mech.constraints:
        plan = _constraint_plan(mech, mech.constraints)
        cons = plan.cons
        labels = list(plan.labels) if plan.labels is not None else [lab for c in cons for lab in c.row_labels()]
        v = mech._v
        # one buffer per kind of term, filled constraint by constraint (terms() gives all three
        # at once; numpy's vstack/concatenate of many small arrays cost more than the kernels)
        k = plan.rows
        Jc, phi, drift = np.empty((k, mech.nv)), np.empty(k), np.empty(k)
        for c, sl in zip(cons, plan.slices):
            phi[sl], Jc[sl], drift[sl] = c.terms()
        Jf = None if plan.ideal else np.vstack([c.force_jacobian() for c in cons])
        rhs = -drift - eqs.kv * Jc.dot(v) - eqs.kp * phi
        R = None
        if eqs.critical_forms:
            if plan.second_order is None:
                R = locked_directions(mech, cons, Jc, plan.memo)
            elif len(plan.second_order[1]):
                R = locked_directions(mech, plan.second_order[0], Jc[plan.second_order[1]], plan.memo)
        if R is not None:
            # motions ruled out at second order: held like a constraint, with their own reactions
            Jc = np.vstack([Jc, R])
            Jf = None if Jf is None else np.vstack([Jf, R])
            rhs = np.concatenate([rhs, -eqs.kv * (R @ v)])
            labels += [f"critical form[{i}]" for i in range(len(R))]
            layout = layout or Layout.for_mechanism(mech, {"critical form": len(R)})
        else:
            layout = layout or plan.layout
        equalities.append(Block("constraints", "constraint", None, rhs, list(labels),
                                Aa=Jc, nv=layout.nv, nx=layout.nx))
    else:
        cons = ()
        Jc, Jf, labels = np.zeros((0, mech.nv)), None, []
        if layout is None:
            # one layout object while nothing is constrained: caches keyed by it stay valid
            layout = mech.__dict__.get("_free_layout")
            if layout is None or (layout.nv, layout.ntau) != (mech.nv, mech.ntau):
                layout = mech._free_layout = Layout.for_mechanism(mech)
    nv, nx = layout.nv, layout.nx
    ctx = Context(mech, t, layout)
    for name, eq in eqs.equations.items():
        L = _lin(eq.residual.evaluate(ctx), nx, name, "control equation")
        equalities.append(Block.of(name, "control", L, -L.b, nv, nx))
    fixed: list[tuple[str, np.ndarray, np.ndarray]] = []
    unknown_cols = _assigned_columns(eqs, layout) if eqs.assignments else {}
    for name, asg in eqs.assignments.items():
        value = asg.value
        # a constant is already a float vector (Const.value); anything else is normalized
        val = value.value if type(value) is Const else np.atleast_1d(np.asarray(value.evaluate(ctx), dtype=float))
        q = asg.quantity
        cols = unknown_cols.get(name)
        if cols is not None:
            if val.size == 1 and len(cols) > 1:
                val = np.full(len(cols), val[0])
            if val.shape != (len(cols),):
                raise EquationError(f"assignment {name!r}: {q.name} has {len(cols)} components, value has {val.size}")
            fixed.append((name, cols, val))
        else:
            L = q.acceleration(ctx)
            if val.size == 1 and len(L.b) > 1:
                val = np.full(len(L.b), val[0])
            equalities.append(Block.of(name, "assignment", L, val - L.b, nv, nx))
    costs = []
    for name, c in eqs.costs.items():
        L = _lin(c.expr.evaluate(ctx), nx, name, "cost")
        w = (np.full(L.b.shape, float(c.weight)) if np.ndim(c.weight) == 0
             else np.broadcast_to(np.asarray(c.weight, dtype=float), L.b.shape).copy())
        costs.append(Block.of(name, "cost", L, -L.b, nv, nx, weight=w))
    ineqs = []
    for c in cons:
        rows = c.force_inequalities()
        if rows is not None:
            C, d = rows
            Aw = np.zeros((len(d), nx - nv))
            sl = layout.lam[c.name]
            Aw[:, sl.start - nv:sl.stop - nv] = C
            ineqs.append(Block(f"{c.name} (unilateral)", "inequality", None, np.asarray(d, dtype=float),
                               Aw=Aw, nv=nv, nx=nx))
    for name, ineq in eqs.inequalities.items():
        L = _lin(ineq.expr.evaluate(ctx), nx, name, "inequality")
        ineqs.append(Block.of(name, "inequality", L, -L.b, nv, nx))
    return Problem(t, layout, M, bias, mech.S, Jc, equalities, fixed, costs, ineqs,
                   default_cost=eqs.underdetermined == "default", mass_solve=mech.mass_solve,
                   mass_factor=getattr(mech, "mass_factor", None),
                   Jf=Jf, lam_labels=labels)
