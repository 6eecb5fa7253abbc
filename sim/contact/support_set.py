"""Choosing the support sets at a contact event: which candidate points each hinge holds (the
LCP on the normal forces), which are dependent on them, and which are released."""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from controlkit.dynamics import _held_torques, evaluate
from controlkit.equations import build_problem
from controlkit.errors import ControlkitError, InconsistentEquationsError
from controlkit.solver import require_consistent

from .geometry import Region, SupportPoint
from .hinge import ContactHinge, Mode
from .linked import LinkedSupport
from .support import FORCE_FLOOR, FORCE_RTOL, _affine_residual, _basic_forces, _pivot_lcp, _spread_order, _support_qp

#: dimensionless: a row joins the held rows when the smallest singular value of the normalized rows
#: stays above this fraction of the largest (well clear of the solver's and the critical-form rank tests:
#: two edge crossings 1.2 mm apart on a box resting on a box, ratio 2.6e-5, or an edge crossing nearly
#: in the plane of a face's three held points, 1.5e-4: held together, their rows disagreed by
#: round-off beyond what any force could reconcile)
BASIS_SV_RATIO = 1e-3
#: m: a support point this close to the affine hull of the held ones is dependent on them
PLANE_TOL = 1e-9
#: dimensionless: a support point whose normal row lies this close (of its norm) to the span of the
#: held normal rows is linked to them through other bodies (:mod:`sim.contact.linked`); farther, it
#: is a spare vertex. (Faces 2.5e-7 rad apart, a plank sliding and turning across two blocks, leave
#: rows that far apart.)
LINK_TOL = 1e-5
#: how the support LCP's matrices were built: ``"product"`` (``J M^-1 G^T``), ``"solves"`` (one per column)
RESPONSE_COUNTS = {"product": 0, "solves": 0}


def _tol(x: np.ndarray) -> float:
    """``FORCE_RTOL`` of the largest magnitude in x (N), at least of ``FORCE_FLOOR``."""
    return FORCE_RTOL * max(float(np.abs(x).max(initial=0.0)), FORCE_FLOOR)


def choose_supports(src, sim) -> None:
    """Every hinge's support set at the simulator's state (a contact event): new hinges' modes,
    then the LCP on the candidate points' normal forces, each hinge's basis of held points, and
    releases until every support holds with compressive forces. A controlled hinge keeps every
    candidate (the solve distributes compressive forces). Times itself into ``src.support_solves``."""
    t0 = time.perf_counter()
    mech = sim.mech
    hinges = list(src.hinges.values())
    for h in hinges:
        if h.mode == Mode.NEW:
            h.begin(src.stick_velocity)
    torques_free = _torques_free(sim)
    for h in hinges:
        h.reset_support(torques_free and actuated(mech, h.joints))
    # a controlled contact keeps every candidate: the solve distributes compressive forces
    hinges = [h for h in hinges if not h.controlled]
    lam, held = lcp(src, sim, hinges) if hinges else (np.zeros(0), np.zeros(0, dtype=bool))
    src._unloaded = _unloaded(hinges, lam)
    choose_bases(src, sim, hinges, held)
    for _ in range(len(lam) + 1):
        # the support found holds with compressive forces (the LCP's); a basis made
        # inconsistent by round-off or by a dependency on other hinges gives up its weakest point
        try:
            sol = require_consistent(sim.solve_now())
        except InconsistentEquationsError:
            # no forces at all hold these rows together (nearly dependent rows whose errors
            # disagree, or sliding friction making the contact matrix singular): the first
            # point whose release makes them consistent is released, sliding hinges' first
            if not release_for_consistency(src, sim):
                raise
            continue
        linked = src.linked
        worst = min(((h.support_margin(h.forces(sol.lam[h.name])[0]), h) for h in src.hinges.values()
                     if not h.controlled and (linked is None or h not in linked)), key=lambda z: z[0],
                    default=(np.inf, None))
        h = worst[1]
        if linked is not None:
            t, scale, weak, point = linked.weakest(sim.mech, lambda x, lam=sol.lam: lam[x.name])
            if t < worst[0] and t < -FORCE_RTOL * (scale + FORCE_FLOOR):
                release(src, sim, weak, point)
                continue
        if h is None or worst[0] >= -_tol(sol.lam[h.name]):
            break
        if h.mode == Mode.SLIDE and len(h.points) == 1 and h.pair in src._struck:
            # a pair that just struck, sliding on its last point, whose kinetic friction pulls that
            # point off (Painlevé's inconsistency: its weight brings it back at once, and it struck
            # again every ~0.5 ms, each return watched a tolerance deeper): a tangential impact,
            # the contact sticks (jammed) and the update's settle stops its slip with an impulse
            h.jam()
            src.tangential_impacts += 1
            continue
        release(src, sim, h, h.points[int(np.argmin(h.forces(sol.lam[h.name])[0]))])
    sol = sim.solve_now() if any(h.controlled for h in src.hinges.values()) else None
    for h in src.hinges.values():
        h.arm_spares()
        if h.controlled and h.region != Region.POINT:
            fn = h.forces(sol.lam[h.name])[0]
            # (of the largest force, not magnitude: a controlled hinge's forces are compressive)
            h.region = Region.of_count(int(np.sum(fn > FORCE_RTOL * max(fn.max(initial=0), FORCE_FLOOR))), Region.NONE)
    src.support_solves.append(time.perf_counter() - t0)


