"""General contact scenes for bench/peers.py: a column of 6 spheres and a row of 8 boxes dropped on
the ground, in controlkit (``enable_contacts``: exact events, hard unilateral contacts with Coulomb
friction) and, when installed, MuJoCo and PyBullet (their soft or penalty contacts) at the same step.

Each engine runs each scene with two integrators at the same step: semi-implicit Euler (one
evaluation per step; MuJoCo's ``Euler``, PyBullet's only one) and RK4 (four; controlkit's default,
MuJoCo's ``RK4``). Each row's figure is wall time per simulated second (best of ``repeat`` runs;
controlkit runs once, it is the slow one), its ratio to MuJoCo's Euler in the same run
(``ratio_to_mujoco``) and to MuJoCo's with the same integrator (``ratio_same_integrator``), with
what the scene ends in (the highest body's height, the lowest body's height, the largest speed
left) so the rows can be seen to simulate the same fall. Only measurements: nothing here is
asserted.

The controlkit side (``controlkit_scene``) imports neither MuJoCo nor PyBullet.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from robots import scenes
from sim.contact import enable_contacts
from sim.simulator import Simulator

GRAVITY = 9.81


@dataclass(frozen=True)
class ContactScene:
    """One scene: bodies (``kind`` "sphere" or "box"), how it is simulated, for how long."""

    build: Callable  # () -> BuiltMechanism (robots.scenes)
    kind: str
    size: tuple  # sphere: (radius,); box: full sizes (x, y, z), m
    mass: float  # kg, each body
    friction: tuple  # (static, kinetic) for controlkit; the peers take the kinetic one
    restitution: float
    dt: float = 1e-3  # s
    seconds: float = 1.0  # s simulated


SCENES = {
    "6-sphere column": ContactScene(lambda: scenes.sphere_column(6), "sphere", (0.05,), 0.5, (0.5, 0.4), 0.0),
    "8-box row": ContactScene(lambda: scenes.box_row(8), "box", (0.1, 0.1, 0.1), 1.0, (0.5, 0.4), 0.3),
}


#: the integrators each engine runs: controlkit's name -> MuJoCo's
INTEGRATORS = {"semi_implicit_euler": "Euler", "rk4": "RK4"}


def controlkit_scene(spec: ContactScene, integrator: str = "rk4") -> Simulator:
    """The scene's Simulator (``integrator`` at ``spec.dt``) with its contacts enabled, not yet run."""
    b = spec.build()
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=spec.dt, integrator=integrator)
    enable_contacts(sim, friction=spec.friction, restitution=spec.restitution)
    return sim


def _initial(spec: ContactScene) -> np.ndarray:
    """(bodies, 3) the bodies' initial centres (m), as the controlkit scene places them."""
    b = spec.build()
    return b.q0.reshape(-1, 7)[:, :3].copy()


def _ends(z: np.ndarray, v: np.ndarray) -> dict:
    return {"top_z_m": float(z.max()), "lowest_z_m": float(z.min()), "max_speed_end": float(np.abs(v).max())}


def controlkit_run(spec: ContactScene, integrator: str = "rk4") -> dict:
    sim = controlkit_scene(spec, integrator)
    t0 = time.perf_counter()
    error = ""
    try:
        sim.run(spec.seconds)
    except Exception as exc:  # a benchmark reports where a scene stops
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
    wall = time.perf_counter() - t0
    q = np.asarray(sim.q).reshape(-1, 7)
    return {"wall_s": wall, "simulated_s": sim.t, "steps": sim.steps, "events": len(sim.recording.events),
            **_ends(q[:, 2], np.asarray(sim.v)), "error": error}


def mujoco_xml(spec: ContactScene, integrator: str = "Euler") -> str:
    """MJCF: a ground plane and the free bodies, contacts with the restitution mapping of
    bench/peers.py (``mujoco_contact``), sliding friction the kinetic coefficient; ``integrator``
    MuJoCo's name ("Euler": semi-implicit, "RK4")."""
    from bench.peers import mujoco_contact
    c = mujoco_contact(spec.restitution, spec.dt)
    sol = (f'solref="{" ".join(f"{x:.17g}" for x in c["solref"])}" '
           f'solimp="{" ".join(f"{x:.17g}" for x in c["solimp"])}" friction="{spec.friction[1]} 0.005 0.0001"')
    if spec.kind == "sphere":
        shape = f'type="sphere" size="{spec.size[0]}"'
    else:
        shape = 'type="box" size="{} {} {}"'.format(*(s / 2 for s in spec.size))
    bodies = "".join(f'<body pos="{x:.17g} {y:.17g} {z:.17g}"><freejoint/><geom {shape} mass="{spec.mass}" {sol}/></body>'
                     for x, y, z in _initial(spec))
    return (f'<mujoco><option timestep="{spec.dt:.17g}" integrator="{integrator}" gravity="0 0 {-GRAVITY}"/>'
            f'<worldbody><geom type="plane" size="0 0 1" {sol}/>{bodies}</worldbody></mujoco>')


