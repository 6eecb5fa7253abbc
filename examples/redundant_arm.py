"""The thesis' redundant arm (section 6.6.3, Fig. 6.10): naive costs against the two-phase algorithm.

The 5-DOF arm (base yaw, four parallel pitch joints) starts in an arbitrary pose at
rest. Its end effector is held still until ``T_SWITCH`` and then driven along a path by
a time-varying acceleration constraint. What the constraint leaves free (two degrees
of freedom) is fixed by a quadratic cost:

- ``two_phase`` — the thesis' algorithm: the projected PD cost brings the three distal
  joint angles to equal values while the end effector is held (phase 1), then keeps
  them equal while it tracks the path (phase 2);
- ``accelerations`` — the naive sum of squared joint accelerations;
- ``torques`` — the naive sum of squared joint torques.

The naive costs track the same path from the same state: the two-phase run's state
at ``T_SWITCH`` (equal distal angles, at rest), on the same clock, so at every instant
of phase 2 all three runs have the end effector at the same place and their
manipulabilities compare configurations of the same self-motion manifold.

Paths (``PATHS``): ``reach`` (default) — the end effector reaches 0.25 m out toward the
edge of the workspace and back, twice in 3 s, the thesis' situation of a trajectory
that leads toward singularities; ``circle`` — a tilted circle, two turns in 3 s. On
the reach the two-phase manipulability is above both naive costs' at every instant
after the switch (the squared-acceleration cost falls to 0.39 of it). On the circle it
is not: equal distal angles are only close to the configuration of largest
manipulability at a given end-effector position (about 4% below it on this arm,
:func:`controllers.arm.best_manipulability`), and the squared-acceleration cost, drifting
toward that configuration during the first turn, is up to 1.4% above the two-phase
algorithm for t in [2.99, 3.54] and [3.63, 3.87] s before it falls to 0.40 of it. The
summary prints each naive run's smallest margin and its ratio range.

For each run the script records (with units) the end-effector position, acceleration
and tracking error, the distal joint angles and accelerations (the graphs of the
thesis' Fig. 2.6) and the manipulability det(J J^T); it prints a summary and writes
one panel figure per run plus an overlay of the manipulability. A run stops at a
singular configuration (manipulability below ``SINGULAR``) or a runaway (a joint faster
than ``RUNAWAY``), as the torque cost's does: minimizing squared torques moment by
moment leaves the self-motion undamped, and under gravity it speeds up until the arm
whips (the instability of local torque optimization, Hollerbach and Suh 1987).

    python examples/redundant_arm.py [--dt 1e-3] [--path reach|circle] [--out out]
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import robots
from controlkit.errors import ControlkitError
from controlkit.quantities import FramePoint
from controlkit.studies.compare import ARM_CIRCLE, arm_circle
from controllers.arm import (
    COSTS,
    JointAngles,
    Manipulability,
    PathError,
    PointAcceleration,
    SolvedAccelerations,
    reach_path,
    redundant_arm_program,
    stop_when_unsafe,
)
from sim.runner import Scenario
from sim.simulator import Simulator

START = (0.3, 0.3577, 1.2, -0.2, 0.8883)  # rad: joint_1 (yaw) .. joint_5, an arbitrary pose; phase 1
#                                         takes it to equal distal angles (0.3, 0.5, 0.6, 0.6, 0.6)
DISTAL = ["joint_3", "joint_4", "joint_5"]
T_SWITCH = 2.5                        # s: end of phase 1
SINGULAR = 1e-2                       # m^6: a run stops below this manipulability
RUNAWAY = 50.0                        # rad/s: ... or when a joint turns faster than this
#: the reach: ``distance`` m out along the horizontal from the base axis through the end effector, and back,
#: ``repeats`` times, each leg ``leg`` s
REACH = dict(distance=0.25, leg=0.75, repeats=2)
PATHS = {"reach": REACH, "circle": ARM_CIRCLE}
PANELS = [("tool position", None, "end-effector position"), ("tool acceleration", None, "end-effector acceleration"),
          ("distal angles", None, "distal joint angles"), ("distal accelerations", None, "distal joint accelerations"),
          ("manipulability", 0, "manipulability det(J J^T)"), ("tracking error", 0, "end-effector error")]


def arm_reach(p0: np.ndarray, t0: float, distance: float = 0.25, leg: float = 0.75, repeats: int = 2):
    """The reach path from ``p0`` (m): ``distance`` m out horizontally, away from the base axis, and back."""
    p0 = np.asarray(p0, float)
    out = np.array([p0[0], p0[1], 0.0])
    return reach_path(p0, p0 + distance * out / np.linalg.norm(out), t0, leg, repeats)


def path_duration(path: str = "reach", options: dict | None = None) -> float:
    """How long (s) phase 2's path lasts."""
    o = {**PATHS[path], **(options or {})}
    return 2 * o["leg"] * o["repeats"] if path == "reach" else o["duration"]