def _unloaded(hinges, lam: np.ndarray) -> set[int]:
    """The pairs of the hinges between two moving bodies whose candidate points all carry no
    normal force (N, within round-off of the largest) in the LCP's solution ``lam``."""
    tol, out, off = _tol(lam), set(), 0
    for h in hinges:
        k = len(h.points)
        if 0 not in h.joints and float(np.abs(lam[off:off + k]).max(initial=0.0)) <= tol:
            out.add(h.pair)
        off += k
    return out


def release(src, sim, h: ContactHinge, point: SupportPoint) -> None:
    """Give up one support point of h (it becomes a spare vertex, watched for touching down);
    the free hinges' held and dependent points are chosen again; h is removed if left empty."""
    h.release(point)
    free = [x for x in src.hinges.values() if not x.controlled]
    for x in free:
        x.hold([p for p in x.support() if p is not point])
    if not h.points:
        src._remove(sim, h.pair, "no compressive support")
        free.remove(h)
    choose_bases(src, sim, free, np.ones(sum(len(x.points) for x in free), dtype=bool))


def release_for_consistency(src, sim) -> bool:
    """Release the first support point (sliding hinges' first; never a hinge's last) after
    which the rows are consistent; False (everything as it was) if no single point does it."""
    free = [h for h in src.hinges.values() if not h.controlled]
    saved = [(h, h.support_state()) for h in free]
    for h in sorted(free, key=lambda x: x.mode != Mode.SLIDE):
        for point in list(h.points) if len(h.support()) > 1 else []:
            release(src, sim, h, point)
            try:
                require_consistent(sim.solve_now())
                return True
            except InconsistentEquationsError:
                for x, state in saved:
                    x.restore(state)
    return False


def _torques_free(sim) -> bool:
    """Whether the solve chooses the actuators' torques (inverse dynamic control)."""
    mech = sim.mech
    if mech.ntau == 0:
        return False
    # the statements say it, assembled at this state (a solve could fail: every candidate
    # point is held at this moment, and nearly dependent ones need not be consistent)
    mech.set_state(sim.q, sim.v, check=False)
    p = build_problem(mech, sim.equations, sim.t)
    fixed = set(np.concatenate([cols for _, cols, _ in p.fixed]).tolist()) if p.fixed else set()
    return not set(range(p.layout.tau.start, p.layout.tau.stop)) <= fixed


def actuated(mech, joints: tuple[int, int]) -> bool:
    """Whether an actuated joint moves either of the two joints' bodies (joint ids, 0 the world):
    then a controller holds a hinge between them."""
    act = np.asarray(mech.S).any(axis=0)
    model = mech.model
    for j in joints:
        while j:
            jm = model.joints[j]
            if act[jm.idx_v:jm.idx_v + jm.nv].any():
                return True
            j = model.parents[j]
    return False


