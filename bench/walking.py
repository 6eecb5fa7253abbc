"""Real-time factor of both walking demos on one core, and where the time goes.

- Part 1, ``examples/walking.py``: the thesis biped by inverse dynamics on magnetic shoes
  (rk4, 10 ms steps). Target: real-time factor >= 2.
- Part 2, ``examples/walking_fd.py``: forward dynamics on real contact with a 1 kHz whole-body
  QP (integrator and step as given, default semi-implicit Euler at 1 ms). Target: >= 1.
- ``--robot talos``, ``examples/talos_walk.py``: PAL's Talos (nv 38) through part 2's code.
  Target: >= 0.5.

Each runs 20 simulated seconds (``--seconds``), pinned to one CPU with single-threaded BLAS,
and reports the real-time factor (simulated seconds per wall second; also per second of the
process's own CPU time, which a shared machine's waits for a core do not inflate), the walk's
acceptance figures, and the wall time split, each part exclusive of the others: ``pinocchio`` (kernels),
``assembly`` (building the equations), ``solve`` (the QP / least squares), ``events`` (guards,
isolation, handling: contacts, impacts, program code resumed at events), ``projection`` (onto
the welds after each step), ``control`` (programs at ticks, net of their solves), ``recording``
and ``other`` (integrator arithmetic, Lie-group updates, loop). The split comes from one more run
with timing wrappers around those methods (they cost about 3% of a part 2 run); the headline
real-time factor from runs without them. In part 2 the servo's own solves
(on the controller's model) count in pinocchio/assembly/solve too, and are also given apart,
with (from the split's run) the servo's largest torque change from one tick to the next.
With ``--profile``: cProfile's own time per source file (top 15) and per function (top 20).

Run: ``.venv/bin/python bench/walking.py [--part 1|2|both] [--robot biped|talos] [--seconds 20]
[--repeat 3] [--profile] [--evaluation plan|reference]``; writes bench/results/walking.json (``--robot talos``:
walking_talos.json). With ``--repeat N`` each part runs N times and the median run
is reported (with every run's real-time factor): on a shared machine one run can be 20% off.
"""
from __future__ import annotations

import os

# one core: single-threaded BLAS (set before numpy loads) and pinned to one CPU
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import table, write_json  # noqa: E402
from sim.runner import load_script  # noqa: E402

PARTS = ("pinocchio", "assembly", "solve", "events", "projection", "control", "recording", "other")
#: example script, default integrator and step (s), target real-time factor
DEMOS = {1: ("walking.py", "rk4", 0.01, 2.0), 2: ("walking_fd.py", "semi_implicit_euler", 1e-3, 1.0),
         "talos": ("talos_walk.py", "semi_implicit_euler", 1e-3, 0.5)}


#: ``--evaluation``: ``"plan"`` or ``"reference"`` for every simulator of the run; None keeps the default
EVALUATION: str | None = None


class _Clock:
    """Exclusive wall time of wrapped simulator methods, net of the evaluations they run."""

    def __init__(self, mechs):
        self.mechs = mechs
        self.total = defaultdict(float)
        self.depth = 0

    def _evals(self):
        return sum(m.times.total for m in self.mechs)

    def wrap(self, obj, attr, part):
        fn = getattr(obj, attr)
        clock = self

        def timed(*args, **kwargs):
            if clock.depth:  # nested in another timed part: counted there
                return fn(*args, **kwargs)
            clock.depth += 1
            t0, e0 = time.perf_counter(), clock._evals()
            try:
                return fn(*args, **kwargs)
            finally:
                clock.depth -= 1
                clock.total[part] += (time.perf_counter() - t0) - (clock._evals() - e0)

        setattr(obj, attr, timed)


