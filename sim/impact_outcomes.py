"""Outcome sets of the propagative impact law and their uniqueness (seed 001, sections IV-V).

A simultaneous impact across k contacts is resolved by the propagative law as a *minimal
sequence* of single-contact resets (eq. 7a, here with restitution e_i)

    p <- p + lambda_i u_i,   lambda_i = -(1 + e_i) <p, u_i>_g / |u_i|_g^2,

applied only across a contact that is still impacting (``<p, u_i>_g < 0``), and stopped as soon
as no contact impacts. ``<a, b>_g = a M^-1 b^T`` is the inner product of covectors under the
kinetic-energy metric; with ``u_i`` the i-th normal row of J, ``<p, u_i>_g = J_i v`` (the
contact's normal velocity) and ``|u_i|_g^2 = J_i M^-1 J_i^T``. Whenever several contacts impact
at once the next reset is a choice, so the law has a *set* of outcomes: :func:`impact_outcomes`
enumerates every minimal sequence (branching over the impacting contacts, merging momenta
reached by different orders) and returns the distinct post-impact velocities, each with the
sequences that lead to it.

:func:`uniqueness` reports the normalised kinetic-metric inner products
``c_ij = <u_i, u_j>_g / (|u_i|_g |u_j|_g)`` and what the paper's theorems say. For two contacts
the feasible momenta form a wedge of interior angle ``theta = arccos(-c)`` in the plane of the
normals, and the resets are reflections in its sides (a billiard in a wedge):

- Theorem 1 (existence): the minimal sequence ends after at most ``ceil(pi / theta)`` resets;
- Theorem 2: ``c = 0`` (orthogonal normals; the resets commute): one outcome, in two resets;
- Theorem 3: ``c = -1/2`` (the wedge is pi/3, Newton's cradle's neighbouring contacts): one outcome.

More generally the outcome of an elastic impact is unique for every pre-impact momentum exactly
when ``pi / theta`` is an integer (the wedge's reflections tile the plane). ``c = +1/2`` (a 120
degree wedge) is not such a case although the paper's summary names "±0.5": the two reflections
satisfy the same braid relation ``(Gamma(u) Gamma(v))^3 = I`` for either sign, but with a 120
degree wedge every momentum approaching both contacts is made feasible by one reset in one order
and by two in the other, at two different momenta (``docs/impacts.md``). Theorems 1 and 3 and the
tiling argument are about reflections (e = 1): with ``e < 1`` a reset is no reflection and
``c = -1/2`` has two outcomes for some momenta, so :func:`uniqueness` names Theorem 3 only for
elastic contacts. Theorem 2 holds for any restitution (resets across orthogonal normals
commute). For n contacts, pairwise orthogonal normals give one outcome in any order (the
corollary of Theorem 2); otherwise the enumeration decides.

:func:`strike_case` looks at the momentum too: when exactly one contact is infeasible
(``<p, u_a>_g < 0``) and every other one is feasible (``<p, u_j>_g >= 0``: resting or separating),
the first reset is forced. If it leaves every other contact feasible (for a resting contact j:
``c_aj >= 0``) the minimal sequence is that one reset; with two contacts every later reset is forced
as well (the contact just reset is feasible, ``<p+, u>_g = -e <p, u>_g >= 0``, so at most one is
infeasible at a time). Either way there is one minimal sequence and one outcome, whatever c.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla

from controlkit.errors import ControlkitError

from .impact import ImpactError

__all__ = ["Outcome", "OutcomeSet", "UniquenessReport", "StrikeCase", "impact_outcomes", "sample_outcomes",
           "uniqueness", "reset_bound", "strike_case"]

_ORTHOGONAL = 1e-9  # |c| below this counts as orthogonal (Theorem 2)


@dataclass
class Outcome:
    """One distinct post-impact velocity of the propagative law.

    Attributes:
        v: post-impact velocity (nv,).
        impulses: normal impulse per contact (k,), N s, summed over the sequence.
        sequence: the shortest minimal sequence (contact indices, in order) reaching it.
        count: how many minimal sequences reach it.
        kinetic_energy: 1/2 v^T M v after the impact, J.
    """

    v: np.ndarray
    impulses: np.ndarray
    sequence: tuple[int, ...]
    count: int
    kinetic_energy: float


@dataclass
class UniquenessReport:
    """What the theorems of seed 001 say about a set of contact normals.

    Attributes:
        inner_products: c_ij (k, k), normalised kinetic-metric inner products of the normals.
        theorem: ``"single contact"``, ``"Theorem 2"``, ``"Theorem 3"``, ``"Theorem 2 (pairwise
            orthogonal)"``, ``"dihedral pi/m"`` (two contacts, pi/theta = m integer > 3) or ``"none"``.
        guaranteed_unique: True when the theorem named guarantees one outcome for every momentum.
        reset_bound: Theorem 1's bound on the number of resets (two contacts), else None.
        wedge_angle: theta = arccos(-c) (rad) for two contacts, else None.
        text: a readable summary.
    """

    inner_products: np.ndarray
    theorem: str
    guaranteed_unique: bool
    reset_bound: int | None
    wedge_angle: float | None
    text: str


@dataclass
class OutcomeSet:
    """Every distinct outcome of the propagative law at one impact.

    Attributes:
        outcomes: the distinct outcomes (ordered by their shortest sequence).
        uniqueness: the :class:`UniquenessReport` of the contact normals.
        sequences: the number of minimal sequences enumerated (with multiplicity).
        longest: the length of the longest minimal sequence.
        kinetic_energy_before: J.
        states: distinct intermediate momenta explored.
        exhaustive: True when every minimal sequence was enumerated; False for a random sample
            (:func:`sample_outcomes`), whose outcomes are a subset of the set.
    """

    outcomes: list[Outcome]
    uniqueness: UniquenessReport
    sequences: int
    longest: int
    kinetic_energy_before: float
    states: int = 0
    exhaustive: bool = True
    notes: list[str] = field(default_factory=list)

    @property
    def unique(self) -> bool:
        """True when every minimal sequence ends at the same velocity."""
        return len(self.outcomes) == 1

    def __len__(self) -> int:
        return len(self.outcomes)


def reset_bound(c: float) -> int:
    """Theorem 1: the most resets a two-contact minimal sequence takes, ``ceil(pi / arccos(-c))``.

    Args:
        c: the normalised kinetic-metric inner product of the two normals, in (-1, 1).
    """
    if not -1.0 < c < 1.0:
        raise ControlkitError(f"reset_bound: the normals must not be collinear (|c| < 1), got c = {c}")
    theta = math.acos(-c)
    return int(math.ceil(math.pi / theta - 1e-9))


def _metric(M: np.ndarray, J: np.ndarray):
    chol = sla.cho_factor(M, check_finite=False)
    W = sla.cho_solve(chol, J.T, check_finite=False)  # M^-1 J^T (nv, k)
    return W, J @ W  # Delassus matrix = Gram matrix of the normals under the kinetic metric


def uniqueness(M: np.ndarray, J: np.ndarray, *, tolerance: float = 1e-9,
               restitution: np.ndarray | float = 1.0) -> UniquenessReport:
    """The normals' kinetic-metric inner products and which of seed 001's theorems applies.

    Args:
        M: mass matrix (nv, nv) at the impact configuration.
        J: contact normal rows (k, nv) (``J v`` = normal velocities, m/s, > 0 separating).
        tolerance: how close (absolute, on c) an inner product must be to 0 or -1/2 to count.
        restitution: e per contact (k,) or one e: Theorem 3 and the dihedral wedges hold for
            elastic contacts only (e = 1); Theorem 2 for any e.
    """
    J = np.atleast_2d(np.asarray(J, dtype=float))
    _, A = _metric(np.asarray(M, dtype=float), J)
    d = np.sqrt(np.diag(A))
    C = A / np.outer(d, d)
    k = len(J)
    e = np.broadcast_to(np.asarray(restitution, dtype=float), (k,))
    elastic = bool(np.all(e == 1.0))
    if k == 1:
        return UniquenessReport(C, "single contact", True, 1, None, "one contact: one reset, one outcome")
    off = C[~np.eye(k, dtype=bool)]
    if k == 2:
        c = float(C[0, 1])
        theta = math.acos(max(-1.0, min(1.0, -c)))
        bound = reset_bound(c) if abs(c) < 1 - 1e-12 else None
        m = math.pi / theta
        inelastic = ""
        if abs(c) <= max(tolerance, _ORTHOGONAL):
            th, ok = "Theorem 2", True
        elif (abs(c + 0.5) <= tolerance or abs(m - round(m)) <= 1e-9 * m) and not elastic:
            th, ok = "none", False
            inelastic = (f" (c = {c:.6g} would be unique for elastic impacts; with restitution "
                         f"{np.array2string(e, precision=3)} the resets are no reflections)")
        elif abs(c + 0.5) <= tolerance:
            th, ok = "Theorem 3", True
        elif abs(m - round(m)) <= 1e-9 * m:
            th, ok = "dihedral pi/m", True
        else:
            th, ok = "none", False
        text = (f"two contacts: c = {c:.6g}, wedge angle {math.degrees(theta):.6g} deg, at most {bound} resets "
                f"(Theorem 1, elastic); " + (f"{th}: one outcome" if ok else "no theorem applies: the outcome may "
                                             "depend on the order of the resets" + inelastic))
        return UniquenessReport(C, th, ok, bound, theta, text)
    if np.all(np.abs(off) <= max(tolerance, _ORTHOGONAL)):
        return UniquenessReport(C, "Theorem 2 (pairwise orthogonal)", True, k, None,
                                f"{k} pairwise orthogonal normals: the resets commute, one outcome in {k} resets")
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    n2 = sum(abs(C[i, j]) <= tolerance for i, j in pairs)
    n3 = sum(abs(C[i, j] + 0.5) <= tolerance for i, j in pairs)
    text = (f"{k} contacts: {n2} orthogonal pairs (Theorem 2), {n3} pairs at c = -1/2 (Theorem 3 when elastic), "
            f"{len(pairs) - n2 - n3} other pairs; no theorem covers the whole set: enumerate the outcomes")
    return UniquenessReport(C, "none", False, None, None, text)


ONE_SEPARATING = "one approaching contact, the others separating after its reset"
ONE_FORCED = "one approaching contact, two contacts: every reset forced"


@dataclass
class StrikeCase:
    """Which contacts a momentum strikes and whether that alone makes the outcome unique.

    Attributes:
        approaching: indices of the infeasible contacts (``J_i v < -velocity_tolerance``).
        case: :data:`ONE_SEPARATING`, :data:`ONE_FORCED`, ``"no approaching contact"`` or
            ``"several approaching contacts"`` (then :func:`uniqueness`'s theorems decide).
        unique: True when the case guarantees one minimal sequence (one outcome).
        normal_velocities_after_first: ``J v`` (m/s, (k,)) after the first reset (single striker), else None.
    """

    approaching: tuple[int, ...]
    case: str
    unique: bool
    normal_velocities_after_first: np.ndarray | None = None


def strike_case(M: np.ndarray, J: np.ndarray, v: np.ndarray, restitution: np.ndarray | float = 1.0, *,
                velocity_tolerance: float = 1e-9) -> StrikeCase:
    """The strike's case by its pre-impact momentum: one approaching contact has one outcome.

    Args:
        M: mass matrix (nv, nv); J: contact normal rows (k, nv) (``J v`` > 0 separating, m/s);
        v: pre-impact velocity (nv,); restitution: e per contact (k,) or one e.
        velocity_tolerance: a contact approaches when ``J_i v < -velocity_tolerance`` (m/s), as in
            :func:`impact_outcomes`.
    """
    v = np.asarray(v, dtype=float)
    J = np.atleast_2d(np.asarray(J, dtype=float)).reshape(-1, v.size)
    k = len(J)
    e = np.broadcast_to(np.asarray(restitution, dtype=float), (k,))
    u = J @ v
    hit = tuple(np.flatnonzero(u < -velocity_tolerance).tolist())
    if not hit:
        return StrikeCase(hit, "no approaching contact", True)
    if len(hit) > 1:
        return StrikeCase(hit, "several approaching contacts", False)
    a = hit[0]
    _, A = _metric(np.asarray(M, dtype=float), J)
    u1 = u + A[:, a] * (-(1.0 + e[a]) * u[a] / A[a, a])
    if np.all(np.delete(u1, a) >= -velocity_tolerance):
        return StrikeCase(hit, ONE_SEPARATING, True, u1)
    return StrikeCase(hit, ONE_FORCED if k == 2 else "several approaching contacts", k == 2, u1)


def _key(lam: np.ndarray, scale: float, digits: int = 9) -> bytes:
    return np.round(lam / scale, digits).tobytes()


def impact_outcomes(M: np.ndarray, J: np.ndarray, v: np.ndarray, restitution: np.ndarray | float = 1.0, *,
                    velocity_tolerance: float = 1e-9, max_resets: int = 1000, max_states: int = 200_000,
                    outcome_tolerance: float = 1e-9, where: str = "") -> OutcomeSet:
    """Every outcome of the propagative law: all minimal reset sequences, merged by their momenta.

    Args:
        M: mass matrix (nv, nv) at the impact configuration (kg, kg m, kg m^2).
        J: contact normal rows (k, nv) (``J v`` = normal velocities, m/s, > 0 separating).
        v: pre-impact velocity (nv,).
        restitution: e per contact (k,) or one e for all (e = 1 elastic).
        velocity_tolerance: a contact impacts when ``J_i v < -velocity_tolerance`` (m/s).
        max_resets: the longest sequence allowed before :class:`ImpactError`.
        max_states: the most distinct intermediate momenta explored before :class:`ImpactError`.
        outcome_tolerance: velocities closer than this (relative to |v|, in the metric's norm)
            are one outcome.
        where: context for error messages.
    Returns:
        the :class:`OutcomeSet`; its ``outcomes[i].sequence`` replayed with
        :func:`sim.impact.resolve_impact`'s reset reproduces ``outcomes[i].v``.
    """
    v = np.asarray(v, dtype=float)
    M = np.asarray(M, dtype=float)
    J = np.atleast_2d(np.asarray(J, dtype=float)).reshape(-1, v.size)
    k = len(J)
    e = np.broadcast_to(np.asarray(restitution, dtype=float), (k,)).copy()
    if np.any((e < 0) | (e > 1)):
        raise ControlkitError(f"impact_outcomes: restitution must be in [0, 1], got {e}")
    ke0 = 0.5 * float(v @ M @ v)
    report = uniqueness(M, J, restitution=e) if k else UniquenessReport(np.zeros((0, 0)), "none", True, 0, None,
                                                                          "no contacts")
    if k == 0:
        return OutcomeSet([Outcome(v.copy(), np.zeros(0), (), 1, ke0)], report, 1, 0, ke0)
    W, A = _metric(M, J)
    u0 = J @ v
    scale = max(float(np.sqrt(max(2 * ke0, 0.0))), 1e-300) * max(float(np.sqrt(np.max(np.diag(A)))), 1e-300)
    # frontier: momenta (as impulses lam) reached by sequences of the current length
    frontier: dict[bytes, list] = {_key(np.zeros(k), scale): [np.zeros(k), u0.copy(), (), 1]}
    leaves: list[list] = []
    states, depth, longest = 1, 0, 0
    while frontier:
        nxt: dict[bytes, list] = {}
        for lam, u, seq, count in frontier.values():
            impacting = np.flatnonzero(u < -velocity_tolerance)
            if impacting.size == 0:
                leaves.append([lam, seq, count])
                longest = max(longest, len(seq))
                continue
            if depth >= max_resets:
                raise ImpactError(f"{where}: a minimal reset sequence is longer than max_resets = {max_resets}; "
                                  f"raise max_resets")
            for i in impacting.tolist():
                dl = -(1.0 + e[i]) * u[i] / A[i, i]
                lam2 = lam.copy()
                lam2[i] += dl
                key = _key(lam2, scale)
                if key in nxt:
                    nxt[key][3] += count
                    continue
                nxt[key] = [lam2, u + A[:, i] * dl, seq + (i,), count]
                states += 1
                if states > max_states:
                    raise ImpactError(f"{where}: more than max_states = {max_states} distinct momenta in the "
                                      f"propagative outcome tree of {k} contacts; raise max_states or enumerate "
                                      "a smaller contact set")
        frontier = nxt
        depth += 1
    return _merge(leaves, v, W, M, ke0, report, outcome_tolerance, longest, states)


def _merge(leaves, v, W, M, ke0, report, tol, longest, states) -> OutcomeSet:
    outcomes: list[Outcome] = []
    norm0 = max(math.sqrt(max(2 * ke0, 0.0)), 1e-300)
    for lam, seq, count in sorted(leaves, key=lambda x: (len(x[1]), x[1])):
        v1 = v + W @ lam
        for o in outcomes:
            dv = o.v - v1
            if math.sqrt(max(float(dv @ M @ dv), 0.0)) <= tol * norm0:
                o.count += count
                break
        else:
            outcomes.append(Outcome(v1, lam, tuple(seq), count, 0.5 * float(v1 @ M @ v1)))
    total = sum(o.count for o in outcomes)
    return OutcomeSet(outcomes, report, total, longest, ke0, states)


def sample_outcomes(M: np.ndarray, J: np.ndarray, v: np.ndarray, restitution: np.ndarray | float = 1.0, *,
                    samples: int = 200, seed: int = 0, velocity_tolerance: float = 1e-9, max_resets: int = 100_000,
                    outcome_tolerance: float = 1e-9, where: str = "") -> OutcomeSet:
    """Outcomes of random minimal sequences: at each reset one impacting contact drawn uniformly.

    For contact sets whose outcome tree is too large to enumerate (a 10- or 15-ball rack: the
    distinct intermediate momenta run into millions), a sample of the outcome set. Arguments as
    :func:`impact_outcomes`, plus ``samples`` (sequences drawn) and ``seed``. The result has
    ``exhaustive = False``; ``count`` is how many samples reached each outcome.
    """
    v = np.asarray(v, dtype=float)
    M = np.asarray(M, dtype=float)
    J = np.atleast_2d(np.asarray(J, dtype=float)).reshape(-1, v.size)
    k = len(J)
    e = np.broadcast_to(np.asarray(restitution, dtype=float), (k,)).copy()
    if samples < 1:
        raise ControlkitError(f"sample_outcomes: samples must be >= 1, got {samples}")
    ke0 = 0.5 * float(v @ M @ v)
    report = uniqueness(M, J, restitution=e)
    W, A = _metric(M, J)
    u0 = J @ v
    rng = np.random.default_rng(seed)
    leaves, longest = [], 0
    for _ in range(int(samples)):
        lam, u, seq = np.zeros(k), u0.copy(), []
        while True:
            impacting = np.flatnonzero(u < -velocity_tolerance)
            if impacting.size == 0:
                break
            if len(seq) >= max_resets:
                raise ImpactError(f"{where}: a sampled reset sequence is longer than max_resets = {max_resets}")
            i = int(impacting[rng.integers(impacting.size)])
            dl = -(1.0 + e[i]) * u[i] / A[i, i]
            lam[i] += dl
            u += A[:, i] * dl
            seq.append(i)
        leaves.append([lam, tuple(seq), 1])
        longest = max(longest, len(seq))
    out = _merge(leaves, v, W, M, ke0, report, outcome_tolerance, longest, 0)
    out.exhaustive = False
    return out
