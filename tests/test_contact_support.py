"""The support-set problem on matrices (sim/contact/support.py) and the contact rows
(sim/contact/rows.py), each against an independent method: the LCP against enumeration of its
active sets, the support margin against scipy's linprog and the polygon it stands for, the basic
forces against their definition, the rows against finite differences of their gaps."""
import itertools
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from scipy.optimize import linprog

from robots import scenes
from sim.contact.bodies import _bodies
from sim.contact.rows import _ball_rows, _gap_rows
from sim.contact.support import (
    _affine_residual,
    _basic_forces,
    _pivot_lcp,
    _support_margin,
    _support_qp,
    lcp_violation,
)


def _lcp_by_enumeration(A, s0, normal):
    """The mixed LCP's solution by trying every active set: lam = 0 off the set, s = 0 on it
    (the free rows always on it), lam >= 0 and s >= 0 on the normal rows (unique for a P-matrix)."""
    k = len(s0)
    free = [i for i in range(k) if not normal[i]]
    found = []
    for r in range(int(normal.sum()) + 1):
        for S in itertools.combinations(np.flatnonzero(normal).tolist(), r):
            idx = sorted(free + list(S))
            lam = np.zeros(k)
            if idx:
                lam[idx] = np.linalg.solve(A[np.ix_(idx, idx)], -s0[idx])
            s = s0 + A @ lam
            tol = 1e-10 * max(1.0, np.abs(s0).max())
            if np.all(lam[normal] >= -tol) and np.all(s[normal] >= -tol):
                found.append(lam)
    assert len(found) == 1, f"{len(found)} solutions: not a P-matrix LCP"
    return found[0]


def _random_problem(rng, k, nfree, skew=0.0):
    R = rng.normal(size=(k, k))
    A = R @ R.T + 0.1 * np.eye(k)  # SPD: the forward-dynamics Delassus matrix
    if skew:  # sliding friction: unsymmetric, its symmetric part still positive definite (a P-matrix)
        S = rng.normal(size=(k, k))
        A = A + skew * (S - S.T)
    s0 = rng.normal(size=k)
    normal = np.ones(k, dtype=bool)
    normal[rng.choice(k, size=nfree, replace=False)] = False
    return A, s0, normal


@pytest.mark.parametrize("skew", [0.0, 0.5])
def test_support_lcp_is_complementary_and_the_enumerated_solution_on_random_p_matrices(skew):
    rng = np.random.default_rng(11)
    for _ in range(40):
        k = int(rng.integers(1, 7))
        A, s0, normal = _random_problem(rng, k, int(rng.integers(0, min(k, 3))), skew)
        lam = _pivot_lcp(A, s0, normal, _support_qp(A, s0, normal, 0.0))[0]
        s = s0 + A @ lam
        scale = max(1.0, np.abs(s0).max())
        assert np.all(lam[normal] >= 0.0)
        assert np.all(s[normal] >= -1e-9 * scale)
        assert np.abs(lam[normal] * s[normal]).max(initial=0.0) <= 1e-9 * scale * max(1.0, np.abs(lam).max())
        np.testing.assert_allclose(s[~normal], 0.0, atol=1e-9 * scale)  # the free (sticking) rows held
        np.testing.assert_allclose(lam, _lcp_by_enumeration(A, s0, normal), rtol=1e-8, atol=1e-9 * scale)