def make_simulator(cost: str = "two_phase", dt: float = 1e-3, start=START, t_switch: float = T_SWITCH,
                   path: str = "reach", path_options: dict | None = None, state: tuple | None = None) -> Simulator:
    """The arm under :func:`controllers.arm.redundant_arm_program` with ``cost``.

    It starts at rest in ``start`` (rad) at t = 0, or in ``state = (t0 s, q rad, v rad/s)``;
    the path (one of :data:`PATHS`, its options overridden by ``path_options``) starts where
    the end effector is in ``start``, at ``t_switch`` (s).
    """
    if path not in PATHS:
        raise ControlkitError(f"unknown arm path {path!r}; choose one of {', '.join(PATHS)}")
    built = robots.redundant_arm(start)
    mech = built.mechanism
    tool = built.info["tool"]
    point = FramePoint(mech, tool)
    options = {**PATHS[path], **(path_options or {})}
    make_path = arm_reach if path == "reach" else arm_circle
    target = make_path(point.position(mech).copy(), t_switch, **options)
    t0, q0, v0 = (0.0, built.q0, built.v0) if state is None else state
    sim = Simulator(mech, q0, v0, dt=dt, integrator="rk4", t0=t0)
    sim.record_quantities.update({
        "tool position": point, "tool acceleration": PointAcceleration(point),
        "distal angles": JointAngles(mech, DISTAL), "distal accelerations": SolvedAccelerations(mech, DISTAL),
        "manipulability": Manipulability(mech, tool), "tracking error": PathError(point, target, lambda: sim.t),
    })
    for name, unit in (("tool position", "m"), ("tool acceleration", "m/s^2"), ("distal angles", "rad"),
                       ("distal accelerations", "rad/s^2"), ("manipulability", "m^6"), ("tracking error", "m")):
        sim.recording.set_unit(name, unit)
    sim.recording.meta.update(cost=cost, t_switch=t_switch, path=path, path_options=options)
    sim.add_program(redundant_arm_program(tool, DISTAL, target, t_switch, cost))
    sim.add_program(stop_when_unsafe(tool, SINGULAR, RUNAWAY))
    return sim


@dataclass
class ArmRun:
    """One run's recording and the numbers the thesis' comparison is about (SI units)."""

    cost: str
    recording: object
    t_switch: float
    stopped_at: float | None        # s, when the run stopped (singular configuration or runaway)
    stop_reason: str | None
    hold_motion: float              # m: end-effector motion during phase 1
    spread_at_switch: float         # rad: distal angles' max - min at the switch
    spread_phase2: float            # rad: its largest value during phase 2
    tracking_error: float           # m: largest during phase 2
    manipulability_min: float       # m^6, over the whole run
    manipulability_min_phase2: float
    #: a naive run against the two-phase one at the same instants after the switch (None for two_phase):
    #: the smallest margin w_two - w (m^6) and the largest and smallest ratios w / w_two
    margin_min: float | None = None
    ratio_max: float | None = None
    ratio_min: float | None = None

    def summary(self) -> str:
        """One line: how the run ended, phase 1 and phase 2 figures, and the manipulability."""
        end = "completed" if self.stopped_at is None else f"stopped ({self.stop_reason}) at t = {self.stopped_at:.3f} s"
        line = (f"{self.cost:>13}: {end}; phase 1 end-effector motion {self.hold_motion:.2e} m, distal spread "
                f"{self.spread_at_switch:.2e} rad; phase 2 spread {self.spread_phase2:.2e} rad, tracking error "
                f"{self.tracking_error:.2e} m; manipulability min {self.manipulability_min:.4f} m^6")
        if self.ratio_max is not None:
            below = "below" if self.margin_min > 0 else "NOT below"
            line += (f"; {below} two-phase at every instant (smallest margin {self.margin_min:.3g} m^6, "
                     f"ratio to two-phase {self.ratio_min:.3f} .. {self.ratio_max:.4f})")
        return line


def run(cost: str = "two_phase", dt: float = 1e-3, until: float | None = None, **options) -> ArmRun:
    """Simulate one cost until ``until`` s (default the path's end); options of :func:`make_simulator`."""
    sim = make_simulator(cost, dt, **options)
    t_switch = options.get("t_switch", T_SWITCH)
    if until is None:
        until = t_switch + path_duration(options.get("path", "reach"), options.get("path_options"))
    duration = until - sim.t
    try:
        rec = sim.run(duration)
    except ControlkitError as exc:  # a divergence the stop did not catch in time
        rec = getattr(exc, "recording", None) or sim.recording
        sim.log("control", f"run failed: {str(exc).splitlines()[0]}", stopped_at=sim.t, reason="failed")
    stops = [e for e in rec.events if "stopped_at" in e.data]
    t = rec.t
    ph1, ph2 = t <= t_switch + 1e-12, t >= t_switch - 1e-12
    P, A, m, err = (rec.quantity(n) for n in ("tool position", "distal angles", "manipulability", "tracking error"))
    k = int(np.argmin(np.abs(t - t_switch))) if ph2.any() else len(t) - 1
    spread = np.ptp(A, axis=1)
    nan = float("nan")
    return ArmRun(cost, rec, t_switch, stops[0].data["stopped_at"] if stops else None,
                  stops[0].data["reason"] if stops else None,
                  float(np.abs(P[ph1] - P[0]).max()) if ph1.sum() > 1 else nan,
                  float(spread[k]) if ph2.any() else nan,
                  float(spread[ph2].max()) if ph2.any() else nan, float(err[ph2].max()) if ph2.any() else nan,
                  float(np.nanmin(m)), float(np.nanmin(m[ph2])) if ph2.any() else nan)


