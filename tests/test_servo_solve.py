"""The whole-body servo's QP solved in coordinates where its Hessian is the identity
(``controllers.servo_solve``): the same answers as ``controlkit.solver.solve`` on the walking servo's
problems, and torques that a change of the rows in their last bits leaves where they are."""
import copy
from pathlib import Path

import numpy as np
import pytest

import controllers.servo_solve as servo_solve_module
import controllers.whole_body as wb
from controlkit.solver import solve
from controllers.servo_solve import servo_solve
from sim.runner import load_script

EXAMPLE = load_script(Path(__file__).resolve().parents[1] / "examples" / "walking_fd.py")


def _fresh(p):
    pp = copy.copy(p)
    pp.cost_rows, pp.eq_rows, pp.factors = copy.copy(p.cost_rows), copy.copy(p.eq_rows), {}
    return pp


def _rel(tau, ref):
    return float(np.abs(tau - ref).max() / (1.0 + np.abs(ref).max()))


def _solves(p, rng) -> dict:
    """Problem p solved by the servo's path, by the reference path, and by the servo's path with its
    cost and equality rows multiplied by ``1 + 1e-15 n`` (n standard normal), twice: torques (ntau,)."""
    out = {"servo": servo_solve(_fresh(p)).tau, "reference": solve(_fresh(p)).tau, "perturbed": []}
    for _ in range(2):
        pp = _fresh(p)
        for rows in (pp.cost_rows, pp.eq_rows):
            rows.Aa = rows.Aa * (1.0 + 1e-15 * rng.standard_normal(rows.Aa.shape))
            rows.b = rows.b * (1.0 + 1e-15 * rng.standard_normal(rows.b.shape))
        out["perturbed"].append(servo_solve(pp).tau)
    return out


@pytest.fixture(scope="module")
def servo_problems():
    """Walking part 2's servo at every 50th tick of the weight shift (two feet planted) and of the first
    swing (one foot, 1.2 to 2.6 s), by number of planted feet: the tick's torques and :func:`_solves`
    (at the tick: the problem's arrays are the servo's, overwritten at the next tick)."""
    scn = EXAMPLE.build()
    servo = scn.info["servo"]
    real = wb.servo_evaluate
    problems = {1: [], 2: []}
    counts = dict(servo_solve_module.COUNTS)
    rng = np.random.default_rng(3)

    def capture(ws, mech, eqs, t, q, v):
        sol = real(ws, mech, eqs, t, q, v)
        if servo.solves % 50 == 0:
            problems[len(servo.planted)].append((sol.tau.copy(), _solves(mech.problem, rng)))
        return sol

    wb.servo_evaluate = capture
    try:
        scn.sim.run(2.6)
    finally:
        wb.servo_evaluate = real
    # every tick of the walk took the servo's own path (none handed back to the reference)
    assert servo_solve_module.COUNTS["servo"] - counts["servo"] >= 2600
    assert servo_solve_module.COUNTS["generic"] == counts["generic"]
    return problems


@pytest.mark.parametrize("feet", [1, 2])
def test_the_servo_solve_gives_the_reference_solvers_torques(servo_problems, feet):
    problems = servo_problems[feet]
    assert len(problems) >= 8
    for tau, solves in problems:
        assert np.array_equal(tau, solves["servo"])  # (the tick's own solve)
        # the reference's own rounding reaches 4e-7 with one foot planted (its Hessian's condition
        # number is 1e10 there): the two agree to that, not better
        assert _rel(solves["servo"], solves["reference"]) < 2e-6


# the reference path's torques move by up to 4e-7 relative under the same perturbation with one foot
# planted (its Hessian squares the rows' conditioning) and by up to 1.4e-9 with two (its free directions,
# the internal wrench, come from that Hessian's eigenvectors); the servo's stay within 1e-11
@pytest.mark.parametrize("feet", [1, 2])
def test_servo_torques_stay_put_when_the_rows_move_in_their_last_bits(servo_problems, feet):
    worst = max(_rel(tau, solves["servo"]) for _, solves in servo_problems[feet] for tau in solves["perturbed"])
    assert worst < 1e-10
