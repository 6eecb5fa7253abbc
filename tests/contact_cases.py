"""Random contact scenes for the property tests (tests/test_contact_properties.py) and their longer
runs in bench/contact_properties.py: seeded generators, one run, and the measured properties."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin

from controlkit.errors import ControlkitError
from robots import scenes
from sim.collision import CollisionWorld
from sim.contact import enable_contacts
from sim.contact.hinge import Mode, _multipliers_of
from sim.simulator import Simulator

ROOT = Path(__file__).resolve().parents[1]


def in_fresh_interpreter(code: str, timeout: float = 600.0) -> str:
    """Run the Python ``code`` in a new interpreter (in the repository, with it and tests/ importable)
    and return the last line of what it prints; fails the test with its stderr if it fails. For the
    chaotic contact scenes: coal's answers depend on what coal computed earlier in the process, so in
    the suite's process (whichever tests a worker ran before) a scene can take another trajectory."""
    path = os.pathsep.join([str(ROOT), str(ROOT / "tests")] + [x for x in [os.environ.get("PYTHONPATH")] if x])
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": path})
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.strip().splitlines()[-1]


def mechanical_energy(mech, q: np.ndarray, v: np.ndarray) -> float:
    """Kinetic plus potential energy (J) at (q, v)."""
    m, d = mech.model, mech.model.createData()
    return float(pin.computeKineticEnergy(m, d, q, v) + pin.computePotentialEnergy(m, d, q))


