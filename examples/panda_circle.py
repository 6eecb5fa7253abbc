"""Panda (or UR5) end-effector circle with a posture cost and joint limits as QP inequalities.

The tool point follows a 0.1 m circle (one turn in 2 s, smooth start and stop) by a
control equation; a posture cost fixes the null space. To make the limits work, the
posture target of one wrist joint is set past its position limit (``--push`` rad): the
posture cost pulls it there fast, the velocity damper caps its speed and the position
barrier stops it at the limit, all without disturbing the tracking. Position and
velocity limits are written at the acceleration level:

- position: ``qddot <= k^2 (q_max - q) - 2 k qdot`` (and the mirror image), a critically
  damped approach that can touch the limit and not cross it;
- velocity: ``qddot <= (v_max - qdot) / h`` (and the mirror image);
- torque: ``|tau| <= tau_max`` on the control torques directly.

The script prints the tracking error, each limit's smallest margin and whether it was
active, and writes a figure of the tracking error, the pushed joint's angle and speed
against their limits, and the joint torques.

    python examples/panda_circle.py [--robot panda|ur5] [--push 1.0] [--out out]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from controlkit.quantities import FramePoint
from controlkit.studies.compare import ROBOT_CIRCLES, TaskSetup, circle_setup
from controllers.arm import PathError
from sim.runner import Scenario
from sim.simulator import Simulator

#: the wrist joint whose posture target is pushed past its limit
PUSHED = {"panda": "panda_joint7", "ur5": "wrist_3_joint"}


def setup(robot: str = "panda", push: float = 1.0, dt: float = 1e-3, duration: float | None = None) -> TaskSetup:
    """The circle task with the pushed joint's posture target ``push`` rad past its upper limit."""
    s = circle_setup(robot, duration, dt=dt)
    joint = PUSHED[robot]
    i = s.mech.joint_q_slice(joint).start
    k = s.limits.joints.index(joint)
    offset = s.limits.q_max[k] + push - s.q0[i]
    return circle_setup(robot, duration, posture_offset={joint: offset}, dt=dt)


def make_simulator(s: TaskSetup) -> Simulator:
    """A simulator recording the tracking error (m) and the tool position (m)."""
    sim = Simulator(s.mech, s.q0, s.v0, dt=s.dt, integrator="rk4")
    tool = FramePoint(s.mech, s.tool)
    sim.record_quantities.update({"tool": tool, "tracking error": PathError(tool, s.path, lambda: sim.t)})
    sim.recording.set_unit("tool", "m")
    sim.recording.set_unit("tracking error", "m")
    sim.add_program(s.program)
    return sim


def margins(s: TaskSetup, rec, active_tol: float = 1e-3) -> dict[str, dict]:
    """Per kind of limit: the smallest margin over all samples and joints, and which joints touched it."""
    L = s.limits
    mech = s.mech
    iq = [mech.joint_q_slice(j).start for j in L.joints]
    iv = [mech.joint_v_slice(j).start for j in L.joints]
    it = [int(mech.tau_columns(j)[0]) for j in L.joints]
    q, v, tau = rec.q[:, iq], rec.v[:, iv], rec.tau[:, it]
    kinds = {"position": np.minimum(L.q_max - q, q - L.q_min),
             "velocity": L.v_max - np.abs(v),
             "torque": L.tau_max - np.abs(tau)}
    out = {}
    for kind, m in kinds.items():
        scale = {"position": 1.0, "velocity": L.v_max, "torque": L.tau_max}[kind]
        touched = [j for j, col, sc in zip(L.joints, m.T, np.broadcast_to(scale, len(L.joints))) if col.min() < active_tol * sc]
        out[kind] = {"margin": float(m.min()), "active": touched}
    return out


def build(integrator: str = "rk4", dt: float = 1e-3) -> Scenario:
    """The Panda circle as a scenario (``controlkit demo panda_circle``)."""
    s = setup("panda", dt=dt)
    sim = make_simulator(s)
    return Scenario("panda_circle", "Panda circle: posture cost, joint limits as QP inequalities", sim, s.duration,
                    model={"factory": "robots:load", "kwargs": {"name": "panda"}},
                    panels=[("tracking error", 0, "tracking error"), ("tool", None, "tool position")],
                    html={"traces": {"tool": "tool"}})


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robot", choices=sorted(ROBOT_CIRCLES), default="panda")
    p.add_argument("--push", type=float, default=1.0, help="posture target past the wrist joint's limit (rad)")
    p.add_argument("--dt", type=float, default=1e-3, help="RK4 step (s)")
    p.add_argument("--out", default="out", help="folder for the figure")
    args = p.parse_args(argv)
    s = setup(args.robot, args.push, args.dt)
    rec = make_simulator(s).run(s.duration)
    err = rec.quantity("tracking error")[:, 0]
    print(f"{args.robot} circle: tracking error max {err.max():.3e} m, RMS {np.sqrt(np.mean(err ** 2)):.3e} m")
    for kind, m in margins(s, rec).items():
        unit = {"position": "rad or m", "velocity": "rad/s or m/s", "torque": "N m or N"}[kind]
        print(f"  {kind:>8} limits: smallest margin {m['margin']:+.3e} ({unit}); active: {', '.join(m['active']) or 'none'}")

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    joint = PUSHED[args.robot]
    k = s.limits.joints.index(joint)
    i = s.mech.joint_q_slice(joint).start
    fig = Figure(figsize=(13, 3.4), layout="constrained")
    FigureCanvasAgg(fig)
    a0, a1, a2, a3 = fig.subplots(1, 4)
    a0.semilogy(rec.t, np.maximum(err, 1e-16))
    a0.set_ylabel("tracking error [m]")
    a1.plot(rec.t, rec.q[:, i])
    a1.axhline(s.limits.q_max[k], color="r", ls=":")
    a1.set_ylabel(f"{joint} [rad]")
    a2.plot(rec.t, rec.v[:, i])
    a2.axhline(s.limits.v_max[k], color="r", ls=":")
    a2.axhline(-s.limits.v_max[k], color="r", ls=":")
    a2.set_ylabel(f"{joint} speed [rad/s]")
    a3.plot(rec.t, rec.tau)
    a3.set_ylabel("torques [N m]")
    for ax in (a0, a1, a2, a3):
        ax.set_xlabel("t [s]")
        ax.grid(True, lw=0.4, alpha=0.5)
    path = Path(args.out) / f"{args.robot}_circle.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
