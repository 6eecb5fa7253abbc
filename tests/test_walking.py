"""The walking program of thesis Fig. 6.7-6.9 on the 16-DOF biped.

``controllers/walking.py`` is the program, ``examples/walking.py`` the scenario and its
acceptance figures. The 20 s acceptance run is the benchmark's (``bench/walking.py``);
here 4 s from standing (six steps) check the same criteria, the phase order of Fig. 6.9,
the swing-phase equations of Fig. 6.4, the heel targets of Fig. 6.7 and the cost's and
knee heading's Jacobians and drifts against finite differences.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import robots
from controllers import walking as W
from sim.runner import load_script

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "walking.py"
SECONDS = 4.0


@pytest.fixture(scope="module")
def example():
    return load_script(EXAMPLE)


@pytest.fixture(scope="module")
def walked(example):
    """4 s of walking from standing, and the statements in force at t = 0.25 s (first swing)."""
    scn = example.build()
    seen = {}

    def look(sim):
        if not seen and sim.t >= 0.25:
            seen.update(equations=set(sim.equations.equations), constraints=set(sim.mech.constraints),
                        costs=set(sim.equations.costs))

    scn.sim.control_phase.append(look)
    rec = scn.sim.run(SECONDS)
    return scn, rec, example.walking_statistics(rec), seen


def _strikes(rec):
    return [e for e in rec.events if e.kind == "control" and e.description.endswith("heel strike")]


# ------------------------------------------------------------------ acceptance
def test_four_seconds_of_walking_from_standing_meet_the_acceptance_criteria(walked):
    _, rec, s, _ = walked
    assert s["simulated_time"] == pytest.approx(SECONDS)  # the run completed, no solver error
    assert s["fallbacks"] == 0
    assert s["steps"] >= 6
    assert s["max_strike_error"] < 0.02
    assert s["heading_drift_deg"] < 5.0
    assert s["torso_height_spread"] < 0.05
    assert s["max_constraint_error"] < 1e-6
    assert s["max_constraint_rate_error"] < 1e-6
    assert np.all(np.isfinite(rec.tau))


def test_the_phases_follow_fig_6_9_right_and_left_in_turn(walked):
    _, rec, _, _ = walked
    labels = [e.description.split("until(")[1].rsplit(") became true", 1)[0]
              for e in rec.events if e.kind == "control" and e.description.endswith("became true")]
    cycle = {"r": ["foot_r.heel near target", "foot_r.heel touched", "foot_r flat", "toe_joint_l lifted"],
             "l": ["foot_l.heel near target", "foot_l.heel touched", "foot_l flat", "toe_joint_r lifted"]}
    expected = []
    while len(expected) < len(labels):
        expected += cycle["r"] + cycle["l"]
    assert len(labels) >= 20
    assert labels == expected[:len(labels)]


def test_the_swing_phase_holds_the_equations_of_fig_6_4(walked):
    _, _, _, seen = walked
    fig_6_4 = {"torso-constraint", "l-knee-angle", "r-heel-traj", "r-foot-orientation", "r-toe-angle"}
    assert seen["equations"] == fig_6_4 | {"l-knee-forward", "r-knee-forward"}  # + note 8
    assert seen["constraints"] == {"l-shoe", "l-toe-shoe"}  # the stance foot's magnetic shoe
    assert seen["costs"] == {"body accelerations", "torso centring"}  # Fig. 6.8


def test_heel_targets_are_a_stride_past_the_other_heel_and_inside_the_hip_line(walked):
    _, rec, _, _ = walked
    strikes = _strikes(rec)
    built = robots.biped()
    mech = built.mechanism
    mech.set_state(built.q0)
    hips = [mech.kinematics().oMf[mech.frame_id(f"torso.hip_{s}")].translation for s in "lr"]
    hip_width = float(np.linalg.norm(hips[0] - hips[1]))
    for before, after in zip(strikes, strikes[1:]):
        target, other_heel = np.array(after.data["target"]), np.array(before.data["heel"])
        assert target[0] - other_heel[0] == pytest.approx(W.THESIS_GAIT.stride, abs=1e-9)
        assert target[2] == 0.0
        sideways = abs(target[1] - other_heel[1])
        assert sideways == pytest.approx((1 - W.THESIS_GAIT.inside_step_fraction) * hip_width, abs=2e-3)
        assert after.data["foot"] != before.data["foot"]


def test_every_landed_foot_is_gripped_at_the_heel_then_welded_flat(walked):
    _, rec, _, _ = walked
    for strike in _strikes(rec):
        side = strike.data["foot"][-1]
        added = [e for e in rec.events_of("constraint_added") if e.time >= strike.time - 1e-12]
        names = [e.data["constraint"] for e in added]
        assert names[:3] == [f"{side}-toe-shoe", f"{side}-shoe", f"{side}-heel-pin"]
        later_shoe = [e for e in added[3:] if e.data["constraint"] == f"{side}-shoe"]
        if later_shoe:  # welded flat, before the next heel strike
            assert later_shoe[0].time - strike.time < 0.3


def test_the_knees_stay_bent_forward_and_the_heels_stay_on_or_above_the_floor(walked):
    _, rec, _, _ = walked
    knees = rec.quantity("knee angles")
    assert knees.min() > 0.02  # never straight, never folded backwards
    for name in ("left heel", "right heel"):
        assert rec.quantity(name)[:, 2].min() > -0.004  # m: the take-off dip of note 10


def test_walking_a_given_number_of_steps_ends_standing_on_both_feet(example):
    scn = example.build(steps=2)
    rec = scn.sim.run(2.5)
    sim, mech = scn.sim, scn.sim.mech
    assert len(_strikes(rec)) == 2
    assert sim.programs.programs["walk"].done
    assert set(mech.constraints) == {"l-shoe", "l-toe-shoe", "r-shoe", "r-toe-shoe"}
    mech.set_state(sim.q, sim.v)
    assert mech.kinetic_energy() < 0.05  # J: settling between the feet


# ------------------------------------------------------------------ quantities vs finite differences
def _state(seed):
    mech = robots.biped().mechanism
    rng = np.random.default_rng(seed)
    q = pin.integrate(mech.model, robots.biped().q0, 0.3 * rng.standard_normal(mech.nv))
    v = rng.standard_normal(mech.nv)
    return mech, q, v


def _along(mech, quantity_fn, q, v, eps):
    """quantity_fn at q (+) t v for t = -eps, 0, +eps (the path of constant v, a = 0)."""
    out = []
    for t in (-eps, 0.0, eps):
        mech.set_state(pin.integrate(mech.model, q, t * v), v)
        out.append(quantity_fn())
    mech.set_state(q, v)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_knee_heading_value_rate_jacobian_and_drift_match_finite_differences(seed):
    mech, q, v = _state(seed)
    k = W.KneeHeading(mech, "thigh_l")
    mech.set_state(q, v)
    J, drift, rate = k.jacobian(mech).copy(), k.drift(mech).copy(), k.velocity(mech).copy()
    eps = 1e-6
    cm, _, cp = _along(mech, lambda: k.position(mech).copy(), q, v, eps)
    assert rate == pytest.approx(J @ v, abs=1e-12)
    assert rate == pytest.approx((cp - cm) / (2 * eps), abs=1e-6)
    rm, _, rp = _along(mech, lambda: k.velocity(mech).copy(), q, v, eps)
    assert drift == pytest.approx((rp - rm) / (2 * eps), abs=1e-5 * (1 + np.abs(drift).max()))


@pytest.mark.parametrize("seed", [0, 1])
def test_body_accelerations_jacobian_and_drift_match_finite_differences(seed):
    mech, q, v = _state(seed)
    b = W.BodyAccelerations(mech, W.BODIES)
    mech.set_state(q, v)
    J, drift = b.jacobian(mech).copy(), b.drift(mech).copy()
    eps = 1e-6
    pm, _, pp = _along(mech, lambda: [mech.kinematics().oMf[f].copy() for f in b.fids], q, v, eps)
    fd = np.concatenate([np.concatenate([(Mp.translation - Mm.translation) / (2 * eps),
                                         pin.log3(Mp.rotation @ Mm.rotation.T) / (2 * eps)])
                         for Mm, Mp in zip(pm, pp)])
    assert J @ v == pytest.approx(fd, abs=1e-6 * (1 + np.abs(fd).max()))
    vm, _, vp = _along(mech, lambda: b.jacobian(mech) @ v, q, v, eps)
    assert drift == pytest.approx((vp - vm) / (2 * eps), abs=1e-5 * (1 + np.abs(drift).max()))


# ------------------------------------------------------------------ the demo
def test_the_walking_demo_runs_from_the_command_line_with_replay_and_plot(tmp_path):
    html, png = tmp_path / "walking.html", tmp_path / "walking.png"
    p = subprocess.run([str(Path(sys.executable).with_name("controlkit")), "demo", "walking", "--seconds", "0.6",
                        "--html", str(html), "--plot", str(png)], capture_output=True, text=True, cwd=tmp_path,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert "steps (heel strikes)" in p.stdout and "real-time factor" in p.stdout
    assert html.stat().st_size > 10_000 and png.stat().st_size > 10_000