def world_momentum(mech, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Linear momentum (kg m/s, world axes) of the whole mechanism, (3,)."""
    m, d = mech.model, mech.model.createData()
    pin.centerOfMass(m, d, q, v)
    return float(d.mass[0]) * np.asarray(d.vcom[0]).copy()


def drop_case(seed: int) -> dict:
    """2-8 boxes and balls of random sizes (m), masses (kg), attitudes and velocities, dropped from
    levels 0.25 m apart (raised where a tilted box would overlap the ground or the body below:
    :func:`_lift_apart`) onto the ground; one random e and (mu_s, mu_k)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    bodies = []
    for i in range(n):
        spec = dict(name=f"body_{i}", mass=float(rng.uniform(0.2, 3.0)),
                    position=(float(rng.uniform(-0.15, 0.15)), float(rng.uniform(-0.15, 0.15)), 0.12 + 0.25 * i),
                    rpy=tuple(float(x) for x in rng.uniform(-math.pi, math.pi, 3)),
                    velocity=tuple(float(x) for x in np.concatenate([rng.uniform(-0.5, 0.5, 3), rng.uniform(-2, 2, 3)])))
        if rng.random() < 0.5:
            spec["radius"] = float(rng.uniform(0.03, 0.08))
        else:
            spec["box"] = tuple(float(x) for x in rng.uniform(0.04, 0.16, 3))
        bodies.append(spec)
    _lift_apart(bodies)
    mu_s = float(rng.uniform(0.2, 0.9))
    return dict(seed=seed, bodies=bodies, restitution=float(rng.uniform(0.0, 0.6)), friction=(mu_s, 0.8 * mu_s))


def touching_case(seed: int) -> dict:
    """A random touching start: 2 to 4 boxes and balls stacked on the ground, each resting on the one
    below (touching, at distance 0), the top one struck downwards at 0.1 to 2 m/s (with a small
    sideways part); restitution 0, 0.3, 0.8 or 1, with friction (0.6, 0.5) or none. Same keys as
    :func:`drop_case`."""
    rng = np.random.default_rng(seed)
    bodies, z = [], 0.0
    for i in range(int(rng.integers(2, 5))):
        if rng.random() < 0.3:
            r = float(rng.uniform(0.03, 0.08))
            spec = dict(name=f"body_{i}", radius=r, mass=float(rng.uniform(0.3, 3.0)),
                        position=(float(rng.uniform(-0.005, 0.005)), 0.0, z + r))
            z += 2 * r
        else:
            size = tuple(float(x) for x in rng.uniform(0.05, 0.2, 3))
            spec = dict(name=f"body_{i}", box=size, mass=float(rng.uniform(0.3, 3.0)),
                        position=(float(rng.uniform(-0.01, 0.01)), float(rng.uniform(-0.01, 0.01)), z + size[2] / 2))
            z += size[2]
        bodies.append(spec)
    v = np.zeros(6)
    v[2] = -rng.uniform(0.1, 2.0)
    v[:2] = rng.normal(scale=0.2, size=2)
    bodies[-1]["velocity"] = tuple(float(x) for x in v)
    e = float(rng.choice([0.0, 0.3, 0.8, 1.0]))
    friction = (0.6, 0.5) if rng.random() < 0.7 else (0.0, 0.0)
    return dict(seed=seed, bodies=bodies, restitution=e, friction=friction)


#: m: the clearance a lifted body of a drop case starts with (:func:`_lift_apart`)
START_CLEARANCE = 1e-3


def _lift_apart(bodies: list[dict]) -> None:
    """Raise (in place) the bodies of a drop case that could overlap the ground or a body below (a
    tilted box's corners reach 0.139 m below its centre, its level 0.12 m up): each starts
    ``START_CLEARANCE`` above the ground and above every lower body whose bounding sphere its own
    meets. Bodies already clear keep their level."""
    placed = []  # (centre (3,), bounding radius, top height) of the bodies below, m
    for spec in bodies:
        if "radius" in spec:
            ext = bound = spec["radius"]
        else:
            half = np.asarray(spec["box"]) / 2
            R = pin.rpy.rpyToMatrix(*np.asarray(spec["rpy"], dtype=float))
            ext, bound = float(np.abs(R[2]).dot(half)), float(np.linalg.norm(half))  # half height along z
        x, y, z = spec["position"]
        floor = 0.0
        for c, r, top in placed:
            if math.hypot(x - c[0], y - c[1]) < bound + r + START_CLEARANCE:
                floor = max(floor, top)
        if z - ext < floor + START_CLEARANCE:
            z = floor + START_CLEARANCE + ext
            spec["position"] = (x, y, float(z))
        placed.append(((x, y, z), bound, z + ext))


def run_drop(case: dict, seconds: float = 1.0, dt: float = 1e-3, guards: bool = False, impacts: bool = False) -> dict:
    """Simulate a :func:`drop_case`; returns what the properties need (errors are caught and named):
    ``deepest`` (m, the most negative distance of any pair at any sample), ``energy_rise`` (the largest
    rise of kinetic + potential energy over its value at the previous impact, relative to the energy
    scale), ``events``, ``sim_time`` (s), ``error`` (text or None), ``error_is_controlkit``,
    ``unsolved_lcps`` (support LCPs the pivoting left unsolved: ``ContactSource.unsolved_supports``),
    ``onsets`` (slides from rest by how their direction was found: ``ContactSource.onsets``),
    ``tangential_impacts`` (``ContactSource.tangential_impacts``), ``impact_gain`` (:func:`impact_gain`); with
    ``guards`` also the lowest hinge guards at any step's end (:class:`_LowestGuards`); with ``impacts``
    also ``impact_log``: each impact's time (s), normal velocities after it (m/s, per row) and
    restitutions, and the source's ``rest_speed`` and ``impact_velocity`` (m/s)."""
    b = scenes.free_bodies(case["bodies"])
    mech = b.mechanism
    sim = Simulator(mech, b.q0, b.v0, dt=dt, integrator="rk4")
    error, ours, low, src = None, True, None, None
    try:
        src = enable_contacts(sim, friction=case["friction"], restitution=case["restitution"])
        low = _LowestGuards(src) if guards else None
        sim.run(seconds, until=low)
    except Exception as exc:  # the property: only the project's own errors
        error, ours = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}", isinstance(exc, ControlkitError)
    rec = sim.recording
    world = CollisionWorld(mech)
    deepest = min((float(world.distances(q).min()) for q in rec.q), default=0.0)
    return dict(seed=case.get("seed"), bodies=len(case["bodies"]), deepest=deepest, energy_rise=energy_rise(mech, rec),
                events=len(rec.events), sim_time=sim.t, error=error, error_is_controlkit=ours,
                unsolved_lcps=src.unsolved_supports if src is not None else 0,
                onsets=dict(getattr(src, "onsets", {})), tangential_impacts=getattr(src, "tangential_impacts", 0),
                impact_gain=impact_gain(rec),
                **(low.lowest if low is not None else {}),
                **(dict(impact_log=[dict(time=e.time, after=e.data["normal_velocity_after"], restitution=e.data["restitution"])
                                    for e in rec.events if e.kind == "impact"],
                        rest_speed=src.rest_speed(mech), impact_velocity=src.impact_velocity) if impacts and src else {}))


