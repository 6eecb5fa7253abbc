"""The equation core against Pinocchio's own algorithms and finite differences."""
import example_robot_data as erd
import numpy as np
import pinocchio as pin
import pytest

from controlkit.constraints import HingeConstraint, PointConstraint, WeldConstraint
from controlkit.dynamics import evaluate
from controlkit.equations import EquationSet, build_problem
from controlkit.errors import StateError, UnknownNameError
from controlkit.expressions import acc
from controlkit.mechanism import Mechanism
from controlkit.quantities import CenterOfMass, ControlTorques, FrameOrientation, FramePoint, JointAngle
from controlkit.solver import solve

EPS = 1e-5


@pytest.fixture(scope="module")
def talos():
    r = erd.load("talos")
    return Mechanism(r.model, r.collision_model, r.visual_model, name="talos")


@pytest.fixture(scope="module", params=["talos", "biped"])
def robot(request, talos):
    """Talos and the thesis biped, for the checks the issue asks on both."""
    if request.param == "talos":
        return talos, FRAMES
    import robots
    return robots.biped().mechanism, ["foot_l.heel", "toe_r.tip", "torso.center"]


def random_state(mech, seed):
    rng = np.random.default_rng(seed)
    m = mech.model
    lo = np.where(np.isfinite(m.lowerPositionLimit), m.lowerPositionLimit, -1.0)
    hi = np.where(np.isfinite(m.upperPositionLimit), m.upperPositionLimit, 1.0)
    lo, hi = np.maximum(lo, -3.0), np.minimum(hi, 3.0)
    pin.seed(seed)  # Pinocchio's generator is process-wide: the same state in any test order
    q = pin.randomConfiguration(m, lo, hi)
    return q, rng.standard_normal(mech.nv)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_passive_accelerations_equal_aba(robot, seed):
    talos = robot[0]
    q, v = random_state(talos, seed)
    sol = evaluate(talos, EquationSet(), 0.0, q, v)
    ref = pin.aba(talos.model, talos.model.createData(), q, v, np.zeros(talos.nv))
    assert np.abs(sol.a - ref).max() < 1e-9 * max(1.0, np.abs(ref).max())


@pytest.mark.parametrize("seed", [0, 1])
def test_accelerations_with_assigned_torques_equal_aba(robot, seed):
    talos = robot[0]
    q, v = random_state(talos, seed)
    tau = np.random.default_rng(seed + 10).standard_normal(talos.ntau) * 10
    eqs = EquationSet()
    eqs.assign("torques", ControlTorques(talos), tau)
    sol = evaluate(talos, eqs, 0.0, q, v)
    ref = pin.aba(talos.model, talos.model.createData(), q, v, talos.S.T @ tau)
    assert np.abs(sol.a - ref).max() < 1e-9 * max(1.0, np.abs(ref).max())
    assert sol.method == "lean"  # constant torques: no assembly needed


def _flow(mech, q, v, s):
    return pin.integrate(mech.model, q, s * v)


def _fd_check(mech, q, v, value_fn, vel_fn, jac_fn, drift_fn, rotation=False):
    """Central differences along q(s) = q (+) s v with constant v (a = 0)."""
    mech.set_state(q, v)
    J, drift, vel = jac_fn(), drift_fn(), vel_fn()
    qp, qm = _flow(mech, q, v, EPS), _flow(mech, q, v, -EPS)
    mech.set_state(qp, v)
    xp, vp = value_fn(), vel_fn()
    mech.set_state(qm, v)
    xm, vm = value_fn(), vel_fn()
    if rotation:
        fd_vel = pin.log3(xp @ xm.T) / (2 * EPS)
    else:
        fd_vel = (xp - xm) / (2 * EPS)
    fd_drift = (vp - vm) / (2 * EPS)
    scale_v = max(1.0, np.abs(vel).max())
    scale_d = max(1.0, np.abs(drift).max())
    assert np.abs(J @ v - vel).max() < 1e-12 * scale_v
    assert np.abs(fd_vel - vel).max() < 1e-6 * scale_v
    assert np.abs(fd_drift - drift).max() < 1e-6 * scale_d


