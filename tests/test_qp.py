"""controlkit.qp.solve_qp: its sign convention checked against scipy's independent solvers and
the KKT conditions, and its failures reported with the problem."""
import numpy as np
import pytest
from scipy.optimize import linprog, minimize

from controlkit.errors import ArgumentError, ControlkitError, QPError
from controlkit.qp import solve_qp


def _problem(seed):
    """A strictly convex QP in 5 unknowns, 2 equalities, 6 inequalities, feasible (a point x_f
    satisfies every row with a margin), whose unconstrained minimum lies far from x_f (so some
    inequalities are active at the solution)."""
    rng = np.random.default_rng(seed)
    n = 5
    B = rng.standard_normal((n, n))
    H = B @ B.T + 0.5 * np.eye(n)
    x_f = rng.standard_normal(n)
    c = -H @ (x_f + 3.0 * rng.standard_normal(n))
    A = rng.standard_normal((2, n))
    b = A @ x_f
    G = rng.standard_normal((6, n))
    h = G @ x_f + 0.1 + rng.random(6)
    return H, c, A, b, G, h


@pytest.mark.parametrize("seed", range(4))
def test_solve_qp_matches_scipy_slsqp_on_equalities_and_inequalities(seed):
    H, c, A, b, G, h = _problem(seed)
    r = solve_qp(H, c, A, b, G, h)
    ref = minimize(lambda x: 0.5 * x @ H @ x + c @ x, np.zeros(len(c)), jac=lambda x: H @ x + c,
                   method="SLSQP", options={"ftol": 1e-12, "maxiter": 500},
                   constraints=[{"type": "eq", "fun": lambda x: A @ x - b, "jac": lambda x: A},
                                {"type": "ineq", "fun": lambda x: h - G @ x, "jac": lambda x: -G}])
    assert ref.success
    assert np.allclose(r.x, ref.x, atol=1e-6)
    assert r.objective == pytest.approx(0.5 * r.x @ H @ r.x + c @ r.x, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_solve_qp_multipliers_satisfy_the_documented_kkt_conditions(seed):
    H, c, A, b, G, h = _problem(seed)
    r = solve_qp(H, c, A, b, G, h)
    x, y, z = r.x, r.eq_multipliers, r.ineq_multipliers
    assert np.allclose(A @ x, b, atol=1e-10)
    assert np.all(G @ x <= h + 1e-10)
    assert np.all(z >= -1e-12)
    assert np.allclose(H @ x + c + A.T @ y + G.T @ z, 0.0, atol=1e-9)  # stationarity, the module's signs
    assert np.allclose(z * (G @ x - h), 0.0, atol=1e-9)  # complementarity
    assert len(r.active) > 0
    assert np.allclose((G @ x - h)[r.active], 0.0, atol=1e-9)  # the active rows hold with equality
    inactive = np.setdiff1d(np.arange(len(h)), r.active)
    assert np.all(z[inactive] == 0.0)


def test_a_linear_cost_with_a_tiny_hessian_finds_linprogs_vertex():
    """min x + 2 y over the box [0, 1]^2 cut by x + y >= 1: linprog's vertex (1, 0)."""
    c = np.array([1.0, 2.0])
    G = np.array([[-1.0, 0.0], [0.0, -1.0], [1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])
    h = np.array([0.0, 0.0, 1.0, 1.0, -1.0])
    lp = linprog(c, A_ub=G, b_ub=h, bounds=[(None, None)] * 2)
    r = solve_qp(1e-9 * np.eye(2), c, G=G, h=h)
    assert np.allclose(r.x, lp.x, atol=1e-6) and np.allclose(r.x, [1.0, 0.0], atol=1e-6)


def test_an_unconstrained_qp_is_the_linear_solve():
    H = np.array([[2.0, 0.5], [0.5, 1.0]])
    c = np.array([1.0, -1.0])
    r = solve_qp(H, c)
    assert np.allclose(r.x, np.linalg.solve(H, -c), atol=1e-12)
    assert r.active.size == 0 and r.eq_multipliers.size == 0 and r.ineq_multipliers.size == 0


def test_infeasible_inequalities_raise_a_qp_error_carrying_the_problem():
    H, c = np.eye(2), np.zeros(2)
    G = np.array([[1.0, 0.0], [-1.0, 0.0]])  # x0 <= -1 and x0 >= 1
    h = np.array([-1.0, -1.0])
    with pytest.raises(QPError) as info:
        solve_qp(H, c, G=G, h=h)
    err = info.value
    assert isinstance(err, ControlkitError)
    assert "cannot all hold" in str(err) and "2 inequalities" in str(err)
    assert np.array_equal(err.G, G) and np.array_equal(err.h, h) and np.array_equal(err.H, H)
    assert err.A_eq.shape == (0, 2) and err.b_eq.shape == (0,)


def test_a_hessian_that_is_not_positive_definite_is_a_qp_error_saying_so():
    with pytest.raises(QPError, match="not positive definite"):
        solve_qp(np.diag([1.0, -1.0]), np.zeros(2))


def test_an_unknown_solver_name_is_an_argument_error_listing_the_known_ones():
    with pytest.raises(ArgumentError, match="unknown solver 'osqp'.*quadprog"):
        solve_qp(np.eye(2), np.zeros(2), solver="osqp")


def test_rows_without_their_right_hand_side_are_an_argument_error():
    with pytest.raises(ArgumentError, match="A_eq and b_eq"):
        solve_qp(np.eye(2), np.zeros(2), A_eq=np.ones((1, 2)))
    with pytest.raises(ArgumentError, match="G has shape"):
        solve_qp(np.eye(2), np.zeros(2), G=np.ones((1, 3)), h=np.zeros(1))
