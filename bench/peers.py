"""controlkit, MuJoCo and PyBullet side by side, measured in one run on one machine.

Scenes, each built in the three engines from the same controlkit seed:

1. Three spheres (seed 001, Fig. 2): B and C touching, A hits B at 0.5-4 m/s, e in
   {1, 0.5, 0}, step rates 60-6000 Hz, the impact at several phases within a step:
   kinetic energy after / before and final velocities (min / mean / max over cases).
2. Newton's cradle, five balls, e = 1: final velocities against the textbook
   (0, 0, 0, 0, 1) and the energy ratio, at every rate and phase.
3. A 5-link pendulum chain (1 m, 1 kg links, released horizontal, 10 s): work-precision,
   the maximum relative energy error against wall seconds per simulated second, for every
   integrator of every engine over several steps / tolerances (table and log-log plot).
4. Step throughput on the chain; for controlkit, the real-time factor of the walking and
   redundant-arm demos.
5. General contact scenes (``bench/peers_contact.py``): a column of 6 spheres and a row of 8
   boxes dropped on the ground, each engine under semi-implicit Euler and RK4 at the same step;
   wall time per simulated second and its ratios to MuJoCo's Euler and to MuJoCo's with the
   same integrator.

Every engine runs on one thread. Timings are the minimum over ``--repeat`` runs.
The controlkit-side scene functions (``controlkit_row``, ``three_sphere_case``,
``cradle_case``, ``controlkit_chain``, ...) import neither MuJoCo nor PyBullet.

Run: ``.venv/bin/python bench/peers.py [--repeat 3] [--quick] [--contact-only | --chain-only]``; writes
bench/results/peers.json, peers.md (settings and tables) and peers_work_precision.png.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Callable, Iterable, Sequence  # noqa: E402

import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import robots  # noqa: E402
from bench.common import RESULTS, table, write_json  # noqa: E402
from bench.peers_contact import COLUMNS as CONTACT_COLUMNS  # noqa: E402
from bench.peers_contact import contact_scenes  # noqa: E402
from sim.integrators import DormandPrince853, Integrator, PinocchioSystem, advance, make_integrator  # noqa: E402
from sim.plain_run import bare_system  # noqa: E402
from sim.simulator import Simulator  # noqa: E402

# ------------------------------------------------------------------ settings
RATES = (60.0, 600.0, 6000.0)           # Hz: integration step rates of the impact scenes
SPEEDS = (0.5, 1.0, 2.0, 4.0)           # m/s: A's speed towards B
RESTITUTIONS = (1.0, 0.5, 0.0)
PHASES = (0.1, 0.5, 0.9)                # fraction of a step at which the first contact happens
STEPS_BEFORE = 2                        # whole steps of free flight before the impact
STEPS_AFTER = 40                        # steps simulated after the first contact
RADIUS = 0.05                           # m, every sphere
SPHERE_MASS = 1.0                       # kg, three spheres
CRADLE_MASS = 0.2                       # kg, cradle balls
CRADLE_SPEED = 1.0                      # m/s
CHAIN_LINKS, CHAIN_LENGTH, CHAIN_MASS, CHAIN_WIDTH = 5, 1.0, 1.0, 0.05
CHAIN_SECONDS = 10.0
GRAVITY = 9.81
IMPEDANCE = 0.9999                      # MuJoCo solimp dmin = dmax (its maximum): nearly hard
LEVELS = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10)  # relative energy errors compared

# Work-precision grids: fixed steps (s) or tolerances (rtol = atol) per engine and integrator.
H_FINE = (4e-3, 2e-3, 1e-3, 5e-4, 2.5e-4, 1.25e-4, 6.25e-5)
H_FIRST = (1e-3, 1e-4, 1e-5)
TOLS = tuple(10.0 ** -(k / 2) for k in range(10, 23))  # 1e-5 .. 1e-11, half decades
ADAPTIVE = ("dopri5", "dop853")
CK_GRID = {"dopri5": TOLS, "dop853": TOLS, "rk4": (4e-3, 2e-3, 1e-3, 5e-4, 2.5e-4), "abm4": (2e-3, 1e-3, 5e-4, 2.5e-4),
           "semi_implicit_euler": (1e-3, 1e-4)}
MJ_FIRST_ORDER = ("Euler", "implicit", "implicitfast", "discrete")
PB_GRID = (1e-3, 3e-4, 1e-4)


def chain_energy_scale() -> float:
    """E_ref (J): potential energy the horizontal chain loses hanging straight down, n^2 m g L / 2.

    The chain starts at rest at z = 0 (E0 = 0 J), so errors are relative to this scale.
    """
    return CHAIN_LINKS ** 2 * CHAIN_MASS * GRAVITY * CHAIN_LENGTH / 2


# ---------------------------------------------------------------- utilities
class Stopwatch:
    """Wall-clock and CPU (this process) seconds of a ``with`` block, accumulated over uses."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def __enter__(self) -> "Stopwatch":
        self._w, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall += time.perf_counter() - self._w
        self.cpu += time.process_time() - self._c


def best_of(fn: Callable[[], dict], repeat: int) -> dict:
    """Run ``fn`` (a dict with ``wall_s`` and ``cpu_s``) ``repeat`` times: the fastest run, with the
    least CPU time of all runs and the median wall time."""
    runs = [fn() for _ in range(max(1, repeat))]
    best = min(runs, key=lambda r: r["wall_s"])
    best["wall_s_median"] = float(np.median([r["wall_s"] for r in runs]))
    best["cpu_s"] = min(r["cpu_s"] for r in runs)
    best["cpu_per_sim_s"] = best["cpu_s"] / CHAIN_SECONDS
    return best


def contact_time(rate: float, phase: float) -> float:
    """Time (s) of the first contact: ``STEPS_BEFORE + phase`` steps after the start."""
    return (STEPS_BEFORE + phase) / rate


def stats(values: Iterable[float]) -> dict:
    """min / mean / max of some numbers."""
    a = np.asarray(list(values), dtype=float)
    return {"min": float(a.min()), "mean": float(a.mean()), "max": float(a.max())}


def rigid_kinetic(masses: np.ndarray, inertias: np.ndarray, lin: np.ndarray, ang: np.ndarray) -> float:
    """Kinetic energy (J) of bodies: masses (n,) kg, isotropic inertias (n,) kg m^2, lin/ang (n, 3)."""
    return float(0.5 * (masses @ np.sum(lin ** 2, axis=1) + inertias @ np.sum(ang ** 2, axis=1)))


@dataclass
class RowResult:
    """One impact run: kinetic energy after / before and each ball's final x velocity (m/s)."""

    ke_ratio: float
    v: list[float]
    impacts: int = -1


@dataclass
class RowScene:
    """A row of spheres on the x axis: centres (m), masses (kg), the first one striking at ``speed`` (m/s)."""

    x: list[float]
    masses: list[float]
    radius: float
    speed: float
    names: list[str] = field(default_factory=list)


# ------------------------------------------------------- controlkit: impacts
def three_spheres_built(speed: float, rate: float, phase: float):
    """The controlkit seed (robots.three_spheres) with A's gap set so contact is at ``contact_time``."""
    gap = speed * contact_time(rate, phase)
    return robots.three_spheres(radius=RADIUS, mass=SPHERE_MASS, speed=speed, gap=gap)


def cradle_built(rate: float, phase: float):
    """The controlkit seed (robots.newtons_cradle, five balls) with contact at ``contact_time``."""
    gap = CRADLE_SPEED * contact_time(rate, phase)
    return robots.newtons_cradle(5, radius=RADIUS, mass=CRADLE_MASS, speed=CRADLE_SPEED, gap=gap)


