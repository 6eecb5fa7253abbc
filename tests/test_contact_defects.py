"""Contact and impact on scenes the curated tests do not contain (issue 25): bodies touching at the
start, the bouncing ball's accumulation point, a rolling ball, stacks of balls."""
import math

import numpy as np
import pinocchio as pin
import pytest

from controlkit.errors import ModelError
from robots import scenes
from sim.collision import CollisionWorld
from sim.contact import enable_contacts
from sim.impact import ImpactError
from sim.simulator import Simulator

G = 9.81


def _kinetic(mech, q, v):
    mech.set_state(q, v)
    return mech.kinetic_energy()


def _deepest(mech, rec) -> float:
    """The most negative signed distance (m) of any pair at any recorded sample."""
    w = CollisionWorld(mech)
    return min(float(w.distances(q).min()) for q in rec.q)


def _cradle_speeds(sim, n):
    # free-flyer velocities are in the body frame; the balls never turn, so x is world x
    return np.array([sim.v[6 * i] for i in range(n)])


# ----------------------------------------------------------- 1. touching at the start
@pytest.mark.parametrize("contacts", [False, True], ids=["impacts", "contacts"])
def test_touching_cradle_passes_all_momentum(contacts):
    b = scenes.newtons_cradle(5, gap=0.0)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4", event_tolerance=1e-9)
    if contacts:
        enable_contacts(sim, friction=0.0, restitution=1.0, law="propagative")
    else:
        sim.enable_impacts(restitution=1.0, law="propagative")
    rec = sim.run(0.1)
    np.testing.assert_allclose(_cradle_speeds(sim, 5), [0, 0, 0, 0, 1], atol=1e-12)
    assert [e.kind for e in rec.events].count("impact") == 1
    assert _deepest(b.mechanism, rec) >= -1e-9  # ball 1 never inside ball 2


def test_box_dropped_onto_a_box_it_touches_shares_the_impact():
    # two equal boxes floating (no gravity), the upper one touching the lower one and moving down
    # at 1 m/s: an elastic impact at t = 0 swaps their velocities
    b = scenes.free_bodies([dict(name="low", box=(0.2, 0.2, 0.2), position=(0, 0, 0.1)),
                            dict(name="high", box=(0.2, 0.2, 0.2), position=(0, 0, 0.3), velocity=(0, 0, -1, 0, 0, 0))],
                           ground=False, gravity=(0, 0, 0))
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    sim.enable_impacts(restitution=1.0)
    rec = sim.run(0.05)
    assert [e.kind for e in rec.events] == ["impact"] and rec.events[0].time == 0.0
    np.testing.assert_allclose(sim.v[[2, 8]], [-1.0, 0.0], atol=1e-12)
    assert _deepest(b.mechanism, rec) >= -1e-9


def test_ball_resting_on_a_struck_ball_is_thrown_off_by_the_contact_source():
    # three balls in a row, touching, the first one moving: under continuous contact (zero gravity),
    # the contact source resolves the touching start as an impact
    b = scenes.three_spheres(gap=0.0)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    enable_contacts(sim, friction=0.0, restitution=1.0, law="propagative")
    rec = sim.run(0.05)
    np.testing.assert_allclose(_cradle_speeds(sim, 3), [0, 0, 1], atol=1e-12)
    assert _deepest(b.mechanism, rec) >= -1e-9


# ------------------------------------------------------- 2. the accumulation point
def _bounce(dt, h):
    e, r = 0.8, 0.1
    b = scenes.ball_on_ground(radius=r, height=r + h)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=dt, integrator="rk4")
    src = enable_contacts(sim, friction=(0.5, 0.4), restitution=e)
    t_inf = math.sqrt(2 * h / G) * (1 + 2 * e / (1 - e))
    rec = sim.run(t_inf + 0.2)
    return rec, src, t_inf, e, r


@pytest.mark.parametrize("dt,h", [(1e-3, 1.0), (1e-4, 0.1)])
def test_bouncing_ball_comes_to_rest_at_the_accumulation_point(dt, h):
    rec, src, t_inf, e, r = _bounce(dt, h)
    made = [ev.time for ev in rec.events if ev.kind == "contact_made"]
    assert len(made) == 1
    # the bounces end when one would leave slower than the rest speed (sqrt(2 g slack), 4.4 mm/s:
    # it could not rise above the penetration tolerance): the flights left then take
    # 2 u / (g (1 - e)) <= 2 rest_speed / (g (1 - e)) (4.5 ms)
    v_rest = src.rest_speed(src.world.mech)
    assert v_rest == pytest.approx(math.sqrt(2 * G * 1e-6), rel=1e-3)
    assert t_inf - 2 * v_rest / (G * (1 - e)) - 1e-6 <= made[0] <= t_inf + 1e-6
    gap = rec.q[:, 2] - r
    assert gap.min() >= -1e-8  # never below the ground by more than the isolation's overshoot
    after = rec.t > made[0] + 1e-9
    assert np.abs(gap[after]).max() <= 1e-8  # resting on it, not floating above it
    assert np.abs(rec.v[after]).max() < 1e-6


def test_bouncing_ball_under_impacts_alone_stops_with_an_error_at_the_accumulation_point():
    e, h, r = 0.8, 1.0, 0.1
    b = scenes.ball_on_ground(radius=r, height=r + h)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    sim.enable_impacts(restitution=e)
    with pytest.raises(ImpactError, match="enable_contacts") as info:
        sim.run(6.0)
    rec = info.value.recording
    t_inf = math.sqrt(2 * h / G) * (1 + 2 * e / (1 - e))
    assert t_inf - 0.01 <= rec.t[-1] <= t_inf
    assert (rec.q[:, 2] - r).min() >= -1e-8


