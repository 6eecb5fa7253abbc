"""The assembly's compiled statements against the expression trees they are compiled from.

``build_problem`` does not walk the expression trees at every evaluation: each statement is
flattened once per column layout (:func:`controlkit.expressions.compile_affine`) and its rows are
written from the flat form. The trees stay the reference: these tests build problems at several
states and times and check every row against the tree's own evaluation, then check the vector
quantities and the solver's shortcuts against what they replace.
"""
import numpy as np
import pinocchio as pin
import pytest

import robots
from controlkit.constraints import WeldConstraint
from controlkit.equations import EquationSet, build_problem
from controlkit.expressions import Context, Expr, TimeFunction, acc, orientation_error, pos, vel
from controlkit.quantities import (
    CenterOfMass,
    ConstraintForce,
    ControlTorques,
    FrameOrientation,
    FramePoint,
    JointAcceleration,
    JointAccelerations,
    JointAngle,
    Quantity,
)
from controlkit.solver import solve


class _TiltedTorsoHeight(Quantity):
    """A quantity computing its own acceleration (so the compiled form must evaluate its tree)."""

    size, name = 1, "tilted torso height"

    def __init__(self, mech):
        self.p = FramePoint(mech, "torso")

    def acceleration(self, ctx):
        return self.p.acceleration(ctx).scale(np.array([[0.1, 0.0, 1.0]]))


class _Doubled(Expr):
    """An expression node the flattening does not know."""

    def __init__(self, x):
        self.x = x

    def evaluate(self, ctx):
        return 2.0 * self.x.evaluate(ctx)


def _statements(mech):
    """An equation set using every kind of leaf and coefficient the algebra has."""
    eqs = EquationSet(critical_forms=False)
    heel, torso = FramePoint(mech, "foot_r.heel"), FramePoint(mech, "torso")
    o = FrameOrientation(mech, "torso")
    knee, com, tau = JointAngle(mech, "knee_l"), CenterOfMass(mech), ControlTorques(mech)
    K = np.array([[2.0, 0.1, 0.0], [0.0, 1.0, 0.3]])
    eqs.add_equation("heel pd", acc(heel) + 20.0 * vel(heel) + 100.0 * (pos(heel) - np.array([0.1, -0.1, 0.05])) == 0)
    eqs.add_equation("knee", acc(knee) == TimeFunction(lambda t: 0.3 * t))  # a scalar function of time
    eqs.add_equation("torso level", K @ (acc(o) + 40.0 * vel(o) + 400.0 * orientation_error(o, np.eye(3))) == 0)
    eqs.assign("toe", JointAngle(mech, "toe_joint_l"), 0.5)  # an assignment that is not an unknown: rows
    eqs.add_cost("com", acc(com) + np.diag([20.0, 20.0, 40.0]) @ vel(com) - TimeFunction(lambda t: [t, 0.0, -t]), 10.0)
    eqs.add_cost("turning", acc(o) + orientation_error(o, lambda t: pin.exp3(np.array([0.0, 0.0, t]))), 3.0)
    eqs.add_cost("weighted axes", np.array([1.0, 2.0, 3.0]) * acc(torso), np.array([1.0, 0.5, 0.25]))
    eqs.add_cost("posture", JointAccelerations(mech, ["hip_l", "knee_r"]) - TimeFunction(lambda t: np.full(4, t)), 0.1)
    eqs.add_cost("one joint", JointAcceleration(mech, "ankle_r") - 1.0, 0.1)
    eqs.add_cost("own acceleration", acc(_TiltedTorsoHeight(mech)) + _Doubled(pos(knee)), 1.0)
    eqs.add_cost("torques", tau, 1e-3)
    eqs.add_cost("wrench", np.eye(6)[:2] @ ConstraintForce(mech, "left shoe"), 0.01)
    eqs.add_inequality("torque limit", tau <= 300.0)
    eqs.add_inequality("pull", -np.eye(6)[2:3] @ ConstraintForce(mech, "left shoe") <= TimeFunction(lambda t: 10.0 + t))
    return eqs


def _tree_rows(stmt_expr, ctx):
    L = stmt_expr.evaluate(ctx)
    return L.A, -L.b


@pytest.fixture(scope="module")
def biped():
    mech = robots.biped().mechanism
    mech.add_constraint(WeldConstraint("left shoe", "foot_l"))
    return mech


