"""A body resting on contacts with several other bodies that rest themselves (a plank across two
free blocks on the ground): the last contact's rows are dependent on the others' through the other
bodies, and its points must still carry load."""
import math

import numpy as np
import pytest
from contact_cases import mechanical_energy

from robots import scenes
from sim.collision import CollisionWorld
from sim.contact import enable_contacts
from sim.simulator import Simulator

G = 9.81
FRICTION = (0.6, 0.5)
PLANK, BLOCK = 2.0, 1.0  # kg


def _run(T: float, angle: float = 0.0, offset: float = 0.0, push: float = 0.0, right_first: bool = False):
    b = scenes.plank_on_blocks(angle, offset, block_mass=BLOCK, right_first=right_first)
    v0 = np.array(b.v0, dtype=float)
    if push:  # along x (the scene is flat when pushed)
        v0[b.mechanism.model.joints[b.mechanism.model.getJointId("plank_root")].idx_v] = push
    sim = Simulator(b.mechanism, b.q0, v0, dt=1e-3, integrator="rk4")
    src = enable_contacts(sim, friction=FRICTION)
    forces = []
    sim.control_phase.append(lambda s: forces.append(src.pair_forces(s)))
    return b, sim, src, sim.run(T), forces


def _plank_q(b, rec) -> np.ndarray:
    j = b.mechanism.model.joints[b.mechanism.model.getJointId("plank_root")]
    return np.array(rec.q)[:, j.idx_q:j.idx_q + 7]


def _normal_sum(forces: dict, body: str) -> float:
    return sum(f["normal"] for k, f in forces.items() if body in k.split("/"))


@pytest.mark.parametrize("offset", [0.0, 0.12, -0.17])
def test_a_plank_across_two_free_blocks_rests_on_both_without_an_event(offset):
    b, sim, src, rec, forces = _run(1.0, offset=offset)
    assert [(e.kind, e.time) for e in rec.events] == [("contact_made", 0.0)] * 4
    q = np.array(rec.q)
    assert np.abs(q - q[0]).max() < 1e-9  # neither the plank nor a block tips
    assert len(forces[-1]) == 4
    # the plank's contacts carry its weight; the ground carries everything
    assert _normal_sum(forces[-1], "plank") == pytest.approx(PLANK * G, rel=1e-9)
    assert _normal_sum(forces[-1], "ground") == pytest.approx((PLANK + 2 * BLOCK) * G, rel=1e-9)
    assert min(CollisionWorld(sim.mech).distances(x).min() for x in rec.q) > -1e-9


def test_a_plank_across_two_free_blocks_on_a_slope_within_friction_stays():
    b, sim, src, rec, forces = _run(1.0, angle=0.35, offset=0.05)  # tan 0.365 < mu_s 0.6
    assert [e.kind for e in rec.events] == ["contact_made"] * 4
    q = np.array(rec.q)
    assert np.abs(q - q[0]).max() < 1e-9
    assert _normal_sum(forces[-1], "ground") == pytest.approx((PLANK + 2 * BLOCK) * G * math.cos(0.35), rel=1e-9)


@pytest.mark.parametrize("right_first", [False, True])
def test_a_plank_pushed_across_two_free_blocks_stops_after_v0_squared_over_2_mu_k_g(right_first):
    v0 = 0.3
    b, sim, src, rec, forces = _run(0.2, offset=0.05, push=v0, right_first=right_first)
    mu_k = FRICTION[1]
    x = _plank_q(b, rec)[:, 0] - 0.05
    t = np.array(rec.t)
    stop = v0 / (mu_k * G)
    moving = t <= stop
    np.testing.assert_allclose(x[moving], v0 * t[moving] - 0.5 * mu_k * G * t[moving] ** 2, atol=1e-9)
    assert x[-1] == pytest.approx(v0**2 / (2 * mu_k * G), abs=1e-9)
    # it slides straight on both blocks, which stay where they are
    assert np.abs(_plank_q(b, rec)[:, 1:] - _plank_q(b, rec)[0, 1:]).max() < 1e-9
    q = np.array(rec.q)
    for name in ("left", "right"):
        j = b.mechanism.model.joints[b.mechanism.model.getJointId(f"{name}_root")]
        assert np.abs(q[:, j.idx_q:j.idx_q + 7] - q[0, j.idx_q:j.idx_q + 7]).max() < 1e-9
    # two events: the slides on both blocks end (at the stop); no chatter
    kinds = [e.kind for e in rec.events if e.time > 0.0]
    assert len(kinds) <= 4 and "impact" not in kinds
    assert _normal_sum(forces[-1], "plank") == pytest.approx(PLANK * G, rel=1e-9)