def impact_gain(rec) -> float:
    """The largest kinetic energy gain of any impact in a recording, relative to the kinetic energy
    before it (dimensionless; 0 when none gains): an impact never gains."""
    gains = [(e.data["kinetic_energy_after"] - e.data["kinetic_energy_before"]) / max(e.data["kinetic_energy_before"], 1e-300)
             for e in rec.events if e.kind == "impact"]
    return max(gains + [0.0])


def energy_rise(mech, rec) -> float:
    """The largest rise of kinetic + potential energy over its value at the previous impact in a
    recording of ``mech``, relative to the largest energy magnitude (dimensionless; the first sample
    at an impact's time holds the state after it)."""
    energy = np.array([mechanical_energy(mech, q, v) for q, v in zip(rec.q, rec.v)])
    scale = max(float(np.abs(energy).max(initial=0.0)), 1e-12)
    impacts = sorted(e.time for e in rec.events if e.kind == "impact")
    rise, ref, k = 0.0, energy[0] if len(energy) else 0.0, 0
    for t, E in zip(rec.t, energy):
        while k < len(impacts) and impacts[k] <= t:
            k += 1
            ref = E
        rise = max(rise, (E - ref) / scale)
    return float(rise)


class _LowestGuards:
    """A run's ``until`` that keeps the lowest value at any step's end of each kind of a hinge's guard:
    ``margin`` (N, its support margin), ``stick`` (N, its static friction margin), ``slide`` (m/s, its
    slip along its sliding direction), ``geometry`` (m, its spare vertices' gaps, its support points'
    margins on the faces they rest on, its held points' depth guard). A guard fires where it crosses
    from above zero to zero or below, so after every step (its events handled) each must be above
    zero: one at or below it can no longer fire."""

    def __init__(self, src) -> None:
        self.src = src
        self.lowest = dict(margin=math.inf, stick=math.inf, slide=math.inf, geometry=math.inf)

    def __call__(self, sim) -> bool:
        src, mech, low = self.src, sim.mech, self.lowest
        if not (mech.state_is(sim.q, sim.v) and mech.solved(sim.equations)):
            sim.accelerations_at(sim.t, sim.q, sim.v)
        sol = mech.solution
        for h in src.hinges.values():
            g = src._force_guards(h, _multipliers_of(sol, h), sol)
            if h.group is None and len(g) > 0:
                low["margin"] = min(low["margin"], float(g[0]))
            if h.mode in (Mode.STICK, Mode.SLIDE) and len(g) > (h.group is None):
                kind = "stick" if h.mode == Mode.STICK else "slide"
                low[kind] = min(low[kind], float(g[-1]))
            for x in src._geometry_guards(h):
                low["geometry"] = min(low["geometry"], float(np.min(x, initial=math.inf)))
        return False


def cradle_case(seed: int) -> dict:
    """3-9 balls on the x axis (random radii, masses), each gap 0 (touching) or up to 2 cm, random
    x speeds (m/s), e = 1 or random; no gravity, no ground. Bodies ``ball_0`` .. in x order."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 10))
    radii = rng.uniform(0.03, 0.07, n)
    x, bodies = 0.0, []
    for i in range(n):
        if i:
            gap = 0.0 if rng.random() < 0.5 else float(rng.uniform(0.0, 0.02))
            x += radii[i - 1] + gap + radii[i]
        bodies.append(dict(name=f"ball_{i}", radius=float(radii[i]), mass=float(rng.uniform(0.1, 2.0)),
                           position=(x, 0.0, 0.0), velocity=(float(rng.uniform(-1, 1)), 0, 0, 0, 0, 0)))
    e = 1.0 if seed % 2 else float(rng.uniform(0.0, 1.0))
    return dict(seed=seed, bodies=bodies, e=e, seconds=0.2)


def run_cradle_order(case: dict, reverse: bool):
    """One body order of a :func:`cradle_case` under the propagative law: ``(mech, sim, recording,
    momentum (6,) and energy (J) at the start)``."""
    b = scenes.free_bodies(case["bodies"][::-1] if reverse else case["bodies"], ground=False, gravity=(0, 0, 0))
    mech = b.mechanism
    sim = Simulator(mech, b.q0, b.v0, dt=1e-3, integrator="rk4")
    sim.enable_impacts(restitution=case["e"], law="propagative")
    p0, e0 = world_momentum(mech, b.q0, b.v0), mechanical_energy(mech, b.q0, b.v0)
    return mech, sim, sim.run(case["seconds"]), p0, e0
