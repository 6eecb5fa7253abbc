"""Talos (example-robot-data) walks through the thesis biped's walking code: ``examples/talos_walk.py``.

The description (:func:`controllers.biped_model.talos_biped`) is a few names; mass, leg length,
soles and torque limits come from the model. The 20 s acceptance walk is in bench/walking.py
(``--robot talos``); here the weight shift and the first step (2.5 s).
"""
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from controlkit.errors import ModelError
from controllers.biped_model import Biped, talos_biped
from robots.talos import talos
from sim.runner import load_script

T = 2.5  # s: lift-off at 1.2 s, heel strike near 1.8 s, the load moved over by 2.2 s
EXAMPLE = load_script(Path(__file__).resolve().parents[1] / "examples" / "talos_walk.py")


def test_the_talos_description_is_read_from_its_urdf():
    """Mass (the links' 90.27 kg), the URDF's effort limits per joint, the sole rectangle and depth
    from the sole boxes, hips from the legs' first joints; q0 stands both soles on z = 0."""
    built = talos(with_ground=True)
    mech = built.mechanism
    assert (mech.nq, mech.nv) == (39, 38)
    b = talos_biped(mech)
    assert b.mass == pytest.approx(sum(i.mass for i in list(mech.model.inertias)[1:]), rel=1e-12)
    assert b.mass == pytest.approx(90.27, abs=0.01)
    np.testing.assert_array_equal(b.torque_limits, mech.model.effortLimit[6:])
    assert b.torque_limits.min() == 1.0 and b.torque_limits.max() == 300.0  # grippers, knees (N m)
    f = b.feet["l"]
    assert (f.frame, f.geom, f.half_length, f.half_width, f.depth) == ("left_sole_link", "left_sole", 0.1, 0.065, 0.0)
    assert f.hip == "leg_left_1_link"
    # the soles' corners lie on the ground at q0
    data = mech.model.createData()
    pin.framesForwardKinematics(mech.model, data, built.q0)
    z = [((M.rotation @ b.feet[s].corners).T + M.translation)[:, 2]
         for s in "lr" for M in [data.oMf[mech.model.getFrameId(b.feet[s].frame)]]]
    assert min(map(np.min, z)) == pytest.approx(0.0, abs=1e-12) and max(map(np.max, z)) < 1e-12
    # leg length: hip joint to sole with straight legs, within Talos' published 0.8 m class
    assert 0.75 < b.leg_length < 0.9


def test_a_humanoid_without_sole_boxes_is_refused_naming_what_to_add():
    """The URDF's own collision model has meshes, not sole boxes: the description says so."""
    import robots
    mech = robots.load("talos")
    with pytest.raises(ModelError, match="left_sole"):
        talos_biped(mech)
    with pytest.raises(ModelError, match="no sole frame 'left_foot'"):
        Biped.from_model(talos().mechanism, soles={"l": "left_foot", "r": "right_sole_link"}, torso="base_link",
                         legs={"l": [], "r": []})


@pytest.fixture(scope="module")
def first_step():
    scn = EXAMPLE.build(steps=2)
    scn.info["servo"].torque_log = []
    rec = scn.sim.run(T)
    return scn, rec, EXAMPLE.walking_statistics(rec)


def test_talos_shifts_its_weight_and_takes_a_step_on_real_contact(first_step):
    """Lift-off at 1.2 s, heel strike near 1.8 s: an impact and a contact made, the heel within
    1 cm of its target, no standing foot sliding 1 mm, base height and attitude steady."""
    scn, rec, s = first_step
    assert not any(name.startswith(("weld", "stance")) for name in scn.sim.mech.constraints)  # no welds
    assert s["steps"] >= 1 and not s["fell"]
    assert s["strike_impacts"] == s["steps"] and s["strike_contacts"] == s["steps"]
    assert s["max_strike_error"] < 0.01
    assert s["max_stance_slip"] < 1e-3
    assert s["torso_height_spread"] < 0.05 and s["max_roll_deg"] < 5.0 and s["max_pitch_deg"] < 5.0
    x = rec.quantity("torso position")[:, 0]
    assert x[-1] - x[0] > 0.05  # m: the base moved forward with the step


