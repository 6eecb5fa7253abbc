"""Seed mechanisms through the whole loop: energy, convergence, loop closures, critical forms, printout."""
import numpy as np
import pytest

import robots
from controlkit.dynamics import evaluate
from controlkit.equations import EquationSet, build_problem
from controlkit.printing import format_equations
from controlkit.solver import solve
from sim.simulator import Simulator


def _energy_drift(mech, rec):
    E, K = [], []
    for q, v in zip(rec.q, rec.v):
        mech.set_state(q, v)
        K.append(mech.kinetic_energy())
        E.append(K[-1] + mech.potential_energy())
    E = np.array(E)
    return np.abs(E - E[0]).max() / max(K)  # relative to the peak kinetic energy


def test_free_five_link_chain_conserves_energy_with_the_adaptive_integrator():
    chain = robots.pendulum_chain(5)
    sim = Simulator(chain.mechanism, chain.q0, chain.v0, dt=1e-3, integrator="dopri5", rtol=1e-10, atol=1e-12)
    rec = sim.run(10.0)
    assert _energy_drift(chain.mechanism, rec) < 1e-8


def test_thesis_pendulum_on_spherical_hinges_conserves_energy():
    pend = robots.thesis_pendulum()
    sim = Simulator(pend.mechanism, pend.q0, pend.v0, dt=1e-3, integrator="dopri5", rtol=1e-10, atol=1e-12)
    rec = sim.run(3.0)
    assert _energy_drift(pend.mechanism, rec) < 1e-8


def test_rk4_shows_fourth_order_convergence_on_the_chain():
    chain = robots.pendulum_chain(5)
    mech = chain.mechanism
    ref = Simulator(mech, chain.q0, chain.v0, dt=1e-3, integrator="dopri5", rtol=1e-13, atol=1e-14).run(1.0)
    errors = []
    for h in (0.02, 0.01, 0.005):
        rec = Simulator(mech, chain.q0, chain.v0, dt=h, integrator="rk4").run(1.0)
        errors.append(np.abs(mech.difference(rec.q[-1], ref.q[-1])).max())
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    assert all(12 <= r <= 20 for r in ratios), ratios


@pytest.fixture(scope="module")
def four_bar():
    return robots.four_bar()


@pytest.mark.parametrize("project, bound", [(True, 1e-8), (False, 1e-4)])
def test_four_bar_keeps_its_loop_closed_for_ten_seconds(four_bar, project, bound):
    mech = four_bar.mechanism
    sim = Simulator(mech, four_bar.q0, four_bar.v0, dt=2e-3, integrator="rk4", project=project)
    rec = sim.run(10.0)
    closure = mech.constraints[four_bar.info["loop_closure"]]
    worst = 0.0
    for q, v in zip(rec.q, rec.v):
        mech.set_state(q, v)
        worst = max(worst, np.abs(closure.error()).max())
    assert worst < bound
    assert np.ptp(rec.q[:, 0]) > 0.5  # it really moved


def test_four_bar_motion_is_unique_and_its_redundant_forces_are_reported(four_bar):
    mech = four_bar.mechanism
    sol = evaluate(mech, EquationSet(), 0.0, four_bar.q0, four_bar.v0)
    qp = solve(build_problem(mech, EquationSet(), 0.0), method="qp")
    assert np.abs(sol.a - qp.a).max() < 1e-9 * max(1.0, np.abs(sol.a).max())
    assert sol.free == 3  # 3 of the pin hinge's 5 closure rows are dependent in the plane (thesis 4.6)
    assert set(sol.indeterminate) == {"hinge_4.y", "hinge_4.axis_x", "hinge_4.axis_y"}


def test_critical_form_stays_rigid_under_load():
    form = robots.critical_form()
    mech = form.mechanism
    sim = Simulator(mech, form.q0, form.v0, dt=1e-3, integrator="rk4")
    rec = sim.run(1.0)
    assert np.all(np.isfinite(rec.q)) and np.all(np.isfinite(rec.v))
    assert np.abs(mech.difference(rec.q[0], rec.q[-1])).max() < 1e-10
    assert np.abs(rec.v).max() < 1e-10
    assert "critical form" in mech.solution.lam  # the second-order analysis found the locked motions


def test_without_the_second_order_analysis_the_critical_form_collapses():
    form = robots.critical_form()
    sim = Simulator(form.mechanism, form.q0, form.v0, dt=1e-3, integrator="rk4")
    sim.equations.critical_forms = False
    with pytest.raises(Exception) as info:  # the thesis: "inconsistently singular on the next step"
        sim.run(1.0)
    assert "inconsistent" in str(info.value)


def test_equation_printout_of_the_thesis_pendulum_names_bodies_and_hinges():
    pend = robots.thesis_pendulum()
    text = format_equations(pend.mechanism)
    for body in ("pendulum.l1", "pendulum.l2", "pendulum.l3", "pendulum.ball"):
        assert f"Body {body}" in text
    assert "Body pendulum.l0  [fixed in the world" in text
    for hinge in ("pendulum.j1", "pendulum.j2", "pendulum.j3", "pendulum.j4"):
        assert f"Hinge {hinge} (ball-and-socket" in text
    assert "M[pendulum.j2,:] a + h[pendulum.j2]" in text


def test_equation_printout_lists_loop_closure_rows_and_control_statements(four_bar):
    from controlkit.expressions import acc
    from controlkit.quantities import JointAngle
    eqs = EquationSet()
    eqs.add_equation("crank pd", acc(JointAngle(four_bar.mechanism, "hinge_1")) == 0.0)
    text = format_equations(four_bar.mechanism, eqs)
    assert "Hinge hinge_4 (pin hinge_4" in text
    assert "hinge_4.axis_x" in text and "J_hinge_4 a + Jdot_hinge_4 v" in text
    assert "CONTROL EQUATIONS" in text and "crank pd: acc(hinge_1) = 0" in text
