"""A tall box tipped onto one bottom edge and let go: it falls onto its face, and the plastic impact
of the far edge lifts the near one (the rocking transfer), so it rocks between its two bottom edges,
each rock lower, until the edge it lifts leaves slower than the rest speed: then it lies on its face.
Held at that parting speed by the face contact's rows, the lifted edge was stopped by their feedback
while the box's weight did work on it: the box rocked on without end at ~2.8 mm/s, 200 to 480 impacts per
second, each landing a slack deeper (0.3 mm after 3 s)."""
import math

import numpy as np
import pytest
from contact_cases import energy_rise

from robots import scenes
from sim.collision import CollisionWorld
from sim.contact import enable_contacts
from sim.simulator import Simulator


def _tipped_box(width: float, height: float, raised: float, seconds: float):
    """A 1 kg box ``width`` x 0.1 x ``height`` (m) standing on the ground on one bottom edge, the other
    ``raised`` (m) above it, at rest; plastic impacts, mu 0.6 / 0.5; rk4 at 1 ms."""
    tilt = math.asin(raised / width)
    body = dict(name="box", box=(width, 0.1, height), mass=1.0, rpy=(0.0, tilt, 0.0),
                position=(0.0, 0.0, 0.5 * width * math.sin(tilt) + 0.5 * height * math.cos(tilt)))
    b = scenes.free_bodies([body])
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    src = enable_contacts(sim, friction=(0.6, 0.5), restitution=0.0)
    return b.mechanism, sim, src, sim.run(seconds)


@pytest.mark.parametrize("width, height, raised", [(0.1, 0.3, 1e-3), (0.08, 0.2, 5e-4), (0.06, 0.12, 1e-3)])
def test_a_tall_box_tipped_onto_an_edge_rocks_lower_each_time_and_comes_to_rest_on_its_face(width, height, raised):
    mech, sim, src, rec = _tipped_box(width, height, raised, 1.5)
    impacts = [e for e in rec.events if e.kind == "impact"]
    approach = [-min(e.data["normal_velocity_before"]) for e in impacts]
    assert len(impacts) >= 5  # it rocks...
    assert all(b < a for a, b in zip(approach, approach[1:]))  # ...each rock lower (m/s)
    assert max(e.time for e in rec.events) < 1.0  # s: then lies still (measured 0.14 to 0.43 s)
    assert np.abs(sim.v).max() < 1e-9  # m/s, rad/s
    (hinge,) = src.hinges.values()
    assert hinge.region == "face" and len(hinge.support()) == 4
    # the last impact brought every point of the face to rest, the lifted edge too
    assert np.abs(impacts[-1].data["normal_velocity_after"]).max() < 1e-9
    world = CollisionWorld(mech)
    assert min(world.distances(q).min() for q in rec.q) > -1e-4  # m (measured 5 to 9 um)
    # kinetic + potential energy never above its value at the previous impact
    assert energy_rise(mech, rec) <= 1e-9