def row_scene(built) -> RowScene:
    """The row a controlkit scene holds (centres, masses, speed), to rebuild it in another engine."""
    mech = built.mechanism
    names = [n[: -len("_root")] for n in list(mech.model.names)[1:]]
    x = [float(built.q0[mech.joint_q_slice(f"{n}_root")][0]) for n in names]
    masses = [float(mech.model.inertias[mech.joint_id(f"{n}_root")].mass) for n in names]
    speed = float(built.v0[mech.joint_v_slice(f"{names[0]}_root")][0])
    return RowScene(x, masses, RADIUS, speed, names)


def controlkit_row(built, e: float, rate: float, duration: float) -> RowResult:
    """Run a row scene in controlkit: rk4 at 1/rate s, propagative impacts with restitution e."""
    mech = built.mechanism
    mech.set_state(built.q0, built.v0)
    ke0 = mech.kinetic_energy()
    sim = Simulator(mech, built.q0, built.v0, dt=1.0 / rate, integrator="rk4")
    sim.enable_impacts(law="propagative", restitution=e)
    rec = sim.run(duration)
    mech.set_state(sim.q, sim.v)
    vx = [float(sim.v[mech.joint_v_slice(f"{n}_root")][0]) for n in row_scene(built).names]
    return RowResult(mech.kinetic_energy() / ke0, vx, len(rec.events_of("impact")))


def three_sphere_case(e: float, speed: float, rate: float, phase: float) -> RowResult:
    """Three spheres in controlkit: A at ``speed`` (m/s) hits B touching C; e; 1/rate s steps; phase."""
    built = three_spheres_built(speed, rate, phase)
    return controlkit_row(built, e, rate, contact_time(rate, phase) + STEPS_AFTER / rate)


def cradle_case(rate: float, phase: float) -> RowResult:
    """Newton's cradle (five balls, e = 1) in controlkit at 1/rate s steps, contact at ``phase``."""
    return controlkit_row(cradle_built(rate, phase), 1.0, rate, contact_time(rate, phase) + STEPS_AFTER / rate)


def textbook_three_spheres(e: float) -> list[float]:
    """Final velocities / speed of equal spheres under the propagative law: A-B, then B-C, repeated."""
    v = [1.0, 0.0, 0.0]
    for _ in range(10_000):
        pairs = [i for i in (0, 1) if v[i] - v[i + 1] > 1e-15]
        if not pairs:
            break
        i = pairs[0]
        rel = v[i] - v[i + 1]
        v[i] -= (1 + e) * rel / 2
        v[i + 1] += (1 + e) * rel / 2
    return v


# -------------------------------------------------------------- MuJoCo: rows
def mujoco_contact(e: float, h: float) -> dict:
    """MuJoCo contact parameters for a coefficient of restitution e at step h (s).

    MuJoCo contacts are soft: the normal reference acceleration is ``-b v - k r`` (r the
    penetration, v its rate), a unit-mass spring-damper in contact space. A spring-damper
    contact of damping ratio zeta rebounds with ``e = exp(-zeta pi / sqrt(1 - zeta^2))``, so
    ``zeta = -ln e / sqrt(pi^2 + ln^2 e)`` (e = 1: zeta = 0; e = 0: zeta = 1, critical).
    The time constant is tau = 2 h, MuJoCo's own safe lower bound (``refsafe``):
    k = 1 / tau^2, b = 2 zeta / tau. MuJoCo reads solref's direct form ``(-K, -B)`` as
    stiffness ``K d / dmax^2`` and damping ``B / dmax``; with solimp d = dmin = dmax = IMPEDANCE
    we write ``(-k d, -b d)`` so the reference acceleration uses exactly k and b.
    """
    zeta = 1.0 if e <= 0 else -math.log(e) / math.sqrt(math.pi ** 2 + math.log(e) ** 2)
    tau = 2.0 * h
    k, b = 1.0 / tau ** 2, 2.0 * zeta / tau
    d = IMPEDANCE
    return {"zeta": zeta, "tau_s": tau, "k_per_s2": k, "b_per_s": b,
            "solref": (-k * d, -b * d), "solimp": (d, d, 0.001, 0.5, 2.0)}


def mujoco_row_xml(scene: RowScene, e: float, h: float) -> str:
    """MJCF for a row of free spheres: no gravity, frictionless (condim 1) contacts for e."""
    c = mujoco_contact(e, h)
    solref = " ".join(f"{x:.17g}" for x in c["solref"])
    solimp = " ".join(f"{x:.17g}" for x in c["solimp"])
    bodies = "".join(
        f'<body name="{n}" pos="{x:.17g} 0 0"><freejoint/>'
        f'<geom type="sphere" size="{scene.radius}" mass="{m:.17g}" condim="1" solref="{solref}" solimp="{solimp}"/></body>'
        for n, x, m in zip(scene.names, scene.x, scene.masses))
    return (f'<mujoco><option timestep="{h:.17g}" integrator="Euler" gravity="0 0 0"/>'
            f"<worldbody>{bodies}</worldbody></mujoco>")


def mujoco_row(scene: RowScene, e: float, rate: float, duration: float) -> RowResult:
    """Run a row scene in MuJoCo (Euler, the default integrator) for ``duration`` s."""
    import mujoco
    model = mujoco.MjModel.from_xml_string(mujoco_row_xml(scene, e, 1.0 / rate))
    data = mujoco.MjData(model)
    data.qvel[0] = scene.speed
    ke0 = _mujoco_row_ke(model, data)
    for _ in range(int(round(duration * rate))):
        mujoco.mj_step(model, data)
    vx = [float(data.qvel[6 * i]) for i in range(len(scene.x))]
    return RowResult(_mujoco_row_ke(model, data) / ke0, vx)


def _mujoco_row_ke(model, data) -> float:
    qv = np.asarray(data.qvel).reshape(-1, 6)
    return rigid_kinetic(np.asarray(model.body_mass[1:]), np.asarray(model.body_inertia[1:, 0]), qv[:, :3], qv[:, 3:])


# ------------------------------------------------------------ PyBullet: rows
def pybullet_client():
    """A DIRECT (headless) PyBullet client."""
    import pybullet as p
    return p.connect(p.DIRECT)


def pybullet_reset(cid: int, h: float) -> None:
    """Empty world, no gravity, fixed step h (s), restitution at every relative speed."""
    import pybullet as p
    p.resetSimulation(physicsClientId=cid)
    p.setGravity(0, 0, 0, physicsClientId=cid)
    p.setPhysicsEngineParameter(fixedTimeStep=h, numSubSteps=0, restitutionVelocityThreshold=0.0, physicsClientId=cid)


def pybullet_row(cid: int, scene: RowScene, e: float, rate: float, duration: float) -> RowResult:
    """Run a row scene in PyBullet: restitution sqrt(e) on every body (Bullet multiplies the pair's)."""
    import pybullet as p
    pybullet_reset(cid, 1.0 / rate)
    shape = p.createCollisionShape(p.GEOM_SPHERE, radius=scene.radius, physicsClientId=cid)
    ids = [p.createMultiBody(m, shape, basePosition=[x, 0, 0], physicsClientId=cid) for x, m in zip(scene.x, scene.masses)]
    for b in ids:
        p.changeDynamics(b, -1, restitution=math.sqrt(e), lateralFriction=0.0, spinningFriction=0.0, rollingFriction=0.0,
                         linearDamping=0.0, angularDamping=0.0, physicsClientId=cid)
    p.resetBaseVelocity(ids[0], [scene.speed, 0, 0], [0, 0, 0], physicsClientId=cid)
    masses = np.asarray(scene.masses)
    inertias = 0.4 * masses * scene.radius ** 2
    ke0 = _pybullet_ke(cid, ids, masses, inertias)
    for _ in range(int(round(duration * rate))):
        p.stepSimulation(physicsClientId=cid)
    vx = [float(p.getBaseVelocity(b, physicsClientId=cid)[0][0]) for b in ids]
    return RowResult(_pybullet_ke(cid, ids, masses, inertias) / ke0, vx)


