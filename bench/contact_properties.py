"""The contact property tests (tests/test_contact_properties.py) over many more seeds: random drops
of 2-8 boxes and balls (energy never above its value at the previous impact, deepest penetration,
errors) and random cradles (momentum, elastic energy, order independence). Prints a table and
writes bench/results/contact_properties.json. ``--drops N --cradles N --seconds S``.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one BLAS thread, as controlkit sets (before numpy loads)

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from contact_cases import (  # noqa: E402
    cradle_case,
    drop_case,
    mechanical_energy,
    run_cradle_order,
    run_drop,
    world_momentum,
)

from bench.common import table, write_json  # noqa: E402
from sim.collision import CollisionWorld  # noqa: E402


def run_cradle(case: dict) -> dict:
    """Both body orders of a :func:`cradle_case`: worst momentum and energy errors, overlap, and the
    largest difference of any ball's final velocity between the two orders (m/s)."""
    finals, p_err, e_err, deepest = [], 0.0, 0.0, 0.0
    for reverse in (False, True):
        mech, sim, rec, p0, e0 = run_cradle_order(case, reverse)
        p_err = max(p_err, max(float(np.abs(world_momentum(mech, q, v) - p0).max()) for q, v in zip(rec.q, rec.v)))
        if case["e"] == 1.0:
            e_err = max(e_err, abs(mechanical_energy(mech, sim.q, sim.v) - e0) / e0)
        world = CollisionWorld(mech)
        deepest = min(deepest, min(float(world.distances(q).min()) for q in rec.q))
        model = mech.model
        finals.append({s["name"]: sim.v[model.joints[model.getJointId(f"{s['name']}_root")].idx_v] for s in case["bodies"]})
    order = max(abs(finals[0][n] - finals[1][n]) for n in finals[0])
    return dict(seed=case["seed"], balls=len(case["bodies"]), e=case["e"], momentum_error=p_err,
                energy_error=e_err, deepest=deepest, order_difference=order)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--drops", type=int, default=20, help="number of drop seeds (1..N)")
    ap.add_argument("--cradles", type=int, default=20, help="number of cradle seeds (101..)")
    ap.add_argument("--seconds", type=float, default=2.0, help="simulated seconds per drop")
    args = ap.parse_args(argv)
    drops = []
    for seed in range(1, args.drops + 1):
        t0 = time.perf_counter()
        out = run_drop(drop_case(seed), seconds=args.seconds)
        out["wall s"] = time.perf_counter() - t0
        out["ok"] = bool(out["deepest"] >= -1e-4 and out["energy_rise"] <= 1e-9 and (out["error"] is None or out["error_is_controlkit"]))
        drops.append(out)
        print(f"  drop {seed}: {'ok' if out['ok'] else 'FAILS'}", flush=True)
    cradles = [run_cradle(cradle_case(100 + s)) for s in range(1, args.cradles + 1)]
    print(table(drops, ["seed", "bodies", "deepest", "energy_rise", "events", "sim_time", "wall s", "ok", "error"]))
    print(table(cradles, ["seed", "balls", "e", "momentum_error", "energy_error", "deepest", "order_difference"]))
    print(f"drops within the properties: {sum(d['ok'] for d in drops)} / {len(drops)}")
    print(f"wrote {write_json('contact_properties', {'drops': drops, 'cradles': cradles})}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