def test_the_servos_torques_stay_within_the_urdfs_effort_limits_at_every_tick(first_step):
    scn, _, _ = first_step
    tau = np.array([t for _, t in scn.info["servo"].torque_log])
    limits = scn.info["biped"].torque_limits
    assert len(tau) >= 1000 * T - 1
    assert (np.abs(tau) <= limits + 1e-9).all()
    assert (np.abs(tau) / limits).max() > 0.2  # (they are used: a check that could fail)


# ------------------------------------------------------------------ robustness (the same 2.5 s as above)
_CASES = {"heavier model": dict(mass_error=0.1), "lateral push": dict(push=(1.45, 0.1, 40.0)),
          "friction 0.5": dict(friction=0.5), "turning": dict(turn=0.1745)}


@pytest.fixture(scope="module")
def variants():
    out = {}

    def run(case):
        if case not in out:
            scn = EXAMPLE.build(steps=2, **_CASES[case])
            scn.info["servo"].torque_log = []
            rec = scn.sim.run(T)
            out[case] = (scn, rec, EXAMPLE.walking_statistics(rec))
        return out[case]
    return run


@pytest.mark.parametrize("case", ["heavier model", "lateral push", "friction 0.5"])
def test_talos_keeps_walking_with_a_wrong_model_a_push_or_less_friction(variants, case):
    """The controller's model 10% heavier in every link; a 40 N sideways push on the base for 0.1 s
    in mid-stance (the first swing: 1.2 to 1.8 s); the ground's friction 0.5 while the servo counts on
    0.8. The step lands on target, nothing slides 1 cm, the base stays level, the torques within
    the URDF's limits."""
    scn, rec, s = variants(case)
    assert s["steps"] >= 1 and not s["fell"]
    assert s["strike_impacts"] == s["steps"] and s["max_strike_error"] < 0.01
    assert s["max_stance_slip"] < 0.01
    assert s["torso_height_spread"] < 0.05 and s["max_roll_deg"] < 5.0 and s["max_pitch_deg"] < 5.0
    tau = np.array([t for _, t in scn.info["servo"].torque_log])
    assert (np.abs(tau) <= scn.info["biped"].torque_limits + 1e-9).all()


def test_the_push_moves_the_base_sideways_and_the_walk_brings_it_back(first_step, variants):
    """4 N s on 90 kg: the base's sideways velocity jumps by about 4 cm/s against the unpushed walk,
    then the centre-of-mass task pulls it back onto its path within a few centimetres."""
    _, ref, _ = first_step
    _, pushed, _ = variants("lateral push")
    t = np.arange(1.40, T, 0.01)  # (the two recordings hold their events' instants too)
    dy = (np.interp(t, pushed.t, pushed.quantity("torso position")[:, 1])
          - np.interp(t, ref.t, ref.quantity("torso position")[:, 1]))
    i0, i1 = np.searchsorted(t, 1.44), np.searchsorted(t, 1.56)
    dv = (dy[i1] - dy[i1 - 1] - (dy[i0] - dy[i0 - 1])) / 0.01
    assert 0.02 < dv < 0.06  # m/s (impulse / mass: 0.044)
    assert abs(dy).max() < 0.05 and abs(dy[-1]) < abs(dy).max()


def test_talos_turns_each_step_by_the_gaits_turn(variants):
    """10 deg per step: the base's yaw follows the plan's heading within a degree (it turns to 10 deg
    from the first lift-off to the end of its double support), the foot lands on its turned target."""
    scn, rec, s = variants("turning")
    assert s["steps"] == 1 and s["max_strike_error"] < 0.01 and s["max_stance_slip"] < 0.01
    plan = scn.info["plan"]
    assert [st.heading for st in plan.steps] == pytest.approx([0.1745, 2 * 0.1745])
    yaw = np.degrees(rec.quantity("torso roll pitch yaw")[:, 2])
    want = np.degrees([plan.heading(t) for t in rec.t])
    assert np.abs(yaw - want).max() < 1.0 and want[-1] > 9.9
