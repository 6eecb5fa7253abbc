"""Forward versus inverse dynamic control (sim/compare.py) on the redundant arm's circle."""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pinocchio as pin
import pytest

import robots
from controlkit.errors import UnknownNameError
from sim.compare import TASKS, Reference, compare, format_table, get_task, heavier_model, main


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
    assert {"redundant_arm", "panda_circle", "ur5_circle"} <= set(TASKS)
    with pytest.raises(UnknownNameError, match="redundant_arm"):
        get_task("biped_walk")
    with pytest.raises(SystemExit):
        with contextlib.redirect_stderr(io.StringIO()):
            main(["biped_walk"])
