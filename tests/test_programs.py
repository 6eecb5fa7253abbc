"""Control programs as coroutines: direct control, control equations, clocks, events, errors."""
import example_robot_data as erd
import numpy as np
import pinocchio as pin
import pytest

from controlkit.errors import ControlProgramError, InconsistentEquationsError, SolverError, UnderdeterminedError
from controlkit.expressions import acc
from controlkit.mechanism import Mechanism
from controllers.primitives import ONE_PERCENT_RATIO, position_with_quintic, set_angle_with_pd, set_angle_with_quintic
from models import free_ball, lifted_block, pendulum
from sim.simulator import Simulator

G = 9.81


def test_block_held_still_by_assigning_the_force_that_balances_gravity():
    mech = lifted_block(2.0)
    sim = Simulator(mech, dt=1e-3)

    def hold(ctl):
        while True:
            ctl.assign("lift force", ctl.torque("lift"), 2.0 * G)
            yield

    sim.add_program(hold)
    rec = sim.run(1.0)
    assert np.abs(rec.q[:, 0]).max() < 1e-12
    assert np.allclose(rec.tau[:, 0], 2.0 * G)


def test_block_under_force_m_g_t_moves_down_stops_at_t2_and_rises():
    # a = g (t - 1): v = g (t^2/2 - t) is zero again at t = 2, where z = -2 g / 3
    mech = lifted_block(2.0)
    dt = 1e-3
    sim = Simulator(mech, dt=dt)

    def ramp(ctl):
        while True:
            ctl.assign("lift force", ctl.torque("lift"), 2.0 * G * ctl.t)
            yield

    sim.add_program(ramp)
    rec = sim.run(3.0)
    z, v, t = rec.q[:, 0], rec.v[:, 0], rec.t
    k = int(np.argmin(z))
    assert abs(t[k] - 2.0) < 2 * dt  # the force is held over each step: half a step of lag
    assert z[k] == pytest.approx(-2 * G / 3, rel=2e-3)
    assert v[t < 1.9].max() <= 1e-12 and v[-1] > 0  # moved down first, rises at the end


def test_assigning_zero_acceleration_returns_the_force_m_g():
    mech = lifted_block(2.0)
    sim = Simulator(mech, dt=1e-3)

    def still(ctl):
        ctl.assign("no motion", ctl.joint_acceleration("lift"), 0.0)
        yield

    sim.add_program(still)
    rec = sim.run(0.1)
    assert np.allclose(rec.tau[:, 0], 2.0 * G, rtol=1e-12)
    assert np.abs(rec.q).max() < 1e-12


def test_set_angle_with_pd_is_within_one_percent_at_the_given_time():
    mech = pendulum(1)
    dt_target = 0.4
    sim = Simulator(mech, np.array([0.0]), dt=1e-3, record={"angle": None} and {})

    def move(ctl):
        set_angle_with_pd(ctl, "swing", "j0", 1.0, dt_target)
        yield

    sim.add_program(move)
    rec = sim.run(0.5)
    err = np.abs(rec.q[:, 0] - 1.0)
    at = np.argmin(np.abs(rec.t - dt_target))
    assert err[at] <= 0.01 * 1.0 + 1e-6
    assert err[np.argmin(np.abs(rec.t - 0.9 * dt_target))] > 0.01  # not trivially fast
    assert ONE_PERCENT_RATIO == pytest.approx(6.638, abs=1e-3)


def test_quintic_controllers_reach_target_position_and_velocity_on_time():
    mech = pendulum(2)
    sim = Simulator(mech, np.array([0.2, -0.1]), dt=1e-3)

    def move(ctl):
        set_angle_with_quintic(ctl, "j0 quintic", "j0", 0.8, 0.5, 0.6)
        yield

    sim.add_program(move)
    rec = sim.run(0.6)
    assert rec.t[-1] == pytest.approx(0.6)
    assert abs(rec.q[-1, 0] - 0.8) < 1e-6
    assert abs(rec.v[-1, 0] - 0.5) < 1e-6


def test_point_quintic_reaches_its_target_with_the_free_ball():
    mech = free_ball(actuated=True)
    sim = Simulator(mech, dt=1e-3)
    target, speed = np.array([0.5, -0.2, 1.0]), np.array([0.1, 0.0, -0.05])

    def move(ctl):
        position_with_quintic(ctl, "ball path", "ball", target, speed, 0.5)
        ctl.add_equation("no spin", acc(ctl.orientation("ball")) == 0)
        yield

    sim.add_program(move)
    rec = sim.run(0.5, )
    p = rec.q[-1, :3]
    mech.set_state(rec.q[-1], rec.v[-1])
    vel_world = mech.frame_velocity(mech.frame_id("ball")).linear
    assert np.abs(p - target).max() < 1e-6
    assert np.abs(vel_world - speed).max() < 1e-6


