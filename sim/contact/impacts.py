"""Impacts at contact events: the normal rows of every touching pair's candidate points and the
impact they resolve (sticking contacts' tangential rows held while their impulse stays in the
friction cone)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from controlkit.friction import FrictionLaw

from ..impact import ImpactError, ImpactResult, resolve_impact
from . import support_set
from .bodies import _sides
from .geometry import Region, _unit
from .hinge import ContactHinge, Mode
from .rows import _point_rows_of

#: m/s: a point of a hinged pair approaching slower than this is the drift its hinge's rows hold
#: (their velocity feedback), not an impact: the rows of two boxes leaning on each other left
#: points approaching at ~1e-6 m/s, each an impact that set other held points parting
HELD_DRIFT = 1e-5
#: dimensionless: kinetic energy an impact may gain, relative (round-off of the QP's solve)
GAIN_RTOL = 1e-12
#: bisections of the restitution scale of an impact that would gain kinetic energy
GAIN_BISECT = 20


def point_rows(sim, geo):
    """Normal rows (k, nv), normal velocities (k,) and owners of every candidate point."""
    mech = sim.mech
    mech.set_state(sim.q, sim.v, check=False)
    mech.kinematics()
    rows, owners = [], []
    for k, g in geo.items():
        sides = _sides(mech, g.joints, g.normal_b, g.normal_a)
        for i, p in enumerate(g.points):
            rows.append(_point_rows_of(sides, p, None, 0.0)[1])
            owners.append((k, i))
    J = np.vstack(rows) if rows else np.zeros((0, mech.nv))
    return J, J @ sim.v, owners


def lingering(src, sim, geo, d, struck: set[int]) -> list[tuple[int, bool]]:
    """Unhinged pairs of ``geo`` at distance <= 0 (m) whose distance guard, already at or below 0,
    can show no crossing of 0: those whose nearest points do not part faster than
    ``rest_velocity`` (an edge on an edge after their impact) and, of the pairs that ``struck`` in
    the impact, those between two bodies neither of which is a ball (a box bouncing off one corner
    while another swings down, the pair's distance never above 0). A ball parting from its one point
    is left to its distance's own crossing of 0 (its bounces' times). Returns ``[(pair, parting)]``."""
    ks = [int(k) for k in geo if k not in src.hinges and k not in src._grace and d[k] <= 0.0]
    if not ks:
        return []
    out = []
    for c in src.world.contacts(sim.q, sim.v, which=ks):
        ball = geo[c.index].region == Region.POINT  # (a ball's one point: on a box, the ground or a ball)
        parting = c.normal_velocity > src.rest_velocity
        if not parting or (c.index in struck and not ball):
            out.append((c.index, parting))
    return out


def missed_rows(src, sim, geo, J, u, owners):
    """The point rows plus, for an unhinged touching pair whose support points all part while
    coal's nearest points close (an edge striking an edge at an angle, whose patch points a face's
    normal cannot hold: random drop seed 7 went 0.17 mm deep), one row along coal's normal at
    its nearest points, so that the impact sees the approach."""
    extra = []
    for k in geo:
        if k in src.hinges or any(kk == k and ui < -src.impact_velocity for ui, (kk, _) in zip(u.tolist(), owners)):
            continue
        c = src.world.contacts(sim.q, sim.v, which=[int(k)])[0]
        if c.distance <= src.touch_distance and c.normal_velocity < -src.impact_velocity:
            extra.append((k, c))
    if not extra:
        return J, u, owners
    return (np.vstack([J] + [c.jacobian[None] for _, c in extra]),
            np.concatenate([u, [c.normal_velocity for _, c in extra]]), owners + [(k, -1) for k, _ in extra])


def impact(src, sim, geo) -> set[int]:
    """Resolve the impact of the touching pairs ``geo`` (pair -> contact patch) if any of their points
    approaches faster than ``impact_velocity`` (a hinged pair's faster than ``HELD_DRIFT``): the simulator's velocity jumps, the impact is logged,
    and sticking hinges that slid through it slide on (:func:`_slide_on`). Returns the pairs that
    struck (a point approaching faster than that; none without an impact)."""
    if not geo:
        return set()
    J, u, owners = missed_rows(src, sim, geo, *point_rows(sim, geo))
    floor = max(src.impact_velocity, HELD_DRIFT)
    strikes = [ui < -(floor if k in src.hinges else src.impact_velocity) for (k, _), ui in zip(owners, u.tolist())]
    if not any(strikes):
        return set()
    mech = sim.mech
    M, _ = mech.dynamics()
    # bilateral constraints (loop closures, welds) take part in the impact as stiff plastic rows
    cons = [c for c in mech.constraints.values() if not isinstance(c, ContactHinge)]
    e = np.array([src.restitution(*geo[k].geoms) for k, _ in owners])
    fixed = [c.jacobian() for c in cons]
    # so do sticking contacts' tangential rows (impulsive stick: a foot standing on the ground
    # does not slide when the other one strikes), where the impulse stays inside the cone
    sticking = [h for h in src.hinges.values() if h.mode == Mode.STICK and h.stick_row_count()]
    was_sticking = list(sticking)
    names = ", ".join(f"{geo[k].geoms[0]}/{geo[k].geoms[1]}" for k in geo)
    where = f"t = {sim.t:.9g} s, impact of {names}"
    while True:
        stick = [h.rows()[1][len(h.points):][h.stick_mask()] for h in sticking]
        held = np.vstack(fixed + stick) if fixed or stick else None
        try:
            res = resolve_impact(M, J, sim.v, e, src.law, bilateral=held, where=where)
        except ImpactError:
            if not sticking and e.any():
                # restitution asks some rows to part along directions that others' partings
                # forbid (a body wedged between two it strikes, J w >= r has no solution): the
                # impact is plastic, J w >= 0, which zero relative velocity always satisfies
                e = np.zeros(len(e))
                continue
            if not sticking:
                raise
            # no impulses hold every sticking hinge (their rows and the resting points' depend
            # on each other and disagree: boxes landing together, stuck side by side): they
            # slide through the impact, as when their impulse leaves the friction cone
            sticking = []
            continue
        # a bounce leaving slower than the rest speed ends the bounces (their accumulation point
        # is within 2 u / (|a_n| (1 - e))): plastic, so the pair rests in a hinge with no
        # normal velocity left (which would lift it off the ground before the rows pulled it back)
        ua = J @ res.v
        slow = (e > 0.0) & (ua > src.impact_velocity) & (ua <= src.rest_speed(mech)) & (res.impulses[:len(e)] > 0.0)
        if slow.any():
            e = np.where(slow, 0.0, e)
            continue
        slipping = _impulse_outside_cone(res.impulses, owners, len(J), sum(len(f) for f in fixed), sticking, stick)
        if slipping is None:
            break
        sticking.remove(slipping)  # it slides through the impact: only its normal rows take part
    if res.kinetic_energy_after > res.kinetic_energy_before * (1.0 + GAIN_RTOL):
        res, e = _without_gain(M, J, sim.v, e, src.law, held, where, res)
    res = _rest_lifted(src, mech, M, J, e, owners, res, held, geo)
    k0, k1 = res.kinetic_energy_before, res.kinetic_energy_after
    nimp = len(u)
    sim.log("impact", f"{src.law} impact: {names}; kinetic energy {k0:.6g} -> {k1:.6g} J", law=src.law,
            pairs=[list(geo[k].geoms) for k in geo], normal_velocity_before=u.tolist(),
            normal_velocity_after=(J @ res.v).tolist(), impulses=res.impulses[:nimp].tolist(),
            restitution=e.tolist(), kinetic_energy_before=k0, kinetic_energy_after=k1,
            v_before=sim.v.tolist(), v_after=res.v.tolist())
    src.impacts += 1
    sim.v = res.v
    mech.set_state(sim.q, sim.v, check=False)
    _slide_on(src, [h for h in was_sticking if h not in sticking], J @ res.v, owners)
    return {k for (k, _), hit in zip(owners, strikes) if hit}


def _slide_on(src, slid: list[ContactHinge], u1: np.ndarray, owners) -> None:
    """Hinges that slid through an impact (``slid``) and still rest on all their points (normal
    velocities ``u1`` (m/s) of the rows ``owners``) slide on: held as sticking, their slip would be
    stopped by static friction doing work, or impulsively. A hinge tipping off some points is chosen
    again by the support pass."""
    for h in slid:
        if all(u1[i] <= src.rest_velocity for i, (k, _) in enumerate(owners) if k == h.pair):
            vt = h.tangential_velocity()
            if np.linalg.norm(vt) > src.stick_velocity:
                h.slide(_unit(vt))


def _impulse_outside_cone(impulses, owners, npoints, nfixed, sticking, stick) -> "ContactHinge | None":
    """The sticking hinge whose tangential impulse (N s) exceeds mu_s times its normal impulse, if any.

    ``impulses``: per row of ``[points, fixed, stick]`` (the bilateral rows' with either sign)."""
    off = npoints + nfixed
    for h, rows in zip(sticking, stick):
        pt = impulses[off:off + min(len(rows), 2)]
        off += len(rows)
        pn = sum(impulses[i] for i, (k, _) in enumerate(owners) if k == h.pair)
        if FrictionLaw.outside_cone(pt, pn, h.mu_s):
            return h
    return None


def _rest_lifted(src, mech, M: np.ndarray, J: np.ndarray, e: np.ndarray, owners, res: ImpactResult,
                 held: np.ndarray | None, geo) -> ImpactResult:
    """The impact ``res`` with its pairs that struck brought to rest where the impact lifted their other
    points off slower than the rest speed: a box rocking from one bottom edge onto the other lifts the
    first edge, less at each rock; below ``rest_speed`` the box rests on its face.

    Such a point (no impulse of its own, in a pair of passive bodies that took an impulse) would be
    held by the pair's hinge at its parting speed, and the rows' velocity feedback would stop it over
    ~1/kv s while the pair's compressive forces do work: a tall box tipped onto an edge then rocked
    on without end at ~2.8 mm/s, each return a slack deeper (0.3 mm in 3 s). Here the pair's
    velocity is projected plastically onto rest at those points too, with the held rows (``held``:
    bilateral rows (b, nv) or None) kept: an impulse, so kinetic energy can only drop. Pairs moved
    by an actuated joint are left to their controller (a landing sole's lifted toe is the servo's).
    ``M`` (nv, nv), ``J`` (k, nv), ``e`` (k,) and ``owners`` are the impact's (:func:`impact`)."""
    p = res.impulses[:len(e)].tolist()
    struck = {k for (k, _), pk in zip(owners, p) if pk > 0.0}
    struck = {k for k in struck if not support_set.actuated(mech, geo[k].joints)}  # (once per pair)
    if not struck:
        return res
    ua = (J @ res.v).tolist()
    top = src.rest_speed(mech)
    lifted = np.array([k in struck and src.impact_velocity < x <= top and pk <= 0.0
                       for (k, _), x, pk in zip(owners, ua, p)], dtype=bool)
    if not lifted.any():
        return res
    k = len(e)
    out = res
    # the rest solve's impulses can lift further points of those pairs (holding the lower box's
    # ground points lifts the upper box's points on it): they join the held rows, until none is new
    while True:
        rows = J[lifted] if held is None else np.vstack([held, J[lifted]])
        try:  # (all the impact's points as contacts, the lifted ones held: one plastic, simultaneous solve)
            rest = resolve_impact(M, J, res.v, np.zeros(len(e)), "simultaneous", bilateral=rows)
        except ImpactError:
            return out  # (no impulses hold them with the other rows: they part as the last solve left them)
        out = replace(res, v=rest.v, kinetic_energy_after=rest.kinetic_energy_after,
                      normal_velocity_after=rest.normal_velocity_after,
                      impulses=np.concatenate([res.impulses[:k] + rest.impulses[:k], res.impulses[k:]]))
        ua = (J @ rest.v).tolist()
        more = np.array([kk in struck and src.impact_velocity < x <= top for (kk, _), x in zip(owners, ua)], dtype=bool)
        if not (more & ~lifted).any():
            return out
        lifted |= more


def _without_gain(M, J, v, e, law, held, where, res: ImpactResult) -> tuple[ImpactResult, np.ndarray]:
    """The impact ``res`` again with its restitutions ``e`` (k,) scaled by the largest factor in [0, 1]
    (``GAIN_BISECT`` bisections) at which kinetic energy does not grow; returns it and the scaled e.

    Newton's restitution on several coupled contacts at once can ask for more parting than the
    impact's energy pays for (a box struck between the ground and a box above it, e = 0.8: +4 % of
    the kinetic energy); with e = 0 the impact is a projection, which never gains. Elastic impacts
    keep their energy (to the bisection's resolution) where the full restitution would gain."""
    ke0 = res.kinetic_energy_before
    try:
        best, best_e = resolve_impact(M, J, v, 0.0 * e, law, bilateral=held, where=where), 0.0 * e
    except ImpactError:
        return res, e  # (no plastic impact either: no scale would do)
    if best.kinetic_energy_after > ke0 * (1.0 + GAIN_RTOL):
        return res, e
    lo, hi = 0.0, 1.0
    for _ in range(GAIN_BISECT):
        s = 0.5 * (lo + hi)
        try:
            trial = resolve_impact(M, J, v, s * e, law, bilateral=held, where=where)
        except ImpactError:
            hi = s
            continue
        if trial.kinetic_energy_after <= ke0 * (1.0 + GAIN_RTOL):
            best, best_e, lo = trial, s * e, s
        else:
            hi = s
    return best, best_e
