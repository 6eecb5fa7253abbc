"""Impacts: propagative / simultaneous / plastic laws, event isolation, restitution, anti-tunnelling."""
from __future__ import annotations

import math

import coal
import numpy as np
import pinocchio as pin
import pytest

from controlkit.errors import ControlkitError, SimulationError
from controlkit.mechanism import Mechanism
from sim.collision import CollisionWorld
from sim.impact import ImpactError, RestitutionTable, resolve_impact
from sim.simulator import Simulator

G = 9.81


# ------------------------------------------------------------------ scenes
def ball_row(masses, radius=0.1, gravity=(0.0, 0.0, 0.0), ground=False, materials=None, name="balls"):
    """Free-flying spheres ``ball0``, ``ball1``, ... (inertia of solid spheres), optional ground."""
    model = pin.Model()
    model.gravity = pin.Motion(np.array(gravity, dtype=float), np.zeros(3))
    gm = pin.GeometryModel()
    for i, m in enumerate(masses):
        j = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), f"ball{i}")
        model.appendBodyToJoint(j, pin.Inertia(m, np.zeros(3), 0.4 * m * radius ** 2 * np.eye(3)), pin.SE3.Identity())
        f = model.addBodyFrame(f"ball{i}", j, pin.SE3.Identity(), 0)
        gm.addGeometryObject(pin.GeometryObject(f"ball{i}", j, f, pin.SE3.Identity(), coal.Sphere(radius)))
    if ground:
        gm.addGeometryObject(pin.GeometryObject("ground", 0, 0, pin.SE3.Identity(),
                                                coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)))
    return Mechanism(model, gm, None, name=name, actuated=[], materials=materials)


def row_state(mech, xs, speed):
    """Balls' centres on the x axis at xs (m); ball0 moving +x at speed (m/s)."""
    q = pin.neutral(mech.model)
    for i, x in enumerate(xs):
        q[7 * i] = x
    v = np.zeros(mech.nv)
    v[0] = speed
    return q, v


def ball_speeds(v):
    """The x velocity of each ball (m/s)."""
    return v[0::6]


def kinetic(mech, q, v):
    mech.set_state(q, v)
    return mech.kinetic_energy()


# ----------------------------------------------------------- Newton's cradle
R = 0.1
CRADLE = [2 * R * i for i in range(5)]  # five balls touching


def _cradle_contacts():
    mech = ball_row([1.0] * 5)
    q, v = row_state(mech, CRADLE, 1.0)
    mech.set_state(q, v)
    world = CollisionWorld(mech)
    contacts = [c for c in world.contacts() if c.distance <= 1e-12]
    assert [(c.geom_a, c.geom_b) for c in contacts] == [(f"ball{i}", f"ball{i + 1}") for i in range(4)]
    M, _ = mech.dynamics()
    return mech, M.copy(), world.jacobian(contacts), v


def test_newtons_cradle_propagative_moves_only_the_last_ball():
    mech, M, J, v = _cradle_contacts()
    res = resolve_impact(M, J, v, 1.0, "propagative")
    expect = np.zeros(mech.nv)
    expect[24] = 1.0  # last ball at 1 m/s, everything else (all 6 dof of every ball) at rest
    np.testing.assert_allclose(res.v, expect, rtol=0, atol=1e-12)
    assert res.sequence == [0, 1, 2, 3]  # the impulse travels down the row, one two-body reset each
    np.testing.assert_allclose(res.impulses, [1, 1, 1, 1], atol=1e-12)
    assert res.kinetic_energy_after == pytest.approx(res.kinetic_energy_before, rel=1e-12)


def test_newtons_cradle_simultaneous_and_plastic_outcomes():
    """The simultaneous (LCP) law is not Newton's cradle: ball 0 bounces back at -0.6 m/s and
    the other four leave together at 0.4 m/s (momentum 1, kinetic energy 0.5 J both kept; the
    contacts between the leaving balls stay closed with impulses 1.2, 0.8, 0.4 N s).
    The plastic law sends the whole row on at 0.2 m/s (a fifth of the energy)."""
    mech, M, J, v = _cradle_contacts()
    sim_res = resolve_impact(M, J, v, 1.0, "simultaneous")
    np.testing.assert_allclose(ball_speeds(sim_res.v), [-0.6, 0.4, 0.4, 0.4, 0.4], atol=1e-9)
    np.testing.assert_allclose(sim_res.impulses, [1.6, 1.2, 0.8, 0.4], atol=1e-9)
    assert sim_res.kinetic_energy_after == pytest.approx(0.5, rel=1e-9)
    plastic = resolve_impact(M, J, v, 1.0, "plastic")
    np.testing.assert_allclose(ball_speeds(plastic.v), [0.2] * 5, atol=1e-12)
    assert plastic.kinetic_energy_after == pytest.approx(0.1, rel=1e-12)
    np.testing.assert_allclose(plastic.normal_velocity_after, 0.0, atol=1e-12)