def run(part, seconds: float, integrator: str, dt: float, profile: bool = False, timed: bool = True):
    """One run of a part; ``timed=False`` runs it without the split's wrappers (the headline
    real-time factor: the wrappers cost about 3% of a part 2 run), whose split is then None."""
    script = DEMOS[part][0]
    example = load_script(ROOT / "examples" / script)
    scn = example.build(integrator=integrator, dt=dt)
    sim = scn.sim
    if EVALUATION is not None:  # (--evaluation: the simulator's path, the default when not given)
        sim.evaluation = sim.equations.evaluation = EVALUATION
    servo = scn.info["servo"].cm if "servo" in scn.info else None  # the servo's own model (part 2)
    mechs = [sim.mech] + ([servo] if servo is not None else [])
    clock = _Clock(mechs)
    if timed:
        if servo is not None:
            scn.info["servo"].torque_log = []  # (the split's run only: the headline runs keep nothing)
        for source in sim.sources:
            clock.wrap(source, "guards", "events")
        clock.wrap(sim, "_handle", "events")
        clock.wrap(sim, "_instant_events", "events")
        clock.wrap(sim, "_accept", "projection")
        clock.wrap(sim, "_control", "control")
        clock.wrap(sim, "_run_due_timers", "control")
        clock.wrap(sim, "_record", "recording")
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    t0, c0 = time.perf_counter(), time.process_time()
    rec = sim.run(seconds)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if prof is not None:
        prof.disable()
    split = None
    if timed:
        split = {"pinocchio": sum(m.times.pinocchio for m in mechs), "assembly": sum(m.times.assembly for m in mechs),
                 "solve": sum(m.times.solve for m in mechs), **clock.total}
        split["other"] = wall - sum(split[p] for p in PARTS if p != "other")
    stats = example.walking_statistics(rec)
    servo_times = None
    if servo is not None:
        T = servo.times
        servo_times = {"solves": T.calls, "us_per_solve": 1e6 * T.total / max(T.calls, 1), "wall_s": T.total}
        log = scn.info["servo"].torque_log
        if log is not None and len(log) > 1:
            servo_times["torque_steps_Nm"] = _torque_steps(log)
    return rec, wall, split, stats, sim, prof, servo_times, cpu


def _torque_steps(log: list) -> dict:
    """The servo's largest torque change from one tick to the next (N m): median, 99th percentile
    and maximum over the ticks (a smooth servo changes its torques by a fraction of a N m per ms)."""
    d = np.abs(np.diff(np.array([tau for _, tau in log]), axis=0)).max(axis=1)
    return {"median": float(np.median(d)), "p99": float(np.percentile(d, 99)), "max": float(d.max()),
            "ticks_over_10": int(np.count_nonzero(d > 10.0))}


def _profile_tables(prof):
    import pstats
    st = pstats.Stats(prof)
    per_file, rows = defaultdict(float), []
    for (file, line, fn), (_, nc, tt, ct, _) in st.stats.items():
        short = file.replace(str(ROOT) + "/", "")
        if "site-packages/" in short:
            short = short.split("site-packages/")[1]
        per_file[short] += tt
        rows.append({"function": f"{short}:{line}({fn})", "calls": nc, "own_s": tt, "cumulative_s": ct})
    total = sum(per_file.values())
    files = [{"file": f, "own_s": t, "share_%": 100 * t / total}
             for f, t in sorted(per_file.items(), key=lambda kv: -kv[1])[:15]]
    funcs = sorted(rows, key=lambda r: -r["own_s"])[:20]
    return files, funcs


