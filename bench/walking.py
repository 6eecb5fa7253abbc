"""Real-time factor of the walking demo (issue 7, part 1) on one core, and where the time goes.

Runs ``examples/walking.py`` (the thesis biped walking straight ahead from standing) for
20 simulated seconds, pinned to one CPU with single-threaded BLAS, and reports:

- the real-time factor (simulated seconds per wall second; target >= 2) and the walk's
  acceptance figures (steps, heel-strike errors, heading drift, torso height, constraint
  errors);
- the wall time split, each part exclusive of the others: ``pinocchio`` (kernels),
  ``assembly`` (building the equations), ``solve`` (the QP / least squares),
  ``events`` (guards, isolation, handling: program code resumed at events and the
  shoes' velocity jumps), ``projection`` (onto the welds after each step),
  ``control`` (programs at ticks), ``recording``, and ``other`` (integrator arithmetic,
  Lie-group updates, loop);
- with ``--profile``: cProfile's own time per source file (top 15) and per function (top 20).

Run: ``.venv/bin/python bench/walking.py [--seconds 20] [--integrator rk4] [--dt 0.01] [--profile]``;
writes bench/results/walking.json.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import table, write_json  # noqa: E402
from sim.runner import load_script  # noqa: E402

PARTS = ("pinocchio", "assembly", "solve", "events", "projection", "control", "recording", "other")


class _Clock:
    """Exclusive wall time of wrapped simulator methods, net of the evaluations they run."""

    def __init__(self, mech):
        self.mech = mech
        self.total = defaultdict(float)
        self.depth = 0

    def _evals(self):
        T = self.mech.times
        return T.pinocchio + T.assembly + T.solve

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


def run(seconds: float, integrator: str, dt: float, profile: bool = False):
    example = load_script(ROOT / "examples" / "walking.py")
    scn = example.build(integrator=integrator, dt=dt)
    sim = scn.sim
    clock = _Clock(sim.mech)
    for source in sim.sources:
        clock.wrap(source, "guards", "events")
    clock.wrap(sim, "_handle", "events")
    clock.wrap(sim, "_accept", "projection")
    clock.wrap(sim, "_control", "control")
    clock.wrap(sim, "_record", "recording")
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    t0 = time.perf_counter()
    rec = sim.run(seconds)
    wall = time.perf_counter() - t0
    if prof is not None:
        prof.disable()
    T = sim.mech.times
    split = {"pinocchio": T.pinocchio, "assembly": T.assembly, "solve": T.solve, **clock.total}
    split["other"] = wall - sum(split[p] for p in PARTS if p != "other")
    stats = example.walking_statistics(rec)
    return rec, wall, split, stats, sim, prof


def _profile_tables(prof):
    import pstats
    st = pstats.Stats(prof)
    per_file, rows = defaultdict(float), []
    for (file, line, fn), (cc, nc, tt, ct, callers) in st.stats.items():
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="simulated time (s)")
    ap.add_argument("--integrator", default="rk4")
    ap.add_argument("--dt", type=float, default=0.01, help="integration step (s)")
    ap.add_argument("--profile", action="store_true", help="also run under cProfile (slower) and print where the time goes")
    args = ap.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

    rec, wall, split, stats, sim, _ = run(args.seconds, args.integrator, args.dt)
    n = sim.mech.times.calls
    rtf = args.seconds / wall
    summary = {"simulated_s": args.seconds, "wall_s": wall, "real_time_factor": rtf, "integrator": args.integrator,
               "dt_s": args.dt, "steps": sim.steps, "evaluations": n, "evaluations_per_step": n / sim.steps,
               "us_per_evaluation": 1e6 * (split["pinocchio"] + split["assembly"] + split["solve"]) / n,
               "events": len(rec.events)}
    print(table([summary], list(summary)))
    print()
    rows = [{"part": p, "wall_s": split[p], "share_%": 100 * split[p] / wall,
             "us_per_evaluation": 1e6 * split[p] / n} for p in PARTS]
    print(table(rows, ["part", "wall_s", "share_%", "us_per_evaluation"]))
    print()
    acceptance = {k: v for k, v in stats.items() if k != "strike_errors"}
    print(table([{"criterion": k, "value": v} for k, v in acceptance.items()], ["criterion", "value"]))
    payload = {"summary": summary, "split": rows, "acceptance": acceptance,
               "strike_errors_m": stats["strike_errors"], "target": "real_time_factor >= 2 on one core"}
    if args.profile:
        _, pwall, _, _, _, prof = run(args.seconds, args.integrator, args.dt, profile=True)
        files, funcs = _profile_tables(prof)
        print(f"\ncProfile (wall {pwall:.1f} s under the profiler): own time per file")
        print(table(files, ["file", "own_s", "share_%"]))
        print("\nown time per function")
        print(table(funcs, ["function", "calls", "own_s", "cumulative_s"]))
        payload["profile"] = {"wall_s": pwall, "files": files, "functions": funcs}
    path = write_json("walking", payload)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
