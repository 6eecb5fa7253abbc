"""How much of walking part 2 hangs on the servo's last bits: what a change of arithmetic in the
whole-body servo (another assembly order, another solver, a compiled kernel) can and cannot keep.

- ``walk``: ``examples/walking_fd.py`` for ``--seconds`` (s), the servo's torques each multiplied by
  ``1 + eps n`` (n standard normal, seeded) for eps in ``--eps`` (0 is the walk itself): events,
  steps, worst heel-strike error and stance slip, and the largest difference of the final
  configuration from the unperturbed walk. A noise of 1e-13 is what a reordered sum gives.
- ``rows``: the servo's problems of ``--capture`` s (every 50th tick, as
  :func:`controlkit.equations.build_problem` assembles them) solved again with their cost and equality
  rows multiplied by ``1 + 1e-15 n``: the largest relative change of the torques, per number of planted
  feet, by the servo's own solve (``controllers.servo_solve``) and by ``controlkit.solver.solve``. It bounds
  how closely any other arithmetic can reproduce the servo's torques.

The servo itself is not edited: ``controllers.whole_body.servo_evaluate`` is wrapped at run time.

Run: ``.venv/bin/python bench/servo_sensitivity.py [--seconds 20] [--eps 0 1e-13 1e-8] [--capture 4]``;
writes bench/results/servo_sensitivity.json.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import copy  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import table, write_json  # noqa: E402
from sim.runner import load_script  # noqa: E402


def walk(seconds: float, eps: float, seed: int = 1) -> dict:
    """Walking part 2 with the servo's torques perturbed by relative noise ``eps``."""
    import controllers.whole_body as wb
    example = load_script(ROOT / "examples" / "walking_fd.py")
    scn = example.build()
    rng = np.random.default_rng(seed)
    real = wb.servo_evaluate

    def noisy(*args):
        sol = real(*args)
        if eps:
            sol.tau *= 1.0 + eps * rng.standard_normal(sol.tau.shape)
        return sol

    wb.servo_evaluate = noisy
    try:
        t0 = time.perf_counter()
        rec = scn.sim.run(seconds)
        wall = time.perf_counter() - t0
    finally:
        wb.servo_evaluate = real
    s = example.walking_statistics(rec)
    return {"eps": eps, "simulated_s": seconds, "wall_s": wall, "events": len(rec.events), "steps": s["steps"],
            "max_strike_error_mm": 1e3 * s["max_strike_error"], "max_stance_slip_mm": 1e3 * s["max_stance_slip"],
            "fell": s["fell"], "final_q": rec.q[-1].tolist()}


def row_sensitivity(seconds: float, every: int = 50, trials: int = 3, seed: int = 0) -> list[dict]:
    """The servo's problems re-solved with rows perturbed by 1e-15 relative: torque change per phase,
    by the servo's solve (:func:`controllers.servo_solve.servo_solve`) and by the reference path
    (:func:`controlkit.solver.solve`), each against its own unperturbed answer."""
    import controllers.whole_body as wb
    from controlkit.solver import solve
    from controllers.servo_solve import servo_solve
    example = load_script(ROOT / "examples" / "walking_fd.py")
    scn = example.build()
    servo = scn.info["servo"]
    rng = np.random.default_rng(seed)
    real = wb.servo_evaluate
    worst: dict[tuple[str, int], list[float]] = {}

    def probe(ws, mech, eqs, t, q, v):
        sol = real(ws, mech, eqs, t, q, v)
        if servo.solves % every == 0:
            p = mech.problem
            feet = len(servo.planted)
            for name, fn in (("servo", servo_solve), ("reference", solve)):
                base = fn(_fresh(p)).tau
                for _ in range(trials):
                    pp = _fresh(p)
                    for rows in (pp.cost_rows, pp.eq_rows):
                        rows.Aa = rows.Aa * (1.0 + 1e-15 * rng.standard_normal(rows.Aa.shape))
                        rows.b = rows.b * (1.0 + 1e-15 * rng.standard_normal(rows.b.shape))
                    tau = fn(pp).tau
                    worst.setdefault((name, feet), []).append(float(np.abs(tau - base).max() / (1.0 + np.abs(base).max())))
        return sol

    wb.servo_evaluate = probe
    try:
        scn.sim.run(seconds)
    finally:
        wb.servo_evaluate = real
    return [{"solve": k[0], "planted_feet": k[1], "problems": len(v) // trials, "max_rel_torque_change": max(v),
             "median_rel_torque_change": float(np.median(v))} for k, v in sorted(worst.items())]


def _fresh(p):
    """A copy of problem ``p`` whose cost and equality rows can be replaced, with no remembered factors."""
    pp = copy.copy(p)
    pp.cost_rows, pp.eq_rows, pp.factors = copy.copy(p.cost_rows), copy.copy(p.eq_rows), {}
    return pp


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="simulated seconds of each walk (s)")
    ap.add_argument("--eps", type=float, nargs="+", default=[0.0, 1e-13, 1e-8], help="relative torque noise levels")
    ap.add_argument("--capture", type=float, default=4.0, help="simulated seconds of problems for the row test (s)")
    args = ap.parse_args(argv)
    walks = [walk(args.seconds, eps) for eps in args.eps]
    q0 = np.array(walks[0]["final_q"])
    for w in walks:
        w["final_q_difference"] = float(np.abs(np.array(w["final_q"]) - q0).max())
    print(table(walks, ["eps", "simulated_s", "wall_s", "events", "steps", "max_strike_error_mm",
                        "max_stance_slip_mm", "fell", "final_q_difference"]))
    rows = row_sensitivity(args.capture)
    print("\nservo torques re-solved with rows perturbed by 1e-15 relative")
    print(table(rows, ["solve", "planted_feet", "problems", "max_rel_torque_change", "median_rel_torque_change"]))
    path = write_json("servo_sensitivity", {"settings": vars(args), "walks": walks, "rows": rows})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
