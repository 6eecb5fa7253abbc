"""Joint locking of a 6R industrial robot (seed 002, Sec. 7; a stand-in RX130L, see robots/rx130.py).

The robot is released at rest from q = 0 (arm stretched out horizontally), drives off, gear
ratio 100 with the motors' rotor inertias on the motor side. Variants (``--set variant=...``):

- ``brakes`` (default): the brakes of joints 1, 2, 3 engage at 0.05, 0.1 and 0.15 s (the paper's
  lock times). Each slides (kinetic torque on the joint side: 1000, 1600, 1000 N m, i.e. 10,
  16, 10 N m at the motor; static capacity 1.25 x that, values chosen here: the paper gives
  none) until its joint stops; the stick is then a momentum-consistent lock, an event;
- ``momentum``: the paper's scenario, ideal locks of joints 1, 2, 3 at 0.05, 0.1, 0.15 s with
  the momentum-consistent transition (``formulation`` = redundant eq. 24, projected eq. 32 or
  minimal eq. 37);
- ``naive``: the same locks by zeroing the locked joint's velocity.

The plot shows motor rates (100 q') and motor angles (100 q) of joints 1-3 and the motor-side
generalized momentum ``F^T M q' / 100`` of the joints still free. Run as a script it also
draws the paper's comparison (Figs. 6-8: naive against momentum-consistent, and the brakes)
into ``out/locking_6r_paper.png``:

    python examples/locking_6r.py [--out out]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from robots.rx130 import GEAR_RATIO, rx130
from sim.brakes import add_brakes
from sim.locking import complement
from sim.runner import Scenario
from sim.simulator import Simulator

LOCKS = ((0.05, "joint_1"), (0.1, "joint_2"), (0.15, "joint_3"))  # s, the paper's times
BRAKE_TORQUES = {"joint_1": 1000.0, "joint_2": 1600.0, "joint_3": 1000.0}  # N m, joint side
VARIANTS = ("brakes", "momentum", "naive")


class _Motor:
    """Motor-side angles (rad) or rates (rad/s) of joints 1-3, a recordable quantity."""

    def __init__(self, rates: bool):
        self.rates, self.name = rates, "motor rates" if rates else "motor angles"

    def position(self, mech):
        x = mech.v if self.rates else mech.q
        return GEAR_RATIO * np.asarray(x[:3], dtype=float)


class _FreeMomentum:
    """Motor-side generalized momentum (N m s) of each joint, zero while it is locked."""

    name = "motor momentum"

    def position(self, mech):
        cons = list(mech.constraints.values())
        F = complement(mech, cons)
        p = np.zeros(mech.nv)
        free = np.flatnonzero(F.any(axis=1))
        p[free] = F.T @ (mech.mass_matrix() @ mech.v) / GEAR_RATIO
        return p[:3]


def simulate(variant: str = "brakes", formulation: str = "redundant", dt: float = 1e-4) -> Simulator:
    """A prepared simulator of the scenario (not yet run)."""
    if variant not in VARIANTS:
        from controlkit.errors import ControlkitError
        raise ControlkitError(f"locking_6r: variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    built = rx130()
    sim = Simulator(built.mechanism, built.q0, dt=dt, integrator="rk4",
                    record={"motor rates": _Motor(True), "motor angles": _Motor(False), "motor momentum": _FreeMomentum()})
    for name, unit in (("motor rates", "rad/s"), ("motor angles", "rad"), ("motor momentum", "N m s")):
        sim.recording.set_unit(name, unit)
    if variant == "brakes":
        brakes = add_brakes(sim, BRAKE_TORQUES, formulation=formulation)
        for t, j in LOCKS:
            brakes.engage_at(t, j)
        sim.brakes = brakes
    else:
        options = {"method": "naive"} if variant == "naive" else {"formulation": formulation}
        for t, j in LOCKS:
            sim.lock_at(t, j, **options)
    return sim


def build(variant: str = "brakes", formulation: str = "redundant", dt: float = 1e-4) -> Scenario:
    """The 6R locking scenario (see the module docstring)."""
    sim = simulate(variant, formulation, dt)

    def summary(rec):
        lines = []
        for e in rec.events:
            if e.kind in ("brake", "lock", "slip"):
                lines.append(f"  t = {e.time:.6f} s  {e.description}")
        lines.append("  motor angles at the end (rad): "
                     + np.array2string(GEAR_RATIO * rec.q[-1, :3], precision=4))
        return "\n".join(lines)

    panels = [("motor rates", k, f"motor rate {k + 1}") for k in range(3)]
    panels += [("motor momentum", k, f"motor momentum {k + 1}") for k in range(3)]
    panels += [("motor angles", k, f"motor angle {k + 1}") for k in range(3)]
    return Scenario("locking_6r", f"6R robot locking ({variant}; seed 002 Sec. 7)", sim, 0.3,
                    model={"factory": "robots.rx130:rx130", "kwargs": {}}, panels=panels, summary=summary)


def paper_figure(path: Path, duration: float = 0.3, dt: float = 1e-4) -> Path:
    """The paper's comparison (Figs. 6-8) with the brakes beside it: rows motor rates, motor
    momenta, motor angles; columns naive, momentum-consistent, brakes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 3, figsize=(13, 9), sharex=True)
    for col, variant in enumerate(("naive", "momentum", "brakes")):
        sim = simulate(variant, dt=dt)
        rec = sim.run(duration)
        for row, name in enumerate(("motor rates", "motor momentum", "motor angles")):
            ax = axes[row, col]
            y = rec.quantity(name)
            for k in range(3):
                ax.plot(rec.t, y[:, k], label=f"joint {k + 1}")
            for e in rec.events_of("lock"):
                ax.axvline(e.time, color="0.7", lw=0.8, ls=":")
            ax.set_ylabel(f"{name} [{rec.units.get(name, '')}]")
            if row == 0:
                ax.set_title({"naive": "velocity zeroed (Fig. 6)", "momentum": "momentum-consistent (Fig. 7, 8)",
                              "brakes": "brakes: lock at stick"}[variant])
            if row == 2:
                ax.set_xlabel("t [s]")
        axes[0, col].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out", help="output folder")
    p.add_argument("--dt", type=float, default=1e-4, help="RK4 step (s)")
    args = p.parse_args(argv)
    print(f"wrote {paper_figure(Path(args.out) / 'locking_6r_paper.png', dt=args.dt)}")


if __name__ == "__main__":
    main()
