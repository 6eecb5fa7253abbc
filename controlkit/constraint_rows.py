"""The active constraints' acceleration rows at a state, ``J_c a = -(Jdot_c v + kv J_c v + kp phi)``,
with the critical forms' locked directions (:mod:`controlkit.singular`) below them.

A :class:`_ConstraintPlan` keeps what stays the same while the same constraints are active
(row slices, labels, the column layout); the rows of a state are memoized so a second solve
at the same state (new torques) reuses them and the solver's factors kept with them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .constraints import Constraint, static_labels
from .problem import Layout
from .singular import locked_directions, without_noise_rows

if TYPE_CHECKING:
    from .equations import EquationSet


class _ConstraintPlan:
    """What the assembly of one set of active constraints keeps between evaluations.

    Valid while the same constraint objects are active with the same sizes: row slices,
    labels (when they depend on names and sizes only), whether the forces are ideal, the
    column layout, and the critical-form analysis' full-rank reference.
    """

    __slots__ = ("key", "cons", "slices", "rows", "labels", "ideal", "nonideal", "layout", "memo", "second_order",
                 "stacked")

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
        # constraints whose rows one object builds together (contact hinges of one source, each with
        # the same ``batch``): it may hand over all their rows stacked (``stacked_terms``)
        b = getattr(self.cons[0], "batch", None) if self.cons else None
        self.stacked = b if b is not None and hasattr(b, "stacked_terms") and all(
            getattr(c, "batch", None) is b for c in self.cons) else None
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
    stacked = None if plan.stacked is None else plan.stacked.stacked_terms(cons, plan.rows)
    if stacked is not None:  # every row built in one call: the stacked arrays, one "constraint"
        terms = [stacked]
    else:
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
        # one constraint (a stance foot), or the stacked rows: their own arrays, only read from here on
        phi, Jc, drift = terms[0]
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
