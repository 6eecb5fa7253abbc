"""Dependent and nearly dependent equality rows: solved when their right-hand sides agree to within
what their dependence explains, an :class:`InconsistentEquationsError` otherwise.

The problems are built by hand: a unit point mass in the plane (M = I, no gravity, no torques) held
by two constraint rows ``J a = b``. With forces acting through ``J^T``, the solver's reduced rows are
``J J^T``, whose smallest singular value is the square of J's: rows at an angle theta ~ 1e-6 from
dependent look dependent to the rank test (theta^2 / 4 < RANK_TOL), as a toppled brick stack's four
nearly parallel line contacts do (theta ~ 5e-5 through its mass matrix).
"""
from __future__ import annotations

import numpy as np
import pytest
from contact_cases import in_fresh_interpreter

from controlkit.consistency import NEAR_DEPENDENT
from controlkit.errors import InconsistentEquationsError
from controlkit.problem import Layout, Problem, Rows
from controlkit.solver import require_consistent, solve


def _point_mass(J: np.ndarray, b: np.ndarray, Jf: np.ndarray | None = None) -> Problem:
    """The problem ``a = lam_1 G_1 + lam_2 G_2`` (G = Jf if given, else J), ``J a = b`` (m/s^2)."""
    nv, k = 2, len(b)
    layout = Layout(nv, 0, {"c": slice(nv, nv + k)}, k)
    eq = Rows(J, None, np.asarray(b, dtype=float), [("c", "constraint", 0, k)], nv, nv + k,
              labels={"c": [f"c.{i}" for i in range(k)]})
    return Problem(0.0, layout, np.eye(nv), np.zeros(nv), np.zeros((0, nv)), J, eq, [],
                   Rows.empty(nv, nv + k), Rows.empty(nv, nv + k), Jf=Jf,
                   lam_labels=[f"c.{i}" for i in range(k)], mass_inverse=lambda: np.eye(nv))


def _rows(theta: float, disagreement: float) -> Problem:
    """Rows ``a_x = 1`` and ``a_x + theta a_y = 1 + disagreement`` (theta = 0: exactly dependent)."""
    return _point_mass(np.array([[1.0, 0.0], [1.0, theta]]), np.array([1.0, 1.0 + disagreement]))


def test_dependent_rows_that_agree_to_rounding_solve():
    sol = solve(_rows(0.0, 1e-13))
    assert sol.near_dependent is None
    assert sol.a[0] == pytest.approx(1.0, abs=1e-12)
    assert "c.0" in sol.indeterminate or "c.1" in sol.indeterminate  # how the two rows share the force


@pytest.mark.parametrize("disagreement", [1e-3, 1e-6])
def test_dependent_rows_that_disagree_raise_naming_them(disagreement):
    with pytest.raises(InconsistentEquationsError) as info:
        solve(_rows(0.0, disagreement))
    assert info.value.conflicting == ["c"]


def test_nearly_dependent_rows_that_disagree_within_their_departure_solve_in_least_squares():
    theta, disagreement = 1e-6, 1e-7  # departure of the dropped combination: theta / 2 = 5e-7
    sol = solve(_rows(theta, disagreement))
    J, b = np.array([[1.0, 0.0], [1.0, theta]]), np.array([1.0, 1.0 + disagreement])
    # solved exactly, the rows would take forces ~ disagreement / (theta^2 / 2) = 2e5 N; least squares
    # keeps them at the consistent part's ~1 N and misses each row by about the disagreement
    assert np.abs(sol.lam["c"]).max() < 2.0
    assert np.abs(J @ sol.a - b).max() <= disagreement
    # the strict answer stays available: a caller choosing support points treats them as inconsistent
    assert isinstance(sol.near_dependent, InconsistentEquationsError)
    with pytest.raises(InconsistentEquationsError):
        require_consistent(sol)


def test_nearly_dependent_rows_that_disagree_beyond_their_departure_raise():
    with pytest.raises(InconsistentEquationsError):
        solve(_rows(1e-6, 1e-3))


def test_a_contact_matrix_made_singular_by_the_forces_side_raises():
    """Independent rows (J = I) whose forces act along one direction (sliding friction's Jf): the
    reduced rows J Jf^T are singular although the rows are far from dependent (departure 1 >
    NEAR_DEPENDENT), so only the rounding tolerance applies."""
    assert NEAR_DEPENDENT < 1.0
    with pytest.raises(InconsistentEquationsError):
        solve(_point_mass(np.eye(2), np.array([1.0, 1.0 + 1e-6]), Jf=np.array([[1.0, 1.0], [1.0, 1.0]])))


_STACK = """
import numpy as np
from robots import scenes
from sim.contact import enable_contacts
from sim.simulator import Simulator
b = scenes.brick_stack()
q0 = np.array(b.q0, dtype=float)
q0[0] += {offset!r}
sim = Simulator(b.mechanism, q0, b.v0, dt=1e-3, integrator="rk4")
src = enable_contacts(sim, friction=(0.6, 0.5))
rec = sim.run({seconds!r})
print(rec.t[-1], len(rec.events), min(float(src.world.distances(q).min()) for q in rec.q))
"""


def test_brick_stack_runs_through_a_tiny_start_offset():
    """The toppling brick stack of thesis Fig. 5.7 with its first coordinate moved 1e-12 m: brick 2
    slides on bricks 1 and 3, standing on their edges, through a loop of four nearly parallel line
    contacts whose reduced rows lose rank at 0.916 s. The run goes on (the instant is an event and the
    supports are chosen again), no pair more than 0.1 mm inside another. A fresh interpreter: with the
    default geometry, coal's answers depend on the queries run before in the process."""
    code = _STACK.format(offset=1e-12, seconds=0.95)
    t_end, events, deepest = (float(x) for x in in_fresh_interpreter(code).split())
    assert t_end == pytest.approx(0.95)
    assert events > 0 and deepest >= -1e-4
