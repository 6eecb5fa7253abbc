"""Continuous contact of cylinders (sim.contact.curved): standing on a cap, lying and rolling on
a side's line, tipping onto the rim, on a half-space and on a box; pairs without a model refused."""
import math

import numpy as np
import pinocchio as pin
import pytest

from controlkit.errors import ModelError
from robots.definition import Body, Scene
from robots.scenes import ground_body
from robots.shapes import cuboid, cylinder, sphere
from sim.collision import CollisionWorld
from sim.contact import contacts_of, curved, enable_contacts
from sim.simulator import Simulator

G = 9.81


def _cylinder_scene(r=0.05, length=0.1, mass=1.0, *, lying=False, rpy=None, z=None, velocity=None, table=False):
    """A cylinder (axis z of its frame) on the ground (a half-space) or on a fixed box table (top at z = 0)."""
    s = Scene("cylinder")
    if table:
        s.add(Body("table", cuboid(0.6, 0.6, 0.1), mass=1.0), pin.SE3(np.eye(3), np.array([0, 0, -0.05])), fixed=True)
    else:
        g, gp = ground_body()
        s.add(g, gp, fixed=True)
    R = pin.rpy.rpyToMatrix(*(rpy if rpy is not None else ((math.pi / 2, 0, 0) if lying else (0, 0, 0))))
    z = (r if lying else length / 2) if z is None else z
    s.add(Body("cyl", cylinder(r, length), mass=mass), pin.SE3(R, np.array([0, 0, z])), velocity=velocity)
    return s.build()


def _kinetic(mech, q, v):
    mech.set_state(q, v)
    return mech.kinetic_energy()


@pytest.mark.parametrize("table", [False, True], ids=["half-space", "box"])
def test_standing_cylinder_rests_on_its_rim_with_its_weight(table):
    b = _cylinder_scene(table=table)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    enable_contacts(sim, friction=(0.5, 0.4))
    rec = sim.run(0.3)
    assert [ev.kind for ev in rec.events] == ["contact_made"]  # no event after it
    (c,) = contacts_of(sim, "cyl")
    assert str(c.region) == "face" and len(c.points) == 12
    assert np.allclose(np.linalg.norm(c.points[:, :2], axis=1), 0.05, atol=1e-12)  # on the rim
    assert c.normal_force == pytest.approx(1.0 * G, rel=1e-9)
    assert np.abs(rec.q[:, :3] - b.q0[:3]).max() <= 1e-9


@pytest.mark.parametrize("table", [False, True], ids=["half-space", "box"])
def test_lying_cylinder_rests_on_a_line_with_its_weight(table):
    b = _cylinder_scene(lying=True, table=table)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    enable_contacts(sim, friction=(0.5, 0.4))
    rec = sim.run(0.3)
    assert [ev.kind for ev in rec.events] == ["contact_made"]
    (c,) = contacts_of(sim, "cyl")
    assert str(c.region) == "edge" and len(c.points) == 2
    assert c.normal_force == pytest.approx(1.0 * G, rel=1e-9)
    assert np.abs(rec.q[:, :3] - b.q0[:3]).max() <= 1e-9


def test_sliding_cylinder_rolls_at_two_thirds_and_keeps_its_energy():
    """Thrown along the ground without spin: kinetic friction slows it and spins it up until
    v = omega r at t* = v0 / (3 mu_k g), v = 2/3 v0 (a solid cylinder, I = m r^2 / 2); then it
    rolls, its line of support re-established on the rolling axis' points."""
    v0, r, mu_k = 1.0, 0.05, 0.2
    b = _cylinder_scene(r=r, lying=True, velocity=(v0, 0, 0, 0, 0, 0))
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    enable_contacts(sim, friction=(0.3, mu_k))
    rec = sim.run(0.8)
    t_star = v0 / (3 * mu_k * G)
    assert [ev.kind for ev in rec.events] == ["contact_made", "stick"]
    assert rec.events[1].time == pytest.approx(t_star, abs=1e-8)
    ke = np.array([_kinetic(b.mechanism, q, v) for q, v in zip(rec.q, rec.v)])
    # the integrator's error (RK4 at 1 ms, 13 rad/s) is what is left: 1e-12 of it per step
    assert np.diff(ke).max() <= 2e-12 * ke[0]
    after = rec.t >= t_star + 1e-9
    assert np.ptp(ke[after]) <= 2e-9 * ke[0]
    assert ke[after][-1] == pytest.approx(ke[0] / 3 * 2, rel=1e-8)  # (1/2 + 1/4) m (2 v0 / 3)^2
    for q, v in zip(rec.q[after], rec.v[after]):
        R = pin.XYZQUATToSE3(q[:7]).rotation
        vel, w = R @ v[:3], R @ v[3:6]
        assert vel[0] == pytest.approx(2 / 3 * v0, abs=1e-8)
        assert w[1] * r == pytest.approx(vel[0], abs=1e-8)
        assert abs(q[2] - r) <= 1e-9


