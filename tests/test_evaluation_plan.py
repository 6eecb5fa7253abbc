"""The fast evaluation path (``evaluation="plan"``) against the reference implementation.

Two independent computations of the same quantities: the plan's compiled solve (numba, LAPACK called
directly; tall least-squares stages by QR then the SVD of the small triangular factor) against the
reference's numpy/SciPy stages (a QR rank proof, else the SVD of the whole block), and the plan's projection by the Delassus Cholesky factor with Pinocchio's ``M^-1`` against
the reference's SVD in the mass metric. Accelerations, torques and forces agree within 1e-10
(relative to the largest) on every scene of the suite that goes through this path, and counters
show the fast path was taken.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import robots
from controlkit.dynamics import evaluate
from controlkit.equations import EquationSet
from controlkit.expressions import acc, vel
from controlkit.quantities import ControlTorques, JointAngle
from controlkit.solve_plan import PLAN_COUNTS
from sim.runner import load_script
from sim.stabilization import PROJECTION_COUNTS, project_positions, project_state, project_velocities
from tests.models import pendulum

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
REL = 1e-10


def _close(x_ref: np.ndarray, x: np.ndarray, what: str) -> None:
    scale = max(1.0, float(np.abs(x_ref).max(initial=0.0)))
    err = float(np.abs(x - x_ref).max(initial=0.0))
    assert err <= REL * scale, f"{what}: plan and reference differ by {err:.3g} (scale {scale:.3g})"


def _both(mech, eqs: EquationSet, t: float, q, v, f_ext=None):
    """The solution by the reference path, then by the plan (the equation set restored after)."""
    before = eqs.evaluation
    try:
        eqs.evaluation = "reference"
        ref = evaluate(mech, eqs, t, q, v, f_ext)
        ref = (ref.a.copy(), ref.tau.copy(), {k: x.copy() for k, x in ref.lam.items()}, ref.method)
        eqs.evaluation = "plan"
        sol = evaluate(mech, eqs, t, q, v, f_ext)
    finally:
        eqs.evaluation = before
    return ref, sol


def _agree(mech, eqs, t, q, v, where: str, f_ext=None) -> None:
    (a, tau, lam, method), sol = _both(mech, eqs, t, q, v, f_ext)
    assert sol.method == method, where
    _close(a, sol.a, f"{where}: accelerations")
    _close(tau, sol.tau, f"{where}: torques")
    assert set(sol.lam) == set(lam), where
    for name, x in lam.items():
        _close(x, sol.lam[name], f"{where}: force of {name}")


def test_plan_solves_and_projects_the_thesis_walk_as_the_reference_does():
    """Inverse dynamics on magnetic shoes at three instants (double support, mid-swing, just after
    a heel strike): the solve, and the projection of a state pushed off the welds."""
    sim = load_script(EXAMPLES / "walking.py").build().sim
    mech = sim.mech
    rng = np.random.default_rng(3)
    n_kernel, n_proj = PLAN_COUNTS["kernel"], PROJECTION_COUNTS["delassus"]
    for t_end in (0.35, 0.9, 1.45):
        sim.run(t_end - sim.t)
        t, q, v = sim.t, sim.q.copy(), sim.v.copy()
        where = f"walk at t = {t:.3f} s ({len(mech.constraints)} welds)"
        _agree(mech, sim.equations, t, q, v, where)
        cons = list(mech.constraints.values())
        q1 = pin.integrate(mech.model, q, 1e-4 * rng.standard_normal(mech.nv))  # ~0.1 mm off the welds
        v1 = v + 1e-2 * rng.standard_normal(mech.nv)
        qp, vp = project_state(mech, cons, q1, v1)
        qr = project_positions(mech, cons, q1)
        vr = project_velocities(mech, cons, qr, v1)
        _close(np.zeros(mech.nv), pin.difference(mech.model, qr, qp), f"{where}: projected q (their difference)")
        _close(vr, vp, f"{where}: projected v")
    assert PLAN_COUNTS["kernel"] - n_kernel >= 3 + 4 * sim.steps  # the compiled solve, at every evaluation
    assert PROJECTION_COUNTS["delassus"] - n_proj >= 3 + sim.steps  # every projection of the run too


def test_plan_projection_falls_back_to_the_reference_on_redundant_closures():
    built = robots.four_bar()
    mech = built.mechanism
    cons = list(mech.constraints.values())  # the pin hinge's 5 rows: 3 of them redundant in the plane
    q = built.q0 + 1e-3
    v = np.full(mech.nv, 0.1)
    n0 = dict(PROJECTION_COUNTS)
    qp, vp = project_state(mech, cons, q, v)
    assert PROJECTION_COUNTS["reference"] == n0["reference"] + 1
    assert PROJECTION_COUNTS["delassus"] == n0["delassus"]
    qr = project_positions(mech, cons, q)
    np.testing.assert_array_equal(qp, qr)
    np.testing.assert_array_equal(vp, project_velocities(mech, cons, qr, v))


def test_simulator_projects_through_the_plan_and_the_reference_on_request():
    example = load_script(EXAMPLES / "walking.py")
    runs = {}
    for evaluation in ("reference", "plan"):
        sim = example.build().sim
        sim.evaluation = sim.equations.evaluation = evaluation
        n0 = dict(PROJECTION_COUNTS)
        rec = sim.run(0.3)
        used = {k: PROJECTION_COUNTS[k] - n0[k] for k in n0}
        runs[evaluation] = (rec, used, sim)
    assert runs["reference"][1] == {"delassus": 0, "reference": 0}  # its own two functions, not project_state
    assert runs["plan"][1]["delassus"] == runs["plan"][2].steps and runs["plan"][1]["reference"] == 0
    ref, plan = runs["reference"][0], runs["plan"][0]
    assert len(ref.events) == len(plan.events)
    _close(ref.q[-1], plan.q[-1], "walk's q after 0.3 s")
    _close(ref.v[-1], plan.v[-1], "walk's v after 0.3 s")


def test_plan_agrees_with_the_reference_on_the_redundant_arm():
    example = load_script(EXAMPLES / "redundant_arm.py")
    sim = example.build().sim
    sim.run(0.25)
    _agree(sim.mech, sim.equations, sim.t, sim.q, sim.v, "redundant arm")


def test_plan_agrees_with_the_reference_on_pendulum_chains_under_tasks_and_costs():
    for n in (2, 4):
        mech = pendulum(n)
        q, v = np.linspace(0.2, 0.9, mech.nq), np.linspace(-0.5, 0.4, mech.nv)
        eqs = EquationSet()
        eqs.add_equation("first joint", acc(JointAngle(mech, mech.model.names[1])) + 4.0 * vel(
            JointAngle(mech, mech.model.names[1])) == 0.0)
        eqs.add_cost("torques", ControlTorques(mech), np.linspace(1.0, 2.0, mech.ntau))
        _agree(mech, eqs, 0.0, q, v, f"{n}-link chain")
        lean = EquationSet()
        lean.assign("torques", ControlTorques(mech), np.linspace(-1.0, 1.0, mech.ntau))
        _agree(mech, lean, 0.0, q, v, f"{n}-link chain, torques given")


def test_plan_agrees_with_the_reference_on_talos_with_its_feet_welded():
    from bench.step_cost import cases
    from controlkit.constraints import WeldConstraint
    mech = robots.load("talos")
    q = mech.neutral()
    v = np.random.default_rng(1).standard_normal(mech.nv) * 0.1
    for name, eqs, _, feet in cases(mech):
        mech.set_state(q, np.zeros(mech.nv), check=False)
        for f in feet:
            mech.add_constraint(WeldConstraint(f"weld {f}", f))
        try:
            _agree(mech, eqs, 0.0, q, v, f"talos, {name}")
        finally:
            for f in feet:
                mech.remove_constraint(f"weld {f}")


def test_plan_agrees_with_the_reference_on_closed_loops():
    for built in (robots.four_bar(), robots.four_bar(actuated=True)):
        mech = built.mechanism
        eqs = EquationSet()
        if built.mechanism.ntau:
            eqs.add_equation("crank", acc(JointAngle(mech, "hinge_1")) == 0.3)
        _agree(mech, eqs, 0.0, built.q0, np.zeros(mech.nv), "four-bar")


def test_simulator_refuses_an_unknown_evaluation_path_by_name():
    from controlkit.errors import ArgumentError
    from sim.simulator import Simulator
    mech = pendulum(2)
    with pytest.raises(ArgumentError, match="evaluation must be 'plan' or 'reference'"):
        Simulator(mech, evaluation="fast")


def test_delassus_kernel_agrees_with_numpy_and_declines_dependent_rows():
    """The projection's compiled correction M^-1 J^T (J M^-1 J^T)^-1 r against NumPy's solve, and a
    repeated constraint row (a singular Delassus matrix) handed back to the reference."""
    from controlkit.solve_kernel import delassus_kernel
    from sim.stabilization import DELASSUS_COND_MAX
    rng = np.random.default_rng(7)
    B = rng.standard_normal((9, 9))
    Mi = np.linalg.inv(B @ B.T + 9.0 * np.eye(9))  # a mass matrix's inverse: symmetric positive definite
    J = rng.standard_normal((4, 9))
    r = rng.standard_normal(4)
    ok, x = delassus_kernel(Mi, J, r, 1e-10, DELASSUS_COND_MAX)
    assert ok
    _close(Mi @ J.T @ np.linalg.solve(J @ Mi @ J.T, r), x, "Delassus correction")
    ok, _ = delassus_kernel(Mi, np.vstack([J, J[1]]), np.append(r, r[1]), 1e-10, DELASSUS_COND_MAX)
    assert not ok
