"""controlkit.qp.QPWorkspace (the active set warm-started across solves of one structure) and the
daqp solver: both give quadprog's cold answer to 1e-10, on random strictly convex QPs whose data
drift from solve to solve as a servo's do, and on the walking servo's own recorded QPs."""
import sys
from pathlib import Path

import numpy as np
import pytest

import controlkit.qp
import controlkit.solver
from controlkit.errors import QPError
from controlkit.qp import QPWorkspace, solve_qp, warm_start

AGREE = 1e-10  # relative to 1 + the largest |entry| of quadprog's cold answer


def _gap(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / (1.0 + np.abs(b).max())) if a.size else 0.0


def _drifting(seed: int, solves: int = 40, n: int = 8, meq: int = 2, m: int = 14):
    """``solves`` strictly convex QPs of one structure whose H, c and h drift slowly (a servo's
    ticks): the first is random and feasible (a point x_f satisfies every row with a margin),
    its unconstrained minimum far from x_f so several rows are active; each next one moves it a
    little, so the active set mostly stays and sometimes changes."""
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((n, n))
    x_f = rng.standard_normal(n)
    target = x_f + 3.0 * rng.standard_normal(n)
    A, G = rng.standard_normal((meq, n)), rng.standard_normal((m, n))
    margin = 0.1 + rng.random(m)
    out = []
    for _ in range(solves):
        B += 0.02 * rng.standard_normal((n, n))
        target += 0.05 * rng.standard_normal(n)
        margin = np.abs(margin + 0.02 * rng.standard_normal(m)) + 1e-3
        H = B @ B.T + 0.5 * np.eye(n)
        out.append((H, -H @ target, A, A @ x_f, G, G @ x_f + margin))
    return out


def _agrees(warm, cold) -> None:
    assert _gap(warm.x, cold.x) <= AGREE
    assert abs(warm.objective - cold.objective) <= AGREE * (1.0 + abs(cold.objective))
    assert _gap(warm.eq_multipliers, cold.eq_multipliers) <= 1e-8
    assert _gap(warm.ineq_multipliers, cold.ineq_multipliers) <= 1e-8


@pytest.mark.parametrize("meq", [0, 2])
@pytest.mark.parametrize("seed", range(6))
def test_a_warm_started_sequence_gives_the_cold_quadprog_answers(seed, meq):
    ws = QPWorkspace()
    for problem in _drifting(seed, meq=meq):
        _agrees(solve_qp(*problem, workspace=ws), solve_qp(*problem))
    assert ws.warm + ws.cold == 40
    assert ws.warm >= 20  # the guessed active set answers most solves of a slow drift
    assert ws.cold >= 1  # (the first solve, and whenever a row joins or leaves)


def test_a_wrong_guess_falls_back_to_the_cold_solve():
    """min |x - t|^2 over x <= 1 (one row): with t inside, the row held from the last solve would
    pull x onto the bound; the multiplier turns negative, the guess is refused, quadprog answers."""
    ws = QPWorkspace()
    G, h = np.array([[1.0, 0.0]]), np.array([1.0])
    first = solve_qp(np.eye(2), -np.array([3.0, 0.0]), G=G, h=h, workspace=ws)
    assert list(first.active) == [0] and (ws.warm, ws.cold) == (0, 1)
    again = solve_qp(np.eye(2), -np.array([2.0, 1.0]), G=G, h=h, workspace=ws)
    assert np.allclose(again.x, [1.0, 1.0], atol=1e-15) and (ws.warm, ws.cold) == (1, 1)
    inside = solve_qp(np.eye(2), -np.array([0.5, 1.0]), G=G, h=h, workspace=ws)
    assert np.allclose(inside.x, [0.5, 1.0], atol=1e-15) and inside.active.size == 0
    assert (ws.warm, ws.cold) == (1, 2)


def test_a_guess_that_leaves_a_violated_row_out_falls_back():
    ws = QPWorkspace()
    G, h = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1.0, 1.0])
    solve_qp(np.eye(2), -np.array([3.0, 0.0]), G=G, h=h, workspace=ws)  # row 0 active
    both = solve_qp(np.eye(2), -np.array([3.0, 3.0]), G=G, h=h, workspace=ws)  # row 1 too: refused
    assert np.allclose(both.x, [1.0, 1.0]) and list(both.active) == [0, 1] and ws.cold == 2


def test_warm_start_blocks_route_nested_calls_through_their_workspace_and_nest():
    problem = _drifting(1, solves=1)[0]
    outer, inner = QPWorkspace(), QPWorkspace()
    with warm_start(outer):
        solve_qp(*problem)
        with warm_start(inner):
            solve_qp(*problem)
            solve_qp(*problem)
        solve_qp(*problem)
    solve_qp(*problem)  # outside: cold, no workspace
    assert (outer.cold, outer.warm) == (1, 1) and (inner.cold, inner.warm) == (1, 1)


def test_structures_are_remembered_apart():
    ws = QPWorkspace()
    small, large = _drifting(2, solves=2, n=4, m=6), _drifting(3, solves=2)
    for a, b in zip(small, large):
        _agrees(solve_qp(*a, workspace=ws), solve_qp(*a))
        _agrees(solve_qp(*b, workspace=ws), solve_qp(*b))
    assert ws.cold == 2 and ws.warm == 2


