"""The billiards break (seed 001, section VII): a rack struck by the cue ball, its set of outcomes.

The cue ball ``ball0`` runs along +x into the apex of a rack (the triangle of 15 balls by
default). Every contact of the rack is simultaneous, and the propagative law's outcome depends on
the order of the two-body resets: :func:`break_outcomes` enumerates the outcome set (exhaustively
when the tree is small enough, else a random sample of minimal sequences) and checks energy and
momentum on each; :func:`plot_outcomes` draws the outcome velocities from above; :func:`rack_scan`
finds which rack lattices have a unique outcome (the square lattice, a 90 degree diamond: its
contact normals are orthogonal or collinear, Theorems 2 and 3). The demo itself simulates one
break (the propagative law picks the most-impacting contact first) with the variational integrator,
for the replay.

    python examples/billiards.py [--rows 5] [--angle 60] [--samples 200] [--plot out/billiards_outcomes.png]
    controlkit demo billiards --html        (the replay)
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from robots.billiards import break_shot
from sim.collision import CollisionWorld
from sim.impact import ImpactError
from sim.impact_outcomes import OutcomeSet, impact_outcomes, sample_outcomes
from sim.runner import Scenario, run_scenario
from sim.simulator import Simulator


def contact_problem(built):
    """(M, J, v) of the break at its start: every pair touching (within 1 nm) is in the contact set."""
    mech = built.mechanism
    mech.set_state(built.q0, built.v0)
    world = CollisionWorld(mech)
    contacts = [c for c in world.contacts(built.q0, built.v0) if c.distance <= 1e-9]
    M, _ = mech.dynamics()
    return M.copy(), world.jacobian(contacts), built.v0.copy(), contacts


def break_outcomes(rows: int = 5, angle: float = 60.0, speed: float = 1.0, *, samples: int = 200, seed: int = 0,
                   max_states: int = 200_000) -> tuple[OutcomeSet, object]:
    """The break's outcome set (cue ball touching the apex): exhaustive if the outcome tree has at most
    ``max_states`` momenta, else ``samples`` random minimal sequences. Returns (outcome set, built)."""
    built = break_shot(rows=rows, angle=angle, speed=speed)
    M, J, v, _ = contact_problem(built)
    try:
        out = impact_outcomes(M, J, v, max_states=max_states)
    except ImpactError:
        out = sample_outcomes(M, J, v, samples=samples, seed=seed)
    return out, built


def conservation_errors(out: OutcomeSet, mass: float) -> tuple[float, float]:
    """Largest |KE after - KE before| (J) and |momentum after - before| (N s) over the outcomes."""
    p0 = None
    de = dp = 0.0
    for o in out.outcomes:
        de = max(de, abs(o.kinetic_energy - out.kinetic_energy_before))
    vs = [o.v for o in out.outcomes]
    for v in vs:
        p = mass * np.array([v[0::2].sum(), v[1::2].sum()])
        p0 = p if p0 is None else p0
        dp = max(dp, float(np.abs(p - p0).max()))
    return de, dp


def rack_scan(rows: int = 3, angles=(60.0, 75.0, 90.0, 105.0, 120.0)) -> dict[float, int]:
    """Number of distinct outcomes of the break for rack lattices of each angle (deg), enumerated exhaustively."""
    result = {}
    for a in angles:
        built = break_shot(rows=rows, angle=a, speed=1.0)
        M, J, v, _ = contact_problem(built)
        result[float(a)] = len(impact_outcomes(M, J, v))
    return result


def plot_outcomes(out: OutcomeSet, built, path, max_outcomes: int = 12) -> Path:
    """Top view: the rack and, per outcome (one panel each, up to ``max_outcomes``), each ball's velocity arrow."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pos = built.info["positions"]
    r = built.info["radius"]
    shown = out.outcomes[:max_outcomes]
    cols = min(4, len(shown))
    rws = (len(shown) + cols - 1) // cols
    fig, axes = plt.subplots(rws, cols, figsize=(3.2 * cols, 3.0 * rws), squeeze=False)
    vmax = max(float(np.abs(o.v).max()) for o in shown)
    for ax, o in zip(axes.ravel(), shown):
        for i, (x, y) in enumerate(pos):
            ax.add_patch(plt.Circle((x, y), r, fc="white" if i == 0 else "0.8", ec="k", lw=0.5))
        vel = o.v.reshape(-1, 2)
        ax.quiver(pos[:, 0], pos[:, 1], vel[:, 0], vel[:, 1], angles="xy", scale_units="xy", scale=vmax / (4 * r),
                  color="C3", width=0.01)
        ax.set_aspect("equal")
        ax.set_xlim(pos[:, 0].min() - 3 * r, pos[:, 0].max() + 6 * r)
        ax.set_ylim(pos[:, 1].min() - 4 * r, pos[:, 1].max() + 4 * r)
        ax.set_title(f"{len(o.sequence)} resets, x{o.count}", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in axes.ravel()[len(shown):]:
        ax.axis("off")
    kind = "all" if out.exhaustive else f"a sample of {out.sequences} sequences:"
    fig.suptitle(f"break outcomes ({kind} {len(out)} distinct; {len(shown)} shown), velocities from above", fontsize=9)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


class _KineticEnergy:
    name = "kinetic energy"

    def position(self, mech):
        return np.array([float(mech.kinetic_energy())])


def build(rows: int = 5, angle: float = 60.0, speed: float = 6.0, cue_distance: float = 0.02, dt: float = 1e-3,
          integrator: str = "variational") -> Scenario:
    """The break simulated: cue ball ``cue_distance`` (m) from the apex at ``speed`` (m/s), no table edges."""
    kwargs = {"rows": rows, "angle": angle, "speed": speed, "cue_distance": cue_distance}
    built = break_shot(**kwargs)
    sim = Simulator(built.mechanism, built.q0, built.v0, dt=dt, integrator=integrator,
                    record={"kinetic energy": _KineticEnergy()})
    sim.recording.set_unit("kinetic energy", "J")
    sim.enable_impacts(law="propagative", restitution=1.0)

    def summary(rec):
        ev = rec.events_of("impact")
        ke = rec.quantity("kinetic energy")[:, 0]
        return (f"{len(ev)} impact events, the first at t = {ev[0].time:.6f} s with {ev[0].data['resets']} resets; "
                f"kinetic energy {ke[0]:.12g} J -> {ke[-1]:.12g} J") if ev else "no impact"

    return Scenario("billiards", "billiards break: a rack struck by the cue ball (seed 001)", sim, 0.25,
                    model={"factory": "robots.billiards:break_shot", "kwargs": kwargs},
                    panels=[("kinetic energy", 0, "kinetic energy")], summary=summary)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=5)
    p.add_argument("--angle", type=float, default=60.0, help="rack lattice angle (deg): 60 triangle, 90 diamond")
    p.add_argument("--samples", type=int, default=200)
    p.add_argument("--plot", default="out/billiards_outcomes.png")
    args = p.parse_args(argv)
    out, built = break_outcomes(args.rows, args.angle, samples=args.samples)
    de, dp = conservation_errors(out, built.info["mass"])
    what = "all outcomes" if out.exhaustive else f"{out.sequences} random minimal sequences"
    print(f"{len(built.info['balls'])} balls, {len(out.uniqueness.inner_products)} contacts: {what} -> "
          f"{len(out)} distinct outcomes; energy error {de:.2g} J, momentum error {dp:.2g} N s")
    print(out.uniqueness.text)
    print("distinct outcomes per rack lattice angle (3 rows):", rack_scan())
    print(f"wrote {plot_outcomes(out, built, args.plot)}")
    run_scenario(build(args.rows, args.angle), out="out", html="out/billiards.html")


if __name__ == "__main__":
    main()
