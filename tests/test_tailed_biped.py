"""The tailed biped of seed 001 (Fig. 1): the design study of foot strikes with the tail down."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from robots.tailed_biped import TIP_RADIUS, stance_pose, tailed_biped
from sim.impact_outcomes import uniqueness
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


def test_every_impact_of_a_10_s_bounding_run_has_one_outcome():
    """The demo's full 10 s: the tail tip leaves and strikes the ground each period and the foot leaves and
    strikes again. Every impact of foot 1 or the tail tip, enumerated with both contacts in the set for its
    own pre-impact velocity (every minimal propagative sequence, e = 0 as simulated), has exactly one
    outcome, because exactly one contact approaches (faster than 1 mm/s) while the other rests (|J v| <=
    1e-6 m/s, never below the enumerator's -1e-9): strike_case's forced propagation. The hips are held, so
    the strike's c stays off Theorem 2's curve (c ~ -0.015, a margin of 0.01 asserted): uniqueness here
    comes from the momentum, not from the configuration."""
    from sim.impact_outcomes import ONE_FORCED
    from sim.runner import run_scenario
    scn = EX.build()
    rec = run_scenario(scn, seconds=10.0, quiet=True, save=False)
    rep = EX.strike_report(rec, scn.info["study"], scn.info["restitution"])
    lifts = [e.time for e in rec.events_of("contact_broken") if "foot_1" in e.description]
    assert all(any(k < t < k + 1 for t in lifts) for k in range(10))  # the foot leaves the ground every period
    tails = [r for r in rep if r.striking == ("tail_tip",)]
    feet = [r for r in rep if r.striking == ("foot_1",)]
    assert len(tails) >= 10 and len(feet) >= 10 and len(tails) + len(feet) == len(rep)
    assert len(rep) == len(rec.events_of("impact"))  # every impact of the run is in the report
    for r in rep:
        assert r.outcomes == 1 and r.case == ONE_FORCED, r
        striking, resting = (0, 1) if r.striking == ("foot_1",) else (1, 0)
        assert r.normal_velocities[striking] < -1e-3, r
        assert -1e-9 <= r.normal_velocities[resting] <= 1e-6, r
        assert r.c < -0.01 and r.longest >= 2, r  # the strike propagates into the resting contact
    # the same momenta with the resting contact approaching too: the enumeration can find two outcomes
    r = tails[0]
    M, J = scn.info["study"].problem(rec.q[int(np.searchsorted(rec.t, r.time))])
    v = np.linalg.lstsq(J, [-0.05, -0.05], rcond=None)[0]
    assert len(EX.resolve_impact(M, J, v, 1.0, outcomes="all")) == 2


def test_braked_hinges_reach_theorem_3_and_theorem_2_curves():
    """With the hinges braked through the strike the impulse moves the robot as one rigid body (M and J
    restricted to the body's x, y, z, yaw, pitch): c = (1/m + a_f a_t / I) / norms, with a_f, a_t the
    foot's and the tail tip's horizontal offsets from the centre of mass, spans about [-0.73, 0.98] over
    the map, so both theorems' curves exist at hip 0: c = 0 (Theorem 2) and c = -1/2 (Theorem 3, e = 1).
    On each, every momentum striking both contacts has one outcome; between them (c ~ -0.3) some have two."""
    st = EX.Study(braked=True)
    t2 = EX.unique_tail_angle(0.0, st, bracket=(0.4, 1.0))
    t3 = EX.unique_tail_angle(0.0, st, bracket=(-0.3, 0.3), c=-0.5)
    assert t3 < 0.3 < t2
    for tail, theorem in ((t2, "Theorem 2"), (t3, "Theorem 3")):
        M, J = st.problem(stance_pose(0.0, tail, EX.TUCK))
        assert M.shape == (5, 5)
        rep = uniqueness(M, J)
        assert rep.theorem == theorem and rep.guaranteed_unique
        assert EX.outcome_count(0.0, tail, samples=100, study=st) == 1
    assert EX.outcome_count(0.0, 0.3, samples=100, study=st) == 2
    C = EX.uniqueness_map(np.linspace(-0.6, 0.6, 5), np.linspace(-0.4, 1.2, 5), st)
    assert C.min() < -0.5 and C.max() > 0.9
    # the free hinges' map (the default) never reaches -1/2: braking is what makes Theorem 3 available
    assert EX.Study().inner_product(0.0, t3) > -0.2
