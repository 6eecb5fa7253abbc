"""Variational integrator vs RK4 at the same step: the 5-link pendulum chain's energy error over 1e5 steps.

The chain (robots.pendulum_chain(5), 1 m links) is released from rest 1.2 rad below the horizontal
and integrated at h = 10 ms for 1e5 steps (1000 s) by the midpoint variational integrator and by RK4,
both on ``pin.aba`` (the integrator alone, no Simulator loop). Reported: the largest energy error
|E - E0| (J) over the first 1e3 steps and over the whole run, their ratio (no drift: <= 2), the error
at the end, wall time per step. Writes results/variational.json and results/variational.md.

    .venv/bin/python bench/variational.py [--steps 100000] [--dt 0.01]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import robots  # noqa: E402
from bench.common import RESULTS, table, write_json  # noqa: E402
from sim.integrators import PinocchioSystem, make_integrator  # noqa: E402


def run(name: str, steps: int, h: float) -> dict:
    built = robots.pendulum_chain(5)
    model = built.mechanism.model
    data = model.createData()
    tau = np.zeros(model.nv)
    system = PinocchioSystem(model, lambda t, q, v: pin.aba(model, data, q, v, tau))
    q = built.q0.copy()
    q[0] = -1.2
    v = np.zeros(model.nv)
    e0 = pin.computeKineticEnergy(model, data, q, v) + pin.computePotentialEnergy(model, data, q)
    it = make_integrator(name)
    errs = np.empty(steps)
    t0 = time.perf_counter()
    for k in range(steps):
        s = it.step(system, k * h, q, v, h)
        q, v = s.q1, s.v1
        errs[k] = abs(pin.computeKineticEnergy(model, data, q, v) + pin.computePotentialEnergy(model, data, q) - e0)
    wall = time.perf_counter() - t0
    first = float(errs[:1000].max())
    return {"integrator": name, "steps": steps, "dt": h, "max_first_1e3": first, "max_all": float(errs.max()),
            "ratio": float(errs.max() / first), "final": float(errs[-1]), "us_per_step": 1e6 * wall / steps,
            "every_1e4": [float(errs[i:i + 10000].max()) for i in range(0, steps, 10000)]}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100_000)
    p.add_argument("--dt", type=float, default=0.01)
    p.add_argument("--quick", action="store_true", help="1e4 steps")
    args = p.parse_args(argv)
    steps = 10_000 if args.quick else args.steps
    rows = [run(n, steps, args.dt) for n in ("variational", "rk4")]
    cols = ["integrator", "steps", "dt", "max_first_1e3", "max_all", "ratio", "final", "us_per_step"]
    text = table(rows, cols)
    print(text)
    write_json("variational", {"rows": rows})
    md = ["## Variational integrator vs RK4 (5-link chain, energy error in J)", "", "```", text, "```", "",
          "Largest error per 1e4 steps:", ""]
    md += [f"- {r['integrator']}: " + ", ".join(f"{x:.3g}" for x in r["every_1e4"]) for r in rows]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "variational.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
