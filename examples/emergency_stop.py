"""Emergency stop of a UR5: joints 1, 2, 3 lock one after the other (seed 002, section 7).

At t = 0 the robot is moving (shoulder pan, shoulder lift and elbow turning) and the
emergency stop cuts the motor torques; the wrist is held by its brakes from the start
("wrist locking has no significant effect on the overall motion"), joint 1 locks at
0.05 s, joint 2 at 0.1 s and joint 3 at 0.15 s. In between the robot moves under
gravity (and, optionally, the brakes' sliding friction). The rest pose it stops in
depends on how the velocity jumps at each lock: the momentum-consistent transition
(the momentum of the still-free motion is continuous) against the naive one (the
locked joint's velocity is zeroed, the others kept). The script prints, for both,
the velocity jumps, the momentum of the unlocked joints, the kinetic energy lost,
and the rest pose (joint angles, tool position), then their difference.

    python examples/emergency_stop.py [--dt 1e-4] [--brake 0] [--out out]
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

import robots
from controlkit.quantities import ControlTorques, FramePoint
from sim.runner import Scenario
from sim.simulator import Simulator

JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint"]
WRIST = ["wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]
LOCK_TIMES = (0.05, 0.1, 0.15)                              # s (seed 002, section 7)
Q_START = np.array([0.0, -1.2, 1.5, -1.9, -1.57, 0.0])     # rad
V_START = np.array([1.2, -0.8, 1.5, 0.0, 0.0, 0.0])        # rad/s: moving when the stop comes
TOOL = "tool0"
METHODS = {"momentum-consistent": dict(method="momentum"), "naive": dict(method="naive")}


def brake_friction(torque: float, joints: list[str], smoothing: float = 0.05):
    """A control program: each joint's brake slides with ``-torque tanh(v / smoothing)`` (N m; rad/s)."""

    def program(ctl):
        tau = ControlTorques(ctl.mech)
        cols = [ctl.mech.joint_v_slice(j).start for j in joints]
        while True:
            u = np.zeros(ctl.mech.ntau)
            u[cols] = -torque * np.tanh(ctl.v[cols] / smoothing)
            ctl.assign("brakes", tau, u)
            yield

    program.__name__ = "brakes"
    return program


def make_simulator(method: str = "momentum", dt: float = 1e-4, brake: float = 0.0,
                   q0=Q_START, v0=V_START, lock_times=LOCK_TIMES) -> Simulator:
    """The UR5 at (q0 rad, v0 rad/s), torques cut, wrist locked at 0, JOINTS locked at ``lock_times`` (s)."""
    mech = robots.load("ur5")
    sim = Simulator(mech, q0, v0, dt=dt, integrator="rk4", record={"tool": FramePoint(mech, TOOL)})
    sim.recording.set_unit("tool", "m")
    for j in WRIST:
        sim.lock_at(0.0, j, method=method)
    for t, j in zip(lock_times, JOINTS):
        sim.lock_at(t, j, method=method)
    if brake > 0:
        sim.add_program(brake_friction(brake, JOINTS))
    return sim


@dataclass
class StopResult:
    """One emergency stop: the simulator after the run, rest pose q (rad) and tool position (m)."""

    method: str
    sim: Simulator
    rest_q: np.ndarray
    rest_tool: np.ndarray


def emergency_stop(method: str = "momentum", duration: float = 0.25, **options) -> StopResult:
    """Run one emergency stop for ``duration`` s (past the last lock); returns the rest pose."""
    sim = make_simulator(method, **options)
    rec = sim.run(duration)
    return StopResult(method, sim, rec.q[-1].copy(), rec.quantity("tool")[-1].copy())


def build(integrator: str = "rk4", dt: float = 1e-4) -> Scenario:
    """The momentum-consistent emergency stop as a scenario (``controlkit demo emergency_stop``)."""
    sim = make_simulator("momentum", dt=dt)
    return Scenario("emergency_stop", "UR5 emergency stop: joints 1-3 lock at 0.05, 0.1, 0.15 s (seed 002)",
                    sim, 0.25, model={"factory": "robots:load", "kwargs": {"name": "ur5"}},
                    panels=[("tool", i, f"tool {'xyz'[i]}") for i in range(3)],
                    html={"traces": {"tool": "tool"}})


def _fmt(x) -> str:
    return np.array2string(np.asarray(x, dtype=float) + 0.0, precision=6, suppress_small=True, floatmode="fixed")


def report(results: dict[str, StopResult]) -> str:
    """The transitions of each run, the rest poses and their difference, as text."""
    lines = []
    for label, r in results.items():
        lines.append(f"== {label}")
        for ev in r.sim.recording.events_of("lock"):
            d = ev.data
            if np.allclose(d["v_before"], d["v_after"]):
                continue  # the wrist, locked at rest
            lines.append(f"  t = {ev.time:.3f} s  lock {d['joint']}: v (rad/s) {_fmt(d['v_before'])} -> {_fmt(d['v_after'])}")
            lines.append(f"    momentum of unlocked joints (N m s) {_fmt(d['momentum_before'])} -> "
                         f"{_fmt(d['momentum_after'])};  kinetic energy {d['kinetic_energy_before']:.4f} -> "
                         f"{d['kinetic_energy_after']:.4f} J")
        lines.append(f"  rest pose q (rad) {_fmt(r.rest_q)}   tool (m) {_fmt(r.rest_tool)}")
    if len(results) == 2:
        a, b = results.values()
        dq = b.rest_q - a.rest_q
        lines.append(f"== difference (naive - momentum-consistent): q (rad) {_fmt(dq)}, |dq| = "
                     f"{np.linalg.norm(dq):.4f} rad; tool {_fmt(b.rest_tool - a.rest_tool)} m, "
                     f"|d tool| = {1000 * np.linalg.norm(b.rest_tool - a.rest_tool):.1f} mm")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dt", type=float, default=1e-4, help="RK4 step (s)")
    p.add_argument("--brake", type=float, default=0.0, help="brakes' sliding friction torque before locking (N m)")
    p.add_argument("--out", default=None, help="folder for a plot of the tool position in both runs")
    args = p.parse_args(argv)
    results = {label: emergency_stop(dt=args.dt, brake=args.brake, **opts) for label, opts in METHODS.items()}
    print(report(results))
    if args.out:
        from pathlib import Path

        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        fig = Figure(figsize=(9, 3), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, 3)
        for label, r in results.items():
            rec = r.sim.recording
            for i, ax in enumerate(axes):
                ax.plot(rec.t, rec.q[:, i], label=label)
                ax.set_title(JOINTS[i], fontsize=9)
                ax.set_xlabel("t [s]")
                ax.set_ylabel("angle [rad]")
        axes[0].legend(fontsize=7, frameon=False)
        path = Path(args.out) / "emergency_stop.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
