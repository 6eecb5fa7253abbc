"""A complete coroutine controller: a UR5 swings its shoulder, waits until the tool has moved 20 cm, then holds."""
import numpy as np

import robots
from controlkit.quantities import FramePoint
from controllers import set_angle_with_pd, set_angle_with_quintic
from sim.runner import Scenario, run_scenario
from sim.simulator import Simulator

JOINTS = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint")


def swing_then_hold(ctl):
    tool = ctl.point("tool0")
    start = ctl.value(tool)
    # phase 1: pan and lift along quintics (1 s), the other joints stiff
    set_angle_with_quintic(ctl, "pan", "shoulder_pan_joint", 1.0, 0.0, 1.0)
    set_angle_with_quintic(ctl, "lift", "shoulder_lift_joint", -0.8, 0.0, 1.0)
    for j in JOINTS[2:]:
        set_angle_with_pd(ctl, f"hold {j}", j, ctl.value(ctl.angle(j))[0], 0.2)
    yield ctl.until(lambda: np.linalg.norm(ctl.value(tool) - start) > 0.2, label="tool moved 20 cm")
    ctl.log("tool moved 20 cm", tool=ctl.value(tool).tolist())
    # phase 2: freeze the shoulder where it is now, with PD control equations
    ctl.remove("pan", "lift")
    for j in JOINTS[:2]:
        set_angle_with_pd(ctl, f"hold {j}", j, ctl.value(ctl.angle(j))[0], 0.3)
    yield ctl.after(0.5)


def build(integrator: str = "rk4", dt: float = 1e-3) -> Scenario:
    ur5 = robots.load("ur5")
    sim = Simulator(ur5, ur5.q, dt=dt, integrator=integrator, record={"tool": FramePoint(ur5, "tool0")})
    sim.recording.set_unit("tool", "m")
    sim.add_program(swing_then_hold)
    return Scenario("ur5_phases", "UR5 two-phase coroutine controller", sim, 1.5,
                    model={"factory": "robots:load", "kwargs": {"name": "ur5"}},
                    panels=[("tool", i, f"tool {c}") for i, c in enumerate("xyz")], html={"traces": {"tool": "tool"}})


if __name__ == "__main__":
    run_scenario(build(), out="out", html="out/ur5_phases.html", plot="out/ur5_phases.png")