def choose_bases(src, sim, hinges, held: np.ndarray) -> None:
    """Each hinge's support (its ``held`` candidates) as held points and dependent points.

    Every support point rests, so all must stay on the surface; but the rows of coplanar
    points are dependent (three corners of a face hold the fourth), and dependent rows would
    leave the forces indeterminate and make nearly dependent ones (a foot and its toe both
    flat) inconsistent. So an independent subset is held, chosen for its spread (a wide
    triangle, not the one that happens to carry the load now), and the rest are dependent
    points: their forces can be taken over from the held ones (:meth:`ContactHinge.support_margin`),
    so the contact changes only when no compressive distribution over the whole support is
    left (the centre of pressure leaves the support polygon), not whenever the load leaves the
    held triangle. A support point whose normal row the held normal rows of other hinges (and other
    constraints) hold is *linked* (a plank's second block: :mod:`sim.contact.linked`); one its own
    held rows span but off their plane, or one only stick rows would hold, is watched as a spare
    vertex instead. Also sets each hinge's ``stick_keep`` and the source's linked support.

    Where every support point of a hinge lies in the plane of another hinge's held points between
    the same two bodies, with the same normal and friction (a plank across two blocks: all eight
    points in one plane), its rows are dependent on that hinge's, and held first, that hinge's stick
    and normal rows would leave it none: it rides on that hinge (:meth:`ContactHinge.ride`), its points
    dependent on the other's held ones, so the plank rests on both blocks and its centre of pressure
    may lie anywhere in the two contacts' common support polygon.
    """
    basis = _RowBasis()
    mech = sim.mech
    for c in mech.constraints.values():
        if not isinstance(c, ContactHinge):
            for row in c.jacobian():
                basis.add(row)
    full = [h.rows()[1] for h in hinges]
    offsets = np.cumsum([0] + [len(h.points) for h in hinges])
    # a pair of moving bodies whose contact carries no load (boxes side by side on the ground) comes
    # last: its rows are held only where the others leave them free (held first, its friction rows
    # took the place of the ground's corners and carried weight between the boxes)
    unloaded = getattr(src, "_unloaded", set())
    riders = _riders(hinges, held, offsets)
    for last in (False, True):
        _add_group(basis, hinges, full, held, offsets,
                   [j for j, h in enumerate(hinges) if (h.pair in unloaded) == last and j not in riders])
    for j, i in riders.items():
        if not _ride(hinges[j], hinges[i], held[offsets[j]:offsets[j + 1]]):
            _add_group(basis, hinges, full, held, offsets, [j])  # its carrier's basis does not span its points
    for h in hinges:
        if not h.points and h.carrier is None and not h.linked:
            src._remove(sim, h.pair, "no compressive support")
        else:
            h.update_region()
    linked = src.linked = LinkedSupport.of(mech, [h for h in hinges if h.pair in src.hinges])
    for h in hinges:
        h.join(linked if linked is not None and h in linked else None)


