"""Arm control: the thesis' redundant arm (two-phase cost against naive costs), end-effector
circles on the Panda and the UR5 with joint limits as QP inequalities, and the UR5
emergency stop (seed 002, section 7)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import robots
from controlkit.errors import ControlkitError
from controlkit.quantities import FramePoint
from controlkit.studies.compare import circle_setup
from controllers.arm import (
    COSTS,
    CirclePath,
    JointAngles,
    JointLimits,
    LinePath,
    Manipulability,
    PointAcceleration,
    add_joint_limits,
    best_manipulability,
    manipulability,
    reach_path,
    redundant_arm_program,
    smooth_ramp,
)
from sim.runner import load_script
from sim.simulator import Simulator

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ARM_DT = 2e-3  # s: RK4 step of the redundant-arm runs (tracking errors ~1e-9 m at this step)


@pytest.fixture(scope="module")
def arm_example():
    return load_script(EXAMPLES / "redundant_arm.py")


@pytest.fixture(scope="module")
def arm_runs(arm_example):
    """Two-phase from the arbitrary start; the naive costs from its state at the switch; the reach path."""
    return arm_example.compare_costs(ARM_DT)


# ------------------------------------------------------------ quantities and paths
def test_circle_path_velocity_and_acceleration_are_the_derivatives_of_its_position():
    path = CirclePath.through([1.0, 0.2, 0.5], [0.8, 0.2, 0.5], [0.3, 0.0, 1.0], t0=0.1, duration=1.5, turns=1.25)
    h = 1e-6
    for t in (0.3, 0.85, 1.4):
        p, v, a = path(t)
        assert np.allclose((path(t + h)[0] - path(t - h)[0]) / (2 * h), v, atol=1e-6)
        assert np.allclose((path(t + h)[1] - path(t - h)[1]) / (2 * h), a, atol=1e-5)
    p0, v0, a0 = path(0.0)
    assert np.allclose(p0, [1.0, 0.2, 0.5]) and not v0.any() and not a0.any()  # at rest before it starts
    assert np.linalg.norm(path(0.7)[0] - path.center) == pytest.approx(path.radius)


def test_line_path_and_ramp_start_and_end_at_rest():
    assert smooth_ramp(-1.0) == (0.0, 0.0, 0.0) and smooth_ramp(2.0) == (1.0, 0.0, 0.0)
    line = LinePath(np.zeros(3), np.array([0.3, 0.0, -0.1]), 1.0, 2.0)
    assert np.allclose(line(3.5)[0], [0.3, 0.0, -0.1]) and not line(3.5)[1].any()
    assert np.allclose(line(2.0)[0], [0.15, 0.0, -0.05])


def test_point_acceleration_is_the_derivative_of_the_point_velocity_in_a_solve():
    built = robots.redundant_arm((0.2, 0.4, 0.3, -0.2, 0.5))
    mech = built.mechanism
    v = np.array([0.3, -0.5, 0.8, 0.2, -0.4])
    sim = Simulator(mech, built.q0, v, dt=1e-3)
    sim.solve_now()  # passive: gravity and velocity terms only
    point = FramePoint(mech, "link_4.tool")
    a_point = PointAcceleration(point).position(mech)
    a = mech.solution.a.copy()
    h = 1e-6
    vel = []
    for s in (-h, h):
        mech.set_state(pin.integrate(mech.model, built.q0, s * v), v + s * a)
        vel.append(point.velocity(mech))
    assert np.allclose((vel[1] - vel[0]) / (2 * h), a_point, atol=1e-6)


def test_manipulability_is_det_j_jt_and_vanishes_when_the_arm_points_straight_up():
    built = robots.redundant_arm((0.1, 0.3, 0.3, 0.3, 0.3))
    mech = built.mechanism
    J = mech.frame_jacobian(mech.frame_id("link_4.tool"))[:3]
    assert manipulability(mech, "link_4.tool") == pytest.approx(np.linalg.det(J @ J.T))
    up = robots.redundant_arm((0.0, 0.0, 0.0, 0.0, 0.0)).mechanism
    assert Manipulability(up, "link_4.tool").position(up)[0] < 1e-12


def test_joint_angles_stacks_one_dof_joints_and_refuses_others():
    mech = robots.redundant_arm((0.1, 0.2, 0.3, 0.4, 0.5)).mechanism
    th = JointAngles(mech, ["joint_5", "joint_3"])
    assert np.allclose(th.position(mech), [0.5, 0.3])
    assert th.jacobian(mech)[0, 4] == 1.0 and th.jacobian(mech)[1, 2] == 1.0 and th.jacobian(mech).sum() == 2.0
    with pytest.raises(ControlkitError, match="at least one joint"):
        JointAngles(mech, [])


def test_an_unknown_redundancy_cost_is_refused_with_the_valid_names():
    with pytest.raises(ControlkitError, match="two_phase, torques, accelerations"):
        redundant_arm_program("link_4.tool", ["joint_3", "joint_4"], lambda t: None, 1.0, cost="smallest")
    assert COSTS == ("two_phase", "torques", "accelerations")


# ------------------------------------------------------------ the thesis' redundant arm
def test_phase_one_brings_the_distal_angles_together_without_moving_the_end_effector(arm_runs):
    r = arm_runs["two_phase"]
    assert r.hold_motion < 1e-6               # m, over the whole of phase 1
    assert r.spread_at_switch < 1e-3          # rad: distal angles equal at the switch
    A = r.recording.quantity("distal angles")
    assert np.ptp(A[0]) > 1.0                 # they started far apart


def test_phase_two_tracks_the_path_while_the_distal_angles_stay_equal(arm_runs):
    r = arm_runs["two_phase"]
    assert r.stopped_at is None
    assert r.recording.t[-1] == pytest.approx(r.t_switch + 3.0)
    assert r.spread_phase2 < 1e-3             # rad
    assert r.tracking_error < 1e-5            # m


def test_two_phase_manipulability_is_above_both_naive_costs_at_every_instant_of_the_same_reach(arm_runs):
    two = arm_runs["two_phase"]
    assert two.recording.meta["path"] == "reach"
    rec2 = two.recording
    w2 = rec2.quantity("manipulability")[:, 0]
    k = int(np.argmin(np.abs(rec2.t - two.t_switch)))
    for cost in ("torques", "accelerations"):
        rec = arm_runs[cost].recording
        assert rec.t[0] == pytest.approx(two.t_switch) and np.array_equal(rec.q[0], rec2.q[k])  # same start state
        after = rec.t > two.t_switch + 1e-9
        t = rec.t[after]
        # the same end-effector trajectory on the same clock: the same place at every instant
        P2 = np.column_stack([np.interp(t, rec2.t, rec2.quantity("tool position")[:, i]) for i in range(3)])
        assert np.abs(rec.quantity("tool position")[after] - P2).max() < 1e-5
        w = rec.quantity("manipulability")[after, 0]
        w2t = np.interp(t, rec2.t, w2)
        margin = w2t - w
        assert (margin > 0).all(), (cost, t[np.argmin(margin)], margin.min())  # at every sample after the switch
        assert (w / w2t).min() < 0.5, cost  # and far below once the naive cost has drifted
        assert arm_runs[cost].margin_min == pytest.approx(margin.min())
    assert two.manipulability_min_phase2 > max(arm_runs[c].manipulability_min_phase2 for c in ("torques", "accelerations"))
    assert arm_runs["accelerations"].spread_phase2 > 0.5  # the naive cost lets the angles drift apart
    assert "below two-phase at every instant" in arm_runs["accelerations"].summary()


def test_equal_distal_angles_come_within_5_percent_of_the_best_manipulability_but_not_to_it(arm_runs):
    """Why the pointwise comparison depends on the path: equal angles are near the self-motion maximum, not at it."""
    two = arm_runs["two_phase"]
    rec = two.recording
    mech = robots.redundant_arm().mechanism
    tool = FramePoint(mech, "link_4.tool")
    w2 = rec.quantity("manipulability")[:, 0]
    for t in np.arange(two.t_switch, two.t_switch + 3.0 + 1e-9, 0.375):
        k = int(np.argmin(np.abs(rec.t - t)))
        best, q_best = best_manipulability(mech, "link_4.tool", rec.q[k])
        assert 0.95 * best < w2[k] < 0.99 * best, t   # about 4% below the maximum at this end-effector position
        assert np.ptp(q_best[2:]) > 0.1                # which has unequal distal angles
        mech.set_state(q_best)
        assert np.allclose(tool.position(mech), rec.quantity("tool position")[k], atol=1e-8)
        assert manipulability(mech, "link_4.tool") == pytest.approx(best)


def test_minimizing_squared_torques_whips_the_arm_before_the_reach_ends(arm_runs):
    r = arm_runs["torques"]
    assert r.stop_reason == "runaway"
    assert r.t_switch < r.stopped_at < r.t_switch + 3.0
    assert np.abs(r.recording.v[-1]).max() >= 50.0 - 1e-6
    assert arm_runs["accelerations"].stopped_at is None and arm_runs["accelerations"].tracking_error < 1e-5


def test_reach_path_goes_out_and_back_and_is_at_rest_at_every_turn():
    start, end = np.array([1.0, 0.2, 0.5]), np.array([1.2, 0.25, 0.5])
    path = reach_path(start, end, t0=0.5, leg=0.75, repeats=2)
    for t, p in ((0.0, start), (0.5, start), (1.25, end), (2.0, start), (2.75, end), (3.5, start), (9.0, start)):
        x, v, a = path(t)
        assert np.allclose(x, p) and np.allclose(v, 0.0) and np.allclose(a, 0.0), t
    h = 1e-6
    for t in (0.8, 1.6, 3.1):
        assert np.allclose((path(t + h)[0] - path(t - h)[0]) / (2 * h), path(t)[1], atol=1e-6)
        assert np.allclose((path(t + h)[1] - path(t - h)[1]) / (2 * h), path(t)[2], atol=1e-4)
    with pytest.raises(ControlkitError, match="repeats"):
        reach_path(start, end, 0.0, 0.75, repeats=0)


# ------------------------------------------------------------ real manipulators
@pytest.fixture(scope="module")
def panda_example():
    return load_script(EXAMPLES / "panda_circle.py")


def _run(setup):
    sim = Simulator(setup.mech, setup.q0, setup.v0, dt=setup.dt, integrator="rk4")
    tool = FramePoint(setup.mech, setup.tool)
    errors = []
    sim.control_phase.append(lambda s: errors.append(np.linalg.norm(tool.position(s.mech) - setup.path(s.t)[0])))
    sim.add_program(setup.program)
    rec = sim.run(setup.duration)
    return rec, max(errors)


def test_panda_circle_tracks_within_1e_4_m_and_its_limits_hold_while_active(panda_example):
    s = panda_example.setup("panda", push=1.0, dt=2e-3)  # posture target 1 rad past joint 7's limit
    s.limits.tau_max[s.limits.joints.index("panda_joint4")] = 25.0  # N m: the elbow carries up to 28
    rec, err = _run(s)
    assert err < 1e-4
    assert all(x <= 1e-9 for x in s.limits.violation(rec.q, rec.v, rec.tau, s.mech).values())
    m = panda_example.margins(s, rec)
    assert "panda_joint7" in m["position"]["active"] and "panda_joint7" in m["velocity"]["active"]
    assert m["torque"]["active"] == ["panda_joint4"]


def test_ur5_circle_tracks_with_its_limits_held():
    s = circle_setup("ur5", dt=2e-3, posture_offset={"wrist_3_joint": 8.0})
    rec, err = _run(s)
    assert err < 1e-4
    viol = s.limits.violation(rec.q, rec.v, rec.tau, s.mech)
    assert all(x <= 1e-9 for x in viol.values())
    assert viol["velocity"] > -1e-6  # the wrist ran at its speed limit


def test_joint_limit_gains_must_be_positive():
    mech = robots.load("ur5")
    limits = JointLimits.from_model(mech, position_gain=-1.0)

    def program(ctl):
        add_joint_limits(ctl, limits)
        yield

    sim = Simulator(mech, mech.q, dt=1e-3)
    with pytest.raises(ControlkitError, match="position_gain"):
        sim.add_program(program)


# ------------------------------------------------------------ emergency stop
@pytest.fixture(scope="module")
def stops():
    ex = load_script(EXAMPLES / "emergency_stop.py")
    return ex, {label: ex.emergency_stop(dt=5e-4, **opts) for label, opts in ex.METHODS.items()}


def _lock_events(result):
    return [e for e in result.sim.recording.events_of("lock") if e.data["joint"] in ("shoulder_pan_joint",
                                                                                        "shoulder_lift_joint",
                                                                                        "elbow_joint")]


def test_emergency_stop_locks_joints_1_2_3_at_the_seed_times(stops):
    ex, runs = stops
    for r in runs.values():
        assert [round(e.time, 9) for e in _lock_events(r)] == list(ex.LOCK_TIMES)


def test_momentum_consistent_stop_keeps_the_free_momentum_and_naive_does_not(stops):
    _, runs = stops
    for e in _lock_events(runs["momentum-consistent"])[:2]:
        assert np.allclose(e.data["momentum_before"], e.data["momentum_after"], rtol=1e-9, atol=1e-9)
    jumps = [np.abs(np.subtract(e.data["momentum_after"], e.data["momentum_before"])).max()
             for e in _lock_events(runs["naive"])[:2]]
    assert min(jumps) > 1e-2  # N m s


def test_robot_rests_after_the_last_lock_in_a_pose_that_depends_on_the_transition(stops):
    ex, runs = stops
    for r in runs.values():
        rec = r.sim.recording
        after = rec.t > ex.LOCK_TIMES[-1] + 1e-9
        assert np.abs(rec.v[after]).max() < 1e-9
        assert np.ptp(rec.q[after], axis=0).max() < 1e-9
    a, b = runs["momentum-consistent"], runs["naive"]
    assert np.linalg.norm(a.rest_q - b.rest_q) > 1e-2                # rad
    assert np.linalg.norm(a.rest_tool - b.rest_tool) > 5e-3          # m
    text = ex.report(runs)
    assert "difference (naive - momentum-consistent)" in text