def test_newtons_cradle_in_the_simulator():
    """Ball 0 starts 2.5 cm away: one isolated impact event, then only the last ball moves."""
    mech = ball_row([1.0] * 5)
    q, v = row_state(mech, [-0.025] + CRADLE[1:], 1.0)
    sim = Simulator(mech, q, v, dt=1e-2)
    src = sim.enable_impacts(law="propagative", restitution=1.0)
    rec = sim.run(0.1)
    events = rec.events_of("impact")
    assert len(events) == 1
    ev = events[0]
    assert ev.time == pytest.approx(0.025, abs=src.tolerance)
    assert ev.data["resets"] == 4 and ev.data["law"] == "propagative"
    assert ev.data["bodies"][0] == ["ball0", "ball1"]
    np.testing.assert_allclose(ev.data["normal_velocity_before"], [-1, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(ev.data["normal_velocity_after"], [0, 0, 0, 1], atol=1e-12)
    expect = np.zeros(mech.nv)
    expect[24] = 1.0
    np.testing.assert_allclose(sim.v, expect, atol=1e-12)


def test_reset_storm_raises_a_clear_error():
    """A heavy ball hitting a light one resting against a wall needs ~ pi sqrt(M/m) resets (thesis Fig. 5.4)."""
    mech = ball_row([1e4, 1.0], ground=False)
    gm = mech.collision_model
    gm.addGeometryObject(pin.GeometryObject("wall", 0, 0, pin.SE3(np.eye(3), np.array([2 * R + R, 0, 0])),
                                            coal.Halfspace(np.array([-1.0, 0.0, 0.0]), 0.0)))
    mech = Mechanism(mech.model, gm, None, name="wall", actuated=[])
    q, v = row_state(mech, [0.0, 2 * R], 1.0)
    mech.set_state(q, v)
    world = CollisionWorld(mech)
    contacts = [c for c in world.contacts() if c.distance <= 1e-12]
    M, _ = mech.dynamics()
    J = world.jacobian(contacts)
    res = resolve_impact(M, J, v, 1.0, "propagative")
    assert 300 <= res.resets <= 330  # ~ pi sqrt(M/m), alternating between the two contacts
    assert ball_speeds(res.v)[0] == pytest.approx(-1.0, abs=1e-5)  # the heavy ball bounces back
    assert res.kinetic_energy_after == pytest.approx(res.kinetic_energy_before, rel=1e-12)
    with pytest.raises(ImpactError, match=r"t = 0.5 s.*did not settle after 50 two-body resets.*raise max_resets"):
        resolve_impact(M, J, v, 1.0, "propagative", max_resets=50, where="t = 0.5 s, impact of ball0/ball1")
    assert issubclass(ImpactError, SimulationError)


# ----------------------------------------------------- the three-sphere test
SPEEDS = [0.5, 1.0, 2.0, 4.0]
STEPS = [1 / 60, 1 / 600, 1 / 6000]


def run_three_spheres(law, e, speed, dt, masses=(1.0, 1.0, 1.0), gap=0.02):
    """Seed 001 Fig. 2a: B and C touching, A hits B; returns (KE after / KE before, sim, recording)."""
    mech = ball_row(list(masses), radius=R)
    q, v = row_state(mech, [-2 * R - gap, 0.0, 2 * R], speed)
    ke0 = kinetic(mech, q, v)
    sim = Simulator(mech, q, v, dt=dt, integrator="rk4")
    sim.enable_impacts(law=law, restitution=e)
    rec = sim.run(gap / speed + 0.01)
    return kinetic(mech, sim.q, sim.v) / ke0, sim, rec


@pytest.mark.parametrize("dt", STEPS, ids=["60Hz", "600Hz", "6kHz"])
@pytest.mark.parametrize("e", [1.0, 0.5, 0.0])
def test_three_spheres_energy_propagative(e, dt):
    """Kinetic energy never grows, and is kept exactly for e = 1, at every speed and step size."""
    for speed in SPEEDS:
        ratio, sim, rec = run_three_spheres("propagative", e, speed, dt)
        assert len(rec.events_of("impact")) == 1  # isolated once, no re-trigger afterwards
        assert ratio <= 1 + 1e-12
        if e == 1.0:
            assert ratio == pytest.approx(1.0, abs=1e-12)
            np.testing.assert_allclose(ball_speeds(sim.v), [0, 0, speed], atol=1e-12)


@pytest.mark.parametrize("masses", [(2.0, 1.0, 1.0), (1.0, 3.0, 1.0), (1.0, 1.0, 5.0)])
def test_three_spheres_energy_unequal_masses(masses):
    for e in (1.0, 0.5, 0.0):
        for dt in (STEPS[0], STEPS[-1]):
            ratio, _, _ = run_three_spheres("propagative", e, 2.0, dt, masses)
            assert ratio <= 1 + 1e-12
            if e == 1.0:
                assert ratio == pytest.approx(1.0, abs=1e-12)


def test_three_spheres_other_laws():
    """Documented outcomes for equal masses, A at 2 m/s: simultaneous e = 1 -> (-2/3, 4/3, 4/3)
    m/s (energy kept), e = 0.5 -> (0, 1, 1) (half kept); plastic -> all at 2/3 m/s (a third kept)."""
    ratio, sim, _ = run_three_spheres("simultaneous", 1.0, 2.0, 1 / 600)
    np.testing.assert_allclose(ball_speeds(sim.v), [-2 / 3, 4 / 3, 4 / 3], atol=1e-9)
    assert ratio == pytest.approx(1.0, abs=1e-9)
    ratio, sim, _ = run_three_spheres("simultaneous", 0.5, 2.0, 1 / 600)
    np.testing.assert_allclose(ball_speeds(sim.v), [0, 1, 1], atol=1e-9)
    assert ratio == pytest.approx(0.5, abs=1e-9)
    for e in (1.0, 0.0):
        ratio, sim, _ = run_three_spheres("plastic", e, 2.0, 1 / 60)
        np.testing.assert_allclose(ball_speeds(sim.v), [2 / 3] * 3, atol=1e-12)
        assert ratio == pytest.approx(1 / 3, abs=1e-12)


# ------------------------------------------------------- ball on the ground
@pytest.mark.parametrize("integrator,dt", [("rk4", 1e-2), ("rk4", 1 / 300), ("rk4", 1e-3), ("dopri5", 1e-2)])
def test_ball_bounces_to_e_squared_of_its_height(integrator, dt):
    e, h = 0.8, 1.0
    mech = ball_row([1.0], gravity=(0, 0, -G), ground=True)
    q0 = pin.neutral(mech.model)
    q0[2] = R + h
    sim = Simulator(mech, q0, dt=dt, integrator=integrator, rtol=1e-10, atol=1e-12)
    src = sim.enable_impacts(restitution=e)
    rec = sim.run(1.5)
    events = rec.events_of("impact")
    # analytic impact times: sqrt(2h/g), then + 2 e v1 / g
    v1 = math.sqrt(2 * G * h)
    t1 = math.sqrt(2 * h / G)
    t2 = t1 + 2 * e * v1 / G
    assert [round(ev.time, 6) for ev in events] == [round(t1, 6), round(t2, 6)]
    assert abs(events[0].time - t1) <= src.tolerance
    assert abs(events[1].time - t2) <= 2 * src.tolerance  # the second inherits the first one's offset
    # apex after each bounce from the post-impact state (exact under ballistic flight)
    for k, ev in enumerate(events, start=1):
        i = np.flatnonzero(rec.t == ev.time)[-1]
        apex = rec.q[i, 2] - R + rec.v[i, 2] ** 2 / (2 * G)
        assert apex / h == pytest.approx(0.64 ** k, rel=1e-6)
        assert ev.data["normal_velocity_after"][0] == pytest.approx(-e * ev.data["normal_velocity_before"][0], rel=1e-12)
        assert ev.data["bodies"] == [["ball0", "universe"]]
        assert ev.data["impulses"][0] > 0


# ------------------------------------------------------------- tunnelling
def _bullet_and_slab():
    model, gm = pin.Model(), pin.GeometryModel()
    j = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "bullet")
    model.appendBodyToJoint(j, pin.Inertia(0.01, np.zeros(3), 4e-7 * np.eye(3)), pin.SE3.Identity())
    f = model.addBodyFrame("bullet", j, pin.SE3.Identity(), 0)
    gm.addGeometryObject(pin.GeometryObject("bullet", j, f, pin.SE3.Identity(), coal.Sphere(0.01)))
    # a 1 cm slab whose near face is 0.545 m away: a 1e-2 s step at 100 m/s jumps 1 m, right over it
    gm.addGeometryObject(pin.GeometryObject("slab", 0, 0, pin.SE3(np.eye(3), np.array([0.55, 0, 0])),
                                            coal.Box(0.01, 1.0, 1.0)))
    v = np.zeros(6)
    v[0] = 100.0
    return Mechanism(model, gm, None, name="bullet", actuated=[]), v


def test_no_tunnelling_through_a_thin_slab():
    mech, v = _bullet_and_slab()
    sim = Simulator(mech, None, v, dt=1e-2)
    src = sim.enable_impacts(restitution=1.0)
    rec = sim.run(0.05)
    events = rec.events_of("impact")
    assert len(events) == 1
    assert events[0].time == pytest.approx((0.545 - 0.01) / 100, abs=src.tolerance)
    assert sim.v[0] == pytest.approx(-100.0)  # bounced back
    # without the step limiter the same run flies through
    mech, v = _bullet_and_slab()
    sim = Simulator(mech, None, v, dt=1e-2)
    sim.enable_impacts(restitution=1.0, anti_tunnelling=False)
    assert sim.run(0.05).events_of("impact") == [] and sim.q[0] > 1.0


# ------------------------------------------------------------ restitution
def test_restitution_table_by_material_pair():
    table = RestitutionTable(0.5, {("steel", "steel"): 0.9, ("steel", "rubber"): 0.3},
                             materials={"a": "steel", "b": "steel", "c": "rubber"})
    assert table("a", "b") == 0.9
    assert table("c", "a") == 0.3
    assert table("c", "d") == 0.5
    with pytest.raises(ControlkitError, match=r"must be in \[0, 1\], got 1.5"):
        RestitutionTable(1.5)
    t2 = RestitutionTable.make({("steel", "steel"): 1.0, "default": 0.2}, {"a": "steel"})
    assert t2("a", "a") == 1.0 and t2("a", "x") == 0.2


def test_materials_of_the_mechanism_set_e_per_pair():
    """Two balls fall side by side on the ground: rubber (e 0.8) and clay (default e 0)."""
    mech = ball_row([1.0, 1.0], gravity=(0, 0, -G), ground=True,
                    materials={"ball0": "rubber", "ball1": "clay", "ground": "stone"})
    q = pin.neutral(mech.model)
    q[[0, 1, 2]] = [0.0, 0.0, R + 0.5]
    q[[7, 8, 9]] = [1.0, 0.0, R + 0.5]
    sim = Simulator(mech, q, dt=1e-2)
    sim.enable_impacts(restitution={("rubber", "stone"): 0.8, "default": 0.0})
    rec = sim.run(math.sqrt(2 * 0.5 / G) + 0.01)
    (ev,) = rec.events_of("impact")  # both at once
    assert ev.data["pairs"] == [["ball0", "ground"], ["ball1", "ground"]]
    assert ev.data["restitution"] == [0.8, 0.0]
    vn0, vn1 = ev.data["normal_velocity_before"]
    np.testing.assert_allclose(ev.data["normal_velocity_after"], [-0.8 * vn0, 0.0], atol=1e-9)


def test_two_impacts_in_one_step_are_separate_events():
    """Two balls 1 mm apart in height hit the ground within one 1e-2 s step: two events, each
    at its own analytic time, and the later ball is not touched by the first impact."""
    mech = ball_row([1.0, 1.0], gravity=(0, 0, -G), ground=True)
    q = pin.neutral(mech.model)
    q[[0, 1, 2]] = [0.0, 0.0, R + 0.5]
    q[[7, 8, 9]] = [1.0, 0.0, R + 0.501]
    sim = Simulator(mech, q, dt=1e-2)
    src = sim.enable_impacts(restitution=0.5)
    rec = sim.run(0.33)
    evs = rec.events_of("impact")
    assert [e.data["pairs"] for e in evs] == [[["ball0", "ground"]], [["ball1", "ground"]]]
    for ev, h in zip(evs, (0.5, 0.501)):
        assert abs(ev.time - math.sqrt(2 * h / G)) <= src.tolerance
        # the impact speed of free fall, to what the time tolerance allows (g * tolerance)
        assert ev.data["normal_velocity_before"][0] == pytest.approx(-math.sqrt(2 * G * h), abs=G * src.tolerance)


def test_bad_options():
    mech = ball_row([1.0], ground=True)
    sim = Simulator(mech)
    with pytest.raises(ControlkitError, match="law must be one of propagative, simultaneous, plastic; got 'elastic'"):
        sim.enable_impacts(law="elastic")
    with pytest.raises(ControlkitError, match="tolerance must be a positive time"):
        sim.enable_impacts(tolerance=0.0)
