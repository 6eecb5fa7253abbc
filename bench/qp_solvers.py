"""QP solvers on controlkit's own QPs: quadprog cold, quadprog warm-started (``QPWorkspace``), daqp
cold and warm (its own starting active set), proxsuite (dense, cold and warm from its last result).

The QPs are captured at run time, in order, by wrapping ``solve_qp`` where the modules that call
it hold it (nothing in the controllers or the simulator is edited):

- ``servo``: the walking servo of part 2 (``controllers.walking_fd`` through ``examples/walking_fd.py``),
  the QPs ``controllers.servo_solve`` hands to quadprog (the ticks where an inequality is active; their
  Hessian is the identity);
- ``walking contacts``: the simulator's contact and impact QPs of the same walk (``sim.*``);
- ``6-sphere column``, ``8-box row``: the contact and impact QPs of the general contact scenes
  (``robots.scenes.sphere_column(6)``, ``box_row(8)`` dropped on the ground, ``enable_contacts``).

Per set and solver: microseconds per solve (the whole sequence solved in order, best of
``--repeat``), mean iterations (each solver's own unit; 0 for a workspace's accepted guess), the
share of solves the warm start answered, and agreement: the largest ``|x - x_quadprog| / (1 +
|x_quadprog|_inf)`` over the set. ``--walk`` also runs walking part 2 twice back to back, the servo
as it is (cold) and with a ``QPWorkspace`` as its ``qp`` (quadprog warm-started), and reports both real-time factors and the servo's microseconds per solve.

Run: ``.venv/bin/python bench/qp_solvers.py [--seconds 4] [--repeat 5] [--walk]``; writes
bench/results/qp_solvers.json.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import controlkit.qp as qp  # noqa: E402
from bench.common import table, write_json  # noqa: E402
from sim.runner import load_script  # noqa: E402

Problem = tuple  # (H, c, A_eq, b_eq, G, h) as solve_qp takes them (None for absent rows)


# ------------------------------------------------------------------ capture
class Capture:
    """While open, every ``solve_qp`` call made from a loaded controlkit/sim/controllers module is
    recorded (a copy of its arguments) under ``label(module)`` and then solved as before."""

    def __init__(self, label: Callable[[str], str]):
        self.label = label
        self.problems: dict[str, list[Problem]] = defaultdict(list)
        self._patched: list[tuple[object, Callable]] = []

    def __enter__(self) -> "Capture":
        real = qp.solve_qp
        for name, mod in list(sys.modules.items()):
            if (name.split(".")[0] in ("controlkit", "sim", "controllers") and name != "controlkit.qp"
                    and getattr(mod, "solve_qp", None) is real):
                mod.solve_qp = self._recorder(self.label(name), real)
                self._patched.append((mod, real))
        return self

    def _recorder(self, label: str, real: Callable) -> Callable:
        store = self.problems[label]

        def record(H, c, A_eq=None, b_eq=None, G=None, h=None, **kwargs):
            store.append(tuple(None if a is None else np.array(a, dtype=float) for a in (H, c, A_eq, b_eq, G, h)))
            return real(H, c, A_eq, b_eq, G, h, **kwargs)

        return record

    def __exit__(self, *exc) -> None:
        for mod, real in self._patched:
            mod.solve_qp = real


def capture_walk(seconds: float) -> dict[str, list[Problem]]:
    """The QPs of ``seconds`` (s) of walking part 2: the servo's and the simulator's contacts'."""
    example = load_script(ROOT / "examples" / "walking_fd.py")
    scn = example.build()
    with Capture(lambda m: "servo" if m in ("controlkit.solver", "controllers.servo_solve") else "walking contacts") as cap:
        scn.sim.run(seconds)
    return dict(cap.problems)


def capture_contact_scenes() -> dict[str, list[Problem]]:
    """The contact and impact QPs of the peers' general contact scenes (see bench/peers_contact.py)."""
    from bench.peers_contact import SCENES, controlkit_scene
    out: dict[str, list[Problem]] = {}
    for name, spec in SCENES.items():
        sim = controlkit_scene(spec)
        with Capture(lambda m, name=name: name) as cap:
            sim.run(spec.seconds)
        out.update(cap.problems)
    return out