FRAMES = ["left_sole_link", "gripper_right_base_link", "head_2_link"]


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("k", [0, 1, 2])
def test_frame_point_jacobian_and_drift_match_finite_differences(robot, seed, k):
    talos, frames = robot
    frame = frames[k]
    q, v = random_state(talos, seed)
    for offset in (None, [0.05, -0.1, 0.2]):
        p = FramePoint(talos, frame, offset)
        _fd_check(talos, q, v, lambda: p.position(talos), lambda: p.velocity(talos),  # noqa: B023 (_fd_check calls them in this iteration)
                  lambda: p.jacobian(talos), lambda: p.drift(talos))  # noqa: B023 (_fd_check calls them in this iteration)


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("k", [0, 1, 2])
def test_frame_orientation_jacobian_and_drift_match_finite_differences(robot, seed, k):
    talos, frames = robot
    frame = frames[k]
    q, v = random_state(talos, seed)
    o = FrameOrientation(talos, frame)
    _fd_check(talos, q, v, lambda: o.position(talos), lambda: o.velocity(talos),
              lambda: o.jacobian(talos), lambda: o.drift(talos), rotation=True)


@pytest.mark.parametrize("seed", [5, 6])
def test_centre_of_mass_and_joint_angle_match_finite_differences(robot, seed):
    talos = robot[0]
    q, v = random_state(talos, seed)
    c = CenterOfMass(talos)
    _fd_check(talos, q, v, lambda: c.position(talos), lambda: c.velocity(talos),
              lambda: c.jacobian(talos), lambda: c.drift(talos))
    th = JointAngle(talos, "leg_left_4_joint" if talos.name == "talos" else "knee_l")
    _fd_check(talos, q, v, lambda: th.position(talos), lambda: th.velocity(talos),
              lambda: th.jacobian(talos), lambda: th.drift(talos))


@pytest.mark.parametrize("cls", [PointConstraint, WeldConstraint, HingeConstraint])
def test_constraint_jacobians_and_drifts_match_finite_differences(talos, cls):
    q, v = random_state(talos, 7)
    c = cls("hands", "gripper_left_base_link", "gripper_right_base_link")
    c.bind(talos)
    _fd_check(talos, q, v, c.error, lambda: c.jacobian() @ talos.v, c.jacobian, c.drift) if cls is not WeldConstraint \
        else _fd_check_weld(talos, q, v, c)


def _fd_check_weld(mech, q, v, c):
    # the rotation rows are the relative angular velocity, not the derivative of log3 away from zero error
    mech.set_state(q, v)
    J, drift = c.jacobian(), c.drift()
    qp, qm = _flow(mech, q, v, EPS), _flow(mech, q, v, -EPS)
    mech.set_state(qp, v); vp = c.jacobian() @ v; pp = c.error()[:3]
    Ra_p = mech.kinematics().oMf[c.fa].rotation.copy(); Rb_p = mech.kinematics().oMf[c.fb].rotation.copy()
    mech.set_state(qm, v); vm = c.jacobian() @ v; pm = c.error()[:3]
    Ra_m = mech.kinematics().oMf[c.fa].rotation.copy(); Rb_m = mech.kinematics().oMf[c.fb].rotation.copy()
    wa = pin.log3(Ra_p @ Ra_m.T) / (2 * EPS)
    wb = pin.log3(Rb_p @ Rb_m.T) / (2 * EPS)
    assert np.abs((pp - pm) / (2 * EPS) - (J @ v)[:3]).max() < 1e-6 * max(1, np.abs(J @ v).max())
    assert np.abs(wa - wb - (J @ v)[3:]).max() < 1e-6 * max(1, np.abs(J @ v).max())
    assert np.abs((vp - vm) / (2 * EPS) - drift).max() < 1e-6 * max(1, np.abs(drift).max())


def _ur5():
    r = erd.load("ur5")
    return Mechanism(r.model, r.collision_model, r.visual_model, name="ur5")


def test_quadprog_and_the_direct_solve_agree_on_an_equality_only_problem():
    mech = _ur5()
    q, v = np.array([0.3, -1.0, 1.2, -0.5, 0.8, 0.2]), np.array([0.1, -0.2, 0.3, 0.1, 0.0, -0.4])
    mech.set_state(q, v)
    eqs = EquationSet()
    tool = FramePoint(mech, "tool0")
    eqs.add_equation("tool", acc(tool) == np.array([0.3, -0.2, 0.1]))
    eqs.add_equation("j5", acc(JointAngle(mech, "wrist_2_joint")) == 0.5)
    eqs.add_equation("j6", acc(JointAngle(mech, "wrist_3_joint")) == -0.5)
    eqs.add_equation("j4", acc(JointAngle(mech, "wrist_1_joint")) == 0.2)
    p = build_problem(mech, eqs, 0.0)
    direct, qp = solve(p), solve(p, method="qp")
    assert direct.method == "direct" and qp.method == "qp"
    assert np.abs(direct.x - qp.x).max() < 1e-9 * max(1.0, np.abs(direct.x).max())