def test_tilted_cylinder_lands_on_its_rim_and_tips_onto_its_cap():
    """Dropped tilted by 0.3 rad (its lowest rim point 1 cm up), plastic: an impact on the rim's
    lowest point (a vertex), the cap comes down (an impact, a face of 12 rim points), it sticks and
    rests with its weight, never deeper than the penetration tolerance."""
    r, length, tilt = 0.05, 0.1, 0.3
    b = _cylinder_scene(r, length, rpy=(tilt, 0, 0), z=0.01 + r * math.sin(tilt) + length / 2 * math.cos(tilt))
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    enable_contacts(sim, friction=(0.5, 0.4))
    rec = sim.run(0.6)
    made = [(ev.kind, ev.data.get("region"), ev.data.get("points")) for ev in rec.events if ev.kind != "impact"]
    assert made[:2] == [("contact_made", "vertex", 1), ("contact_changed", "face", 12)]
    assert rec.events[0].kind == "impact" and rec.events[0].time == pytest.approx(math.sqrt(2 * 0.01 / G), abs=1e-6)
    (c,) = contacts_of(sim, "cyl")
    assert str(c.region) == "face" and c.normal_force == pytest.approx(G, rel=1e-6)
    w = CollisionWorld(b.mechanism)
    assert min(float(w.distances(q).min()) for q in rec.q) >= -1.1e-6


def test_board_rests_on_a_lying_cylinder_by_two_lines():
    """A board (0.5 kg) across a lying cylinder (1 kg) on the ground: the board's face on the
    cylinder's top line (a line contact on a moving box) and the cylinder's bottom line on the
    ground carry 0.5 g and 1.5 g, nothing moves."""
    s = Scene("log")
    g, gp = ground_body()
    s.add(g, gp, fixed=True)
    r = 0.05
    s.add(Body("log", cylinder(r, 0.2), mass=1.0), pin.SE3(pin.rpy.rpyToMatrix(math.pi / 2, 0, 0), np.array([0, 0, r])))
    s.add(Body("board", cuboid(0.3, 0.1, 0.02), mass=0.5), (0, 0, 2 * r + 0.01))
    b = s.build()
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    enable_contacts(sim, friction=(0.5, 0.4))
    rec = sim.run(0.2)
    assert [ev.kind for ev in rec.events] == ["contact_made", "contact_made"]
    forces = {c.other_geom: c for c in contacts_of(sim, "log")}
    assert str(forces["ground"].region) == str(forces["board"].region) == "edge"
    assert forces["ground"].normal_force == pytest.approx(1.5 * G, rel=1e-9)
    assert forces["board"].normal_force == pytest.approx(0.5 * G, rel=1e-9)
    assert np.abs(rec.q[-1] - b.q0).max() <= 1e-9


@pytest.mark.parametrize("yaw", [0.0, math.pi / 4])
def test_cylinder_normal_from_a_box_face_or_edge_is_exact(yaw):
    """A 1.6 cm square bar (a phalanx) upright beside an upright cylinder, turned by ``yaw`` about
    its axis: the normal is horizontal and points from the bar's nearest face (yaw 0: the face's
    normal) or edge (yaw 45 deg: along the line between the axes) to the cylinder's axis; coal's
    contact normal here is off by 4.5e-5 (face) and 9e-3 (edge)."""
    import coal

    cyl, bar = coal.Cylinder(0.025, 0.07), coal.Box(0.016, 0.016, 0.05)
    R = pin.rpy.rpyToMatrix(0, 0, yaw)
    reach = 0.008 * max(abs(math.cos(yaw)) + abs(math.sin(yaw)), 1.0)  # the bar's half-width along x
    Mb = pin.SE3(R, np.array([0.025 + reach, 0.0, 0.01]))
    n = curved.cylinder_normal(cyl, pin.SE3.Identity(), bar, Mb)
    assert np.allclose(n, [-1.0, 0.0, 0.0], atol=1e-12)
    assert curved.classify(np.array([0.0, 0.0, 1.0]), n) == "side"


def test_cylinder_pair_without_a_model_is_refused_by_name():
    s = Scene("pair")
    g, gp = ground_body()
    s.add(g, gp, fixed=True)
    s.add(Body("cyl", cylinder(0.05, 0.1), mass=1.0), (0, 0, 0.05))
    s.add(Body("ball", sphere(0.05), mass=1.0), (0, 0, 0.3))
    b = s.build()
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3)
    with pytest.raises(ModelError, match=r"cyl/ball \(Cylinder/Sphere\)|ball/cyl \(Sphere/Cylinder\)"):
        enable_contacts(sim)
