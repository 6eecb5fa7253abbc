"""One body resting on several contacts with the same other body in one plane (a plank across two
blocks, a stool on its four legs): the contacts share one support, whose rows and forces are the
first contact's."""
import math

import numpy as np
import pytest

from robots import scenes
from sim.collision import CollisionWorld
from sim.contact import enable_contacts
from sim.simulator import Simulator

G = 9.81
FRICTION = (0.6, 0.5)


def _plank_run(angle: float, offset: float, T: float, dt: float = 1e-3):
    b = scenes.plank_on_blocks(angle, offset)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=dt, integrator="rk4")
    src = enable_contacts(sim, friction=FRICTION)
    forces = []
    sim.control_phase.append(lambda s: forces.append(src.pair_forces(s)))
    return b, sim, src, sim.run(T), forces


def _downhill(b, rec) -> np.ndarray:
    """The plank's displacement (m) along the slope at every sample."""
    q = np.array(rec.q)
    return (q[:, :3] - q[0, :3]) @ b.info["downhill"]


@pytest.mark.parametrize("offset", [0.0, 0.12, -0.17])
def test_a_plank_across_two_blocks_rests_on_both_without_an_event(offset):
    b, sim, src, rec, forces = _plank_run(0.0, offset, 1.0)
    assert [(e.kind, e.time) for e in rec.events] == [("contact_made", 0.0)] * 2
    q = np.array(rec.q)
    assert np.abs(q - q[0]).max() < 1e-9  # it does not tip about either block's inner edge
    assert sorted(f for f in forces[-1]) == ["plank/left", "plank/right"]
    # both contacts carry the weight between them; each sticks
    assert sum(f["normal"] for f in forces[-1].values()) == pytest.approx(2.0 * G, rel=1e-9)
    assert {str(f["mode"]) for f in forces[-1].values()} == {"stick"}
    assert min(CollisionWorld(sim.mech).distances(x).min() for x in rec.q) > -1e-9


def test_a_plank_across_two_blocks_on_a_slope_within_friction_stays():
    angle = 0.35  # tan 0.365 < mu_s 0.6
    b, sim, src, rec, forces = _plank_run(angle, 0.05, 1.0)
    assert [e.kind for e in rec.events] == ["contact_made"] * 2
    assert np.abs(_downhill(b, rec)).max() < 1e-9
    normal = sum(f["normal"] for f in forces[-1].values())
    friction = sum(f["friction"] for f in forces[-1].values())
    assert normal == pytest.approx(2.0 * G * math.cos(angle), rel=1e-9)
    assert friction @ b.info["downhill"] == pytest.approx(-2.0 * G * math.sin(angle), rel=1e-9)


def test_a_plank_across_two_blocks_beyond_friction_slides_with_g_sin_minus_mu_k_cos():
    angle = 0.6  # tan 0.684 > mu_s 0.6
    b, sim, src, rec, forces = _plank_run(angle, 0.05, 0.4)
    assert [(e.kind, e.data.get("mode")) for e in rec.events] == [("contact_made", "slide")] * 2
    t = np.array(rec.t)
    a = G * (math.sin(angle) - FRICTION[1] * math.cos(angle))
    np.testing.assert_allclose(_downhill(b, rec), 0.5 * a * t**2, atol=1e-9)
    q = np.array(rec.q)
    assert np.abs(q[:, 3:] - q[0, 3:]).max() < 1e-9  # it slides without turning


def _reversed_plank_scene(offset: float):
    """:func:`robots.scenes.plank_on_blocks` with its blocks added right first."""
    import pinocchio as pin

    from robots.definition import Body, Scene
    from robots.shapes import cuboid

    s = Scene("plank_on_blocks_reversed")
    for name, x in (("right", 0.3), ("left", -0.3)):
        blk, _ = scenes.ground_body(name, (0.2, 0.2), 0.1, halfspace=False, material="wood")
        s.add(blk, pin.SE3(np.eye(3), np.array([x, 0.0, -0.05])), fixed=True)
    s.add(Body("plank", cuboid(0.8, 0.1, 0.02), mass=2.0, material="wood"), (offset, 0.0, 0.01))
    return s.build()


