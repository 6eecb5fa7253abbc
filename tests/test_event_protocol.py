"""The core's event-source protocol (controlkit/events.py): a source written on it runs in the
simulator, its kind is the enum that also compares equal to the simulator's strings."""
import numpy as np

from controlkit.events import EventKind, EventSource
from models import pendulum
from sim.events import ACCELERATION, VELOCITY
from sim.simulator import Simulator


class _ElasticWall(EventSource):
    """A wall at angle 0 (the bottom of the swing): the pendulum's velocity is reversed when it reaches it."""

    name, kind, tolerance = "wall", EventKind.VELOCITY, 1e-10

    def __init__(self):
        self.hits = []

    def guards(self, sim, t, q, v):
        return np.array([q[0]])

    def handle(self, sim, t, fired):
        self.hits.append((t, float(sim.q[0]), float(sim.v[0])))
        sim.set_state(v=-sim.v)


def test_kinds_are_the_simulators_strings():
    assert EventKind.VELOCITY == VELOCITY == "velocity" and EventKind.ACCELERATION == ACCELERATION
    assert f"{EventKind.VELOCITY}" == "velocity"


def test_a_core_event_source_bounces_a_pendulum_off_a_wall_conserving_its_energy():
    mech = pendulum(1, actuated=False)
    sim = Simulator(mech, np.array([0.5]), dt=1e-3)
    wall = _ElasticWall()
    sim.add_source(wall)
    mech.set_state(np.array([0.5]))
    e0 = mech.energy()
    rec = sim.run(2.0)
    assert len(wall.hits) >= 2  # released at 0.5 rad, it strikes the wall and comes back to strike again
    for _, angle, rate in wall.hits:
        assert abs(angle) <= 1e-8 and rate < 0.0  # isolated at the wall, moving into it
    assert rec.q[:, 0].min() >= -1e-8  # never through the wall
    mech.set_state(sim.q, sim.v)
    assert abs(mech.energy() - e0) <= 1e-6 * abs(e0)  # elastic: the reversal keeps the energy