def test_inverse_dynamic_control_of_ur5_returns_the_rnea_torques():
    r = erd.load("ur5")
    mech = Mechanism(r.model, r.collision_model, r.visual_model, name="ur5")
    w = np.linspace(1.0, 2.0, mech.nv)

    def a_des(t):
        return -0.5 * w**2 * np.sin(w * t)

    sim = Simulator(mech, np.zeros(mech.nv), 0.5 * w, dt=1e-3)

    def follow(ctl):
        for j in mech.actuated_joints:
            k = mech.joint_v_slice(j).start
            ctl.add_equation(f"traj {j}", acc(ctl.angle(j)) == (lambda t, k=k: a_des(t)[k]))
        yield

    sim.add_program(follow)
    rec = sim.run(0.2)
    data = r.model.createData()
    worst = max(np.abs(pin.rnea(r.model, data, q, v, a_des(t)) - tau).max()
                for t, q, v, tau in zip(rec.t, rec.q, rec.v, rec.tau))
    assert worst < 1e-8
    assert np.abs(rec.q[-1] - 0.5 * np.sin(w * 0.2)).max() < 1e-8  # and it follows the trajectory


@pytest.mark.parametrize("dt", [1e-2, 1e-3, 1e-4])
def test_until_condition_is_isolated_within_its_tolerance(dt):
    mech = free_ball()
    q0 = pin.neutral(mech.model)
    q0[2] = 2.0
    sim = Simulator(mech, q0, dt=dt, event_tolerance=1e-6)
    seen = []

    def watch(ctl):
        ball = ctl.point("ball")
        yield ctl.until(lambda: ctl.value(ball)[2] < 1.0)
        seen.append(ctl.t)

    sim.add_program(watch)
    sim.run(0.6)
    t_exact = np.sqrt(2 * 1.0 / G)
    assert len(seen) == 1
    assert abs(seen[0] - t_exact) <= 1e-6
    assert seen[0] >= t_exact - 1e-12 or abs(seen[0] - t_exact) < 1e-6


def test_a_100_hz_program_holds_its_torques_between_ticks():
    mech = pendulum(1)
    sim = Simulator(mech, np.array([0.3]), dt=1e-3)

    def pd(ctl):
        th = ctl.angle("j0")
        while True:
            ctl.assign("pd", ctl.torque("j0"), -50.0 * ctl.value(th) - 5.0 * ctl.velocity(th))
            yield

    sim.add_program(pd, period=0.01)
    rec = sim.run(0.2)
    floor = np.floor(rec.t / 0.01 + 1e-9).astype(int)
    for k in range(20):
        seg = rec.tau[floor == k, 0]
        assert np.ptp(seg) == 0.0  # constant between ticks
    changes = np.flatnonzero(np.diff(rec.tau[:, 0]) != 0) + 1
    assert np.allclose(rec.t[changes] / 0.01, np.round(rec.t[changes] / 0.01), atol=1e-9)
    assert len(changes) >= 15


def test_two_conflicting_control_equations_raise_an_error_naming_both():
    mech = pendulum(1)
    sim = Simulator(mech, dt=1e-3)

    def conflict(ctl):
        th = ctl.angle("j0")
        ctl.add_equation("up", acc(th) == 1.0)
        ctl.add_equation("down", acc(th) == -1.0)
        yield

    sim.add_program(conflict)
    with pytest.raises(InconsistentEquationsError) as info:
        sim.run(0.01)
    assert set(info.value.conflicting) == {"up", "down"}
    assert "up" in str(info.value) and "down" in str(info.value)


def test_underdetermined_set_uses_the_documented_default_or_raises_when_asked():
    mech = pendulum(2)
    sim = Simulator(mech, np.array([0.4, 0.0]), dt=1e-3)
    rec = sim.run(0.01)
    assert np.abs(rec.tau).max() == 0.0  # default: least squared torques -> passive joints
    sim = Simulator(mech, np.array([0.4, 0.0]), dt=1e-3)
    sim.equations.underdetermined = "raise"

    def one(ctl):
        ctl.add_equation("only j0", acc(ctl.angle("j0")) == 0.0)
        yield

    sim.add_program(one)
    with pytest.raises(UnderdeterminedError) as info:
        sim.run(0.01)
    assert info.value.free == 1
    assert "1 unknowns are left free" in str(info.value)


