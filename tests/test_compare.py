"""Forward versus inverse dynamic control (controlkit/studies/compare.py) on the redundant arm's circle and the biped's stance."""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pinocchio as pin
import pytest

import robots
from controlkit.constraints import JointLock, WeldConstraint
from controlkit.errors import ControlkitError, UnknownNameError
from controlkit.quantities import ControlTorques
from controlkit.studies.compare import (
    TASKS,
    Reference,
    SwayPath,
    Task,
    biped_stance_setup,
    compare,
    format_table,
    get_task,
    heavier_model,
    main,
)
from controllers.forward import constraint_rows, projected_torques
from sim.simulator import Simulator


@pytest.fixture(scope="module")
def comparison(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rows = compare("redundant_arm", out=out)
    return rows, buf.getvalue(), out


def _by_label(rows):
    return {r.label: r for r in rows}


def test_inverse_dynamic_control_tracks_the_path_exactly(comparison):
    rows, _, _ = comparison
    assert rows[0].mode == "inverse"
    assert rows[0].max_error < 1e-8


def test_computed_torque_error_grows_as_the_controller_clock_slows(comparison):
    r = _by_label(comparison[0])
    e1k, e250, e100 = (r[f"computed torque {f} Hz"].max_error for f in ("1000", "250", "100"))
    assert e1k < e250 < e100
    assert r["computed torque 1000 Hz"].rms_error < r["computed torque 250 Hz"].rms_error \
        < r["computed torque 100 Hz"].rms_error


def test_a_heavier_controller_model_tracks_worse_than_the_exact_one(comparison):
    r = _by_label(comparison[0])
    assert r["computed torque 1000 Hz, +10% mass"].max_error > r["computed torque 1000 Hz"].max_error


def test_joint_pd_with_gravity_compensation_has_the_largest_error(comparison):
    rows = comparison[0]
    pd = [r for r in rows if r.mode == "joint PD"]
    assert len(pd) == 1
    assert all(pd[0].max_error > r.max_error and pd[0].rms_error > r.rms_error for r in rows if r is not pd[0])


def test_every_run_reports_torque_energy_and_solve_time(comparison):
    for r in comparison[0]:
        assert r.peak_torque > 0 and r.energy > 0 and r.solve_time > 0
        assert r.recording.t[-1] == pytest.approx(3.0)
    # the same motion costs about the same energy when it is tracked closely
    e = [r.energy for r in comparison[0] if r.mode in ("inverse", "computed torque")]
    assert max(e) / min(e) < 1.05


def test_one_call_prints_the_table_and_writes_the_overlay_plot(comparison):
    rows, printed, out = comparison
    assert printed.startswith("compare redundant_arm")
    for r in rows:
        assert r.label in printed
    for column in ("RMS error [m]", "max error [m]", "peak |tau| [N m]", "energy [J]", "solve/tick [us]"):
        assert column in printed
    plot = out / "compare_redundant_arm.png"
    assert plot.is_file() and plot.stat().st_size > 10_000
    assert format_table(rows, "redundant_arm") in printed


def test_reference_interpolates_its_samples_and_their_derivatives():
    t = np.linspace(0.0, 1.0, 201)
    q, v, a = np.sin(3 * t)[:, None], 3 * np.cos(3 * t)[:, None], -9 * np.sin(3 * t)[:, None]
    t2 = np.concatenate([t, [1.0]])  # a repeated last sample (an event) is dropped
    ref = Reference(t2, np.vstack([q, q[-1:]]), np.vstack([v, v[-1:]]), np.vstack([a, a[-1:]]))
    for s in (0.1234, 0.5, 0.987):
        assert ref.q_des(s)[0] == pytest.approx(np.sin(3 * s), abs=1e-9)
        assert ref.v_des(s)[0] == pytest.approx(3 * np.cos(3 * s), abs=1e-7)
        assert ref.a_des(s)[0] == pytest.approx(-9 * np.sin(3 * s), abs=1e-3)
    assert ref.q_des(2.0)[0] == pytest.approx(np.sin(3.0))  # held at the end


def test_heavier_model_scales_one_links_mass_and_inertia_and_leaves_the_original():
    model = robots.redundant_arm().mechanism.model
    heavy = heavier_model(model, ["joint_5"], 0.1)
    j = model.getJointId("joint_5")
    assert heavy.inertias[j].mass == pytest.approx(1.1 * model.inertias[j].mass)
    assert np.allclose(heavy.inertias[j].inertia, 1.1 * model.inertias[j].inertia)
    assert np.allclose(heavy.inertias[j].lever, model.inertias[j].lever)
    assert heavy.inertias[j - 1].mass == model.inertias[j - 1].mass
    q = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    g0 = pin.computeGeneralizedGravity(model, model.createData(), q)
    g1 = pin.computeGeneralizedGravity(heavy, heavy.createData(), q)
    assert np.abs(g1 - g0).max() > 0.1


def test_tasks_are_registered_by_name_and_unknown_names_are_listed():
    assert {"redundant_arm", "panda_circle", "ur5_circle", "biped_stance"} <= set(TASKS)
    with pytest.raises(UnknownNameError, match="redundant_arm"):
        get_task("biped_walk")
    with pytest.raises(SystemExit):
        with contextlib.redirect_stderr(io.StringIO()):
            main(["biped_walk"])


# ------------------------------------------------------------ the biped standing on welded feet
#: a short, small sway (m) so the six runs take a few seconds; mode 1 at the forward runs' 1 ms step
BIPED_TEST = dict(dt=1e-3, sway=0.005, squat=0.01)
BIPED_SECONDS = 0.2


@pytest.fixture(scope="module")
def biped_comparison():
    task = Task("biped_stance", "biped stance, short sway",
                lambda duration=None: biped_stance_setup(duration, **BIPED_TEST))
    with contextlib.redirect_stdout(io.StringIO()):
        return compare(task, duration=BIPED_SECONDS)


def test_biped_stance_is_registered_and_its_torso_sways_and_dips_on_welded_feet(biped_comparison):
    assert "biped_stance" in TASKS and get_task("biped_stance").build is biped_stance_setup
    rec = biped_comparison[0].recording
    P = rec.quantity("tool")
    assert np.ptp(P[:, 1]) == pytest.approx(2 * 0.005, rel=1e-3)   # sideways, m
    assert P[0, 2] - P[:, 2].min() == pytest.approx(0.01, rel=1e-3)  # down, m
    assert np.allclose(P[-1], P[0], atol=1e-8)                      # and back at rest
    mech = robots.biped().mechanism
    feet = [mech.frame_id(f) for f in ("foot_l", "foot_r")]

    def soles(q):
        mech.set_state(q)
        return np.concatenate([mech.frame_placement(f).homogeneous.ravel() for f in feet])

    for r in biped_comparison:  # every mode keeps the feet where they stood
        q = r.recording.q
        start = soles(q[0])
        assert max(np.abs(soles(q[k]) - start).max() for k in range(0, len(q), 20)) < 1e-7, r.label


def test_biped_stance_inverse_dynamic_control_tracks_the_torso_path_exactly(biped_comparison):
    assert biped_comparison[0].mode == "inverse"
    assert biped_comparison[0].max_error < 1e-8


def test_biped_stance_computed_torque_error_grows_as_the_controller_clock_slows(biped_comparison):
    r = _by_label(biped_comparison)
    e = [r[f"computed torque {f} Hz"] for f in ("1000", "250", "100")]
    assert e[0].max_error < e[1].max_error < e[2].max_error
    assert e[0].rms_error < e[1].rms_error < e[2].rms_error
    assert e[0].max_error > 1e3 * biped_comparison[0].max_error  # held torques, not the integrator


def test_biped_stance_heavier_torso_model_tracks_worse_than_the_exact_one(biped_comparison):
    r = _by_label(biped_comparison)
    assert r["computed torque 1000 Hz, +10% mass"].max_error > r["computed torque 1000 Hz"].max_error


def test_biped_stance_joint_pd_with_gravity_compensation_has_the_largest_error(biped_comparison):
    pd = [r for r in biped_comparison if r.mode == "joint PD"]
    assert len(pd) == 1
    assert all(pd[0].max_error > r.max_error and pd[0].rms_error > r.rms_error
               for r in biped_comparison if r is not pd[0])


def test_projected_gravity_torques_hold_the_biped_still_on_welded_feet():
    built = robots.biped()
    mech = built.mechanism
    sim = Simulator(mech, built.q0, dt=1e-3)
    for side in ("l", "r"):
        sim.add_constraint(WeldConstraint(f"{side}-shoe", f"foot_{side}"), impulsive=False)
        sim.add_constraint(JointLock(f"{side}-toe", f"toe_joint_{side}"), impulsive=False)
    mech.set_state(built.q0)
    g = pin.computeGeneralizedGravity(mech.model, mech.model.createData(), built.q0)
    tau = projected_torques(mech, g, constraint_rows(mech)[0])
    assert tau.shape == (mech.ntau,) and np.abs(tau).max() > 1.0  # N m: the legs carry the body

    def hold(ctl):
        ctl.assign("gravity", ControlTorques(ctl.mech), tau)
        yield

    sim.add_program(hold)
    sim.solve_now()
    assert np.abs(mech.solution.a).max() < 1e-9  # the constrained forward dynamics: at rest


def test_projected_torques_refuse_a_biped_with_no_support():
    built = robots.biped()
    mech = built.mechanism
    mech.set_state(built.q0)
    g = pin.computeGeneralizedGravity(mech.model, mech.model.createData(), built.q0)
    with pytest.raises(ControlkitError, match="cannot balance"):
        projected_torques(mech, g, constraint_rows(mech)[0])


def test_sway_path_velocity_and_acceleration_are_the_derivatives_of_its_position():
    p0 = np.array([0.0, 0.0, 1.2])
    path = SwayPath(p0, t0=0.1, duration=1.5, sway=0.03, squat=0.04)
    h = 1e-6
    for t in (0.3, 0.85, 1.4):
        assert np.allclose((path(t + h)[0] - path(t - h)[0]) / (2 * h), path(t)[1], atol=1e-7)
        assert np.allclose((path(t + h)[1] - path(t - h)[1]) / (2 * h), path(t)[2], atol=1e-5)
    mid = path(0.1 + 0.75)[0]  # half way: back in the middle sideways, at the bottom of the dip
    assert mid == pytest.approx(p0 + [0.0, 0.0, -0.04], abs=1e-12)
    for t in (0.0, 1.6, 5.0):
        p, v, a = path(t)
        assert np.allclose(p, p0) and np.allclose(v, 0.0) and np.allclose(a, 0.0)


def test_reference_interpolates_a_free_flyer_on_its_configuration_group():
    mech = robots.biped().mechanism
    model = mech.model
    q0 = robots.biped().q0
    w = np.zeros(mech.nv)
    w[:6] = [0.2, -0.1, 0.3, 0.8, -0.5, 1.1]  # a constant twist of the torso (m/s, rad/s)
    w[6:9] = [0.4, 0.0, -0.3]                  # and of the left hip
    t = np.linspace(0.0, 1.0, 101)
    q = np.array([pin.integrate(model, q0, s * w) for s in t])
    ref = Reference(t, q, np.tile(w, (t.size, 1)), np.zeros((t.size, mech.nv)), model=model)
    for s in (0.1234, 0.5, 0.987):
        assert np.abs(pin.difference(model, pin.integrate(model, q0, s * w), ref.q_des(s))).max() < 1e-8
        assert np.allclose(ref.v_des(s), w) and np.allclose(ref.a_des(s), 0.0)
    assert np.linalg.norm(ref.q_des(0.5)[3:7]) == pytest.approx(1.0)  # a unit quaternion
