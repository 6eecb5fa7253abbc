"""A box touching a face with an edge or a corner only (no face of the box along the contact normal):
a plank leaning from the ground onto a box's top edge. The edge's support points must lie on the
edge itself; a plane through the box at the level of its nearest face's centre put them ~20 mm
inside it, and the rows' feedback pulled the plank through the edge in an impact every step."""
import math

import numpy as np
import pytest
from contact_cases import mechanical_energy

from robots import scenes
from sim.collision import CollisionWorld
from sim.contact import enable_contacts
from sim.simulator import Simulator

G = 9.81
PLANK = 2.0  # kg
L, T = 0.8, 0.02  # m: the plank's length and thickness


def _run(seconds: float, friction=(0.6, 0.5), **kw):
    b = scenes.plank_leaning(0.1, reach=0.5, plank=(L, 0.1, T), mass=PLANK, **kw)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    src = enable_contacts(sim, friction=friction)
    forces = []
    sim.control_phase.append(lambda s: forces.append(src.pair_forces(s)))
    rec = sim.run(seconds)
    return b, sim, rec, forces


def _edge_normal_force(angle: float) -> float:
    """The box edge's normal force on the plank (N) from its moments about the foot: the edge's
    friction acts along the plank's bottom face, which passes through the foot."""
    arm = L / 2 * math.cos(angle) - T / 2 * math.sin(angle)
    return PLANK * G * arm / math.hypot(0.5, 0.1)


@pytest.mark.parametrize("box_mass", [None, 5.0])
def test_a_plank_leaning_on_a_box_edge_rests_without_an_event(box_mass):
    b, sim, rec, forces = _run(0.5, box_mass=box_mass)
    assert {e.kind for e in rec.events} == {"contact_made"}
    assert all(e.time == 0.0 for e in rec.events)
    q = np.array(rec.q)
    assert np.abs(q - q[0]).max() < 1e-9
    assert min(CollisionWorld(sim.mech).distances(x).min() for x in rec.q) > -1e-9
    f = forces[-1]
    assert f["box/plank"]["normal"] == pytest.approx(_edge_normal_force(b.info["angle"]), rel=1e-9)
    # the plank's forces balance its weight (the edge's normal from the plank towards the box)
    a = b.info["angle"]
    on_box = f["box/plank"]["normal"] * np.array([math.sin(a), 0.0, -math.cos(a)]) + f["box/plank"]["friction"]
    on_plank = f["plank/ground"]["normal"] * np.array([0.0, 0.0, 1.0]) + f["plank/ground"]["friction"] - on_box
    np.testing.assert_allclose(on_plank, [0.0, 0.0, PLANK * G], atol=1e-9 * PLANK * G)
    if box_mass:  # the ground carries everything
        ground = sum(x["normal"] for k, x in f.items() if k.endswith("/ground"))
        assert ground == pytest.approx((PLANK + box_mass) * G, rel=1e-9)


def test_a_plank_leaning_on_a_box_corner_rests_without_an_event():
    b, sim, rec, forces = _run(0.5, box_yaw=math.pi / 4)
    assert {e.kind for e in rec.events} == {"contact_made"}
    q = np.array(rec.q)
    assert np.abs(q - q[0]).max() < 1e-9
    assert forces[-1]["box/plank"]["points"] == 1
    assert forces[-1]["box/plank"]["normal"] == pytest.approx(_edge_normal_force(b.info["angle"]), rel=1e-9)


@pytest.mark.parametrize("box_mass", [None, 5.0])
def test_a_plank_sliding_down_a_box_edge_keeps_touching_it_without_an_impact(box_mass):
    b, sim, rec, forces = _run(0.3, friction=(0.1, 0.08), box_mass=box_mass)
    assert {e.kind for e in rec.events} == {"contact_made"}
    mech = sim.mech
    world = CollisionWorld(mech)
    pair = [k for k, names in enumerate(world.names) if set(names) == {"box", "plank"}]
    gaps = np.array([world.distances(q)[pair[0]] for q in rec.q])
    assert np.abs(gaps).max() < 1e-9  # on the edge all the way down
    E = np.array([mechanical_energy(mech, q, v) for q, v in zip(rec.q, rec.v)])
    assert np.diff(E).max() <= 1e-12 * E[0]  # kinetic friction only takes energy
    assert E[-1] < E[0] - 0.01  # and it does slide
    j = mech.model.joints[mech.model.getJointId("plank_root")]
    x = np.array(rec.q)[:, j.idx_q]
    assert np.all(np.diff(x[1:]) < 0)  # down the edge, foot first
