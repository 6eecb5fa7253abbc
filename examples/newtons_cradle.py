"""Newton's cradle (seed 001): five equal balls, the first striking the row at 1 m/s.

Runs the same scene with each impact law and prints the balls' speeds after the
impact. The propagative law (a minimal sequence of two-body resets) passes the
momentum down the row, so only the last ball leaves; the simultaneous (LCP) law
bounces the first ball back and sends the other four off together; the plastic law
moves the whole row on at a fifth of the speed.

    python examples/newtons_cradle.py [--dt 0.01] [--restitution 1.0]
"""
from __future__ import annotations

import argparse

import numpy as np

import robots
from sim.simulator import Simulator


def run(law: str, dt: float = 1e-2, restitution: float = 1.0, duration: float = 0.1):
    """Simulate the cradle with one impact law; returns (simulator, recording, ball speeds m/s)."""
    built = robots.newtons_cradle(n=5, speed=1.0)
    mech = built.mechanism
    sim = Simulator(mech, built.q0, built.v0, dt=dt, integrator="rk4")
    sim.enable_impacts(law=law, restitution=restitution)
    rec = sim.run(duration)
    model = mech.model
    cols = [model.joints[model.frames[mech.frame_id(b)].parentJoint].idx_v for b in built.info["balls"]]
    speeds = sim.v[cols] + 0.0  # x velocity of each ball (free-flyer linear velocity, no rotation here)
    speeds[np.abs(speeds) < 1e-15] = 0.0
    return sim, rec, speeds


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dt", type=float, default=1e-2, help="integration step (s)")
    p.add_argument("--restitution", type=float, default=1.0, help="coefficient of restitution e")
    args = p.parse_args(argv)
    print(f"Newton's cradle, 5 balls, e = {args.restitution}, dt = {args.dt} s")
    for law in ("propagative", "simultaneous", "plastic"):
        sim, rec, speeds = run(law, args.dt, args.restitution)
        (ev,) = rec.events_of("impact")
        ratio = ev.data["kinetic_energy_after"] / ev.data["kinetic_energy_before"]
        print(f"  {law:12s} impact at t = {ev.time:.9f} s, resets {ev.data['resets']:2d}, "
              f"KE after/before {ratio:.15f}")
        print(f"  {'':12s} ball speeds after (m/s): {np.array2string(speeds, precision=12, suppress_small=True)}")


if __name__ == "__main__":
    main()