def test_a_state_vector_of_the_wrong_size_is_refused_with_its_sizes(talos):
    with pytest.raises(StateError, match=r"nq = 39, got a vector of size 7"):
        talos.set_state(np.zeros(7))
    with pytest.raises(StateError, match=r"nv = 38, got a vector of size 3"):
        talos.set_state(pin.neutral(talos.model), np.zeros(3))


def test_an_unknown_frame_name_is_refused_with_suggestions(talos):
    with pytest.raises(UnknownNameError) as info:
        FramePoint(talos, "left_sole_lnk")
    msg = str(info.value)
    assert "unknown frame 'left_sole_lnk'" in msg and "left_sole_link" in msg and "talos" in msg


# ------------------------------------------------------------ fast paths agree with the slow ones
@pytest.mark.parametrize("cls", [PointConstraint, WeldConstraint, HingeConstraint])
@pytest.mark.parametrize("other", ["gripper_right_base_link", None])
def test_a_constraints_fused_terms_equal_its_three_methods(talos, cls, other):
    q, v = random_state(talos, 8)
    talos.set_state(q, v)
    c = cls("c", "gripper_left_base_link", other)
    c.bind(talos)
    talos.set_state(*random_state(talos, 9))
    for fused, single in zip(c.terms(), (c.error(), c.jacobian(), c.drift())):
        assert np.array_equal(fused, single)


def test_a_subclass_redefining_a_row_method_does_not_inherit_the_fused_terms(talos):
    from controlkit.constraints import Constraint

    class Doubled(WeldConstraint):
        def jacobian(self):
            return 2.0 * super().jacobian()

    assert Doubled.terms is Constraint.terms and WeldConstraint.terms is not Constraint.terms
    talos.set_state(*random_state(talos, 10))
    c = Doubled("d", "gripper_left_base_link")
    c.bind(talos)
    assert np.array_equal(c.terms()[1], 2.0 * WeldConstraint.jacobian(c))


def test_block_mass_solve_by_the_inverse_equals_a_dense_solve(robot):
    mech = robot[0]
    mech.set_state(*random_state(mech, 11))
    M, _ = mech.dynamics()
    B = np.random.default_rng(3).standard_normal((mech.nv, 7))
    X = mech.mass_solve(B)
    assert np.abs(M @ X - B).max() < 1e-9 * max(1.0, np.abs(B).max())
    assert np.abs(X[:, 2] - mech.mass_solve(B[:, 2].copy())).max() < 1e-9 * max(1.0, np.abs(X).max())


@pytest.mark.parametrize("shape", [(6, 32), (32, 26), (5, 5)])
def test_the_full_rank_qr_path_matches_the_svd(shape):
    from controlkit import linalg
    rng = np.random.default_rng(4)
    E, f = rng.standard_normal(shape), rng.standard_normal(shape[0])
    y, r, U, N = linalg.full_rank_qr(E, f)
    y0, r0, _, N0 = linalg.min_norm_svd(E, f)
    assert U is None and r == r0 == min(shape)
    assert np.abs(y - y0).max() < 1e-10 * max(1.0, np.abs(y0).max())
    assert N.shape == N0.shape and np.abs(N @ N.T - N0 @ N0.T).max() < 1e-10  # the same null space
    rank_deficient = E.copy() if shape[0] <= shape[1] else E.T.copy()
    rank_deficient[-1] = rank_deficient[0]  # two equal rows (wide) or columns (tall)
    rank_deficient = rank_deficient if shape[0] <= shape[1] else rank_deficient.T
    assert linalg.full_rank_qr(rank_deficient, f) is None  # left to the SVD


def test_the_cached_full_rank_proof_is_redone_when_the_jacobian_moves_far(talos):
    from controlkit.singular import locked_directions
    talos.set_state(*random_state(talos, 12))
    c = WeldConstraint("w", "left_sole_link")
    c.bind(talos)
    memo = {}
    J = c.jacobian()
    assert locked_directions(talos, [c], J, memo) is None and "full rank" in memo
    assert locked_directions(talos, [c], J + 1e-6, memo) is None  # near: proven by the bound
    singular = J.copy()
    singular[5] = singular[4]  # a redundant pair of rows: the bound fails and the SVD decides
    memo_before = memo["full rank"]
    locked_directions(talos, [c], singular, memo)
    assert memo["full rank"] is memo_before