def _pybullet_ke(cid, ids, masses, inertias) -> float:
    import pybullet as p
    vel = [p.getBaseVelocity(b, physicsClientId=cid) for b in ids]
    return rigid_kinetic(masses, inertias, np.array([v[0] for v in vel]), np.array([v[1] for v in vel]))


# ----------------------------------------------------- impact scene sweeps
def impact_cases() -> list[tuple[float, float, float, float]]:
    """(e, speed, rate, phase) of every three-sphere case."""
    return [(e, s, r, ph) for e in RESTITUTIONS for s in SPEEDS for r in RATES for ph in PHASES]


def sweep_three_spheres(engines: dict[str, Callable]) -> list[dict]:
    """Every three-sphere case in every engine: one row per engine and case."""
    rows = []
    for e, speed, rate, phase in impact_cases():
        built = three_spheres_built(speed, rate, phase)
        duration = contact_time(rate, phase) + STEPS_AFTER / rate
        for name, run in engines.items():
            r = run(built, e, rate, duration)
            rows.append({"engine": name, "e": e, "speed": speed, "rate_hz": rate, "phase": phase,
                         **asdict(r), "v_over_speed": [x / speed for x in r.v]})
    return rows


def sweep_cradle(engines: dict[str, Callable]) -> list[dict]:
    """Newton's cradle at every rate and phase in every engine."""
    rows = []
    for rate in RATES:
        for phase in PHASES:
            built = cradle_built(rate, phase)
            duration = contact_time(rate, phase) + STEPS_AFTER / rate
            for name, run in engines.items():
                r = run(built, 1.0, rate, duration)
                dev = max(abs(a - b) for a, b in zip(r.v, (0, 0, 0, 0, CRADLE_SPEED)))
                rows.append({"engine": name, "rate_hz": rate, "phase": phase, **asdict(r), "max_dev_mps": dev})
    return rows


def row_engines(available: Sequence[str], cid: int | None) -> dict[str, Callable]:
    """Runner per engine: ``run(built, e, rate, duration) -> RowResult``."""
    engines: dict[str, Callable] = {"controlkit": controlkit_row}
    if "mujoco" in available:
        engines["mujoco"] = lambda built, e, rate, d: mujoco_row(row_scene(built), e, rate, d)
    if "pybullet" in available:
        engines["pybullet"] = lambda built, e, rate, d: pybullet_row(cid, row_scene(built), e, rate, d)
    return engines


def summarize_three_spheres(rows: list[dict]) -> list[dict]:
    """Per engine and e: energy ratio and final velocities / speed (min / mean / max over cases)."""
    out = []
    for eng in dict.fromkeys(r["engine"] for r in rows):
        for e in RESTITUTIONS:
            sel = [r for r in rows if r["engine"] == eng and r["e"] == e]
            ke = stats(r["ke_ratio"] for r in sel)
            row = {"engine": eng, "e": e, "cases": len(sel), "KE_ratio_min": ke["min"], "KE_ratio_mean": ke["mean"],
                   "KE_ratio_max": ke["max"], "KE_ratio_max-1": ke["max"] - 1.0}
            for i, ball in enumerate("ABC"):
                s = stats(r["v_over_speed"][i] for r in sel)
                row[f"v{ball}/v0 min/mean/max"] = f"{s['min']:.4g} / {s['mean']:.4g} / {s['max']:.4g}"
            row["propagative law v/v0"] = " ".join(f"{x:.4g}" for x in textbook_three_spheres(e))
            out.append(row)
    return out


def summarize_cradle(rows: list[dict]) -> list[dict]:
    """Per engine: final velocities (mean over rates and phases), worst deviation, energy ratio."""
    out = []
    for eng in dict.fromkeys(r["engine"] for r in rows):
        sel = [r for r in rows if r["engine"] == eng]
        ke = stats(r["ke_ratio"] for r in sel)
        v = np.mean([r["v"] for r in sel], axis=0)
        out.append({"engine": eng, "cases": len(sel), "mean final v (m/s)": " ".join(f"{x:.4g}" for x in v),
                    "max dev. from (0,0,0,0,1) m/s": max(r["max_dev_mps"] for r in sel),
                    "KE_ratio_min": ke["min"], "KE_ratio_max": ke["max"]})
    return out


# ------------------------------------------------------------ chain: energy
def chain_built():
    """The controlkit seed chain: five 1 m, 1 kg bars hanging from a pivot, released horizontal."""
    return robots.pendulum_chain(CHAIN_LINKS, CHAIN_LENGTH, CHAIN_MASS, width=CHAIN_WIDTH)


def energy_error(model: pin.Model, Q: np.ndarray, V: np.ndarray, e0: float = 0.0) -> float:
    """max_k |E(q_k, v_k) - e0| / E_ref over sampled states, energies by Pinocchio on ``model``."""
    data = model.createData()
    worst = 0.0
    for q, v in zip(Q, V):
        pin.computeMechanicalEnergy(model, data, q, v)
        worst = max(worst, abs(data.kinetic_energy + data.potential_energy - e0))
    return worst / chain_energy_scale()


def chain_row(engine: str, integrator: str, setting: str, value: float, clock: Stopwatch, steps: int, err: float,
              evaluations: int | None = None) -> dict:
    """One work-precision point: wall (and CPU) seconds per simulated second and the energy error."""
    return {"engine": engine, "integrator": integrator, setting: value, "steps": steps, "evaluations": evaluations,
            "wall_s": clock.wall, "wall_per_sim_s": clock.wall / CHAIN_SECONDS, "cpu_s": clock.cpu,
            "cpu_per_sim_s": clock.cpu / CHAIN_SECONDS, "steps_per_s": steps / clock.wall, "energy_error": err}


def adaptive_integrator(name: str, tol: float) -> Integrator:
    """dopri5 or dop853 with rtol = atol = tol (dop853 is not in make_integrator's registry yet)."""
    return DormandPrince853(rtol=tol, atol=tol) if name == "dop853" else make_integrator(name, rtol=tol, atol=tol)


def chain_simulator(integrator: str, value: float) -> Simulator:
    """The chain in a controlkit Simulator at rest, horizontal: ``value`` is rtol = atol or the step (s)."""
    built = chain_built()
    adaptive = integrator in ADAPTIVE
    opts = {"dt": 1e-3, "rtol": value, "atol": value} if adaptive else {"dt": value}
    sim = Simulator(built.mechanism, built.q0, built.v0, integrator="dopri5" if adaptive else integrator, **opts)
    if adaptive:
        sim.integrator = adaptive_integrator(integrator, value)
    return sim


def controlkit_chain(integrator: str, value: float) -> dict:
    """The chain in controlkit's Simulator: ``value`` is rtol = atol (dopri5, dop853) or the step dt (s).

    dop853 goes in as an integrator object on a Simulator built for dopri5 (the Simulator
    takes integrators by registry name, and passes rtol / atol only to dopri5).
    """
    sim = chain_simulator(integrator, value)
    mech = sim.mech
    adaptive = integrator in ADAPTIVE
    calls0 = mech.times.calls
    with Stopwatch() as clock:
        rec = sim.run(CHAIN_SECONDS)
    err = energy_error(mech.model, rec.q, rec.v)
    return chain_row("controlkit", integrator, "tol" if adaptive else "h_s", value, clock, sim.steps, err,
                     mech.times.calls - calls0)