def test_each_free_block_carries_half_a_centred_plank():
    # the plank's load spread over both blocks' points (its second block's points are linked: no rows
    # of their own), so each contact reports its share; centred, by symmetry, half each
    b, sim, src, rec, forces = _run(0.2)
    f = forces[-1]
    for name in ("left", "right"):
        plank = next(v for k, v in f.items() if set(k.split("/")) == {name, "plank"})
        ground = next(v for k, v in f.items() if set(k.split("/")) == {name, "ground"})
        assert plank["normal"] == pytest.approx(PLANK * G / 2, rel=1e-9)
        assert ground["normal"] == pytest.approx((BLOCK + PLANK / 2) * G, rel=1e-9)


def test_a_plank_sliding_and_turning_across_two_free_blocks_loses_energy_and_stops_on_both():
    # kinetic friction on the spread load at every point of both contacts brakes the turn; on the held
    # forces alone (pulling at one end, pushing at the other) it drove it (0.3 -> 0.52 rad/s)
    b = scenes.plank_on_blocks(0.0, 0.0, block_mass=BLOCK)
    mech = b.mechanism
    v0 = np.array(b.v0, dtype=float)
    iv = mech.model.joints[mech.model.getJointId("plank_root")].idx_v
    v0[iv:iv + 6] = (0.2, 0.0, 0.0, 0.0, 0.0, 0.3)  # m/s along x, rad/s about z
    sim = Simulator(mech, b.q0, v0, dt=1e-3, integrator="rk4")
    src = enable_contacts(sim, friction=FRICTION)
    rec = sim.run(0.1)
    E = np.array([mechanical_energy(mech, q, v) for q, v in zip(rec.q, rec.v)])
    assert np.diff(E).max() <= 1e-12 * np.abs(E).max()
    w = [v[iv + 5] for v in rec.v]
    assert max(w) == pytest.approx(0.3, abs=1e-6)  # never spun up
    assert np.abs(sim.v).max() < 1e-6  # at rest
    assert not [e for e in rec.events if e.kind in ("contact_broken", "impact") and e.time > 0.0]
    assert sorted(h.label for h in src.hinges.values()) == \
        ["left/ground", "left/plank", "right/ground", "right/plank"]
    assert min(CollisionWorld(mech).distances(x).min() for x in rec.q) > -1e-9


def test_a_pyramid_of_six_free_boxes_rests_without_an_event():
    # three on the ground, two on those, one on top: each upper box rests on two that rest themselves
    from robots.definition import Body, Scene
    from robots.shapes import cuboid

    s = Scene("pyramid")
    g, gp = scenes.ground_body()
    s.add(g, gp, fixed=True)
    rows = [(0.05, (-0.21, 0.0, 0.21)), (0.15, (-0.1, 0.11)), (0.25, (0.0,))]
    for level, (z, xs) in enumerate(rows):
        for i, x in enumerate(xs):
            s.add(Body(f"box_{level}{i}", cuboid(0.2, 0.2, 0.1), mass=1.0, material="wood"), (x, 0.0, z))
    b = s.build()
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    enable_contacts(sim, friction=FRICTION)
    rec = sim.run(0.2)
    assert [e.kind for e in rec.events] == ["contact_made"] * 9
    q = np.array(rec.q)
    assert np.abs(q - q[0]).max() < 1e-9
    assert min(CollisionWorld(sim.mech).distances(x).min() for x in rec.q) > -1e-9