def test_the_pivoting_says_when_it_leaves_a_support_problem_unsolved():
    # a support problem recorded from the toppled brick stack (first coordinate moved by 1e-12 m, at
    # 1.2663 s): 14 rows, two sliding contacts, A unsymmetric with an indefinite symmetric part. The
    # pivoting cycles, the QP's forces stand, and they are far from the LCP's solution
    d = np.load(Path(__file__).parent / "data" / "support_lcp_cycling.npz")
    A, s0, normal = d["A"], d["s0"], d["normal"]
    assert np.linalg.eigvalsh(0.5 * (A + A.T)).min() < 0.0
    qp = _support_qp(A, s0, normal, float(d["t"]))
    lam, solved = _pivot_lcp(A, s0, normal, qp)
    assert not solved and lam is qp
    assert lcp_violation(A, s0, normal, lam) > 0.1
    # on the P-matrix problems it solves, the violation is round-off, and zero at the enumerated solution
    rng = np.random.default_rng(11)
    for _ in range(20):
        k = int(rng.integers(1, 7))
        A, s0, normal = _random_problem(rng, k, int(rng.integers(0, min(k, 3))), 0.5)
        lam, solved = _pivot_lcp(A, s0, normal, _support_qp(A, s0, normal, 0.0))
        assert solved and lcp_violation(A, s0, normal, lam) < 1e-9
        assert lcp_violation(A, s0, normal, _lcp_by_enumeration(A, s0, normal)) < 1e-9


def test_support_qp_shares_the_load_of_redundant_points_by_least_squares():
    """Four corners of a square sole under a load near its centre: the rows (force and two moments
    per unit corner force) have rank 3, so the forces holding the load are many; the QP (with its
    regularization) and its refinement give the least-squares ones, ``B (B^T B)^-1 f``."""
    X = np.array([[-0.1, -0.05], [0.1, -0.05], [0.1, 0.05], [-0.1, 0.05]])  # m
    B = np.column_stack([np.ones(4), X])  # (4, 3): a corner's unit force -> (force, moment about y, x)
    rng = np.random.default_rng(5)
    for _ in range(10):
        p = rng.uniform(-0.02, 0.02, size=2)  # the centre of pressure, near the middle
        f = 700.0 * np.array([1.0, *p])  # N, N m
        A, s0 = B @ B.T, -B @ f  # separations s = B (B^T lam - f)
        normal = np.ones(4, dtype=bool)
        lam = _pivot_lcp(A, s0, normal, _support_qp(A, s0, normal, 0.0))[0]
        ls = B @ np.linalg.solve(B.T @ B, f)
        assert np.all(ls > 0.0)
        np.testing.assert_allclose(lam, ls, rtol=1e-6)
        np.testing.assert_allclose(B.T @ lam, f, rtol=1e-9)


def _margin_by_linprog(fn, C):
    """max t over (mu, t): mu_j >= t, fn_i - (C^T mu)_i >= t (scipy's HiGHS)."""
    d, k = C.shape
    c = np.zeros(d + 1)
    c[-1] = -1.0
    A_ub = np.vstack([np.hstack([-np.eye(d), np.ones((d, 1))]), np.hstack([C.T, np.ones((k, 1))])])
    b_ub = np.concatenate([np.zeros(d), fn])
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=[(None, None)] * (d + 1), method="highs")
    assert res.status == 0
    return -res.fun


def _affine(Xb, Xd):
    """Affine coordinates (d, k) of points Xd in the points Xb (rows sum to 1)."""
    A = np.vstack([Xb.T, np.ones(len(Xb))])
    B = np.vstack([Xd.T, np.ones(len(Xd))])
    return np.linalg.lstsq(A, B, rcond=None)[0].T


@pytest.mark.parametrize("d", [1, 2, 3])
def test_support_margin_is_the_lp_optimum_of_linprog(d):
    rng = np.random.default_rng(20 + d)
    for _ in range(30):
        Xb = np.column_stack([rng.uniform(-1, 1, size=(3, 2)), np.zeros(3)])  # held points, in a plane
        Xd = np.column_stack([rng.uniform(-1, 1, size=(d, 2)), np.zeros(d)])
        C = _affine(Xb, Xd)
        fn = rng.normal(loc=1.0, size=3) * rng.uniform(1.0, 100.0)  # N
        ref = _margin_by_linprog(fn, C)
        assert _support_margin(fn, C) == pytest.approx(ref, rel=1e-6, abs=1e-6 * np.abs(fn).max())