def compare_costs(dt: float = 1e-3, naive_start: str = "switch", **options) -> dict[str, ArmRun]:
    """The thesis' comparison on one path and clock: two-phase from ``START``, then the naive costs.

    ``naive_start="switch"``: the naive costs start from the two-phase run's state at the
    switch (equal distal angles), so only the cost differs along the path;
    ``"initial"``: they start from ``START`` too (holding the end effector until the switch).
    Each naive run gets its manipulability margin and ratios against the two-phase run at
    its own samples after the switch (the two-phase run interpolated there; the clocks agree).
    """
    if naive_start not in ("switch", "initial"):
        raise ValueError(f"naive_start must be 'switch' or 'initial', got {naive_start!r}")
    runs = {"two_phase": run("two_phase", dt, **options)}
    state = None
    if naive_start == "switch":
        rec = runs["two_phase"].recording
        k = int(np.argmin(np.abs(rec.t - options.get("t_switch", T_SWITCH))))
        state = (float(rec.t[k]), rec.q[k].copy(), rec.v[k].copy())
    two = runs["two_phase"].recording
    w_two = two.quantity("manipulability")[:, 0]
    for cost in COSTS:
        if cost != "two_phase":
            r = runs[cost] = run(cost, dt, state=state, **options)
            after = r.recording.t > r.t_switch + 1e-9
            w = r.recording.quantity("manipulability")[after, 0]
            w2 = np.interp(r.recording.t[after], two.t, w_two)
            if w.size:
                r.margin_min, r.ratio_max, r.ratio_min = (float((w2 - w).min()), float((w / w2).max()),
                                                          float((w / w2).min()))
    return runs


def build(integrator: str = "rk4", dt: float = 1e-3) -> Scenario:
    """The two-phase algorithm as a scenario (``controlkit demo redundant_arm``)."""
    sim = make_simulator("two_phase", dt)
    return Scenario("redundant_arm", "thesis redundant arm: equal distal angles, then a reach out and back (Fig. 6.10)",
                    sim, T_SWITCH + path_duration("reach"),
                    model={"factory": "robots:redundant_arm", "kwargs": {"angles": list(START)}},
                    panels=PANELS, html={"traces": {"end effector": "tool position"}})


def plot_run(r: ArmRun, path: Path) -> Path:
    """The thesis' Fig. 2.6 graphs of one run, plus manipulability and tracking error (PNG or SVG)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    rec = r.recording
    fig = Figure(figsize=(12, 6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 3).flat
    for ax, (name, _, title) in zip(axes, PANELS):
        X = rec.quantity(name)
        labels = DISTAL if name.startswith("distal") else ("x", "y", "z") if X.shape[1] == 3 else (None,)
        for i, lab in enumerate(labels):
            ax.plot(rec.t, X[:, i], lw=1.1, label=lab)
        if labels[0] is not None:
            ax.legend(fontsize=7, frameon=False)
        ax.axvline(r.t_switch, color="k", ls=":", lw=0.8)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("t [s]", fontsize=8)
        ax.set_ylabel(f"{name} [{rec.units.get(name, '')}]", fontsize=8)
        ax.grid(True, lw=0.4, alpha=0.5)
    fig.suptitle(f"redundant arm, cost: {r.cost}", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path


def plot_manipulability(runs: dict[str, ArmRun], path: Path) -> Path:
    """Overlay of the manipulability of every run against time."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(6, 3.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for cost, r in runs.items():
        ax.plot(r.recording.t, r.recording.quantity("manipulability")[:, 0], label=cost)
    ax.axvline(next(iter(runs.values())).t_switch, color="k", ls=":", lw=0.8)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("det(J J^T) [m^6]")
    ax.legend(frameon=False, fontsize=8)
    ax.grid(True, lw=0.4, alpha=0.5)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    return path


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dt", type=float, default=1e-3, help="RK4 step (s)")
    p.add_argument("--naive-start", choices=("switch", "initial"), default="switch",
                   help="naive costs start from the two-phase state at the switch, or from START")
    p.add_argument("--path", choices=sorted(PATHS), default="reach", help="phase 2's end-effector path")
    p.add_argument("--out", default="out", help="folder for the figures")
    args = p.parse_args(argv)
    out = Path(args.out)
    runs = compare_costs(args.dt, naive_start=args.naive_start, path=args.path)
    suffix = "" if args.path == "reach" else f"_{args.path}"
    for r in runs.values():
        print(r.summary())
        print(f"wrote {plot_run(r, out / f'redundant_arm{suffix}_{r.cost}.png')}")
    print(f"wrote {plot_manipulability(runs, out / f'redundant_arm{suffix}_manipulability.png')}")


if __name__ == "__main__":
    main()