def test_column_block_expressions_equal_their_dense_form(talos):
    from controlkit.equations import Layout
    from controlkit.expressions import Context, Lin
    talos.set_state(*random_state(talos, 13))
    layout = Layout.for_mechanism(talos)
    ctx = Context(talos, 0.0, layout)
    p, tau = FramePoint(talos, "left_sole_link"), ControlTorques(talos)
    K = np.random.default_rng(5).standard_normal((3, 3))
    e = (K @ acc(p) + 2.0 * acc(p) - np.ones(3)).evaluate(ctx)
    assert e.a is not None and e.w is None  # only the acceleration block is carried
    L0 = p.acceleration(ctx)
    dense = Lin(L0.A, L0.b)  # the same expression through the dense form
    ref = dense.scale(K) + dense.scale(2.0) + (-np.ones(3))
    assert np.array_equal(e.A, ref.A) and np.array_equal(e.b, ref.b)
    t = tau.evaluate(ctx)
    assert t.a is None and t.A.shape == (talos.ntau, layout.nx)
    assert np.array_equal(t.A[:, layout.tau], np.eye(talos.ntau))
    assert tau.evaluate(ctx).w is t.w  # the selection is built once per layout


def _tool_with_preferred_accelerations(reg_weight: float, as_cost: bool = False, qp: bool = False):
    """UR5: the tool's acceleration is a cost (3 rows, satisfiable), which leaves 3 directions of
    the joint accelerations free; a regularization (or, for comparison, a light cost) pulls the
    joint accelerations toward a preferred vector."""
    from controlkit.quantities import JointAccelerations
    mech = _ur5()
    q, v = np.array([0.3, -1.0, 1.2, -0.5, 0.8, 0.2]), np.array([0.1, -0.2, 0.3, 0.1, 0.0, -0.4])
    mech.set_state(q, v)
    eqs = EquationSet()
    target, preferred = np.array([0.3, -0.2, 0.1]), np.array([1.0, -2.0, 0.5, 0.3, -0.7, 2.0])
    eqs.add_cost("tool", acc(FramePoint(mech, "tool0")) - target)
    add = eqs.add_cost if as_cost else eqs.add_regularization
    add("preferred", JointAccelerations(mech) - preferred, reg_weight * np.array([1.0, 2.0, 1.0, 3.0, 1.0, 1.0]))
    if qp:
        eqs.add_inequality("torque limit", ControlTorques(mech) <= 1e6)  # inactive: only the path changes
    sol = solve(build_problem(mech, eqs, 0.0))
    return mech, q, v, target, preferred, sol


@pytest.mark.parametrize("qp", [False, True])
def test_a_regularization_chooses_only_among_what_the_costs_leave_free(qp):
    """Lexicographic: the tool's cost is met exactly whatever the regularization's weight, and in
    the directions it leaves free the joint accelerations are the weighted least-squares closest
    to the preferred ones (solved here independently, from Pinocchio's Jacobian)."""
    mech, q, v, target, preferred, sol = _tool_with_preferred_accelerations(1.0, qp=qp)
    m, d = mech.model, mech.model.createData()
    fid = m.getFrameId("tool0")
    pin.computeJointJacobians(m, d, q)
    pin.forwardKinematics(m, d, q, v, np.zeros(m.nv))
    J = pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED)[:3]
    drift = pin.getFrameClassicalAcceleration(m, d, fid, pin.LOCAL_WORLD_ALIGNED).linear
    W = np.diag([1.0, 2.0, 1.0, 3.0, 1.0, 1.0])
    # min |W (a - preferred)| s.t. J a + drift = target, by the weighted null-space projection
    Wi = np.linalg.inv(W)
    a_star = preferred + Wi @ np.linalg.pinv(J @ Wi) @ (target - drift - J @ preferred)
    np.testing.assert_allclose(J @ sol.a + drift, target, atol=1e-9)
    np.testing.assert_allclose(sol.a, a_star, atol=1e-8)
    for w in (1e-6, 1e3):  # only relative weights of regularizations matter
        np.testing.assert_allclose(_tool_with_preferred_accelerations(w, qp=qp)[-1].a, sol.a, atol=1e-7)


def _tool_with_torque_limit(limit: float):
    mech = _ur5()
    mech.set_state(np.array([0.3, -1.0, 1.2, -0.5, 0.8, 0.2]), np.array([0.1, -0.2, 0.3, 0.1, 0.0, -0.4]))
    eqs = EquationSet()
    eqs.add_cost("tool", acc(FramePoint(mech, "tool0")) - np.array([3.0, -2.0, 1.0]))
    eqs.add_inequality("torque limit", ControlTorques(mech) <= limit)
    eqs.add_inequality("torque limit (negative)", ControlTorques(mech) >= -limit)
    return build_problem(mech, eqs, 0.0)


