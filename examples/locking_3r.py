"""Joint locking of the planar 3R pendulum (seed 002, section 6).

The pendulum (1 m aluminium links, 0.2 x 0.2 m section, 108 kg, inertias 0.72 and
9.36 kg m^2) is released from rest at q = (pi/6, pi/6, pi/6); joint 2 is locked at
0.8 s and joint 3 at 1.3 s; RK4 at 1e-4 s. For the momentum-consistent transition
in both formulations (redundant coordinates, minimal coordinates) and for the naive
velocity zeroing, the script prints the velocities before and after each lock, the
generalized momentum of the unlocked joints, the kinetic energy lost, and the state
at t = 2 s.

    python examples/locking_3r.py [--dt 1e-4] [--duration 2.0]
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import robots
from sim.simulator import Simulator

VARIANTS = {
    "momentum / redundant": dict(method="momentum", formulation="redundant"),
    "momentum / minimal": dict(method="momentum", formulation="minimal"),
    "naive": dict(method="naive"),
}


def run(dt: float = 1e-4, duration: float = 2.0, t_lock=(0.8, 1.3), **options):
    """Simulate with joint_2 locked at t_lock[0] and joint_3 at t_lock[1] (s); returns the simulator."""
    built = robots.three_r_pendulum((math.pi / 6,) * 3)
    sim = Simulator(built.mechanism, built.q0, dt=dt, integrator="rk4")
    sim.lock_at(t_lock[0], "joint_2", **options)
    sim.lock_at(t_lock[1], "joint_3", **options)
    sim.run(duration)
    return sim


def _fmt(x) -> str:
    return np.array2string(np.asarray(x, dtype=float) + 0.0, precision=9, suppress_small=True, floatmode="fixed")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dt", type=float, default=1e-4, help="RK4 step (s)")
    p.add_argument("--duration", type=float, default=2.0, help="simulated time (s)")
    args = p.parse_args(argv)
    for label, options in VARIANTS.items():
        wall = time.perf_counter()
        sim = run(args.dt, args.duration, **options)
        wall = time.perf_counter() - wall
        print(f"== {label}  ({wall:.1f} s wall)")
        for ev in sim.recording.events_of("lock"):
            d = ev.data
            print(f"  t = {ev.time:.4f} s  lock {d['joint']}")
            print(f"    v before (rad/s) {_fmt(d['v_before'])}   after {_fmt(d['v_after'])}")
            print(f"    momentum of unlocked joints (N m s) before {_fmt(d['momentum_before'])}"
                  f"   after {_fmt(d['momentum_after'])}")
            print(f"    kinetic energy lost {d['kinetic_energy_before'] - d['kinetic_energy_after']:.6f} J")
        sim.mech.set_state(sim.q, sim.v)
        print(f"  state at t = {sim.t:.4f} s: q (rad) {_fmt(sim.q)}  v (rad/s) {_fmt(sim.v)}"
              f"  energy {sim.mech.energy():.6f} J")


if __name__ == "__main__":
    main()