def controlkit_chain_core(integrator: str, value: float) -> dict:
    """The chain on controlkit's integrator core alone: ``advance`` (dopri5 or dop853, rtol = atol = value)
    on ``pin.aba`` (no Simulator)."""
    built = chain_built()
    model = built.mechanism.model
    data, tau = model.createData(), np.zeros(model.nv)
    system = PinocchioSystem(model, lambda t, q, v: pin.aba(model, data, q, v, tau))
    Q, V = [], []

    def keep(step) -> None:
        Q.append(step.q1)
        V.append(step.v1)

    with Stopwatch() as clock:
        _, _, steps = advance(adaptive_integrator(integrator, value), system, 0.0, built.q0, built.v0,
                              CHAIN_SECONDS, 1e-3, on_step=keep)
    return chain_row("controlkit core", integrator, "tol", value, clock, steps, energy_error(model, Q, V),
                     system.evaluations)


# -------------------------------------------------------------- chain: MuJoCo
def mujoco_chain_xml(h: float, integrator: str) -> str:
    """MJCF of the chain: hinges about -y at each link's start, box links, no contacts, no damping."""
    L, w = CHAIN_LENGTH, CHAIN_WIDTH
    body, close = "", ""
    for i in range(CHAIN_LINKS):
        pos = "0 0 0" if i == 0 else f"{L} 0 0"
        body += (f'<body name="link_{i + 1}" pos="{pos}"><joint name="joint_{i + 1}" type="hinge" axis="0 -1 0"/>'
                 f'<geom type="box" size="{L / 2} {w / 2} {w / 2}" pos="{L / 2} 0 0" mass="{CHAIN_MASS}"/>')
        close += "</body>"
    return (f'<mujoco><option timestep="{h:.17g}" integrator="{integrator}" gravity="0 0 {-GRAVITY}">'
            f'<flag contact="disable"/></option><worldbody>{body}{close}</worldbody></mujoco>')


def mujoco_integrators() -> list[str]:
    """MuJoCo's integrators in the installed version (RK4 and the first-order ones)."""
    import mujoco
    names = {m.name for m in mujoco.mjtIntegrator.__members__.values()}
    out = ["RK4"] + [n for n in MJ_FIRST_ORDER if f"mjINT_{n.upper()}" in names]
    return out


def mujoco_chain(integrator: str, h: float, python_loop: bool = False) -> dict:
    """The chain in MuJoCo for 10 s at step h (s): ``mujoco.rollout`` (C loop) or mj_step from Python."""
    import mujoco
    from mujoco import rollout
    model = mujoco.MjModel.from_xml_string(mujoco_chain_xml(h, integrator))
    data = mujoco.MjData(model)
    n = int(round(CHAIN_SECONDS / h))
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state0 = np.zeros(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, data, state0, spec)
    if python_loop:
        with Stopwatch() as clock:
            for _ in range(n):
                mujoco.mj_step(model, data)
        return chain_row("mujoco (python loop)", integrator, "h_s", h, clock, n, float("nan"))
    with Stopwatch() as clock:
        states, _ = rollout.rollout(model, data, state0[None], nstep=n)
    nq = model.nq
    Q, V = states[0, :, 1:1 + nq], states[0, :, 1 + nq:1 + 2 * nq]
    return chain_row("mujoco", integrator, "h_s", h, clock, n, energy_error(chain_built().mechanism.model, Q, V))


def _full_inertia(mujoco, model, data, out: np.ndarray) -> None:
    """Dense joint-space inertia into ``out`` (MuJoCo 4 takes data; MuJoCo 3 took data.qM)."""
    try:
        mujoco.mj_fullM(model, data, out)
    except TypeError:
        mujoco.mj_fullM(model, out, data.qM)


def mujoco_mass_matrix_check() -> float:
    """max |M_mujoco - M_pinocchio| (kg m^2) of the chain at a random configuration."""
    import mujoco
    model = mujoco.MjModel.from_xml_string(mujoco_chain_xml(1e-3, "RK4"))
    data = mujoco.MjData(model)
    q = np.random.default_rng(0).uniform(-2, 2, CHAIN_LINKS)
    data.qpos[:] = q
    mujoco.mj_forward(model, data)
    M = np.zeros((model.nv, model.nv))
    _full_inertia(mujoco, model, data, M)
    pm = chain_built().mechanism.model
    return float(np.max(np.abs(M - pin.crba(pm, pm.createData(), q))))


# ------------------------------------------------------------ chain: PyBullet
def pybullet_chain_body(cid: int) -> int:
    """The chain as a PyBullet multibody: fixed base, revolute joints about -y, no damping, no motors."""
    import pybullet as p
    L, w = CHAIN_LENGTH, CHAIN_WIDTH
    box = p.createCollisionShape(p.GEOM_BOX, halfExtents=[L / 2, w / 2, w / 2], physicsClientId=cid)
    n = CHAIN_LINKS
    body = p.createMultiBody(
        baseMass=0, baseCollisionShapeIndex=-1, basePosition=[0, 0, 0],
        linkMasses=[CHAIN_MASS] * n, linkCollisionShapeIndices=[box] * n, linkVisualShapeIndices=[-1] * n,
        linkPositions=[[0, 0, 0]] + [[L, 0, 0]] * (n - 1), linkOrientations=[[0, 0, 0, 1]] * n,
        linkInertialFramePositions=[[L / 2, 0, 0]] * n, linkInertialFrameOrientations=[[0, 0, 0, 1]] * n,
        linkParentIndices=list(range(n)), linkJointTypes=[p.JOINT_REVOLUTE] * n, linkJointAxis=[[0, -1, 0]] * n,
        physicsClientId=cid)
    for j in range(-1, n):
        p.changeDynamics(body, j, linearDamping=0.0, angularDamping=0.0, jointDamping=0.0, lateralFriction=0.0,
                         maxJointVelocity=1e4, physicsClientId=cid)
        p.setCollisionFilterGroupMask(body, j, 0, 0, physicsClientId=cid)
    p.setJointMotorControlArray(body, list(range(n)), p.VELOCITY_CONTROL, forces=[0.0] * n, physicsClientId=cid)
    return body


def pybullet_chain(cid: int, h: float) -> dict:
    """The chain in PyBullet for 10 s at step h (s); only ``stepSimulation`` calls are timed."""
    import pybullet as p
    pybullet_reset(cid, h)
    p.setGravity(0, 0, -GRAVITY, physicsClientId=cid)
    body = pybullet_chain_body(cid)
    joints = list(range(CHAIN_LINKS))
    n = int(round(CHAIN_SECONDS / h))
    Q, V = np.empty((n, CHAIN_LINKS)), np.empty((n, CHAIN_LINKS))
    clock = Stopwatch()
    for k in range(n):
        with clock:
            p.stepSimulation(physicsClientId=cid)
        st = p.getJointStates(body, joints, physicsClientId=cid)
        Q[k] = [s[0] for s in st]
        V[k] = [s[1] for s in st]
    return chain_row("pybullet", "semi-implicit Euler", "h_s", h, clock, n, energy_error(chain_built().mechanism.model, Q, V))


def pybullet_mass_matrix_check(cid: int) -> float:
    """max |M_pybullet - M_pinocchio| (kg m^2) of the chain at a random configuration."""
    import pybullet as p
    pybullet_reset(cid, 1e-3)
    body = pybullet_chain_body(cid)
    q = np.random.default_rng(0).uniform(-2, 2, CHAIN_LINKS)
    M = np.array(p.calculateMassMatrix(body, q.tolist(), physicsClientId=cid))
    pm = chain_built().mechanism.model
    return float(np.max(np.abs(M - pin.crba(pm, pm.createData(), q))))


