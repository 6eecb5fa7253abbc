"""The tailed biped of seed 001 (Fig. 1): the design study of foot strikes with the tail down."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from robots.tailed_biped import TIP_RADIUS, stance_pose, tailed_biped
from sim.runner import load_script

EX = load_script(Path(__file__).resolve().parents[1] / "examples" / "tailed_biped.py")


@pytest.mark.parametrize("leg,tail", [(0.0, 0.0), (0.3, 0.6), (-0.4, 0.2)])
def test_stance_pose_puts_foot_and_tail_tip_on_the_ground(leg, tail):
    mech = tailed_biped()
    m, d = mech.model, mech.model.createData()
    q = stance_pose(leg, tail)
    assert q[5] == leg and q[7] == tail
    pin.framesForwardKinematics(m, d, q)
    z = {n: d.oMf[m.getFrameId(n)].translation for n in ("foot_1", "foot_2", "tail_tip", "body")}
    assert z["foot_1"][2] == pytest.approx(TIP_RADIUS, abs=1e-12)
    assert z["tail_tip"][2] == pytest.approx(TIP_RADIUS, abs=1e-12)
    assert z["foot_2"][2] > TIP_RADIUS and z["body"][2] > 0.1  # the other foot and the body are off the ground
    assert np.allclose([z[n][1] for n in z], 0.0, atol=1e-12)  # planar: everything in the x-z plane


def test_design_curve_gives_one_outcome_and_off_it_two():
    """On the curve tail = T(hip) the strike's normals are kinetic-orthogonal (Theorem 2): one outcome for
    every momentum striking both contacts; at tail = 1.2 rad (c ~ 0.1) some momenta have two."""
    study = EX.Study()
    for leg in (-0.4, 0.0, 0.4):
        t = EX.unique_tail_angle(leg, study)
        assert abs(study.inner_product(leg, t)) <= 1e-12
        assert EX.outcome_count(leg, t, study=study) == 1
        assert EX.outcome_count(leg, 1.2, study=study) == 2
    C = EX.uniqueness_map(np.linspace(-0.8, 0.8, 5), np.linspace(-0.6, 1.2, 7), study)
    assert C.min() < 0 < C.max() and np.abs(C).max() < 0.5  # a zero set exists; -1/2 is out of reach


def test_demo_builds_and_its_first_strikes_are_on_the_design_curve():
    """The demo's start: the robot settles onto foot and tail at T(hip); those strikes have c ~ 0."""
    from sim.runner import run_scenario
    scn = EX.build()
    assert abs(scn.info["rest_tail"] - EX.unique_tail_angle(0.0)) < 1e-12
    rec = run_scenario(scn, seconds=0.05, quiet=True, save=False)
    rep = EX.strike_report(rec, scn.info["study"])
    assert rep and all(abs(c) < 1e-3 and n == 1 for _, c, n in rep)
