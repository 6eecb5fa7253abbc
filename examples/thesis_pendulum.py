"""The thesis' pendulum of four links and a ball (Fig. 2.2) swinging down from rest."""
import numpy as np

import robots
from controlkit.quantities import FramePoint
from sim.runner import Scenario, run_scenario
from sim.simulator import Simulator


def build(integrator: str = "dopri5", dt: float = 1e-3) -> Scenario:
    pend = robots.thesis_pendulum()
    mech = pend.mechanism
    ball = FramePoint(mech, "pendulum.ball")
    sim = Simulator(mech, pend.q0, pend.v0, dt=dt, integrator=integrator, rtol=1e-9, atol=1e-11,
                    record={"ball position": ball, "energy": _Energy(mech)}, record_every=5)
    sim.recording.set_unit("ball position", "m")
    sim.recording.set_unit("energy", "J")

    def summary(rec):
        e = rec.quantity("energy")[:, 0]
        return f"energy drift over the run: {np.abs(e - e[0]).max():.3g} J (of {np.ptp(e) + abs(e[0]):.3g} J)"

    return Scenario("thesis_pendulum", "thesis pendulum of four links and a ball (Fig. 2.2)", sim, 3.0,
                    model={"factory": "robots:thesis_pendulum", "kwargs": {}},
                    panels=[("ball position", 0, "ball x"), ("ball position", 1, "ball y"),
                            ("ball position", 2, "ball z"), ("energy", 0, "total energy")],
                    html={"traces": {"ball": "ball position"}}, summary=summary)


class _Energy:
    """Total mechanical energy (J) as a recordable quantity."""

    name = "energy"

    def __init__(self, mech):
        self.mech = mech

    def position(self, mech):
        return np.array([mech.energy()])


if __name__ == "__main__":
    run_scenario(build(), out="out", html="out/thesis_pendulum.html", plot="out/thesis_pendulum.png")