def test_support_margin_is_positive_exactly_while_the_centre_of_pressure_is_inside_the_square():
    """A square's corners: three held, the fourth dependent. A load F at a centre of pressure p puts
    forces fn on the held three (the same resultant and moment); a compressive distribution over the
    whole square exists iff p lies inside it, so the margin's sign is p's side of the square."""
    Xb = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    Xd = np.array([[1.0, 1.0, 0.0]])
    C = _affine(Xb, Xd)
    M = np.vstack([Xb[:, :2].T, np.ones(3)])  # [sum fn x; sum fn y; sum fn] = F [p; 1]
    rng = np.random.default_rng(2)
    for _ in range(200):
        p = rng.uniform(-0.3, 1.3, size=2)
        if np.min(np.abs(np.concatenate([p, 1.0 - p]))) < 1e-3:
            continue  # (on an edge: the margin is zero, its sign round-off)
        fn = np.linalg.solve(M, 10.0 * np.append(p, 1.0))
        inside = bool(np.all((p > 0.0) & (p < 1.0)))
        assert (_support_margin(fn, C) > 0.0) == inside, p


def test_basic_forces_hold_the_same_generalized_force_on_at_most_rank_many_points():
    rng = np.random.default_rng(9)
    for _ in range(20):
        k, nv = int(rng.integers(2, 8)), int(rng.integers(2, 6))
        rows = rng.normal(size=(k, nv))
        others = rng.normal(size=(int(rng.integers(0, 2)), nv))
        lam = rng.uniform(0.0, 5.0, size=k)
        x = _basic_forces(rows, others, lam)
        assert x is not None and np.all(x >= 0.0)
        P = np.eye(nv)
        if len(others):
            Q = np.linalg.qr(others.T)[0]
            P = P - Q @ Q.T  # modulo the free forces' span
        np.testing.assert_allclose(P @ rows.T @ x, P @ rows.T @ lam, atol=1e-9 * np.abs(rows.T @ lam).max())
        assert np.count_nonzero(x > 1e-12) <= np.linalg.matrix_rank(P @ rows.T)
    # a tensile force no compressive set can replace: none
    rows = np.eye(3)
    assert _basic_forces(rows, np.zeros((0, 3)), np.array([1.0, -1.0, 2.0])) is None


def test_affine_residual_is_the_distance_from_the_plane_of_the_held_points():
    Xb = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    Xd = np.array([[2.0, 3.0, 0.0], [0.5, 0.5, 0.25]])
    np.testing.assert_allclose(_affine_residual(Xb, Xd), [0.0, 0.25], atol=1e-12)


# ------------------------------------------------------------------ rows
def _two_bricks():
    b = scenes.brick_stack(n=2)
    mech = b.mechanism
    gm = mech.collision_model
    joints = tuple(gm.geometryObjects[gm.getGeometryId(n)].parentJoint for n in ("brick_1", "brick_2"))
    return b, mech, joints


def _placements(model, q, joints):
    data = model.createData()
    pin.forwardKinematics(model, data, q)
    return [data.oMi[j] for j in joints]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gap_rows_of_a_point_on_a_moving_face_are_the_derivatives_of_its_gap(seed):
    """A material point of body P on a face of body Q (normal fixed in Q, both bodies moving): the
    row's value is the gap, ``J v`` its rate and the drift its second derivative along q + t v
    (central differences of the gap computed from the joints' placements)."""
    b, mech, joints = _two_bricks()
    model = mech.model
    rng = np.random.default_rng(seed)
    q = pin.integrate(model, b.q0, rng.normal(scale=0.5, size=model.nv))
    v = rng.normal(size=model.nv)
    la, lo = rng.normal(scale=0.1, size=(1, 3)), rng.normal(scale=0.1, size=(1, 3))
    nb = rng.normal(size=3)
    nb /= np.linalg.norm(nb)  # Q's outward normal, in Q's joint frame
    rad = np.array([0.03])

    def gap(t):
        MP, MQ = _placements(model, pin.integrate(model, q, t * v), joints)
        return float((MP.act(la[0]) - MQ.act(lo[0])) @ (MQ.rotation @ nb) - rad[0])

    mech.set_state(q, v, check=False)
    P, Q = _bodies(mech, joints)
    phi, J, drift, G = _gap_rows(P, Q, Q.R @ nb, la, lo, rad, None, 0.0)
    h = 1e-4  # (central differences: truncation ~h^2, round-off ~1e-16 / h^2 on the drift)
    dm, d0, dp = gap(-h), gap(0.0), gap(h)
    assert phi[0] == pytest.approx(d0, abs=1e-12)
    assert (J @ v)[0] == pytest.approx((dp - dm) / (2 * h), rel=1e-5, abs=1e-8)
    assert drift[0] == pytest.approx((dp - 2 * d0 + dm) / h**2, rel=1e-4, abs=1e-5)
    np.testing.assert_array_equal(G, J)