# ------------------------------------------------------------------ solvers
def quadprog_cold(problems):
    return [qp.solve_qp(*p) for p in problems]


def quadprog_warm(problems):
    ws = qp.QPWorkspace()
    return [qp.solve_qp(*p, workspace=ws) for p in problems], ws


def daqp_cold(problems):
    return [qp.solve_qp(*p, solver="daqp") for p in problems]


def daqp_warm(problems):
    ws = qp.QPWorkspace()
    return [qp.solve_qp(*p, solver="daqp", workspace=ws) for p in problems], ws


def proxsuite_run(problems, warm: bool):
    """proxsuite's dense ProxQP at eps_abs 1e-12 (eps_rel 0): a new solver object per problem
    (cold), or one per structure updated and started from its previous result (warm)."""
    import proxsuite
    out, solvers = [], {}
    for H, c, A_eq, b_eq, G, h in problems:
        n, meq, m = len(c), 0 if b_eq is None else len(b_eq), 0 if h is None else len(h)
        key = (n, meq, m)
        s = solvers.get(key) if warm else None
        # (empty blocks as None: proxsuite 0.8 crashes on (0, n) arrays)
        A_eq, b_eq = (A_eq, b_eq) if meq else (None, None)
        G, lower, h = (G, np.full(m, -1e20), h) if m else (None, None, None)
        if s is None:
            s = proxsuite.proxqp.dense.QP(n, meq, m)
            s.settings.eps_abs, s.settings.eps_rel = 1e-12, 0.0
            s.init(H, c, A_eq, b_eq, G, lower, h)
            s.solve()
            if warm:  # (set before a first solve, proxsuite 0.8 crashes: there is no previous result)
                s.settings.initial_guess = proxsuite.proxqp.InitialGuess.WARM_START_WITH_PREVIOUS_RESULT
                solvers[key] = s
        else:
            s.update(H, c, A_eq, b_eq, G, lower, h)
            s.solve()
        out.append(qp.QPResult(s.results.x.copy(), s.results.y.copy(), s.results.z.copy(), np.zeros(0, int), 0.0,
                               int(s.results.info.iter)))
    return out


def _available(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def solvers() -> dict[str, Callable]:
    """name -> run(problems) returning the results (and the workspace, for the warm runs)."""
    out = {"quadprog cold": quadprog_cold, "quadprog warm (QPWorkspace)": quadprog_warm}
    if _available("daqp"):
        out.update({"daqp cold": daqp_cold, "daqp warm (QPWorkspace)": daqp_warm})
    if _available("proxsuite"):
        out.update({"proxsuite cold": lambda ps: _in_child(proxsuite_run, ps, False),
                    "proxsuite warm": lambda ps: _in_child(proxsuite_run, ps, True)})
    return out


def _in_child(fn: Callable, problems: list, *args):
    """``fn(problems, *args)`` in a forked process, its wall time measured there; raises
    ChildProcessError when the child dies (a crash inside proxsuite is reported, not fatal)."""
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)

    def work():
        t0 = time.perf_counter()
        res = fn(problems, *args)
        child.send((time.perf_counter() - t0, res))

    proc = ctx.Process(target=work)
    proc.start()
    child.close()  # (the parent's copy: a dead child's pipe then reads as closed at once)
    try:
        got = parent.recv() if parent.poll(600) else None
    except EOFError:
        got = None
    proc.join()
    if got is None or proc.exitcode != 0:
        raise ChildProcessError(f"{fn.__name__} died (exit code {proc.exitcode})")
    return _Timed(*got)


class _Timed:
    """Results with the wall time (s) measured where they were computed (a child process)."""

    def __init__(self, wall: float, results: list):
        self.wall, self.results = wall, results