def mujoco_run(spec: ContactScene, integrator: str = "Euler") -> dict:
    import mujoco
    model = mujoco.MjModel.from_xml_string(mujoco_xml(spec, integrator))
    data = mujoco.MjData(model)
    steps = int(round(spec.seconds / spec.dt))
    t0 = time.perf_counter()
    for _ in range(steps):
        mujoco.mj_step(model, data)
    wall = time.perf_counter() - t0
    z = np.asarray(data.qpos).reshape(-1, 7)[:, 2]
    return {"wall_s": wall, "simulated_s": data.time, "steps": steps, **_ends(z, np.asarray(data.qvel))}


def pybullet_run(spec: ContactScene, cid: int) -> dict:
    """PyBullet at the same step; restitution sqrt(e) on the bodies and the ground (Bullet
    multiplies the pair's), lateral friction the kinetic coefficient."""
    import pybullet as p

    from bench.peers import pybullet_reset
    pybullet_reset(cid, spec.dt)
    p.setGravity(0, 0, -GRAVITY, physicsClientId=cid)
    e = math.sqrt(spec.restitution)
    ground = p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE, physicsClientId=cid), physicsClientId=cid)
    if spec.kind == "sphere":
        shape = p.createCollisionShape(p.GEOM_SPHERE, radius=spec.size[0], physicsClientId=cid)
    else:
        shape = p.createCollisionShape(p.GEOM_BOX, halfExtents=[s / 2 for s in spec.size], physicsClientId=cid)
    ids = [p.createMultiBody(spec.mass, shape, basePosition=list(x), physicsClientId=cid) for x in _initial(spec)]
    for b in [ground] + ids:
        p.changeDynamics(b, -1, restitution=e, lateralFriction=spec.friction[1], linearDamping=0.0, angularDamping=0.0,
                         physicsClientId=cid)
    steps = int(round(spec.seconds / spec.dt))
    t0 = time.perf_counter()
    for _ in range(steps):
        p.stepSimulation(physicsClientId=cid)
    wall = time.perf_counter() - t0
    z = np.array([p.getBasePositionAndOrientation(b, physicsClientId=cid)[0][2] for b in ids])
    v = np.array([sum(p.getBaseVelocity(b, physicsClientId=cid), ()) for b in ids])
    return {"wall_s": wall, "simulated_s": steps * spec.dt, "steps": steps, **_ends(z, v)}


def _best(fn: Callable[[], dict], repeat: int) -> dict:
    runs = [fn() for _ in range(max(1, repeat))]
    return min(runs, key=lambda r: r["wall_s"])


def contact_scenes(available: Sequence[str], cid: int | None, repeat: int = 3, quick: bool = False) -> list[dict]:
    """One row per scene, engine and integrator: wall s per simulated s and its ratios to MuJoCo's
    (Euler, and the same integrator), same run."""
    rows = []
    for name, spec in SCENES.items():
        if quick:
            spec = ContactScene(**{**spec.__dict__, "seconds": spec.seconds / 4})
        runs = {("controlkit", ours): controlkit_run(spec, ours) for ours in INTEGRATORS}
        if "mujoco" in available:
            for theirs in INTEGRATORS.values():
                runs["mujoco", theirs] = _best(lambda spec=spec, i=theirs: mujoco_run(spec, i), repeat)
        if "pybullet" in available:
            runs["pybullet", "semi_implicit_euler"] = _best(lambda spec=spec: pybullet_run(spec, cid), repeat)
        per = {key: r["wall_s"] / max(r["simulated_s"], 1e-12) for key, r in runs.items()}
        mj = {ours: per.get(("mujoco", theirs)) for ours, theirs in INTEGRATORS.items()}
        for (engine, integrator), r in runs.items():
            same = per[engine, integrator] if engine == "mujoco" else mj.get(integrator)
            euler = mj["semi_implicit_euler"]
            rows.append({"scene": name, "engine": engine, "integrator": integrator, "dt_s": spec.dt, **r,
                         "wall_per_sim_s": per[engine, integrator],
                         "ratio_to_mujoco": per[engine, integrator] / euler if euler else None,
                         "ratio_same_integrator": per[engine, integrator] / same if same else None})
    return rows


COLUMNS = ["scene", "engine", "integrator", "dt_s", "simulated_s", "steps", "wall_per_sim_s", "ratio_to_mujoco",
           "ratio_same_integrator", "events", "top_z_m",
           "lowest_z_m", "max_speed_end", "error"]
