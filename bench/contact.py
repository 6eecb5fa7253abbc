"""Contact benchmark: wall time per simulated second, events per second and time per
support-set solve for the thesis' contact scenes.

Figures: wall time per simulated second, events per simulated second, the deepest signed distance
of any pair at any recorded sample (mm), impacts, contact changes, support solves and how many of
them the pivoting left unsolved (``ContactSource.unsolved_supports``: the QP's forces taken).

Scenes: the stack of three bricks of Fig. 5.7/5.8 (toppling), the pendulum-and-block scene of
Fig. 2.1, the friction block of Fig. 5.10, a box resting on a table, a 20-ball Newton's cradle (one
impact, ``enable_impacts``) and 12 boxes dropped side by side (e = 0.3). Prints a table and writes
bench/results/contact.json. ``--quick`` runs shorter simulations; ``--only TEXT`` some scenes.
"""
from __future__ import annotations

import os

# the project's own setting (controlkit/__init__.py), made before numpy loads: one BLAS thread
# (a threaded BLAS on a loaded 2-core machine took 0.1 s per 120 x 120 solve, 100x one thread's)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import robots  # noqa: E402
from bench.common import table, write_json  # noqa: E402
from robots import scenes  # noqa: E402
from sim.contact import enable_contacts  # noqa: E402
from sim.simulator import Simulator  # noqa: E402


def _bricks():
    b = scenes.brick_stack()
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    return sim, dict(friction=(0.6, 0.5))


def _pendulum_block():
    b = robots.thesis_pendulum_scene()
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=2e-3, integrator="rk4")
    return sim, dict(friction=(0.5, 0.4), restitution={**b.info["restitution"], "default": 0.0})


def _friction_block():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import friction_block
    return friction_block.build().sim, None


def _box_at_rest():
    b = scenes.box_on_ground()
    return Simulator(b.mechanism, b.q0, b.v0, dt=1e-2, integrator="rk4"), dict(friction=(0.5, 0.4))


def _cradle20():
    b = scenes.newtons_cradle(20)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    sim.enable_impacts(restitution=1.0)  # one impact, resolved by the propagative law
    return sim, None


def _box_row():
    b = scenes.box_row(12)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    return sim, dict(friction=(0.5, 0.4), restitution=0.3)


SCENES = {"brick stack (Fig. 5.7)": (_bricks, 2.0), "pendulum and block (Fig. 2.1)": (_pendulum_block, 4.0),
          "friction block (Fig. 5.10)": (_friction_block, 6.5), "box at rest": (_box_at_rest, 10.0),
          "20-ball cradle": (_cradle20, 0.1), "12 boxes in a row (e = 0.3)": (_box_row, 1.0)}


def run_scene(name: str, seconds: float) -> dict:
    """Simulate one scene; returns its measured figures (errors are reported, not raised)."""
    make, _ = SCENES[name]
    sim, options = make()
    src = next((s for s in sim.sources if hasattr(s, "support_solves")), None)
    if src is None and options is not None:
        src = enable_contacts(sim, **options)
    solves_list = src.support_solves if src is not None else []
    t0 = time.perf_counter()
    error = ""
    try:
        sim.run(seconds)
    except Exception as exc:  # a benchmark reports where a scene stops
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    wall = time.perf_counter() - t0
    rec = sim.recording
    kinds = [e.kind for e in rec.events]
    solves = np.array(solves_list) if solves_list else np.zeros(1)
    from sim.collision import CollisionWorld
    world = CollisionWorld(sim.mech)
    deepest = min(float(world.distances(q).min()) for q in rec.q)
    return {"scene": name, "simulated s": sim.t, "deepest mm": 1e3 * deepest, "wall s per sim s": wall / max(sim.t, 1e-9),
            "events per sim s": len(kinds) / max(sim.t, 1e-9), "impacts": kinds.count("impact"),
            "contact changes": sum(k.startswith("contact") for k in kinds), "slip/stick": kinds.count("slip") + kinds.count("stick"),
            "support solves": len(solves_list), "unsolved LCPs": src.unsolved_supports if src is not None else 0,
            "ms per support solve": 1e3 * float(solves.mean()),
            "steps": sim.steps, "error": error}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="a tenth of each duration")
    ap.add_argument("--only", default="", help="run only the scenes whose name contains this text")
    args = ap.parse_args(argv)
    rows = []
    for name, (_, seconds) in SCENES.items():
        if args.only and args.only not in name:
            continue
        rows.append(run_scene(name, seconds / 10 if args.quick else seconds))
        print(f"  {name}: done", flush=True)
    cols = ["scene", "simulated s", "wall s per sim s", "events per sim s", "deepest mm", "impacts", "contact changes",
            "slip/stick", "support solves", "unsolved LCPs", "ms per support solve", "error"]
    print(table(rows, cols))
    print(f"wrote {write_json('contact', {'rows': rows})}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