def test_the_shared_support_does_not_depend_on_which_block_was_added_first():
    ends = []
    for b in (scenes.plank_on_blocks(0.0, 0.12), _reversed_plank_scene(0.12)):
        sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
        # pushed along x: the contacts slide together, then stick together
        sim.v = np.array([0.3, 0.0, 0.0, 0.0, 0.0, 0.0])
        enable_contacts(sim, friction=FRICTION)
        rec = sim.run(0.2)
        ends.append(([e.kind for e in rec.events], np.array(rec.q)[-1]))
    assert ends[0][0] == ends[1][0] == ["contact_made", "contact_made", "stick", "stick"]
    np.testing.assert_allclose(ends[0][1], ends[1][1], atol=1e-12)
    # it stops after v0^2 / (2 mu_k g), without turning
    assert ends[0][1][0] - 0.12 == pytest.approx(0.3**2 / (2 * FRICTION[1] * G), abs=1e-9)
    np.testing.assert_allclose(ends[0][1][3:], [0, 0, 0, 1], atol=1e-12)


def test_a_plank_sliding_and_turning_across_two_blocks_is_braked_to_rest():
    import pinocchio as pin

    b = scenes.plank_on_blocks(0.0, 0.0)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    sim.v = np.array([0.2, 0.0, 0.0, 0.0, 0.0, 1.0])  # m/s along x, rad/s about z
    enable_contacts(sim, friction=FRICTION)
    rec = sim.run(0.3)
    model, data = sim.mech.model, sim.mech.data
    energy = np.array([0.5 * v @ pin.crba(model, data, q) @ v + 2.0 * G * q[2] for q, v in zip(rec.q, rec.v)])
    # kinetic friction at every point of both contacts only takes energy out (each point's friction
    # opposes its own slip: held forces far from physical ones would drive the turn instead)
    assert np.diff(energy).max() < 1e-12
    assert [(e.kind, e.data.get("mode")) for e in rec.events] == [("contact_made", "slide")] * 2 + [("stick", "stick")] * 2
    assert np.abs(rec.v[-1]).max() < 1e-12 and energy[-1] == pytest.approx(2.0 * G * 0.01, abs=1e-12)


def test_a_stool_stands_still_on_its_four_legs_and_slides_to_a_stop_on_them():
    # one body, four leg boxes on one ground: the legs' contacts share the plane of their feet
    for v0 in (0.0, 1.0):
        b = scenes.stool(velocity=(v0, 0.0, 0.0, 0.0, 0.0, 0.0))
        sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
        enable_contacts(sim, friction=FRICTION)
        rec = sim.run(0.5)
        mode = "slide" if v0 else "stick"
        events = [(e.kind, e.data.get("mode")) for e in rec.events]
        assert events == [("contact_made", mode)] * 4 + ([("stick", "stick")] * 4 if v0 else [])
        q = np.array(rec.q)
        assert np.abs(q[:, 1:] - q[0, 1:]).max() < 1e-9  # upright, at its height, straight
        # sliding at mu_k g, it stops at v0^2 / (2 mu_k g) after v0 / (mu_k g)
        mu_k = FRICTION[1]
        assert q[-1, 0] == pytest.approx(v0**2 / (2 * mu_k * G), abs=1e-9)
        if v0:
            assert rec.events[-1].time == pytest.approx(v0 / (mu_k * G), abs=1e-9)


def test_a_plank_dropped_flat_on_two_blocks_bounces_at_the_analytic_times_and_rests_on_both():
    e, h = 0.5, 0.01
    b = scenes.plank_on_blocks(0.0, 0.05)
    q0 = np.array(b.q0)
    q0[2] += h
    sim = Simulator(b.mechanism, q0, b.v0, dt=1e-3, integrator="rk4")
    enable_contacts(sim, friction=FRICTION, restitution=e)
    rec = sim.run(0.5)
    impacts = [ev.time for ev in rec.events if ev.kind == "impact"]
    t0 = math.sqrt(2 * h / G)
    expected = [t0 * (1 + 2 * sum(e**i for i in range(1, k + 1))) for k in range(len(impacts))]
    # (the first two to 1e-8 s, landing at 0.44 and 0.22 m/s; the last, at millimetres per second, to 1e-6 s:
    # the guards' distance tolerance over the landing speed)
    assert len(impacts) >= 5
    np.testing.assert_allclose(impacts[:2], expected[:2], rtol=0, atol=1e-8)
    np.testing.assert_allclose(impacts, expected, rtol=0, atol=1e-6)
    # it rests once a bounce cannot rise past the contact's rest speed, on both blocks at once
    assert [ev.kind for ev in rec.events[len(impacts):]] == ["contact_made"] * 2
    assert rec.events[-1].time == impacts[-1]
    q = np.array(rec.q)
    # flat throughout; at rest at the depth of its last landing (within the guards' tolerance)
    assert np.abs(q[-1] - b.q0).max() < 1e-8 and np.abs(q[:, 3:6]).max() < 1e-12
