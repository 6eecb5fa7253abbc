"""The hand of the design study (thesis Fig. 1.1, 7.2): its geometry and the grasp program's phases."""
from __future__ import annotations

import numpy as np
import pytest

from robots.hand import hand


@pytest.mark.parametrize("fingers", [3, 4])
def test_hand_has_three_phalanges_per_finger_and_curls_them_towards_the_axis(fingers):
    built = hand(fingers, "box")
    mech, info = built.mechanism, built.info
    assert mech.nv == 1 + 3 * fingers + 6 and mech.ntau == 1 + 3 * fingers
    mech.set_state(built.q0)
    d = mech.kinematics()
    top = info["object_height"]
    tips = [d.oMf[mech.frame_id(t + ".bottom")].translation.copy() for t in info["tips"]]
    assert min(p[2] for p in tips) > top  # the open hand clears the object
    radii = [np.hypot(p[0], p[1]) for p in tips]
    q = built.q0.copy()
    for js in info["joints"].values():
        q[mech.joint_q_slice(js[0])] = 0.0
    q[mech.joint_q_slice("lift")] = 0.0
    mech.set_state(q)
    d = mech.kinematics()
    straight = [d.oMf[mech.frame_id(t + ".bottom")].translation.copy() for t in info["tips"]]
    # straight fingers with the slider at zero reach the object's mid-height, evenly round it
    assert np.allclose([p[2] for p in straight], top / 2, atol=1e-12)
    az = np.sort(np.mod([np.arctan2(p[1], p[0]) for p in straight], 2 * np.pi))
    assert np.allclose(np.diff(az), 2 * np.pi / fingers, atol=1e-12)
    for js in info["joints"].values():
        q[mech.joint_q_slice(js[0])] = 0.2
    mech.set_state(q)
    d = mech.kinematics()
    curled = [np.hypot(*d.oMf[mech.frame_id(t + ".bottom")].translation[:2]) for t in info["tips"]]
    assert max(curled) < min(np.hypot(p[0], p[1]) for p in straight) < min(radii)


def test_hand_refuses_two_fingers_and_unknown_objects():
    from controlkit.errors import ModelError
    with pytest.raises(ModelError, match="3 or 4"):
        hand(2)
    with pytest.raises(ModelError, match="box, cylinder, sphere"):
        hand(3, "torus")


def test_four_fingers_grasp_and_lift_a_box_closing_on_contact_events():
    from controllers.grasp import grasp_program
    from sim.contact import enable_contacts
    from sim.simulator import Simulator
    built = hand(4, "box")
    sim = Simulator(built.mechanism, built.q0, dt=1e-3, integrator="rk4")
    contacts = enable_contacts(sim, friction=(0.8, 0.6), pairs=built.info["pairs"])
    log: dict = {}
    squeeze, lift = 1.5, 0.05
    sim.add_program(grasp_program(built, contacts, squeeze=squeeze, lift=lift, hold=0.1, approach_time=0.3, log=log),
                    name="grasp")
    mech = built.mechanism
    obj = mech.frame_id("object")
    sim.run(0.31)
    mech.set_state(sim.q)
    z0 = mech.kinematics().oMf[obj].translation[2]
    sim.run(1.6)
    assert "done" in log
    # each finger stopped closing at its own contact event, after the close began
    assert sorted(k for k in log if k.startswith("touch")) == [f"touch {i}" for i in range(4)]
    assert all(log["close"] < log[f"touch {i}"] < log["squeeze"] + 1e-12 for i in range(4))
    mech.set_state(sim.q)
    assert mech.kinematics().oMf[obj].translation[2] - z0 > 0.8 * lift  # held: it rose with the palm
    forces = contacts.pair_forces(sim)
    tips = [f for k, f in forces.items() if "distal" in k]
    assert len(tips) >= 3 and sum(f["normal"] for f in tips) > 0.5 * 4 * squeeze


def test_three_fingers_grasp_and_lift_a_cylinder_on_line_contacts():
    """The cylinder stands on its cap's rim points; the fingertips close on its side (contact
    events), and it rises with the palm held by them."""
    from controllers.grasp import grasp_program
    from sim.contact import contacts_of, enable_contacts
    from sim.simulator import Simulator
    built = hand(3, "cylinder")
    sim = Simulator(built.mechanism, built.q0, dt=1e-3, integrator="rk4")
    contacts = enable_contacts(sim, friction=(0.8, 0.6), pairs=built.info["pairs"])
    (table,) = contacts_of(sim, "object")  # standing on the table, a face of rim points
    assert str(table.region) == "face" and table.normal_force == pytest.approx(0.15 * 9.81, rel=1e-9)
    log: dict = {}
    lift = 0.05
    sim.add_program(grasp_program(built, contacts, squeeze=1.5, lift=lift, hold=0.1, approach_time=0.3, log=log),
                    name="grasp")
    mech = built.mechanism
    obj = mech.frame_id("object")
    mech.set_state(sim.q)
    z0 = mech.kinematics().oMf[obj].translation[2]
    sim.run(1.65)  # (the lift ends at 1.647 s)
    assert "done" in log
    assert sorted(k for k in log if k.startswith("touch")) == [f"touch {i}" for i in range(3)]
    mech.set_state(sim.q)
    assert mech.kinematics().oMf[obj].translation[2] - z0 > 0.95 * lift  # held: it rose with the palm
    tips = [c for c in contacts_of(sim, "object") if "distal" in c.other_geom]
    assert len(tips) == 3 and all(c.normal_force > 0.5 for c in tips)
    # the fingertips touch the side, none sinks into it (their normals are fixed in the phalanges
    # from the touch on: the curl of the squeeze tilts them 1.4 deg, which leaves them 7.8 um off)
    d = contacts.world.distances(sim.q)
    tip_d = [d[k] for k, names in enumerate(contacts.world.names) if "object" in names and "distal" in " ".join(names)]
    assert len(tip_d) == 3 and all(-1e-6 <= x <= 1e-5 for x in tip_d)


def test_four_fingers_hold_the_box_through_a_squeeze_whose_rows_turn_inconsistent():
    """The hand study's own grasp (squeeze 1.5 N, 8 cm lift): during the squeeze the box rocks on the
    table and, after a stick's velocity projection, its nearly dependent support rows disagree
    (at 1.209 s): a support point gives way instead of the run stopping, and the four fingers hold it."""
    from pathlib import Path

    from sim.runner import load_script
    study = load_script(Path(__file__).resolve().parents[1] / "examples" / "hand_study.py")
    sim, built, log = study.simulate(4, "box")
    rec = sim.run(study.DURATION)
    o = study.outcome(rec, built, log)
    assert o["held"] and o["rise_mm"] > 0.9 * 1e3 * study.LIFT and o["slip_mm"] < 1.0