# ------------------------------------------------------------- 3. rolling
def test_ball_sliding_on_the_ground_rolls_without_slipping_and_never_gains_energy():
    v0, r, mu_k = 1.0, 0.1, 0.2
    b = scenes.ball_on_ground(radius=r, height=r, velocity=(v0, 0, 0, 0, 0, 0))
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    enable_contacts(sim, friction=(0.3, mu_k))
    rec = sim.run(1.0)
    t_star = 2 * v0 / (7 * mu_k * G)
    kinds = [(ev.kind, ev.time) for ev in rec.events]
    assert [k for k, _ in kinds] == ["contact_made", "stick"]
    assert kinds[1][1] == pytest.approx(t_star, abs=1e-8)
    ke = np.array([_kinetic(b.mechanism, q, v) for q, v in zip(rec.q, rec.v)])
    assert np.all(np.diff(ke) <= 1e-12 * ke[0])  # never increases
    after = rec.t >= t_star + 1e-9
    assert np.ptp(ke[after]) <= 1e-9 * ke[0]  # constant once rolling
    # world velocity of the centre and spin: the free flyer's v is in the body frame
    for q, v in zip(rec.q[after], rec.v[after]):
        R = pin.XYZQUATToSE3(q[:7]).rotation
        vel, w = R @ v[:3], R @ v[3:6]
        assert vel[0] == pytest.approx(5 / 7 * v0, abs=1e-7)
        assert w[1] == pytest.approx(vel[0] / r, abs=1e-6)


@pytest.mark.parametrize("mu,rolls", [((0.5, 0.4), True), ((0.05, 0.04), False)])
def test_ball_on_a_slope_rolls_at_five_sevenths_g_sin_or_slides(mu, rolls):
    angle = 0.3
    b = scenes.ball_on_slope(angle)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    enable_contacts(sim, friction=mu)
    rec = sim.run(0.5)
    x = (rec.q[:, :3] - rec.q[0, :3]) @ b.info["downhill"]
    a = 5 / 7 * G * math.sin(angle) if rolls else G * (math.sin(angle) - mu[1] * math.cos(angle))
    np.testing.assert_allclose(x, 0.5 * a * rec.t ** 2, atol=1e-7)
    assert [e.kind for e in rec.events] == ["contact_made"]
    assert rec.events[0].data["mode"] == ("stick" if rolls else "slide")


# ----------------------------------------------------------- 4. stacks of balls
def test_column_of_twelve_balls_rests_on_the_ground_without_sinking():
    b = scenes.sphere_column(12)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    enable_contacts(sim, friction=(0.5, 0.4), restitution=0.0)
    rec = sim.run(0.25)
    assert _deepest(b.mechanism, rec) >= -1e-4
    assert np.abs(rec.v[-1]).max() < 1e-6  # at rest
    # the top ball rests at 23 radii above the ground
    assert rec.q[-1, 7 * 11 + 2] == pytest.approx(0.05 * 23, abs=1e-4)


def test_an_impact_only_pair_is_a_model_error_at_enable_contacts():
    import coal
    import pinocchio as pin
    b = scenes.ball_on_ground()
    gm = b.mechanism.collision_model
    joint = b.mechanism.model.getJointId("ball_root")
    gm.addGeometryObject(pin.GeometryObject("rod", joint, 0, pin.SE3(np.eye(3), np.array([0, 0, 0.3])),
                                            coal.Capsule(0.02, 0.2)))
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3)
    with pytest.raises(ModelError, match="ground/rod \\(Halfspace/Capsule\\)"):
        enable_contacts(sim, pairs=[("ball", "ground"), ("rod", "ground")])


# --------------------------------------------------------- 5. many bodies
def test_boxes_dropped_side_by_side_land_and_lie_still():
    # 8 boxes 2 cm apart dropped from 5 cm (e = 0.3): their bounces accumulate like the ball's and
    # used to carry them through the ground (3.2 m deep after 1 s); they land, rest in their
    # contacts and make no more events
    b = scenes.box_row(8)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    enable_contacts(sim, friction=(0.5, 0.4), restitution=0.3)
    rec = sim.run(1.0)
    assert _deepest(b.mechanism, rec) >= -1e-4
    assert len([e for e in rec.events if e.time > 0.5]) / 0.5 < 20
    assert [e.kind for e in rec.events].count("contact_made") == 8
    assert np.abs(rec.v[-1]).max() < 1e-6


def test_boxes_dropped_touching_side_by_side_rest_on_the_ground_not_on_each_other():
    # 5 boxes side by side with no gap, dropped from 5 cm (e = 0.3): their side contacts carry no
    # load, so the ground holds each box and they lie still after landing (~0.19 s). Holding the
    # side pairs' friction rows before the ground's corners carried weight from box to box through
    # side forces nothing pressed; the ground's friction slipped at rest (~700 events per second
    # after 0.3 s, 36 s of wall time for 0.6 s)
    b = scenes.box_row(5, spacing=0.0)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    enable_contacts(sim, friction=(0.5, 0.4), restitution=0.3)
    rec = sim.run(0.6)
    assert _deepest(b.mechanism, rec) >= -1e-4  # m
    assert len([e for e in rec.events if e.time > 0.3]) / 0.3 < 20  # events per simulated second
    assert {e.data["pair"][0] for e in rec.events if e.kind == "contact_made" and "ground" in e.data["pair"]} \
        == {f"box_{i}" for i in range(1, 6)}
    assert np.abs(rec.v[-1]).max() < 1e-6