# -------------------------------------------------------- chain: the sweeps
def chain_runs(available: Sequence[str], cid: int | None, repeat: int, quick: bool) -> list[dict]:
    """Every work-precision point of every engine (timings: best of ``repeat``)."""
    pick = (lambda g: g[::2]) if quick else (lambda g: g)
    rows = []
    for integ, grid in CK_GRID.items():
        rows += [best_of(lambda: controlkit_chain(integ, x), repeat) for x in pick(grid)]  # noqa: B023 (best_of calls it in this iteration)
    for integ in ADAPTIVE:
        rows += [best_of(lambda: controlkit_chain_core(integ, x), repeat) for x in pick(TOLS)]  # noqa: B023 (best_of calls it in this iteration)
    if "mujoco" in available:
        for integ in mujoco_integrators():
            grid = H_FINE if integ == "RK4" else H_FIRST
            rows += [best_of(lambda: mujoco_chain(integ, h), repeat) for h in pick(grid)]  # noqa: B023 (best_of calls it in this iteration)
    if "pybullet" in available:
        rows += [best_of(lambda: pybullet_chain(cid, h), repeat) for h in pick(PB_GRID)]  # noqa: B023 (best_of calls it in this iteration)
    return rows


def throughput_runs(available: Sequence[str], repeat: int) -> list[dict]:
    """MuJoCo driven from a Python loop at h = 1 ms (the C rollout is in the work-precision runs)."""
    if "mujoco" not in available:
        return []
    return [best_of(lambda: mujoco_chain(integ, 1e-3, python_loop=True), repeat) for integ in mujoco_integrators()]  # noqa: B023 (best_of calls it in this iteration)


def curve_key(row: dict) -> str:
    """'engine / integrator' label of a work-precision curve."""
    return f"{row['engine']} / {row['integrator']}"


def cost_at(points: list[tuple[float, float]], level: float) -> float | None:
    """Wall s per simulated s needed for energy error <= level on one curve, interpolated log-log.

    ``points`` are (cost, error). The cheapest measured point meeting the level is taken;
    when the next cheaper point misses it, the cost is interpolated between the two in
    log-log. None when no point reaches the level.
    """
    pts = sorted(points)
    for i, (c, err) in enumerate(pts):
        if err <= level:
            if i == 0 or not (pts[i - 1][1] > level) or err <= 0:
                return c
            (c0, e0), (c1, e1) = pts[i - 1], (c, err)
            s = (math.log(level) - math.log(e0)) / (math.log(e1) - math.log(e0))
            return math.exp(math.log(c0) + s * (math.log(c1) - math.log(c0)))
    return None


def curves_of(rows: list[dict], metric: str) -> dict[str, list[tuple[float, float]]]:
    """(cost, energy error) points per curve, cost = ``metric`` (wall or CPU s per simulated s)."""
    curves: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        if math.isfinite(r["energy_error"]):
            curves.setdefault(curve_key(r), []).append((r[metric], r["energy_error"]))
    return curves


GROUPS = {"controlkit": "controlkit / ", "controlkit dopri5": "controlkit / dopri5", "controlkit core": "controlkit core / ",
          "mujoco": "mujoco / ", "pybullet": "pybullet / "}
"""Curve groups compared (label: curve-key prefix); ``controlkit dopri5`` is the integrator selectable by name."""


def best_costs(rows: list[dict], level: float, metric: str) -> dict[str, tuple[str, float] | None]:
    """Per group, the cheapest curve reaching ``level`` and its cost."""
    costs = {k: cost_at(p, level) for k, p in curves_of(rows, metric).items()}
    return {g: _best(costs, prefix) for g, prefix in GROUPS.items()}


def work_precision_levels(rows: list[dict]) -> list[dict]:
    """For each accuracy level: each group's cheapest curve, and controlkit's cost over MuJoCo's best."""
    out = []
    for level in LEVELS:
        wall, cpu = best_costs(rows, level, "wall_per_sim_s"), best_costs(rows, level, "cpu_per_sim_s")
        row: dict = {"energy error <=": level}
        for g, best in wall.items():
            row[f"best {g}"] = f"{best[1]:.3g} s/s ({best[0].split(' / ')[1]})" if best else "not reached"
        for metric, b in (("wall", wall), ("CPU", cpu)):
            for g in ("controlkit", "controlkit dopri5", "controlkit core"):
                ok = b[g] and b["mujoco"]
                row[f"{g} / mujoco ({metric})"] = b[g][1] / b["mujoco"][1] if ok else None
        out.append(row)
    return out


def _best(costs: dict[str, float | None], prefix: str) -> tuple[str, float] | None:
    got = [(k, c) for k, c in costs.items() if k.startswith(prefix) and c is not None]
    return min(got, key=lambda kc: kc[1]) if got else None


