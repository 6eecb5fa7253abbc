"""What touches what (sim.contact.contacts_of): the other body, region, support points, mode and
forces of each contact touching a body, from the last solve."""
import numpy as np
import pytest

from robots import scenes
from sim.contact import contacts_of, enable_contacts
from sim.simulator import Simulator


def _box(velocity=None, dt=1e-2):
    b = scenes.box_on_ground(size=(0.2, 0.3, 0.1), mass=2.0, velocity=velocity)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=dt, integrator="rk4")
    src = enable_contacts(sim, friction=(0.5, 0.4))
    return sim, src


def test_a_box_resting_on_the_ground_touches_it_at_four_corners_carrying_its_weight():
    sim, src = _box()
    sim.run(0.2)
    mg = 2.0 * float(np.linalg.norm(sim.mech.model.gravity.linear))
    (c,) = contacts_of(sim, "box")
    assert (c.geom, c.other, c.other_geom) == ("box", "universe", "ground")
    assert c.region == "face" and c.mode == "stick" and len(c.points) == 4
    # the sole's corners on the ground plane (m, world)
    np.testing.assert_allclose(np.sort(np.abs(c.points[:, :2]), axis=0), [[0.1, 0.15]] * 4, atol=1e-6)
    np.testing.assert_allclose(c.points[:, 2], 0.0, atol=1e-6)
    np.testing.assert_allclose(c.normal, [0.0, 0.0, 1.0], atol=1e-12)
    assert np.all(c.normal_forces >= -1e-9)
    assert c.normal_force == pytest.approx(mg, rel=1e-9)
    np.testing.assert_allclose(c.force, [0.0, 0.0, mg], atol=1e-9 * mg)
    # the same contact seen from the ground: the reaction, by the body's name as well as the geometry's
    (g,) = contacts_of(sim, "ground")
    assert (g.other, g.other_geom) == ("box_root", "box")
    np.testing.assert_allclose(g.force, -c.force)
    np.testing.assert_allclose(g.normal, -c.normal)
    assert [x.geom for x in contacts_of(sim, "box_root")] == ["box"]
    assert [x.geom for x in src.contacts_of("box")] == ["box"]
    assert contacts_of(sim, "no such body") == []
    assert [x.geom for x in sim.contacts_of("box")] == ["box"]  # the simulator's own query, for controllers


def test_a_sliding_box_meets_kinetic_friction_against_its_motion():
    sim, _ = _box(velocity=(1.0, 0.0, 0.0, 0.0, 0.0, 0.0), dt=1e-3)
    sim.run(0.05)
    assert sim.v[0] > 0.5  # still sliding along +x
    (c,) = contacts_of(sim, "box")
    mg = 2.0 * float(np.linalg.norm(sim.mech.model.gravity.linear))
    assert c.mode == "slide" and c.region == "face"
    assert c.normal_force == pytest.approx(mg, rel=1e-9)
    np.testing.assert_allclose(c.force, [-0.4 * mg, 0.0, mg], atol=1e-9 * mg)


def test_nothing_touches_a_box_in_the_air():
    b = scenes.box_on_ground(height=0.5)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-2, integrator="rk4")
    enable_contacts(sim)
    assert contacts_of(sim, "box") == []