# ------------------------------------------------------------------ the walking servo's QPs
SERVO_MODULES = ("controlkit.solver", "controllers.servo_solve")  # (the servo's QPs are solved there)

@pytest.fixture(scope="module")
def walk_qps():
    """The QPs handed to quadprog in 2.5 s of walking part 2 (the weight shift, the first lift-off,
    swing and heel strike), in order: ``servo`` (``controllers.walking_fd``'s, through
    ``controlkit.solver``) and ``contacts`` (the simulator's contact and impact QPs, ``sim.*``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import walking_fd
    real = controlkit.qp.solve_qp
    problems = {"servo": [], "contacts": []}
    patched = [m for name, m in list(sys.modules.items())
               if name.split(".")[0] in ("controlkit", "sim", "controllers") and name != "controlkit.qp"
               and getattr(m, "solve_qp", None) is real]

    def recorder(store):
        def record(H, c, A_eq=None, b_eq=None, G=None, h=None, **kwargs):
            store.append(tuple(None if a is None else np.array(a) for a in (H, c, A_eq, b_eq, G, h)))
            return real(H, c, A_eq, b_eq, G, h, **kwargs)
        return record

    for m in patched:
        m.solve_qp = recorder(problems["servo" if m.__name__ in SERVO_MODULES else "contacts"])
    try:
        walking_fd.build().sim.run(2.5)
    finally:
        for m in patched:
            m.solve_qp = real
    assert len(problems["servo"]) > 100 and len(problems["contacts"]) > 3
    return problems


@pytest.fixture(scope="module")
def servo_qps(walk_qps):
    return walk_qps["servo"]


def test_the_servos_recorded_qps_warm_started_give_the_cold_answers(servo_qps):
    ws = QPWorkspace()
    for problem in servo_qps:
        warm, cold = solve_qp(*problem, workspace=ws), solve_qp(*problem)
        assert _gap(warm.x, cold.x) <= AGREE
        assert np.array_equal(np.sort(warm.active), np.sort(cold.active)) or ws.cold  # (a fallback is quadprog)
    assert ws.warm >= 0.8 * len(servo_qps)  # the servo's active rows mostly stay from tick to tick


def test_daqp_gives_quadprogs_answers_on_the_servos_qps_cold_and_warm(servo_qps):
    ws = QPWorkspace()
    for problem in servo_qps:
        cold = solve_qp(*problem)
        for r in (solve_qp(*problem, solver="daqp"), solve_qp(*problem, solver="daqp", workspace=ws)):
            assert _gap(r.x, cold.x) <= AGREE
            assert _gap(r.ineq_multipliers, cold.ineq_multipliers) <= 1e-8
    structures = {(len(p[1]), len(p[5])) for p in servo_qps}  # (planted feet change the rows)
    assert ws.cold == len(structures) and ws.warm == len(servo_qps) - len(structures)


@pytest.mark.parametrize("seed", range(4))
def test_daqp_gives_quadprogs_answers_with_equalities(seed):
    ws = QPWorkspace()
    for problem in _drifting(seed, solves=10):
        cold = solve_qp(*problem)
        _agrees(solve_qp(*problem, solver="daqp"), cold)
        _agrees(solve_qp(*problem, solver="daqp", workspace=ws), cold)


def test_daqp_reports_infeasible_rows_and_an_indefinite_hessian_as_qp_errors():
    G, h = np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([-1.0, -1.0])  # x0 <= -1 and x0 >= 1
    with pytest.raises(QPError, match="cannot all hold"):
        solve_qp(np.eye(2), np.zeros(2), G=G, h=h, solver="daqp")
    with pytest.raises(QPError, match="not positive definite"):
        solve_qp(np.diag([1.0, -1.0]), np.zeros(2), G=np.eye(2), h=np.ones(2), solver="daqp")


def test_choosing_daqp_without_it_installed_is_a_qp_error_naming_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "daqp", None)  # (import daqp then raises ImportError)
    with pytest.raises(QPError, match=r"solver 'daqp' is not installed.*controlkit\[daqp\]"):
        solve_qp(np.eye(2), np.zeros(2), G=np.eye(2), h=np.ones(2), solver="daqp")


def test_the_walks_contact_qps_agree_warm_and_on_daqp(walk_qps):
    """The simulator's contact QPs are ill-conditioned (``A_sym + eps I``, condition numbers to 1e9):
    no two methods agree there to better than about 1e-9 (quadprog's own minimizer is 1.4e-9 from
    the KKT solution of its active set), so daqp is held to 1e-8; the warm start, whose fallback is
    quadprog itself, to 1e-10."""
    ws, wd = QPWorkspace(), QPWorkspace()
    for problem in walk_qps["contacts"]:
        cold = solve_qp(*problem)
        assert _gap(solve_qp(*problem, workspace=ws).x, cold.x) <= AGREE
        assert _gap(solve_qp(*problem, solver="daqp").x, cold.x) <= 1e-8
        assert _gap(solve_qp(*problem, solver="daqp", workspace=wd).x, cold.x) <= 1e-8
