"""Impacts: impulse-momentum resolution in generalized coordinates (the thesis' section 5.2).

At an impact the configuration q is fixed and the velocity jumps,

    M(q) (v+ - v-) = J^T Lambda,          Lambda >= 0  (no tensile impulse),

with J (k, nv) the normal Jacobian rows of the contacts (``J v`` = normal relative
velocities, m/s, > 0 separating) and Lambda (k,) the normal impulses (N s). Because the
equation is written on the whole tree, impulses travel through every hinge. Three laws:

- ``"propagative"`` (seed 001; the thesis' Fig. 5.2 loop): the contacts are treated as
  separated by infinitesimal gaps and resolved by a *minimal sequence* of two-body resets:
  while some contact is impacting (``J_i v < -velocity_tolerance``) the most infeasible one
  (the most negative ``J_i v / sqrt(J_i M^-1 J_i^T)``) gets the single-contact reset
  ``v += -(1 + e_i) (J_i v) / (J_i M^-1 J_i^T) M^-1 J_i^T`` (elastic reflection for e = 1).
  Each reset dissipates ``(1 - e_i^2)/2 (J_i v)^2 / (J_i M^-1 J_i^T)`` >= 0, so kinetic energy
  never grows and is kept for e = 1. More than ``max_resets`` resets raise :class:`ImpactError`.
- ``"simultaneous"``: every contact at once, Newton restitution with complementarity:
  ``J v+ >= -e J v-`` on the approaching contacts, ``J v+ >= 0`` on the others, Lambda >= 0,
  ``Lambda_i (J_i v+ + e_i min(J_i v-, 0)) = 0`` — the KKT conditions of the QP
  ``min 1/2 (v+ - v-)^T M (v+ - v-)`` under those inequalities, solved by `controlkit.qp.solve_qp`.
- ``"plastic"``: e = 0 for every contact: the M-weighted projection of v- onto the tangent
  cone ``{J v >= 0}`` of the contact manifolds (equal to the projection onto their tangent
  space whenever every impulse comes out compressive), also by `solve_qp`.

Restitution coefficients come per material pair: ``mech.materials`` maps a geometry name
to a material name and a :class:`RestitutionTable` maps material pairs to e (default e).

:func:`add_impacts` registers an :class:`ImpactSource` with the simulator: a velocity-kind
event source whose guards are the pairs' signed distances (an event when one crosses to
<= 0), whose handler applies the law, logs an ``"impact"`` event and sets v+, and whose
``max_step`` keeps steps short enough that a fast body cannot pass through a thin one.
Contacts that are separating or resting after the impact (distance <= 0, normal
velocity >= 0) cannot fire again: their guard is already <= 0.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import scipy.linalg as sla

from controlkit.errors import ControlkitError, QPError, SimulationError
from controlkit.qp import solve_qp

from .collision import CollisionWorld, Contact, PairFilter
from .events import VELOCITY, EventSource

LAWS = ("propagative", "simultaneous", "plastic")


class ImpactError(SimulationError):
    """An impact could not be resolved (reset storm, infeasible impulse problem)."""


# ------------------------------------------------------------ restitution
class RestitutionTable:
    """Coefficients of restitution (dimensionless, 0..1) per pair of materials.

    Args:
        default: e for pairs not in the table.
        pairs: ``{(material_a, material_b): e}`` (order-free).
        materials: geometry name -> material name (usually ``mech.materials``); a geometry
            without a material uses its own name as material.
    """

    def __init__(self, default: float = 1.0, pairs: Mapping[tuple[str, str], float] | None = None,
                 materials: Mapping[str, str] | None = None):
        self.default = _check_e(default, "default")
        self.pairs = {frozenset(k): _check_e(e, f"{k}") for k, e in (pairs or {}).items()}
        self.materials = dict(materials or {})

    def material(self, geometry: str) -> str:
        return self.materials.get(geometry, geometry)

    def __call__(self, geom_a: str, geom_b: str) -> float:
        """e for a pair of geometries."""
        key = frozenset((self.material(geom_a), self.material(geom_b)))
        return self.pairs.get(key, self.default)

    @classmethod
    def make(cls, spec, materials: Mapping[str, str] | None = None) -> "RestitutionTable":
        """From a float (one e for all), a dict ``{(mat_a, mat_b): e, "default": e}`` or a table."""
        if isinstance(spec, RestitutionTable):
            if materials and not spec.materials:
                spec.materials = dict(materials)
            return spec
        if spec is None:
            return cls(1.0, materials=materials)
        if isinstance(spec, Mapping):
            spec = dict(spec)
            default = spec.pop("default", 1.0)
            return cls(default, spec, materials)
        return cls(float(spec), materials=materials)


def _check_e(e, what: str) -> float:
    e = float(e)
    if not 0.0 <= e <= 1.0:
        raise ControlkitError(f"restitution {what}: a coefficient of restitution must be in [0, 1], got {e}")
    return e


# ----------------------------------------------------------- the laws
@dataclass
class ImpactResult:
    """The outcome of one impact resolution.

    Attributes:
        v: post-impact velocity (nv,).
        impulses: normal impulse per contact (k,), N s (>= 0), then one per bilateral row (N s or
            N m s, either sign) when bilateral rows took part.
        normal_velocity_before, normal_velocity_after: J v- and J v+ (k,), m/s.
        restitution: e per contact (k,).
        resets: number of two-body resets (propagative), else 0.
        kinetic_energy_before, kinetic_energy_after: J.
        law: the law used.
        sequence: the contacts reset, in order (propagative).
        contacts: the contact records (when resolved by an ImpactSource).
    """

    v: np.ndarray
    impulses: np.ndarray
    normal_velocity_before: np.ndarray
    normal_velocity_after: np.ndarray
    restitution: np.ndarray
    resets: int
    kinetic_energy_before: float
    kinetic_energy_after: float
    law: str
    sequence: list[int] = field(default_factory=list)
    contacts: list[Contact] = field(default_factory=list)


def resolve_impact(M: np.ndarray, J: np.ndarray, v: np.ndarray, restitution: np.ndarray | float,
                   law: str = "propagative", *, bilateral: np.ndarray | None = None, velocity_tolerance: float = 1e-9,
                   max_resets: int = 1000, where: str = "", outcomes: str = "one"):
    """Post-impact velocity from M (nv, nv), contact normal rows J (k, nv) and v- (nv,).

    Args:
        M: mass matrix at the impact configuration (kg, kg m, kg m^2).
        J: normal Jacobian rows of the contacts in the contact set (J v in m/s, > 0 separating).
        v: pre-impact velocity (nv,).
        restitution: e per contact (k,) or one e for all.
        law: ``"propagative"``, ``"simultaneous"`` or ``"plastic"``.
        velocity_tolerance: a contact impacts when ``J_i v < -velocity_tolerance`` (m/s).
        max_resets: propagative law: the largest number of two-body resets before ImpactError.
        bilateral: rows (b, nv) held through the impact, ``B v+ = 0`` (plastic): loop closures,
            welds, sticking contacts' tangential rows. The simultaneous and plastic laws hold them
            as equalities; the propagative law as two opposite plastic contacts each.
        where: context for error messages (time, pair names).
        outcomes: ``"one"`` (an :class:`ImpactResult`) or, propagative law only, ``"all"``: every
            minimal reset sequence's outcome, a ``sim.impact_outcomes.OutcomeSet``.
    """
    if outcomes == "all" and law == "propagative" and bilateral is None:
        from .impact_outcomes import impact_outcomes
        return impact_outcomes(M, J, v, restitution, velocity_tolerance=velocity_tolerance,
                               max_resets=max_resets, where=where)
    if outcomes != "one":
        raise ControlkitError(f"resolve_impact: outcomes must be 'one' or 'all' (propagative law, no bilateral "
                              f"rows); got outcomes={outcomes!r} with law={law!r}")
    if law not in LAWS:
        raise ControlkitError(f"impact law must be one of {', '.join(LAWS)}; got {law!r}")
    v = np.asarray(v, dtype=float)
    J = np.atleast_2d(np.asarray(J, dtype=float)).reshape(-1, v.size)
    k = J.shape[0]
    e = np.broadcast_to(np.asarray(restitution, dtype=float), (k,)).copy()
    if law == "plastic":
        e[:] = 0.0
    B = np.zeros((0, v.size)) if bilateral is None else np.atleast_2d(np.asarray(bilateral, dtype=float))
    if len(B) and law == "propagative":
        res = resolve_impact(M, np.vstack([J, B, -B]), v, np.concatenate([e, np.zeros(2 * len(B))]), law,
                             velocity_tolerance=velocity_tolerance, max_resets=max_resets, where=where)
        nb = len(B)
        res.impulses = np.concatenate([res.impulses[:k], res.impulses[k:k + nb] - res.impulses[k + nb:]])
        res.normal_velocity_before, res.normal_velocity_after = res.normal_velocity_before[:k], res.normal_velocity_after[:k]
        res.restitution = e
        return res
    if len(B):
        return _simultaneous_bilateral(M, J, B, v, e, law, where)
    chol = sla.cho_factor(M, check_finite=False)
    W = sla.cho_solve(chol, J.T, check_finite=False) if k else np.zeros((v.size, 0))  # M^-1 J^T
    A = J @ W  # Delassus matrix (k, k), 1/kg
    u0 = J @ v
    ke0 = 0.5 * float(v @ M @ v)
    sequence: list[int] = []
    if k == 0:
        lam = np.zeros(0)
    elif law == "propagative":
        lam, sequence = _propagate(A, u0, e, velocity_tolerance, max_resets, where)
    else:
        lam = _simultaneous(M, J, v, u0, e, where)
    v1 = v + W @ lam
    return ImpactResult(v1, lam, u0, J @ v1, e, len(sequence), ke0, 0.5 * float(v1 @ M @ v1), law, sequence)


def _propagate(A, u0, e, vtol, max_resets, where):
    """Minimal sequence of single-contact resets in contact space (u = J v, u += A Lambda)."""
    k = len(u0)
    lam = np.zeros(k)
    u = u0.copy()
    d = np.sqrt(np.maximum(np.diag(A), 1e-300))
    seq: list[int] = []
    while True:
        score = u / d
        i = int(np.argmin(score))
        if u[i] >= -vtol:
            return lam, seq
        if len(seq) >= max_resets:
            raise ImpactError(
                f"{where}: the propagative impact law did not settle after {max_resets} two-body resets "
                f"(normal velocities now {np.array2string(u, precision=3)} m/s); raise max_resets "
                f"or use law='simultaneous' or 'plastic'")
        dl = -(1.0 + e[i]) * u[i] / A[i, i]
        lam[i] += dl
        u += A[:, i] * dl
        seq.append(i)


def _simultaneous(M, J, v, u0, e, where):
    """The QP min 1/2 (w - v)^T M (w - v) s.t. J w >= -e min(J v, 0); returns the multipliers."""
    r = -e * np.minimum(u0, 0.0)
    try:  # (J w >= r written as -J w <= -r)
        sol = solve_qp(M, -(M @ v), G=-J, h=-r)
    except QPError as exc:
        return _dual_impact(M, J, np.zeros((0, len(v))), v, r, where, exc)[: len(J)]
    return np.maximum(sol.ineq_multipliers, 0.0)


def _dual_impact(M, J, B, v, r, where, exc) -> np.ndarray:
    """The impulses ``[Lambda (k,) >= 0; mu (b,)]`` of the impact problem in impulse space, for when
    quadprog's primal solve fails on degenerate rows (many resting points whose rows depend on each
    other and on the bilateral rows: boxes touching side by side as they land together).

    ``min 1/2 x^T (D + eps I) x + x^T (G v - [r; 0])``, ``D = G M^-1 G^T``, ``G = [J; B]``, with
    ``Lambda >= 0``: always feasible; eps (1e-13 of D's trace) picks the least-norm impulses among
    equivalent ones. Raises :class:`ImpactError` if the velocity it gives misses the constraints."""
    G = np.vstack([J, B])
    W = sla.cho_solve(sla.cho_factor(M, check_finite=False), G.T, check_finite=False)
    D = G @ W
    D = 0.5 * (D + D.T) + 1e-13 * max(float(np.trace(D)), 1e-300) * np.eye(len(G))
    b = np.concatenate([r, np.zeros(len(B))]) - G @ v
    k = len(J)
    try:  # Lambda >= 0
        x = solve_qp(D, -b, G=-np.eye(len(G))[:k], h=np.zeros(k)).x
    except QPError as exc2:
        raise ImpactError(f"{where}: the simultaneous impact problem has no solution ({exc}; {exc2})") from exc2
    w = v + W @ x
    tol = 1e-6 * float(np.abs(G @ v).max(initial=0.0)) + 1e-9  # m/s
    if (J @ w < r - tol).any() or (len(B) and np.abs(B @ w).max() > tol):
        raise ImpactError(f"{where}: the simultaneous impact problem has no solution ({exc})")
    x[:k] = np.maximum(x[:k], 0.0)
    return x


def _simultaneous_bilateral(M, J, B, v, e, law, where) -> ImpactResult:
    """The simultaneous (or plastic) law with bilateral rows B held as equalities ``B w = 0``."""
    _, R, piv = sla.qr(B.T, pivoting=True, mode="economic")
    dg = np.abs(np.diag(R))
    keep = np.sort(piv[: int(np.sum(dg > 1e-10 * max(1.0, dg[0] if dg.size else 0.0)))])  # independent rows
    u0 = J @ v
    r = -e * np.minimum(u0, 0.0)
    try:  # B w = 0 on the independent rows, J w >= r
        sol = solve_qp(M, -(M @ v), A_eq=B[keep], b_eq=np.zeros(len(keep)), G=-J, h=-r)
    except QPError as exc:
        x = _dual_impact(M, J, B, v, r, where, exc)
        v1 = v + sla.cho_solve(sla.cho_factor(M, check_finite=False), np.vstack([J, B]).T @ x, check_finite=False)
        return ImpactResult(v1, x, u0, J @ v1, e, 0, 0.5 * float(v @ M @ v), 0.5 * float(v1 @ M @ v1), law)
    impulses = np.zeros(len(J) + len(B))
    impulses[:len(J)] = np.maximum(sol.ineq_multipliers, 0.0)
    impulses[len(J) + keep] = -sol.eq_multipliers  # (the bilateral rows' impulses: B^T mu pushes along +B)
    v1 = sol.x
    return ImpactResult(v1, impulses, u0, J @ v1, e, 0, 0.5 * float(v @ M @ v), 0.5 * float(v1 @ M @ v1), law)


# ------------------------------------------------------- the event source
class ImpactSource(EventSource):
    """Velocity events at collisions: guards are the watched pairs' signed distances (m).

    Args:
        world: the collision world (pairs, distances, Jacobians).
        law: ``"propagative"``, ``"simultaneous"`` or ``"plastic"``.
        restitution: a :class:`RestitutionTable`, one e, or ``{(mat_a, mat_b): e, "default": e}``.
        tolerance: time tolerance (s) of impact-time isolation.
        contact_distance: pairs closer than this (m) join the contact set of an impact.
        velocity_tolerance: a contact impacts when its normal velocity is below minus this (m/s).
        max_resets: propagative law: reset budget per impact.
        anti_tunnelling: limit steps by the time to contact (see :meth:`max_step`).
        rest_velocity: a bounce (e > 0) leaving slower than this (m/s) while the pair's normal
            acceleration pulls it back is the accumulation point of its bounces (infinitely many
            impacts in ``2 u / (|a_n| (1 - e))``): :class:`ImpactError`, since impacts alone cannot
            hold the resting contact that follows (``sim.contact.enable_contacts`` does).
    """

    kind = VELOCITY

    def __init__(self, world: CollisionWorld, law: str = "propagative", restitution=1.0, *,
                 tolerance: float = 1e-9, contact_distance: float = 1e-6, velocity_tolerance: float = 1e-9,
                 max_resets: int = 1000, anti_tunnelling: bool = True, rest_velocity: float = 1e-3,
                 name: str = "impacts"):
        if law not in LAWS:
            raise ControlkitError(f"add_impacts: law must be one of {', '.join(LAWS)}; got {law!r}")
        if tolerance <= 0:
            raise ControlkitError(f"add_impacts: tolerance must be a positive time in s, got {tolerance}")
        if contact_distance < 0 or velocity_tolerance < 0:
            raise ControlkitError("add_impacts: contact_distance (m) and velocity_tolerance (m/s) must be >= 0")
        if not rest_velocity >= 0:
            raise ControlkitError(f"add_impacts: rest_velocity must be >= 0 m/s, got {rest_velocity}")
        if max_resets < 1:
            raise ControlkitError(f"add_impacts: max_resets must be >= 1, got {max_resets}")
        self.world = world
        self.law = law
        self.restitution = RestitutionTable.make(restitution, world.mech.materials)
        self.tolerance = float(tolerance)
        self.contact_distance = float(contact_distance)
        self.velocity_tolerance = float(velocity_tolerance)
        self.max_resets = int(max_resets)
        self.anti_tunnelling = bool(anti_tunnelling)
        self.rest_velocity = float(rest_velocity)
        self.name = name
        self._started = False
        self.count = 0
        self.results: list[ImpactResult] = []

    def guards(self, sim, t, q, v):
        return self.world.distances(q)

    def max_step(self, sim, t, q, v):
        if not self.anti_tunnelling:
            return np.inf
        return self.world.time_to_contact(q, v, velocity_tolerance=self.velocity_tolerance, a=sim.accelerations,
                                          horizon=sim.step_horizon)

    def touching(self, sim) -> None:
        """A control-phase hook: at the start and after any handler (a velocity jump), a pair that
        touches (within ``contact_distance``) and approaches is an impact at that instant.

        Guards see crossings of the distance from > 0 to <= 0 only: a pair already touching when
        it starts to approach (bodies touching at the start, a ball resting on one that is struck
        through another handler) would otherwise pass into the other body unseen."""
        if self._started and not sim.restarting:
            return  # a plain step: its crossings are the guards' business
        self._started = True
        d = self.world.distances(sim.q)
        near = np.flatnonzero(d <= self.contact_distance)
        if not len(near):
            return
        cs = self.world.contacts(sim.q, sim.v, which=near)
        if min(c.normal_velocity for c in cs) < -self.velocity_tolerance:
            self.handle(sim, sim.t, near)

    def contact_set(self, q, v) -> list[Contact]:
        """Contacts of an impact at (q, v): every pair within ``contact_distance`` (m).

        (A pair whose guard crossed later in the same step is not touching yet at the
        isolated time, so it is left for its own event.)"""
        d = self.world.distances(q)
        return self.world.contacts(q, v, which=np.flatnonzero(d <= self.contact_distance))

    def resolve(self, sim, t: float, fired: Sequence[int] = ()) -> ImpactResult | None:
        """Apply the law at the simulator's state; returns the result (None when nothing impacts)."""
        mech = sim.mech
        contacts = self.contact_set(sim.q, sim.v)
        if not contacts or min(c.normal_velocity for c in contacts) >= -self.velocity_tolerance:
            return None
        mech.set_state(sim.q, sim.v)
        M, _ = mech.dynamics()
        J = self.world.jacobian(contacts)
        e = np.array([self.restitution(c.geom_a, c.geom_b) for c in contacts])
        names = ", ".join(f"{c.geom_a}/{c.geom_b}" for c in contacts)
        res = resolve_impact(M, J, sim.v, e, self.law, velocity_tolerance=self.velocity_tolerance,
                             max_resets=self.max_resets, where=f"t = {t:.9g} s, impact of {names}")
        res.contacts = contacts
        return res

    def handle(self, sim, t, fired):
        res = self.resolve(sim, t, fired)
        if res is None:
            return
        contacts = res.contacts
        active = res.impulses > 0
        hit = [c for c, a in zip(contacts, active) if a]
        desc = f"{self.law} impact: " + ", ".join(f"{c.body_a}/{c.body_b}" for c in hit or contacts)
        sim.log("impact", desc, law=self.law,
                pairs=[[c.geom_a, c.geom_b] for c in contacts],
                bodies=[[c.body_a, c.body_b] for c in contacts],
                distances=[c.distance for c in contacts],
                normals=[c.normal.tolist() for c in contacts],
                normal_velocity_before=res.normal_velocity_before.tolist(),
                normal_velocity_after=res.normal_velocity_after.tolist(),
                impulses=res.impulses.tolist(), restitution=res.restitution.tolist(),
                resets=res.resets, v_before=sim.v.tolist(), v_after=res.v.tolist(),
                kinetic_energy_before=res.kinetic_energy_before,
                kinetic_energy_after=res.kinetic_energy_after)
        self.count += 1
        self.results.append(res)
        sim.set_state(v=res.v)
        self._accumulation(sim, t, res)

    def _accumulation(self, sim, t: float, res: ImpactResult) -> None:
        """Raise :class:`ImpactError` when a bounce leaves slower than ``rest_velocity`` while the
        pair is pulled back together (see the class docstring)."""
        slow = [i for i, (e, u) in enumerate(zip(res.restitution, res.normal_velocity_after))
                if e > 0.0 and res.impulses[i] > 0.0 and 0.0 <= u <= self.rest_velocity]
        if not slow:
            return
        sim.solve_now()  # the accelerations after the impact (sim.accelerations)
        for i in slow:
            c = res.contacts[i]
            an = float(c.jacobian.dot(sim.accelerations))  # (the centripetal part left out)
            if an < 0.0:
                raise ImpactError(
                    f"t = {t:.9g} s: {c.geom_a}/{c.geom_b} bounces off at {res.normal_velocity_after[i]:.3g} m/s "
                    f"(below rest_velocity = {self.rest_velocity:g} m/s) while pulled back at {-an:.3g} m/s^2: "
                    f"its bounces accumulate here (infinitely many impacts within "
                    f"{2 * res.normal_velocity_after[i] / (-an * (1 - res.restitution[i])):.3g} s) and impacts alone "
                    f"cannot hold the resting contact that follows; use sim.contact.enable_contacts(sim, "
                    f"restitution=...) for bodies that come to rest", t, sim.recording)


def add_impacts(sim, law: str = "propagative", restitution=1.0, pairs: Sequence[tuple[str, str]] | None = None,
                tolerance: float | None = None, filter: PairFilter | None = None, **options) -> ImpactSource:
    """Watch collisions between the mechanism's geometries and resolve impacts.

    Args:
        sim: the simulator.
        law: ``"propagative"`` (default), ``"simultaneous"`` or ``"plastic"``.
        restitution: one e, ``{(material_a, material_b): e, "default": e}`` or a RestitutionTable
            (materials from ``mech.materials``: geometry name -> material).
        pairs: geometry (or body) name pairs to watch; default all pairs the filters keep.
        tolerance: impact-time tolerance (s); default ``min(sim.event_tolerance, 1e-9)``.
        filter: extra pair predicate ``filter(geom_a, geom_b) -> bool``.
        options: ``contact_distance`` (m), ``velocity_tolerance`` (m/s), ``max_resets``,
            ``anti_tunnelling``, ``rest_velocity`` (m/s), ``name``.
    Returns:
        the registered :class:`ImpactSource`.
    """
    world = CollisionWorld(sim.mech, pairs=pairs, filter=filter)
    tol = min(sim.event_tolerance, 1e-9) if tolerance is None else tolerance
    src = ImpactSource(world, law, restitution, tolerance=tol, **options)
    sim.add_source(src)
    sim.control_phase.append(src.touching)
    return src