def bench_part(part, seconds: float, integrator: str | None, dt: float | None, profile: bool,
               repeat: int = 1) -> dict:
    """Run one part (``repeat`` times: the tables are the median run's), print its tables, return its JSON section."""
    _, default_integrator, default_dt, target = DEMOS[part]
    integrator, dt = integrator or default_integrator, dt or default_dt
    # the real-time factor from runs without the split's wrappers; the split from one more run with them
    runs = sorted((run(part, seconds, integrator, dt, timed=False) for _ in range(max(1, repeat))), key=lambda r: r[1])
    rec, wall, _, stats, sim, _, servo, cpu = runs[len(runs) // 2]  # the median wall time
    _, split_wall, split, _, _, _, split_servo, _ = run(part, seconds, integrator, dt)
    if servo is not None and "torque_steps_Nm" in split_servo:
        servo["torque_steps_Nm"] = split_servo["torque_steps_Nm"]  # (kept in the split's run only)
    n = sim.mech.times.calls
    rtf = seconds / wall
    # the process's own CPU time too: on a shared machine the wall time counts the waits for a core
    summary = {"part": part, "simulated_s": seconds, "wall_s": wall, "real_time_factor": rtf,
               "cpu_s": cpu, "real_time_factor_cpu": seconds / cpu,
               "target": target, "met": rtf >= target, "integrator": integrator, "dt_s": dt, "steps": sim.steps,
               "evaluations": n, "evaluations_per_step": n / max(sim.steps, 1), "events": len(rec.events)}
    print(f"\n== {'part ' if part in (1, 2) else ''}{part}: {DEMOS[part][0]}")
    if len(runs) > 1:
        summary["real_time_factors"] = [seconds / r[1] for r in runs]
        print(f"{len(runs)} runs, real-time factors " + ", ".join(f"{x:.3f}" for x in summary["real_time_factors"])
              + " (the median run below)")
    print(table([summary], [k for k in summary if k != "real_time_factors"]))
    if servo is not None:
        print(f"servo: {servo['solves']} solves, {servo['us_per_solve']:.0f} us each ({servo['wall_s']:.2f} s)")
        steps = servo.get("torque_steps_Nm")
        if steps:
            print(f"servo torque change per tick (N m, largest joint): median {steps['median']:.3g}, "
                  f"p99 {steps['p99']:.3g}, max {steps['max']:.3g}, {steps['ticks_over_10']} ticks over 10")
    print(f"where the time goes (a run with the split's wrappers: real-time factor {seconds / split_wall:.3f})")
    rows = [{"part": p, "wall_s": split[p], "share_%": 100 * split[p] / split_wall,
             "us_per_simulated_ms": 1e3 * split[p] / seconds} for p in PARTS]
    print(table(rows, ["part", "wall_s", "share_%", "us_per_simulated_ms"]))
    acceptance = {k: v for k, v in stats.items() if k not in ("strike_errors", "stances", "events")}
    print(table([{"criterion": k, "value": v} for k, v in acceptance.items()], ["criterion", "value"]))
    out = {"summary": summary, "split": rows, "split_run_real_time_factor": seconds / split_wall,
           "acceptance": acceptance, "strike_errors_m": stats["strike_errors"],
           "servo": servo}
    if "events" in stats:
        out["event_counts"] = stats["events"]
    if profile:
        _, pwall, _, _, _, prof, _, _ = run(part, seconds, integrator, dt, profile=True)
        files, funcs = _profile_tables(prof)
        print(f"\ncProfile (wall {pwall:.1f} s under the profiler): own time per file")
        print(table(files, ["file", "own_s", "share_%"]))
        print("\nown time per function")
        print(table(funcs, ["function", "calls", "own_s", "cumulative_s"]))
        out["profile"] = {"wall_s": pwall, "files": files, "functions": funcs}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["1", "2", "both"], default="both")
    ap.add_argument("--robot", choices=["biped", "talos"], default="biped",
                    help="talos: Talos through part 2's code (examples/talos_walk.py); --part is then ignored")
    ap.add_argument("--seconds", type=float, default=20.0, help="simulated time (s)")
    ap.add_argument("--integrator", default=None, help="default: rk4 (part 1), semi_implicit_euler (part 2)")
    ap.add_argument("--dt", type=float, default=None, help="integration step (s); default 0.01 (part 1), 0.001 (part 2)")
    ap.add_argument("--profile", action="store_true", help="also run under cProfile (slower) and print where the time goes")
    ap.add_argument("--repeat", type=int, default=1, help="runs per part; the median is reported (a noisy machine)")
    ap.add_argument("--evaluation", choices=["plan", "reference"], default=None,
                    help="the simulator's evaluation path (default: the simulator's default, plan)")
    args = ap.parse_args(argv)
    global EVALUATION
    EVALUATION = args.evaluation
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    if args.robot == "talos":
        payload = {"talos": bench_part("talos", args.seconds, args.integrator, args.dt, args.profile, args.repeat),
                   "targets": {"talos": "real_time_factor >= 0.5 on one core"}}
        path = write_json("walking_talos", payload)
        print(f"\nwrote {path}")
        return
    parts = (1, 2) if args.part == "both" else (int(args.part),)
    payload = {f"part{p}": bench_part(p, args.seconds, args.integrator, args.dt, args.profile, args.repeat) for p in parts}
    payload["targets"] = {"part1": "real_time_factor >= 2 on one core", "part2": "real_time_factor >= 1 on one core"}
    path = write_json("walking", payload)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
