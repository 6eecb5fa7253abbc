"""How robust is the forward-dynamics walk? The controller's torso-mass error against ground friction.

A sweep (:func:`controlkit.sweep`, on Dask) of ``examples/walking_fd.py``: the controller's model
of the torso from 20% too light to 20% too heavy (``mass_error``, 9 values) against the soles'
friction coefficient on the ground (``mu``, 5 values; the servo's friction pyramid keeps
assuming 0.8), 6 s of walking each (the weight shift and five steps). Every run is a row of
``out/walking_robustness/results.csv``: whether the robot fell, its steps, the worst heel-strike
error and stance slip, torso roll and pitch, the run's statistics; the maps
``map_max_stance_slip.png`` and ``map_fell.png`` show where the walk holds.

Run: ``python examples/walking_robustness.py`` (45 runs on this machine's cores;
``--scheduler tcp://HOST:8786`` sends them to a Dask cluster). Finished runs are kept: running it
again only redraws. The same from the command line::

    controlkit sweep walking_fd --seconds 6 --set mass_error=-0.2:0.2:9 --set mu=0.2,0.3,0.4,0.6,0.8 \\
        --metric max_stance_slip --metric fell --out out/walking_robustness
"""
from __future__ import annotations

import argparse

import numpy as np

import controlkit

MASS_ERROR = "-0.2:0.2:9"
MU = "0.2,0.3,0.4,0.6,0.8"
METRICS = ("max_stance_slip", "fell")


def study(out: str = "out/walking_robustness", seconds: float = 6.0, mass_error: str = MASS_ERROR, mu: str = MU,
          scheduler: str | None = None, quiet: bool = False, workers: int | None = None):
    """Run (or resume) the sweep; returns its :class:`controlkit.studies.Table`. ``mass_error`` and
    ``mu`` are SPECs (:mod:`controlkit.studies.specs`), ``seconds`` per walk (s)."""
    return controlkit.sweep("walking_fd", {"mass_error": mass_error, "mu": mu}, seconds=seconds, out=out,
                            metrics=METRICS, scheduler=scheduler, quiet=quiet, workers=workers)


def summary(table) -> str:
    """Per friction coefficient: the mass errors the robot walked through without falling."""
    lines = []
    for mu in sorted(set(table["mu"])):
        rows = [r for r in table if r["mu"] == mu]
        held = sorted(r["mass_error"] for r in rows if not r["error"] and not r["fell"])
        slip = max((r["max_stance_slip"] for r in rows if not r["error"]), default=np.nan)
        span = f"{held[0]:+.0%} to {held[-1]:+.0%} ({len(held)} of {len(rows)})" if held else "none"
        lines.append(f"mu {mu:.2f}: walks with mass errors {span}; worst stance slip {1e3 * slip:.1f} mm")
    return "\n".join(lines)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out/walking_robustness")
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--mass-error", default=MASS_ERROR, help="SPEC of the torso-mass error")
    p.add_argument("--mu", default=MU, help="SPEC of the ground friction coefficient")
    p.add_argument("--scheduler", help="a Dask scheduler's address (default: this machine)")
    args = p.parse_args()
    print(summary(study(args.out, args.seconds, args.mass_error, args.mu, args.scheduler)))