def test_every_compiled_row_equals_its_tree_at_other_states_and_times(biped):
    mech = biped
    eqs = _statements(mech)
    rng = np.random.default_rng(7)
    q0 = pin.neutral(mech.model)
    for k, t in enumerate((0.0, 0.37, 1.2)):
        q = pin.integrate(mech.model, q0, 0.2 * rng.standard_normal(mech.nv)) if k else q0
        mech.set_state(q, rng.standard_normal(mech.nv))
        p = build_problem(mech, eqs, t)
        ctx = Context(mech, t, p.layout)
        exprs = {**{n: e.residual for n, e in eqs.equations.items()}, **{n: c.expr for n, c in eqs.costs.items()},
                 **{n: i.expr for n, i in eqs.inequalities.items()},
                 "toe": acc(JointAngle(mech, "toe_joint_l")) - 0.5}
        checked = 0
        for blk in p.equalities + p.costs + p.inequalities:
            if blk.name not in exprs:
                continue
            A, b = _tree_rows(exprs[blk.name], ctx)
            scale = 1.0 + np.abs(b).max()
            assert np.abs(blk.A - A).max() <= 1e-12 * (1.0 + np.abs(A).max()), blk.name
            assert np.abs(blk.b - b).max() <= 1e-12 * scale, blk.name
            checked += 1
        assert checked == len(exprs)
        c = {blk.name: blk for blk in p.costs}
        assert np.array_equal(c["weighted axes"].weight, [1.0, 0.5, 0.25]) and np.all(c["com"].weight == 10.0)


def test_a_problem_keeps_its_rows_after_the_next_evaluation(biped):
    mech = biped
    eqs = _statements(mech)
    mech.set_state(pin.neutral(mech.model), np.zeros(mech.nv))
    p = build_problem(mech, eqs, 0.5)
    rows = [(blk.A.copy(), blk.b.copy()) for blk in p.costs + p.equalities]
    mech.set_state(pin.neutral(mech.model), np.ones(mech.nv))
    build_problem(mech, eqs, 0.9)
    assert all(np.array_equal(blk.A, A) and np.array_equal(blk.b, b)
               for blk, (A, b) in zip(p.costs + p.equalities, rows))


def test_one_vector_posture_cost_solves_like_one_cost_per_joint(biped):
    mech = biped
    joints = [n for n in list(mech.model.names)[2:]]
    target = np.random.default_rng(3).standard_normal(mech.nv)
    solutions = []
    for vector in (False, True):
        eqs = EquationSet(critical_forms=False)
        eqs.add_cost("com", acc(CenterOfMass(mech)) - np.array([0.1, 0.0, 0.0]), 10.0)
        if vector:
            a = JointAccelerations(mech, joints)
            eqs.add_cost("posture", a - TimeFunction(lambda t, i=a.v_index: target[i]), 0.1)
        else:
            for j in joints:
                sl = mech.joint_v_slice(j)
                eqs.add_cost(f"posture {j}", JointAcceleration(mech, j) - TimeFunction(lambda t, sl=sl: target[sl]), 0.1)
        eqs.add_inequality("torque limit", ControlTorques(mech) <= 40.0)
        mech.set_state(pin.neutral(mech.model), np.zeros(mech.nv))
        solutions.append(solve(build_problem(mech, eqs, 0.0)))
    assert solutions[0].method == solutions[1].method == "qp"
    assert np.abs(solutions[0].x - solutions[1].x).max() <= 1e-12 * np.abs(solutions[0].x).max()
    assert JointAccelerations(mech).size == mech.nv - 6  # default: every joint but the free flyer


def test_the_flat_directions_are_the_eigendecompositions():
    from controlkit import linalg
    rng = np.random.default_rng(11)
    for trial in range(300):
        n = int(rng.integers(1, 18))
        k = int(rng.integers(0, n + 1))
        A = rng.standard_normal((n + 4, n)) * 10.0 ** rng.uniform(-3, 3)
        A[:, :k] *= 0.0 if trial % 2 else 1e-7  # exactly flat, or nearly
        A = A @ np.linalg.qr(rng.standard_normal((n, n)))[0]
        H = A.T @ A
        w, V = np.linalg.eigh(H)
        F = V[:, w <= linalg.RANK_TOL * max(1.0, w.max())]
        mine = linalg.flat_directions(H)
        assert mine.shape == F.shape
        assert np.abs(mine @ mine.T - F @ F.T).max() < 1e-10  # the same subspace
        if linalg.no_flat_direction(H):
            assert F.shape[1] == 0


def test_the_usual_statements_compile_without_their_trees(biped):
    """Only the leaves the flattening cannot know (a quantity computing its own acceleration, an
    unknown node, an orientation target given as a function) are left to their trees."""
    from controlkit.expressions import compile_affine
    mech = biped
    eqs = _statements(mech)
    mech.set_state(pin.neutral(mech.model), np.zeros(mech.nv))
    ctx = Context(mech, 0.2, build_problem(mech, eqs, 0.2).layout)
    exprs = {**{n: e.residual for n, e in eqs.equations.items()}, **{n: c.expr for n, c in eqs.costs.items()},
             **{n: i.expr for n, i in eqs.inequalities.items()}}
    generic = {n for n, e in exprs.items() if compile_affine(e, ctx, e.evaluate(ctx)).generic}
    assert generic == {"turning", "own acceleration"}