def test_a_program_that_raises_stops_the_run_with_its_name_and_time():
    mech = pendulum(1)
    sim = Simulator(mech, np.array([0.3]), dt=1e-3)

    def faulty(ctl):
        yield ctl.after(0.05)
        raise RuntimeError("sensor unplugged")

    sim.add_program(faulty)
    with pytest.raises(ControlProgramError) as info:
        sim.run(1.0)
    msg = str(info.value)
    assert "'faulty'" in msg and "t = 0.05 s" in msg and "sensor unplugged" in msg
    rec = info.value.recording
    assert rec is not None and rec.t[-1] == pytest.approx(0.05)
    assert len(rec) == 51


def _limited_hold(ctl, limit):
    tau = ctl.torque("j0")
    ctl.add_equation("hold", acc(ctl.angle("j0")) == 0.0)
    ctl.add_inequality("torque limit", tau <= limit)
    ctl.add_inequality("torque limit low", tau >= -limit)
    yield


def test_infeasible_torque_limits_raise_an_error_carrying_the_problem():
    mech = pendulum(1)
    sim = Simulator(mech, np.array([0.5]), dt=1e-3)
    sim.add_program(lambda ctl: _limited_hold(ctl, 1.0), name="weak hold")
    with pytest.raises(SolverError) as info:
        sim.run(0.01)
    assert info.value.problem is not None
    text = str(info.value)
    assert "torque limit" in text and "hold" in text and "t = 0 s" in text


def test_hold_last_fallback_is_opt_in_and_logged():
    mech = pendulum(1)
    sim = Simulator(mech, np.array([0.5]), dt=1e-3, fallback="hold_last_torques")
    sim.add_program(lambda ctl: _limited_hold(ctl, 1.0), name="weak hold")
    rec = sim.run(0.05)
    fb = rec.events_of("fallback")
    assert len(fb) == 1 and "holding the last torques" in fb[0].description
    assert rec.t[-1] == pytest.approx(0.05)


def test_async_programs_work_like_generators():
    mech = lifted_block(1.0)
    sim = Simulator(mech, dt=1e-3)

    async def lift(ctl):
        ctl.assign("f", ctl.torque("lift"), 2 * G)
        await ctl.after(0.1)
        ctl.assign("f", ctl.torque("lift"), G)
        await ctl.tick()

    sim.add_program(lift)
    rec = sim.run(0.2)
    v_at = rec.v[np.argmin(np.abs(rec.t - 0.1)), 0]
    assert v_at == pytest.approx(G * 0.1, rel=1e-9)
    assert rec.v[-1, 0] == pytest.approx(G * 0.1, rel=1e-9)


def test_a_program_can_start_and_stop_another():
    mech = lifted_block(1.0)
    sim = Simulator(mech, dt=1e-3)
    log = []

    def worker(ctl):
        while True:
            log.append(round(ctl.t, 6))
            yield ctl.after(0.01)

    def boss(ctl):
        ctl.start(worker, name="worker")
        yield ctl.after(0.035)
        ctl.stop("worker")

    sim.add_program(boss)
    sim.run(0.1)
    assert log == [0.0, 0.01, 0.02, 0.03]


def test_computed_torque_with_the_exact_model_tracks_better_than_joint_pd():
    r = erd.load("ur5")
    mech = Mechanism(r.model, r.collision_model, r.visual_model, name="ur5")
    from controllers import computed_torque, joint_pd_gravity
    w = np.linspace(1.0, 2.0, mech.nv)
    qd = lambda t: 0.3 * np.sin(w * t)
    vd = lambda t: 0.3 * w * np.cos(w * t)
    ad = lambda t: -0.3 * w**2 * np.sin(w * t)
    errors = {}
    mech.set_state(qd(0.0))
    inertia = np.diag(mech.dynamics()[0]).copy()  # joint gains scaled by each joint's inertia
    for name, prog in [("ct", computed_torque(qd, vd, ad, 400.0, 40.0)),
                       ("pd", joint_pd_gravity(qd, 400.0 * inertia, 40.0 * inertia, v_des=vd))]:
        sim = Simulator(mech, qd(0.0), vd(0.0), dt=1e-3)
        sim.add_program(prog, period=1e-3)
        rec = sim.run(0.5)
        errors[name] = max(np.abs(q - qd(t)).max() for t, q in zip(rec.t, rec.q))
    assert errors["ct"] < 1e-3
    assert errors["pd"] > 3 * errors["ct"]