class _RowBasis:
    """The rows held so far (unit rows, kept independent): which to hold next; and of the normal rows
    and other constraints' rows among them, which other support points they hold (:meth:`holds`)."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self._normal: list[np.ndarray] = []  # the held rows that are not stick rows, as given
        self._fit = None  # (pseudo-inverse, rows) of the normal rows, while they are the same

    def add(self, row: np.ndarray, stick: bool = False) -> bool:
        """Hold ``row`` if it keeps the held rows well conditioned (``BASIS_SV_RATIO``); ``stick``:
        whether it is a stick row."""
        nr = np.linalg.norm(row)
        if nr == 0.0:
            return False
        trial = np.array(self.rows + [row / nr])
        sv = np.linalg.svd(trial, compute_uv=False)
        if len(sv) < len(trial) or sv[-1] <= BASIS_SV_RATIO * sv[0]:
            return False
        self.rows.append(row / nr)
        if not stick:
            self._normal.append(row)
            self._fit = None
        return True

    def holds(self, row: np.ndarray) -> bool:
        """Whether a support point whose normal row is ``row`` is held by the held normal rows and
        constraints: its row a combination of theirs within ``LINK_TOL`` of its norm. Stick rows do not
        count: a point they held would carry its load by friction. (Its gap is not asked, as a dependent
        point's in its own plane is not: every support point rests within the touch distance.)"""
        nr = np.linalg.norm(row)
        if nr == 0.0 or not self._normal:
            return False
        if self._fit is None:
            N = np.array(self._normal)
            self._fit = (np.linalg.pinv(N.T), N)
        P, N = self._fit
        return float(np.linalg.norm(row - P.dot(row).dot(N))) <= LINK_TOL * nr


def _spans(rows: np.ndarray, row: np.ndarray) -> bool:
    """Whether ``row`` lies within ``LINK_TOL`` (of its norm) of the span of ``rows`` (k, nv)."""
    if not len(rows):
        return False
    c = np.linalg.lstsq(rows.T, row, rcond=None)[0]
    return float(np.linalg.norm(row - c.dot(rows))) <= LINK_TOL * float(np.linalg.norm(row))


def _riders(hinges, held: np.ndarray, offsets) -> dict[int, int]:
    """Which hinge rides on which (indices into ``hinges``): hinge j on the first earlier hinge i, itself
    no rider, between the same two bodies with the same friction and surface normal, that has every
    held candidate point of j in the affine hull of its own held candidates (within ``PLANE_TOL``)."""
    out: dict[int, int] = {}
    X = [h.positions([p for p, m in zip(h.points, held[offsets[j]:offsets[j + 1]]) if m])
         for j, h in enumerate(hinges)]
    for j, h in enumerate(hinges):
        for i in range(j):
            if i not in out and len(X[j]) and len(X[i]) >= 3 and hinges[i].shares_plane(h) \
                    and float(_affine_residual(X[i], X[j]).max()) <= PLANE_TOL:
                out[j] = i
                break
    return out


def _ride(h: ContactHinge, carrier: ContactHinge, held: np.ndarray) -> bool:
    """Let h ride on ``carrier`` (its ``held`` candidates dependent on the carrier's held points),
    if the carrier's basis spans them; False (h as it was) if it does not."""
    support = [i for i in range(len(h.points)) if held[i]]
    if not carrier.points or float(_affine_residual(carrier.positions(carrier.points), h.positions(
            [h.points[i] for i in support])).max()) > PLANE_TOL:
        return False
    h.ride(carrier, support, [i for i in range(len(h.points)) if not held[i]])
    return True


def _add_group(basis: _RowBasis, hinges, full, held, offsets, group) -> None:
    """Choose the held, dependent and linked points, then the held stick rows, of the hinges ``group``
    (indices into ``hinges``) into ``basis`` (which keeps a row independent of those kept).

    Normal rows come first: a stick row held in their place would carry with friction forces what a
    support point's normal force should (a plank's stick rows on one of two blocks, at their lever
    arm above the block's centre, taking the place of the ground's corners under that block)."""
    add = basis.add
    counts = {}
    for j in group:
        h, J = hinges[j], full[j]
        k = counts[j] = len(h.points)
        support = [i for i in range(k) if held[offsets[j] + i]]
        sides = h.sides()
        X = h.positions(h.points, sides)
        own = [i for i in _spread_order(X, support) if add(J[i])]
        rest = [i for i in support if i not in own]
        plane = _affine_residual(X[own], X[rest]) if rest else np.zeros(0)
        dependent = [i for i, r in zip(rest, plane) if r <= PLANE_TOL]
        # a point dependent through other bodies' rows (a plank's second block): linked; one that its
        # own held rows span but that lies off their plane stays a spare vertex (watched)
        linked = [i for i in rest if i not in dependent and basis.holds(J[i]) and not _spans(J[own], J[i])]
        unsupported = [i for i in range(k) if i not in own and i not in dependent and i not in linked]
        h.set_basis(own, dependent, unsupported, linked)
    for j in group:
        h, J, k = hinges[j], full[j], counts[j]
        h.keep_stick_rows([add(J[k + i], stick=True) for i in range(h.stick_row_count())])


def _equivalent_compressive(mech, hinges, lam: np.ndarray) -> np.ndarray | None:
    """Compressive normal forces with the same generalized force as ``lam`` (all candidate
    points held, every sticking row and constraint free), or None when there are none."""
    free = [c.jacobian() for c in mech.constraints.values() if not isinstance(c, ContactHinge)]
    rows = []
    for h in hinges:
        J = h.rows()[1]
        rows.append(J[: len(h.points)])
        free.append(J[len(h.points):])
    others = np.vstack(free) if free else np.zeros((0, mech.nv))
    return _basic_forces(np.vstack(rows), others, lam)


def lcp(src, sim, hinges: Sequence[ContactHinge]) -> tuple[np.ndarray, np.ndarray]:
    """Normal forces (N) of every candidate point and which points stay (see :mod:`sim.contact`).

    First the candidate set itself: when holding every candidate point bilaterally needs
    no tensile force, that is the LCP's solution. Otherwise the mixed LCP (normal forces
    >= 0 with complementarity, sticking rows' forces free) in contact space, its matrix from
    full solves with the hinges' forces applied as external forces.
    """
    mech = sim.mech
    try:
        sol = require_consistent(sim.solve_now())
        lam = np.concatenate([h.forces(sol.lam[h.name])[0] for h in hinges])
        held = np.ones(len(lam), dtype=bool)  # every candidate held: none separates
        if lam.min(initial=0.0) >= -_tol(lam):
            return np.maximum(lam, 0.0), held
        # indeterminate forces (redundant points) are the least-squares ones, which may pull
        # where a compressive set with the same generalized force (the same motion) exists
        basic = _equivalent_compressive(mech, hinges, lam)
        if basic is not None:
            return basic, held
    except ControlkitError:
        pass  # e.g. candidates that cannot all hold at once
    q, v, t = sim.q, sim.v, sim.t
    f0 = np.zeros(mech.nv)
    if sim.external_force is not None:
        mech.set_state(q, v, check=False)
        f0 = np.asarray(sim.external_force(t, mech), dtype=float)
    mech.set_state(q, v, check=False)
    blocks = [h.rows() for h in hinges]
    phi, J, drift, G = (np.concatenate([b[i] for b in blocks]) for i in range(4))
    normal = np.concatenate([np.arange(len(b[0])) < len(h.points) for b, h in zip(blocks, hinges)])
    for h in hinges:
        h.detach()
    try:
        stab = drift + sim.equations.kv * (J @ v) + sim.equations.kp * phi
        a0 = evaluate(mech, sim.equations, t, q, v, f0).a
        s0 = J @ a0 + stab
        A = contact_response(sim, J, G, f0, stab, s0)
    finally:
        for h in hinges:
            h.attach()
        mech.set_state(q, v, check=False)
    lam, solved = _pivot_lcp(A, s0, normal, _support_qp(A, s0, normal, t))
    if not solved:  # (the QP's forces stand: counted, see ContactSource.unsolved_supports)
        src.unsolved_supports += 1
    sep = s0 + A @ lam
    held = (lam > _tol(lam)) | (sep <= _tol(s0))  # in the support: pressed, or resting with zero force
    return lam[normal], held[normal]


def contact_response(sim, J: np.ndarray, G: np.ndarray, f0: np.ndarray, stab: np.ndarray, s0: np.ndarray) -> np.ndarray:
    """The support LCP's matrix A (k, k) at the simulator's state, the hinges detached: column i is
    the change of the rows' accelerations ``J a`` (m/s^2 per N) under row i's unit force ``G[i]``
    applied as an external force. ``s0 = J a(f0) + stab`` (k,) the rows at the external force f0 (nv,).

    Under held torques with no other row held (passive bodies, forward dynamic control) the
    accelerations are ``M^-1 (tau + f - h)``, so ``A = J M^-1 G^T``: one product with Pinocchio's
    ``M^-1``. Otherwise one full solve of the statements per column (their own response: inverse
    dynamics, costs, loop closures), :func:`contact_response_by_solves`."""
    mech = sim.mech
    if _held_torques(mech, sim.equations) is not None and all(c.size == 0 for c in mech.constraints.values()):
        RESPONSE_COUNTS["product"] += 1
        return J.dot(mech.mass_inverse().dot(G.T))
    RESPONSE_COUNTS["solves"] += 1
    return contact_response_by_solves(sim, J, G, f0, stab, s0)


def contact_response_by_solves(sim, J: np.ndarray, G: np.ndarray, f0: np.ndarray, stab: np.ndarray,
                               s0: np.ndarray) -> np.ndarray:
    """:func:`contact_response` by one full solve per column (any statements and constraints)."""
    mech, t, q, v = sim.mech, sim.t, sim.q, sim.v
    cols = [J @ evaluate(mech, sim.equations, t, q, v, f0 + G[i]).a + stab - s0 for i in range(len(J))]
    return np.array(cols).T