def plot_work_precision(rows: list[dict], path: Path) -> Path:
    """Log-log plots: max relative energy error against wall (left) and CPU (right) s per simulated s."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(14, 7.5), layout="constrained")
    FigureCanvasAgg(fig)
    curves: dict[str, list[dict]] = {}
    for r in rows:
        if math.isfinite(r["energy_error"]):
            curves.setdefault(curve_key(r), []).append(r)
    for ax, metric, label in zip(fig.subplots(1, 2), ("wall_per_sim_s", "cpu_per_sim_s"), ("wall-clock", "CPU")):
        _plot_curves(ax, curves, metric)
        ax.set_xlabel(f"{label} seconds per simulated second")
        ax.set_title(f"5-link chain, {CHAIN_SECONDS:g} s from horizontal ({label} time)")
    handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=4, fontsize=8)
    fig.savefig(path, dpi=100)
    return path


def _plot_curves(ax, curves: dict[str, list[dict]], metric: str) -> None:
    import matplotlib
    colors = matplotlib.colormaps["tab20"].colors
    styles = {"controlkit": "-o", "controlkit core": "--o", "mujoco": "-s", "pybullet": "-^"}
    for k, (key, pts) in enumerate(curves.items()):
        pts = sorted(pts, key=lambda r: r[metric])
        ax.loglog([r[metric] for r in pts], [max(r["energy_error"], 1e-16) for r in pts],
                  styles.get(pts[0]["engine"], "-x"), color=colors[(2 * k) % 20 + (2 * k) // 20], label=key, ms=3)
    ax.axhline(1e-6, color="grey", ls=":", lw=1)
    ax.set_ylabel("max |E(t) - E(0)| / E_ref")
    ax.grid(True, which="both", alpha=0.3)


# --------------------------------------------------------------- demos (RTF)
def demo_rtf(script: str, seconds: float | None) -> dict:
    """Real-time factor (simulated s / wall s) of an example scenario run for ``seconds`` (default its own)."""
    from sim.runner import load_script
    scn = load_script(ROOT / "examples" / script).build()
    dur = scn.seconds if seconds is None else seconds
    with Stopwatch() as clock:
        scn.sim.run(dur)
    return {"demo": scn.name, "simulated_s": dur, "wall_s": clock.wall, "cpu_s": clock.cpu,
            "real_time_factor": dur / clock.wall, "real_time_factor_cpu": dur / clock.cpu,
            "steps": scn.sim.steps, "steps_per_s": scn.sim.steps / clock.wall}


# ------------------------------------------------------------------ report
def engines_available() -> list[str]:
    """Which peer engines import here (the ``bench`` extra installs both)."""
    out = []
    for name in ("mujoco", "pybullet"):
        try:
            __import__(name)
            out.append(name)
        except ImportError:
            print(f"peers: {name} is not installed (pip install -e '.[bench]'); its rows are skipped")
    return out


def engine_versions(available: Sequence[str]) -> dict:
    """Versions of the engines compared."""
    out = {"pinocchio": pin.__version__}
    if "mujoco" in available:
        import mujoco
        out["mujoco"] = mujoco.__version__
    if "pybullet" in available:
        import pybullet as p
        out["pybullet"] = f"API {p.getAPIVersion()}"
    return out


def settings_text(versions: dict, checks: dict) -> str:
    """Every engine setting, as markdown, generated from the constants used above."""
    c1, c5, c0 = (mujoco_contact(e, 1e-3) for e in (1.0, 0.5, 0.0))
    lines = [
        f"Versions: {', '.join(f'{k} {v}' for k, v in versions.items())}. One thread for every engine "
        "(OPENBLAS/OMP/MKL_NUM_THREADS=1; MuJoCo rollout with its default single data, PyBullet DIRECT).",
        "",
        f"- **Impact scenes**: spheres of radius {RADIUS} m; three spheres of {SPHERE_MASS} kg, A at "
        f"{', '.join(f'{s:g}' for s in SPEEDS)} m/s; cradle balls {CRADLE_MASS} kg, ball 1 at {CRADLE_SPEED} m/s; "
        f"no gravity; rates {', '.join(f'{r:g}' for r in RATES)} Hz; first contact {STEPS_BEFORE} + phase "
        f"({', '.join(f'{p:g}' for p in PHASES)}) steps after the start, {STEPS_AFTER} steps simulated after it.",
        "- **controlkit**: `Simulator(integrator='rk4', dt=1/rate)`, `enable_impacts(law='propagative', "
        "restitution=e)` (event isolation to 1e-9 s, anti-tunnelling on).",
        "- **MuJoCo**: integrator Euler (default), frictionless contacts (condim 1). MuJoCo has no restitution "
        "coefficient; e maps to a soft contact's damping ratio zeta = -ln e / sqrt(pi^2 + ln^2 e) (the rebound "
        "of a linear spring-damper), time constant tau = 2 h (MuJoCo's refsafe lower bound), stiffness "
        "k = 1/tau^2, damping b = 2 zeta/tau, written as solref = (-k d, -b d) with solimp "
        f"(d, d, 0.001, 0.5, 2), d = dmin = dmax = {IMPEDANCE}. At h = 1 ms: e = 1 -> solref "
        f"({c1['solref'][0]:.4g}, {c1['solref'][1]:.4g}); e = 0.5 -> zeta {c5['zeta']:.4f}, solref "
        f"({c5['solref'][0]:.4g}, {c5['solref'][1]:.4g}); e = 0 -> zeta 1, solref ({c0['solref'][0]:.4g}, "
        f"{c0['solref'][1]:.4g}).",
        "- **PyBullet**: restitution sqrt(e) on every body (Bullet's pair restitution is the product of the "
        "two bodies', so the pair gets e); lateral, spinning and rolling friction 0; linear and angular "
        "damping 0; restitutionVelocityThreshold 0; fixedTimeStep 1/rate, numSubSteps 0; other solver "
        "parameters at their defaults (50 iterations, split impulse).",
        f"- **Chain**: {CHAIN_LINKS} links, {CHAIN_LENGTH} m x {CHAIN_WIDTH} m x {CHAIN_WIDTH} m boxes of "
        f"{CHAIN_MASS} kg, revolute about -y at each link's start, released horizontal at rest, "
        f"{CHAIN_SECONDS:g} s, g = {GRAVITY}. Energy error = max over every step's end state of "
        f"|E - E0| / E_ref, E_ref = n^2 m g L / 2 = {chain_energy_scale():.4g} J (E0 = 0), energies by "
        "Pinocchio from each engine's joint angles and rates. Model agreement (max |M_engine - M_pinocchio| "
        f"at a random configuration): {', '.join(f'{k} {v:.2g} kg m^2' for k, v in checks.items()) or 'n/a'}.",
        "- controlkit chain: `Simulator(integrator=..., dt=h)`, or the adaptive `dopri5` / `dop853` "
        "(`sim.integrators.DormandPrince853`, set as `sim.integrator`: not in the registry yet) with "
        "rtol = atol = tol (initial step 1 ms), recording every step; torque-free, so every evaluation "
        "takes the lean path (`pin.aba`); *controlkit core* = `sim.integrators.advance` with the same "
        "integrator on `PinocchioSystem(model, pin.aba)` (no Simulator loop). MuJoCo chain: contacts disabled, no damping, "
        "stepped by `mujoco.rollout` (C loop, one thread); *mujoco (python loop)* = `mj_step` from Python. "
        "PyBullet chain: one multibody, fixed base, joint and link damping 0, velocity motors off "
        "(force 0), collisions filtered out, its one integrator (semi-implicit Euler); only "
        "`stepSimulation` is timed.",
        "- Timing: wall clock and CPU time of this process (`time.process_time`), each the least over "
        "the repeats (median wall in the JSON). The machine is shared with other jobs, which inflates "
        "wall times unevenly; CPU time is the steadier measure, and ratios within this run are what "
        "to read.",
    ]
    return "\n".join(lines)


def md_table(rows: list[dict], columns: list[str]) -> str:
    """A markdown table of dict rows (numbers to 4 significant digits)."""
    def cell(x) -> str:
        if x is None:
            return "-"
        if isinstance(x, float):
            return f"{x:.4g}"
        return str(x).replace("|", "\\|")
    head = "| " + " | ".join(columns) + " |\n| " + " | ".join("---" for _ in columns) + " |\n"
    return head + "\n".join("| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows)


def targets(spheres: list[dict], cradle: list[dict], levels: list[dict]) -> list[dict]:
    """The issue's targets, each with the measured figure and a verdict."""
    ck = [r for r in spheres if r["engine"] == "controlkit"]
    worst_ratio = max(r["ke_ratio"] for r in ck)
    elastic = max(abs(r["ke_ratio"] - 1) for r in ck if r["e"] == 1.0)
    dev = max(r["max_dev_mps"] for r in cradle if r["engine"] == "controlkit")
    out = [
        {"target": "three spheres: KE ratio <= 1 + 1e-12 in every case", "measured": f"max ratio - 1 = {worst_ratio - 1:.3g}",
         "met": worst_ratio <= 1 + 1e-12},
        {"target": "three spheres, e = 1: |KE ratio - 1| (for information)", "measured": f"{elastic:.3g}", "met": "-"},
        {"target": "cradle: (0, 0, 0, 0, 1) m/s within 1e-12 at every rate and phase", "measured": f"max deviation {dev:.3g} m/s",
         "met": dev <= 1e-12},
    ]
    for r in levels:
        ratio = r["controlkit / mujoco (wall)"]
        if r["energy error <="] <= 1e-6 and ratio is not None:
            out.append({"target": f"chain, energy error <= {r['energy error <=']:g}: controlkit time <= MuJoCo's best",
                        "measured": _level_ratios(r), "met": ratio <= 1.0})
    return out


def _level_ratios(r: dict) -> str:
    """'best x wall (y CPU); dopri5 alone z wall (w CPU)' for a levels row."""
    def pair(g: str) -> str:
        w, c = r[f"{g} / mujoco (wall)"], r[f"{g} / mujoco (CPU)"]
        return f"{w:.3g} wall ({c:.3g} CPU)" if w is not None and c is not None else "not reached"
    return f"controlkit / MuJoCo = {pair('controlkit')}; dopri5 alone {pair('controlkit dopri5')}"


