"""Random UR5 control programs: they run, or stop with a ControlkitError; never another exception.

Each seed draws a short program of random phases: joint PD holds and quintics, tool-position PD
and quintic moves, with random targets (some out of reach) and random durations; a phase may
leave directions of motion to the default. The run's state stays finite, or the run raises a
``ControlkitError`` that carries the recording up to the failure.
"""
import numpy as np
import pytest

import robots
from controlkit.errors import ControlkitError
from controllers import position_with_pd, position_with_quintic, set_angle_with_pd, set_angle_with_quintic
from sim.simulator import Simulator

JOINTS = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint")


@pytest.fixture(scope="module")
def ur5():
    return robots.load("ur5")


def random_program(seed: int):
    rng = np.random.default_rng(seed)
    phases = [(str(rng.choice(["joint_pd", "joint_quintic", "tool_pd", "tool_quintic", "mixed"])),
               float(rng.uniform(0.01, 0.06)), rng.normal(size=6) * 0.6, rng.normal(size=3) * 0.3)
              for _ in range(rng.integers(1, 4))]

    def program(ctl):
        for k, (kind, seconds, angles, shift) in enumerate(phases):
            for name in [n for n in ctl.equations.names()]:
                ctl.remove(name)
            target = ctl.value(ctl.point("tool0")) + shift
            if kind in ("joint_pd", "mixed"):
                for j, a in zip(JOINTS[: 6 if kind == "joint_pd" else 3], angles):
                    set_angle_with_pd(ctl, f"{k} {j}", j, a, 0.2)
            if kind == "joint_quintic":
                for j, a in zip(JOINTS, angles):
                    set_angle_with_quintic(ctl, f"{k} {j}", j, a, 0.0, seconds)
            if kind in ("tool_pd", "mixed"):
                position_with_pd(ctl, f"{k} tool", "tool0", target, 0.2)
            if kind == "tool_quintic":
                position_with_quintic(ctl, f"{k} tool", "tool0", target, np.zeros(3), seconds)
            yield ctl.after(seconds)
    return program


@pytest.mark.parametrize("seed", range(6))
def test_random_ur5_programs_run_or_raise_a_controlkit_error(ur5, seed):
    sim = Simulator(ur5, robots.load("ur5").q, dt=2e-3, integrator="rk4")
    sim.add_program(random_program(seed))
    try:
        rec = sim.run(0.12)
    except ControlkitError as exc:
        assert exc.recording is not None and len(exc.recording) >= 1
        return
    assert np.isfinite(rec.q).all() and np.isfinite(rec.v).all()


def test_a_tool_position_task_alone_warns_that_the_wrist_is_left_free(ur5):
    sim = Simulator(ur5, robots.load("ur5").q, dt=2e-3, integrator="rk4")

    def reach(ctl):
        target = ctl.value(ctl.point("tool0")) + np.array([0.1, -0.1, 0.05])
        position_with_quintic(ctl, "tool", "tool0", target, np.zeros(3), 0.5)
        yield ctl.after(0.5)
    sim.add_program(reach)
    rec = sim.run(0.3)
    warnings = rec.events_of("undetermined")
    assert len(warnings) == 1  # once
    assert "3 direction(s)" in warnings[0].description and "wrist" in warnings[0].description
    assert any(j.startswith("wrist") for j in warnings[0].data["joints"])


def test_a_fully_determined_task_does_not_warn(ur5):
    sim = Simulator(ur5, robots.load("ur5").q, dt=2e-3, integrator="rk4")

    def hold(ctl):
        for j in JOINTS:
            set_angle_with_pd(ctl, j, j, ctl.value(ctl.angle(j))[0] + 0.3, 0.2)
        yield ctl.after(1.0)
    sim.add_program(hold)
    assert not sim.run(0.2).events_of("undetermined")