@pytest.mark.parametrize("seed", [0, 1])
def test_ball_on_ball_rows_are_the_derivatives_of_the_balls_gap(seed):
    b, mech, joints = _two_bricks()
    model = mech.model
    rng = np.random.default_rng(10 + seed)
    q = pin.integrate(model, b.q0, rng.normal(scale=0.5, size=model.nv))
    v = rng.normal(size=model.nv)
    la, lb = rng.normal(scale=0.1, size=(1, 3)), rng.normal(scale=0.1, size=(1, 3))
    ra, rb = 0.02, 0.05

    def gap(t):
        MA, MB = _placements(model, pin.integrate(model, q, t * v), joints)
        return float(np.linalg.norm(MA.act(la[0]) - MB.act(lb[0])) - ra - rb)

    mech.set_state(q, v, check=False)
    A, B = _bodies(mech, joints)
    phi, J, drift, _ = _ball_rows(A, B, la, lb, ra, rb, None, 0.0)
    h = 1e-4  # (central differences: truncation ~h^2, round-off ~1e-16 / h^2 on the drift)
    dm, d0, dp = gap(-h), gap(0.0), gap(h)
    assert phi[0] == pytest.approx(d0, abs=1e-12)
    assert (J @ v)[0] == pytest.approx((dp - dm) / (2 * h), rel=1e-5, abs=1e-8)
    assert drift[0] == pytest.approx((dp - 2 * d0 + dm) / h**2, rel=1e-4, abs=1e-5)


def test_the_support_lcps_matrix_of_passive_bodies_is_j_minv_gt_equal_to_one_solve_per_column(monkeypatch):
    """Random drop seed 3 (boxes and balls, passive bodies, no statements): at every support choice
    of its first 0.6 s the LCP's matrix comes from one product with Pinocchio's M^-1, and equals the
    matrix of one full solve per column (the general path) within 1e-10 of its largest entry. (Any
    scene whose support choices solve LCPs will do: seed 3 makes 15 in 0.6 s; seed 1, which made
    them before rocking bodies came to rest at an impact, makes none now.)"""
    from contact_cases import drop_case

    from sim.contact import enable_contacts, support_set
    from sim.simulator import Simulator

    seen = []
    fast = support_set.contact_response

    def both(sim, J, G, f0, stab, s0):
        A = fast(sim, J, G, f0, stab, s0)
        ref = support_set.contact_response_by_solves(sim, J, G, f0, stab, s0)
        seen.append(float(np.abs(A - ref).max() / np.abs(ref).max()))
        return A

    monkeypatch.setattr(support_set, "contact_response", both)
    before = dict(support_set.RESPONSE_COUNTS)
    case = drop_case(3)
    b = scenes.free_bodies(case["bodies"])
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    enable_contacts(sim, friction=case["friction"], restitution=case["restitution"])
    sim.run(0.6)
    assert len(seen) >= 5
    assert support_set.RESPONSE_COUNTS["product"] - before["product"] == len(seen)  # the product each time
    assert support_set.RESPONSE_COUNTS["solves"] == before["solves"]
    assert max(seen) < 1e-10