def markdown(payload: dict) -> str:
    """The peers section of bench/results/report.md."""
    wp_cols = ["engine", "integrator", "h_s", "tol", "steps", "evaluations", "wall_per_sim_s", "cpu_per_sim_s", "steps_per_s",
               "energy_error"]
    lvl_cols = ["energy error <=", "best controlkit", "best controlkit dopri5", "best controlkit core", "best mujoco",
                "best pybullet", "controlkit / mujoco (wall)", "controlkit dopri5 / mujoco (wall)",
                "controlkit core / mujoco (wall)", "controlkit / mujoco (CPU)", "controlkit dopri5 / mujoco (CPU)",
                "controlkit core / mujoco (CPU)"]
    sph_cols = ["engine", "e", "cases", "KE_ratio_min", "KE_ratio_mean", "KE_ratio_max", "KE_ratio_max-1",
                "vA/v0 min/mean/max", "vB/v0 min/mean/max", "vC/v0 min/mean/max", "propagative law v/v0"]
    parts = [
        "### Settings\n\n" + payload["settings_md"],
        "### Targets\n\n" + md_table(payload["targets"], ["target", "measured", "met"]),
        "### Three spheres (seed 001, Fig. 2)\n\n" + md_table(payload["three_spheres"], sph_cols),
        "### Newton's cradle, five balls, e = 1\n\n" + md_table(
            payload["cradle"], ["engine", "cases", "mean final v (m/s)", "max dev. from (0,0,0,0,1) m/s", "KE_ratio_min", "KE_ratio_max"]),
        "### 5-link chain: work-precision\n\n![work-precision](peers_work_precision.png)\n\n"
        "Cost to reach each accuracy (wall s per simulated s; interpolated log-log between measured points):\n\n"
        + md_table(payload["levels"], lvl_cols)
        + "\n\nWhere a controlkit Simulator step goes (tol 1e-8, wall time of the fastest of several runs with "
        "the integrator's steps and the evaluations timed inclusively; pin.aba's share is its hot-loop cost "
        "times the evaluations; MuJoCo's step is the CPU time of its run at h = 1 ms):\n\n"
        + md_table(payload["time_split"], ["integrator", "part", "evaluations_per_step", "us_per_step", "share_%"])
        + "\n\nEvery measured point:\n\n" + md_table(payload["chain"], wp_cols),
        "### Step throughput (chain, h = 1 ms) and controlkit demos\n\n"
        + md_table(payload["throughput"], ["engine", "integrator", "h_s", "tol", "steps_per_s", "us_per_step"])
        + "\n\n" + md_table(payload["demos"], ["demo", "simulated_s", "wall_s", "cpu_s", "real_time_factor",
                                                 "real_time_factor_cpu", "steps_per_s"]),
    ]
    if payload.get("contact_scenes"):
        parts.append("### General contact scenes (6-sphere column, 8-box row)\n\n"
                     + md_table(payload["contact_scenes"], CONTACT_COLUMNS))
    if payload.get("billiards"):
        parts.append("### Billiards break (15 balls, e = 1; seed 001 section VII)\n\n"
                     + md_table(payload["billiards"], list(payload["billiards"][0])))
    return "\n\n".join(parts) + "\n"


def time_split(integrator: str, repeat: int, tol: float = 1e-8) -> list[dict]:
    """Where a controlkit Simulator step on the chain goes (us per accepted step).

    One Simulator run at ``tol`` with the integrator's ``step`` and the system's ``accel``
    timed inclusively (the fastest of ``repeat`` runs): the Simulator's loop is the run less
    the steps, the integrator's arithmetic the steps less the evaluations, and the
    evaluations split into ``pin.aba`` (its hot-loop cost times the count) and the rest.
    """
    from bench.common import best_time
    best = None
    for _ in range(max(1, repeat)):
        sim = chain_simulator(integrator, tol)
        calls0 = sim.mech.times.calls
        # the lean chain's evaluations are bare aba calls through the simulator's bare system
        system = bare_system(sim) or sim.system
        accel, step = _accumulate(system, "accel"), _accumulate(sim.integrator, "step")
        with Stopwatch() as clock:
            sim.run(CHAIN_SECONDS)
        if best is None or clock.wall < best[0]:
            best = (clock.wall, step[0], accel[0], sim.steps, sim.mech.times.calls - calls0)
    total, t_step, t_accel, steps, evals = best
    model = chain_built().mechanism.model
    data, x = model.createData(), np.random.default_rng(1).uniform(-1, 1, (2, model.nv))
    aba = evals * best_time(lambda: pin.aba(model, data, x[0], x[1], np.zeros(model.nv)), repeat=5, number=2000)
    rows = [("pin.aba (Pinocchio, C++)", aba),
            ("accel wrappers around aba (controlkit.dynamics.lean_accel, sim/integrator_base.py)", t_accel - aba),
            (f"{integrator} arithmetic: stages, error, step control (sim/integrators.py)", t_step - t_accel),
            ("Simulator loop: accept, record, guards, timers (sim/simulator.py)", total - t_step),
            ("total controlkit Simulator step", total)]
    return [{"integrator": integrator, "part": name, "evaluations_per_step": evals / steps,
             "us_per_step": 1e6 * t / steps, "share_%": 100 * t / total} for name, t in rows]


def _accumulate(obj: object, attr: str) -> list[float]:
    """Replace the method ``obj.attr`` by a wrapper adding its wall time (s) to the returned cell."""
    fn, cell = getattr(obj, attr), [0.0]

    def timed(*args):
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            cell[0] += time.perf_counter() - t0

    setattr(obj, attr, timed)
    return cell


def mujoco_step_scale(chain: list[dict]) -> list[dict]:
    """One MuJoCo RK4 step's CPU time at h = 1 ms, for scale next to the controlkit split."""
    mj = [r for r in chain if r["engine"] == "mujoco" and r["integrator"] == "RK4" and r.get("h_s") == 1e-3]
    return [{"integrator": "MuJoCo RK4", "part": "for scale: one MuJoCo RK4 step (C)", "evaluations_per_step": 4,
             "us_per_step": 1e6 * mj[0]["cpu_s"] / mj[0]["steps"]}] if mj else []


def _is(x: float | None, value: float) -> bool:
    return x is not None and math.isclose(x, value, rel_tol=1e-9)


def throughput_table(chain: list[dict], loops: list[dict]) -> list[dict]:
    """Steps per second at h = 1 ms (and dopri5 at tol 1e-8) from the chain runs."""
    rows = [r for r in chain + loops if _is(r.get("h_s"), 1e-3) or _is(r.get("tol"), 1e-8)]
    return [{**r, "us_per_step": 1e6 / r["steps_per_s"]} for r in rows]


# ------------------------------------------- billiards break (seed 001, section VII)
BREAK_ROWS, BREAK_SPEED, BREAK_RATE, BREAK_SECONDS = 5, 2.0, 1000.0, 0.05  # 15 balls, m/s, Hz, s


def billiards_break(available: Sequence[str], cid: int | None, samples: int = 200) -> list[dict]:
    """The 15-ball break in each engine (cue ball 2 mm from the apex at 2 m/s, e = 1, no friction, no
    gravity, 50 ms at 1 kHz): kinetic energy after / before, momentum change, the cue ball's velocity, and
    the kinetic-norm distance (over |v|) of the engine's outcome to the nearest propagative outcome of a
    sample of ``samples`` random minimal sequences (``sim.impact_outcomes.sample_outcomes``; the set is
    too large to enumerate)."""
    from robots.billiards import break_shot
    from sim.collision import CollisionWorld
    from sim.impact_outcomes import sample_outcomes
    touching = break_shot(BREAK_ROWS, speed=BREAK_SPEED)
    mech = touching.mechanism
    world = CollisionWorld(mech)
    contacts = [c for c in world.contacts(touching.q0, touching.v0) if c.distance <= 1e-9]
    M, _ = mech.dynamics()
    M = M.copy()
    law = sample_outcomes(M, world.jacobian(contacts), touching.v0, samples=samples)
    built = break_shot(BREAK_ROWS, speed=BREAK_SPEED, cue_distance=0.002)
    pos, r, m = built.info["positions"], built.info["radius"], built.info["mass"]
    runs = {"controlkit": lambda: _controlkit_break(built)}
    if "mujoco" in available:
        runs["mujoco"] = lambda: _mujoco_break(pos, r, m)
    if "pybullet" in available:
        runs["pybullet"] = lambda: _pybullet_break(cid, pos, r, m)
    v0 = touching.v0
    ke0, p0 = 0.5 * float(v0 @ M @ v0), m * np.array([v0[0::2].sum(), v0[1::2].sum()])
    rows = []
    for engine, fn in runs.items():
        v = fn()
        dist = min(math.sqrt(float((v - o.v) @ M @ (v - o.v))) for o in law.outcomes) / math.sqrt(2 * ke0)
        p = m * np.array([v[0::2].sum(), v[1::2].sum()])
        rows.append({"engine": engine, "KE_ratio": 0.5 * float(v @ M @ v) / ke0,
                     "momentum_change_Ns": float(np.abs(p - p0).max()),
                     "cue_v": f"({v[0]:+.3f}, {v[1]:+.3f})",
                     "distance_to_propagative_set": dist, "outcomes_sampled": len(law)})
    return rows


