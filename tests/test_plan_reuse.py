"""A statement kind's stacked plan is kept across events that change only other kinds (or the
constraints' columns), and what it builds is what a fresh plan of the same statements builds."""
from __future__ import annotations

import numpy as np

import robots
from controlkit.constraints import WeldConstraint
from controlkit.dynamics import evaluate
from controlkit.equations import EquationSet
from controlkit.expressions import acc, vel
from controlkit.quantities import FramePoint, JointAngle


def _plan(eqs):
    return eqs.cache["plan"][3]


def _statements(mech, eqs, knee_gain: float, heel_weight: float = 2.0):
    """A control equation, and costs on the accelerations alone (the walk's kind: kept while welds come
    and go); torques and forces left to the default."""
    knee = JointAngle(mech, "knee_l")
    eqs.add_equation("knee", acc(knee) + knee_gain * vel(knee) == 0.0)
    eqs.add_cost("heel", acc(FramePoint(mech, "foot_r.heel")), heel_weight)
    eqs.add_cost("torso", acc(FramePoint(mech, "torso")), 0.5)


def test_swapping_an_equation_keeps_the_costs_plan_and_solves_as_a_fresh_set():
    """An event swaps the control equation and welds a foot (new force columns): the costs' stacked
    plan is the same object, widened, and the solve is bit for bit a fresh equation set's."""
    built = robots.biped()
    mech = built.mechanism
    rng = np.random.default_rng(4)
    q, v = built.q0, 0.1 * rng.standard_normal(mech.nv)
    eqs = EquationSet()
    _statements(mech, eqs, 4.0)
    evaluate(mech, eqs, 0.0, q, v)
    costs = _plan(eqs).costs
    # an event swaps the control equation and welds a foot: new columns for its force
    eqs.remove("knee")
    knee = JointAngle(mech, "knee_l")
    eqs.add_equation("knee", acc(knee) + 9.0 * vel(knee) == 0.0)
    mech.add_constraint(WeldConstraint("shoe", "foot_l"))
    try:
        sol = evaluate(mech, eqs, 0.0, q, v)
        kept = _plan(eqs).costs
        assert kept.items is costs.items and kept.nx == costs.nx + 6  # the same stacked statements, wider
        fresh = EquationSet()
        _statements(mech, fresh, 9.0)
        ref = evaluate(mech, fresh, 0.0, q, v)
        np.testing.assert_array_equal(sol.a, ref.a)
        np.testing.assert_array_equal(sol.tau, ref.tau)
        np.testing.assert_array_equal(sol.lam["shoe"], ref.lam["shoe"])
    finally:
        mech.remove_constraint("shoe")


def test_a_cost_added_again_with_another_weight_gets_a_new_plan():
    """Same statements but a new weight: the stacked weights are rebuilt (and solve as a fresh set's)."""
    built = robots.biped()
    mech = built.mechanism
    eqs = EquationSet()
    _statements(mech, eqs, 4.0)
    q, v = built.q0, np.zeros(mech.nv)
    evaluate(mech, eqs, 0.0, q, v)
    costs = _plan(eqs).costs
    heel = eqs.costs["heel"].expr
    eqs.remove("heel")
    eqs.add_cost("heel", heel, 7.0)
    sol = evaluate(mech, eqs, 0.0, q, v)
    assert _plan(eqs).costs is not costs
    fresh = EquationSet()  # (in the same order: the heel's rows now come last)
    _statements(mech, fresh, 4.0)
    fresh.remove("heel")
    fresh.add_cost("heel", heel, 7.0)
    np.testing.assert_array_equal(sol.a, evaluate(mech, fresh, 0.0, q, v).a)
    np.testing.assert_array_equal(_plan(eqs).costs.weight, [0.5] * 3 + [7.0] * 3)