@pytest.mark.parametrize("active", [False, True])
def test_the_qp_in_the_null_space_equals_quadprog_on_the_whole_problem(active):
    """Limits far away (the unconstrained minimum is the answer, quadprog is not called) or cutting
    the largest torque (quadprog): the same solution as quadprog on the whole problem in y."""
    free = solve(_tool_with_torque_limit(1e6))
    limit = 0.6 * np.abs(free.tau).max() if active else 1e6
    p = _tool_with_torque_limit(limit)
    sol, whole = solve(p), solve(p, method="qp")
    assert sol.method == whole.method == "qp"
    assert np.abs(sol.tau).max() <= limit * (1 + 1e-9)
    assert (np.abs(np.abs(sol.tau).max() - limit) < 1e-6 * limit) == active  # a limit holds only when active
    np.testing.assert_allclose(sol.x, whole.x, rtol=0, atol=1e-7 * np.abs(whole.x).max())
    if not active:
        np.testing.assert_allclose(sol.x, free.x, rtol=0, atol=1e-9 * np.abs(free.x).max())


def test_a_light_cost_trades_against_the_task_where_a_regularization_does_not():
    mech, q, v, target, preferred, sol = _tool_with_preferred_accelerations(1e-2, as_cost=True)
    m, d = mech.model, mech.model.createData()
    fid = m.getFrameId("tool0")
    pin.forwardKinematics(m, d, q, v, sol.a)
    tool = pin.getFrameClassicalAcceleration(m, d, fid, pin.LOCAL_WORLD_ALIGNED).linear
    assert np.abs(tool - target).max() > 1e-6  # the light cost bent the task
    eqs = EquationSet()
    eqs.add_regularization("r", acc(JointAngle(mech, "wrist_3_joint")))
    with pytest.raises(Exception, match="already exists"):
        eqs.add_regularization("r", acc(JointAngle(mech, "wrist_3_joint")))
    assert "r" in eqs.names() and "REGULARIZATIONS" in __import__("controlkit.printing", fromlist=["x"]).format_equations(mech, eqs)
    eqs.remove("r")
    assert eqs.is_empty()


def test_a_solution_is_known_stale_once_the_state_or_the_statements_change(talos):
    """A guard that finds ``mech.solution`` must know whether it belongs to this state and
    these statements: a program may have set the state (to read a point) without solving."""
    q, v = random_state(talos, 3)
    eqs = EquationSet()
    eqs.assign("torques", ControlTorques(talos), np.zeros(talos.ntau))
    evaluate(talos, eqs, 0.0, q, v)
    assert talos.solved(eqs)
    talos.set_state(q.copy(), v.copy())  # the same values again: the solve still holds
    assert talos.solved(eqs)
    talos.set_state(q, v + 1e-9)
    assert not talos.solved(eqs)
    sol0 = evaluate(talos, eqs, 0.0, q, v)
    eqs.assign("torques", ControlTorques(talos), np.ones(talos.ntau))  # a new held value
    assert not talos.solved(eqs)
    sol1 = evaluate(talos, eqs, 0.0, q, v)
    assert talos.solved(eqs)
    assert np.abs(sol1.a - sol0.a).max() > 1e-6  # the new torques were used, not a cached solve
    assert not talos.solved(EquationSet())


def test_a_reweighted_cost_solves_as_a_set_built_with_that_weight():
    """``set_weight`` between solves (a controller re-weighting a task every tick) keeps the
    compiled statements and gives what a set built with the new weight gives."""
    mech, q, v, target, preferred, _ = _tool_with_preferred_accelerations(1.0, as_cost=True)
    eqs = EquationSet()
    eqs.add_cost("tool", acc(FramePoint(mech, "tool0")) - target)
    from controlkit.quantities import JointAccelerations
    eqs.add_cost("preferred", JointAccelerations(mech) - preferred, 1.0)
    first = solve(build_problem(mech, eqs, 0.0))
    structure = eqs.structure
    w = 1e-2 * np.array([1.0, 2.0, 1.0, 3.0, 1.0, 1.0])
    eqs.set_weight("preferred", w)
    assert eqs.structure == structure  # compiled once
    again = solve(build_problem(mech, eqs, 0.0))
    fresh = _tool_with_preferred_accelerations(1e-2, as_cost=True)[-1]
    np.testing.assert_allclose(again.a, fresh.a, atol=1e-10)
    assert np.abs(again.a - first.a).max() > 1e-6  # the new weight was used
    with pytest.raises(Exception, match="rows"):
        eqs.set_weight("preferred", np.ones(4))  # 6 rows
    with pytest.raises(UnknownNameError):
        eqs.set_weight("no such cost", 1.0)