def _controlkit_break(built) -> np.ndarray:
    sim = Simulator(built.mechanism, built.q0, built.v0, dt=1.0 / BREAK_RATE, integrator="variational")
    sim.enable_impacts(law="propagative", restitution=1.0)
    sim.run(BREAK_SECONDS)
    return sim.v.copy()


def _mujoco_break(pos: np.ndarray, r: float, m: float) -> np.ndarray:
    import mujoco
    c = mujoco_contact(1.0, 1.0 / BREAK_RATE)
    solref = " ".join(f"{x:.17g}" for x in c["solref"])
    solimp = " ".join(f"{x:.17g}" for x in c["solimp"])
    bodies = "".join(f'<body name="b{i}" pos="{x:.17g} {y:.17g} 0"><freejoint/><geom type="sphere" size="{r}" '
                     f'mass="{m:.17g}" condim="1" solref="{solref}" solimp="{solimp}"/></body>'
                     for i, (x, y) in enumerate(pos))
    model = mujoco.MjModel.from_xml_string(f'<mujoco><option timestep="{1.0 / BREAK_RATE:.17g}" integrator="Euler" '
                                           f'gravity="0 0 0"/><worldbody>{bodies}</worldbody></mujoco>')
    data = mujoco.MjData(model)
    data.qvel[0] = BREAK_SPEED
    for _ in range(int(round(BREAK_SECONDS * BREAK_RATE))):
        mujoco.mj_step(model, data)
    qv = np.asarray(data.qvel).reshape(-1, 6)
    return qv[:, :2].ravel().copy()


def _pybullet_break(cid: int, pos: np.ndarray, r: float, m: float) -> np.ndarray:
    import pybullet as p
    pybullet_reset(cid, 1.0 / BREAK_RATE)
    shape = p.createCollisionShape(p.GEOM_SPHERE, radius=r, physicsClientId=cid)
    ids = [p.createMultiBody(m, shape, basePosition=[x, y, 0], physicsClientId=cid) for x, y in pos]
    for b in ids:
        p.changeDynamics(b, -1, restitution=1.0, lateralFriction=0.0, spinningFriction=0.0, rollingFriction=0.0,
                         linearDamping=0.0, angularDamping=0.0, physicsClientId=cid)
    p.resetBaseVelocity(ids[0], [BREAK_SPEED, 0, 0], [0, 0, 0], physicsClientId=cid)
    for _ in range(int(round(BREAK_SECONDS * BREAK_RATE))):
        p.stepSimulation(physicsClientId=cid)
    return np.array([p.getBaseVelocity(b, physicsClientId=cid)[0][:2] for b in ids]).ravel()


# -------------------------------------------------------------------- main
def run(repeat: int, quick: bool, demos: bool) -> dict:
    """Every scene in every available engine; returns the JSON payload."""
    available = engines_available()
    cid = pybullet_client() if "pybullet" in available else None
    engines = row_engines(available, cid)
    sphere_rows = sweep_three_spheres(engines)
    cradle_rows = sweep_cradle(engines)
    checks = {}
    if "mujoco" in available:
        checks["mujoco"] = mujoco_mass_matrix_check()
    if "pybullet" in available:
        checks["pybullet"] = pybullet_mass_matrix_check(cid)
    chain = chain_runs(available, cid, repeat, quick)
    levels = work_precision_levels(chain)
    split = [r for integ in ADAPTIVE for r in time_split(integ, 2 * repeat + 1)] + mujoco_step_scale(chain)
    loops = throughput_runs(available, repeat)
    demo_rows = [demo_rtf("walking.py", 4.0 if quick else 10.0), demo_rtf("redundant_arm.py", None)] if demos else []
    spheres, cradle = summarize_three_spheres(sphere_rows), summarize_cradle(cradle_rows)
    return {"versions": engine_versions(available), "settings_md": settings_text(engine_versions(available), checks),
            "mass_matrix_check": checks, "targets": targets(sphere_rows, cradle_rows, levels),
            "three_spheres": spheres, "cradle": cradle, "chain": chain, "levels": levels,
            "throughput": throughput_table(chain, loops), "demos": demo_rows, "time_split": split,
            "three_sphere_cases": sphere_rows, "cradle_cases": cradle_rows,
            "billiards": billiards_break(available, cid),
            "contact_scenes": contact_scenes(available, cid, repeat, quick)}


def run_chain_only(repeat: int, quick: bool) -> None:
    """``--chain-only``: the chain's work-precision points, levels, time split and step throughput
    (tables, bench/results/peers_chain.json)."""
    available = [e for e in engines_available() if e == "mujoco"]
    chain = chain_runs(available, None, repeat, quick)
    payload = {"versions": engine_versions(available), "chain": chain, "levels": work_precision_levels(chain),
               "time_split": [r for integ in ADAPTIVE for r in time_split(integ, 2 * repeat + 1)] + mujoco_step_scale(chain),
               "throughput": throughput_table(chain, throughput_runs(available, repeat))}
    for key in ("levels", "time_split", "throughput", "chain"):
        if payload[key]:
            print(f"\n{key}\n" + table(payload[key], list(payload[key][0])))
    print(f"wrote {write_json('peers_chain', payload)}")


def run_contact_only(repeat: int, quick: bool) -> None:
    """``--contact-only``: the general contact scenes alone (table, bench/results/peers_contact.json)."""
    available = engines_available()
    cid = pybullet_client() if "pybullet" in available else None
    rows = contact_scenes(available, cid, repeat, quick)
    print(table(rows, CONTACT_COLUMNS))
    print(f"wrote {write_json('peers_contact', {'versions': engine_versions(available), 'contact_scenes': rows})}")


def main(argv: list[str] | None = None) -> None:
    """Command line: run everything, print the tables, write JSON, markdown and the plot."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="timed repeats per chain run (best is kept)")
    ap.add_argument("--quick", action="store_true", help="every other grid point, shorter walking demo")
    ap.add_argument("--no-demos", action="store_true", help="skip the walking and arm demos")
    ap.add_argument("--contact-only", action="store_true", help="only the general contact scenes")
    ap.add_argument("--chain-only", action="store_true", help="only the chain (work-precision, time split, throughput)")
    args = ap.parse_args(argv)
    if args.contact_only:
        return run_contact_only(args.repeat, args.quick)
    if args.chain_only:
        return run_chain_only(args.repeat, args.quick)
    payload = run(args.repeat, args.quick, not args.no_demos)
    RESULTS.mkdir(parents=True, exist_ok=True)
    plot_work_precision(payload["chain"], RESULTS / "peers_work_precision.png")
    (RESULTS / "peers.md").write_text(markdown(payload))
    for title, key in (("targets", "targets"), ("three spheres", "three_spheres"), ("cradle", "cradle"),
                       ("work-precision levels", "levels"), ("time split", "time_split"), ("chain runs", "chain"),
                       ("throughput", "throughput"),
                       ("demos", "demos"), ("billiards break", "billiards"), ("contact scenes", "contact_scenes")):
        if payload[key]:
            print(f"\n{title}\n" + table(payload[key], list(payload[key][0])))
    print(f"\nwrote {write_json('peers', payload)}, {RESULTS / 'peers.md'}, {RESULTS / 'peers_work_precision.png'}")


if __name__ == "__main__":
    main()
