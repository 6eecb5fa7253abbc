"""The thesis' friction block (Fig. 5.10, 5.11): pushed until it slides, then stopped by friction.

A 48 kg block rests on a table (mu_static .9, mu_kinetic .6). From 1 s a force growing
exponentially pushes it along x; it is constant from 3.25 s and removed at 3.75 s. The
thesis gives the slip onset (about 2.7 s), the stop (about 5.6 s) and a normal force of
m g = 470.88 N throughout; the force's growth rate is not given, so the push here is
``A (exp(1.3 (t - 1)) - 1)`` with A chosen so the static limit is reached at 2.7 s.
"""
import math

import numpy as np

import robots
from sim.contact import enable_contacts
from sim.runner import Scenario, run_scenario
from sim.simulator import Simulator

MASS, G = 48.0, 9.81
MU_STATIC, MU_KINETIC = 0.9, 0.6
PUSH_START, PUSH_HOLD, PUSH_END = 1.0, 3.25, 3.75  # s
GROWTH = 1.3  # 1/s
AMPLITUDE = MU_STATIC * MASS * G / (math.exp(GROWTH * (2.7 - PUSH_START)) - 1.0)  # N


def push(t: float) -> float:
    """The applied force along x (N) at time t (s)."""
    if t < PUSH_START or t >= PUSH_END:
        return 0.0
    return AMPLITUDE * (math.exp(GROWTH * (min(t, PUSH_HOLD) - PUSH_START)) - 1.0)


def build(dt: float = 1e-2) -> Scenario:
    scene = robots.scenes.friction_block(MASS, mu_static=MU_STATIC, mu_kinetic=MU_KINETIC)
    mech = scene.mechanism

    def applied(t, mech):
        f = np.zeros(mech.nv)
        f[0] = push(t)  # the free flyer's first coordinate: force along x at the block's centre
        return f

    sim = Simulator(mech, scene.q0, scene.v0, dt=dt, integrator="rk4", external_force=applied)
    for t in (PUSH_START, PUSH_HOLD, PUSH_END):
        sim.at(t, lambda s: None)  # steps land on the force's corners
    contacts = enable_contacts(sim, friction=(MU_STATIC, MU_KINETIC))
    sim.record_quantities.update({
        "block x position": _Component(lambda m: m.q[0]),
        "block x velocity": _Component(lambda m: m.v[0]),
        "block x acceleration": _Component(lambda m: m.solution.a[0]),
        "contact force": contacts.force_probe(sim, "block", "table"),
        "applied force": _Component(lambda m: push(sim.t)),
    })
    for name, unit in (("block x position", "m"), ("block x velocity", "m/s"), ("block x acceleration", "m/s^2"),
                       ("contact force", "N"), ("applied force", "N")):
        sim.recording.set_unit(name, unit)

    def summary(rec):
        ev = {e.kind: e.time for e in rec.events if e.kind in ("slip", "stick")}
        f = rec.quantity("contact force")
        sliding = (rec.t > ev.get("slip", np.inf) + 1e-3) & (rec.t < ev.get("stick", np.inf) - 1e-3)

        def when(kind):  # a short run may end before the block slips or sticks
            return f"{ev[kind]:.4f} s" if kind in ev else f"- (not within the run's {rec.t[-1]:.2f} s)"
        friction = (f"sliding friction {np.abs(f[sliding, 1]).mean():.2f} N" if sliding.any()
                    else "no sliding within the run")
        return (f"slip at {when('slip')} (thesis ~2.7), stick at {when('stick')} (thesis ~5.6); "
                f"normal force {f[:, 0].min():.2f}..{f[:, 0].max():.2f} N (m g = {MASS * G:.2f}); "
                f"{friction} (0.6 m g = {MU_KINETIC * MASS * G:.2f})")

    return Scenario("friction_block", "friction block (thesis Fig. 5.10-5.11)", sim, 6.5,
                    model={"factory": "robots.scenes:friction_block", "kwargs": {}},
                    panels=[("block x position", 0, "block x position"), ("block x velocity", 0, "block x velocity"),
                            ("block x acceleration", 0, "block x acceleration"),
                            ("contact force", 1, "total frictional force (x)"), ("contact force", 0, "normal force"),
                            ("applied force", 0, "applied force on block")],
                    summary=summary)


class _Component:
    """A scalar of the mechanism's state as a recordable quantity."""

    name = "component"

    def __init__(self, fn):
        self.fn = fn

    def position(self, mech):
        return np.array([float(self.fn(mech))])


if __name__ == "__main__":
    run_scenario(build(), out="out", plot="out/friction_block.png")