def compare(name: str, problems: list[Problem], repeat: int) -> list[dict]:
    """One row per solver on one set of QPs (see the module docstring)."""
    reference = quadprog_cold(problems)
    sizes = sorted({(len(p[1]), 0 if p[3] is None else len(p[3]), 0 if p[5] is None else len(p[5])) for p in problems})
    rows = []
    for solver, run in solvers().items():
        best = float("inf")
        try:
            for _ in range(repeat):
                t0 = time.perf_counter()
                out = run(problems)
                best = min(best, out.wall if isinstance(out, _Timed) else time.perf_counter() - t0)
        except ChildProcessError as exc:
            rows.append({"QPs": name, "count": len(problems), "solver": solver, "error": str(exc)})
            continue
        out = out.results if isinstance(out, _Timed) else out
        results, ws = out if isinstance(out, tuple) else (out, None)
        gap = max(float(np.abs(r.x - ref.x).max() / (1.0 + np.abs(ref.x).max())) for r, ref in zip(results, reference))
        rows.append({"QPs": name, "count": len(problems), "sizes (n, eq, ineq)": _sizes(sizes), "solver": solver,
                     "us_per_solve": 1e6 * best / len(problems),
                     "iterations": float(np.mean([r.iterations for r in results])),
                     "warm_share": None if ws is None else ws.warm / len(problems), "agreement": gap})
    return rows


def _sizes(sizes: list[tuple[int, int, int]]) -> str:
    return ", ".join(f"{n}/{e}/{m}" for n, e, m in sizes[:3]) + (f" +{len(sizes) - 3}" if len(sizes) > 3 else "")


# ------------------------------------------------------------------ the walk, servo warm or not
def walk(seconds: float, warm: bool) -> dict:
    """Walking part 2 for ``seconds`` (s); with ``warm`` the servo's QP is warm-started from one
    workspace for the run (``WholeBody.qp``)."""
    example = load_script(ROOT / "examples" / "walking_fd.py")
    scn = example.build()
    ws = qp.QPWorkspace()
    if warm:
        scn.info["servo"].qp = ws
    t0 = time.perf_counter()
    rec = scn.sim.run(seconds)
    wall = time.perf_counter() - t0
    T = scn.info["servo"].cm.times
    stats = example.walking_statistics(rec)
    kinds = Counter(e.kind for e in rec.events)
    return {"servo QP": "quadprog warm-started" if warm else "quadprog cold", "simulated_s": seconds, "wall_s": wall,
            "real_time_factor": seconds / wall, "servo_solves": T.calls, "servo_us_per_solve": 1e6 * T.total / T.calls,
            "warm_accepted": ws.warm, "cold": ws.cold if warm else None, "final_q": rec.q[-1].tolist(),
            "events": len(rec.events), "event_kinds": dict(kinds),
            "acceptance": {k: v for k, v in stats.items() if k not in ("strike_errors", "stances", "events")}}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=4.0, help="simulated seconds of walking to capture (s)")
    ap.add_argument("--repeat", type=int, default=5, help="timed repeats of each sequence (best kept)")
    ap.add_argument("--walk", action="store_true", help="also walk with and without the servo's warm start")
    ap.add_argument("--walk-seconds", type=float, default=10.0)
    args = ap.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    sets = {**capture_walk(args.seconds), **capture_contact_scenes()}
    rows = [r for name, ps in sets.items() if ps for r in compare(name, ps, args.repeat)]
    cols = ["QPs", "count", "sizes (n, eq, ineq)", "solver", "us_per_solve", "iterations", "warm_share", "agreement",
            "error"]
    print(table(rows, cols))
    payload = {"settings": {"walk_seconds_captured": args.seconds, "repeat": args.repeat}, "rows": rows}
    if args.walk:
        walks = [walk(args.walk_seconds, warm) for warm in (False, True)]
        dq = np.abs(np.array(walks[0]["final_q"]) - np.array(walks[1]["final_q"])).max()
        print("\n" + table(walks, ["servo QP", "simulated_s", "wall_s", "real_time_factor", "servo_solves",
                                   "servo_us_per_solve", "warm_accepted", "cold", "events"]))
        print(f"largest final configuration difference, warm vs cold servo: {dq:.3g}")
        for key in walks[0]["acceptance"]:
            print(f"  {key}: cold {walks[0]['acceptance'][key]}, warm {walks[1]['acceptance'][key]}")
        print(f"  events: cold {walks[0]['event_kinds']}, warm {walks[1]['event_kinds']}")
        payload["walks"] = walks
        payload["walk_final_q_difference"] = float(dq)
    print(f"wrote {write_json('qp_solvers', payload)}")


if __name__ == "__main__":
    main()
