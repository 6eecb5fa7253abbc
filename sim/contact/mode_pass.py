"""Coulomb's law at a contact event, one pass over a contact source's hinges' friction modes
(:func:`friction_pass`, which :meth:`ContactSource._establish` alternates with the support choice),
and the events that record a hinge's changes of region, points and mode (:func:`log_change`)."""
from __future__ import annotations

import numpy as np

from controlkit.friction import FrictionLaw

from . import onset, support_set
from .geometry import _unit
from .hinge import ContactHinge, Mode, _multipliers_of

#: dimensionless: a sliding contact whose sliding velocity turned from its direction by more than
#: ``acos(1 - TURN_TOL)`` (1.4 mrad) follows the new direction (its slide guard re-armed)
TURN_TOL = 1e-6


def friction_pass(src, sim) -> bool:
    """One pass of Coulomb's law over the contact source ``src``'s hinges; True when a mode or a
    sliding direction changed (either changes the friction forces, so the supports are chosen again).

    A sticking pair whose friction reaches ``mu_s f_n`` slides, against its friction force (against
    its slip when it already slips faster than ``stick_velocity``), one per pass: the one furthest
    outside its cone (``|ft| / (mu_s sum fn)``);
    a sliding pair that has stopped sticks (tentatively: the next pass checks the static law)."""
    sol = sim.solve_now()
    changed = False  # (any hinge's mode or sliding direction)
    # (a linked support's loads read all its hinges' forces: taken before any mode changes here)
    loads = {id(h): h.group.loads_of(h, sol) for h in src.hinges.values() if h.group is not None and h.mode == Mode.STICK}
    slipping = []  # (|ft| / (mu_s sum fn), hinge, ft) of the sticking hinges whose static law fails
    for h in src.hinges.values():
        if h.controlled and h.mode == Mode.STICK or h.carrier is not None:
            continue  # its friction stays in the pyramid (force_inequalities), or is its carrier's
        fn, ft = loads[id(h)] if id(h) in loads else h.forces(_multipliers_of(sol, h))
        # the same test as the slip guard (which fires at <= 0), so a handled event never repeats
        if h.mode == Mode.STICK:
            if not FrictionLaw.slips(h.mu_s, fn, ft):
                h.jammed = False  # (its friction is inside its cone: a plain stick, its static margin the guard)
            elif not h.jammed and (t := float(np.linalg.norm(ft))) != 0.0:
                # (with no friction force, no support is left to hold anything: the support pass removes it)
                slipping.append((t / max(h.mu_s * float(np.sum(fn)), 1e-300), h, ft))
        elif h.mode == Mode.SLIDE and h.slipped:
            pass
        elif h.mode == Mode.SLIDE and h.onset and \
                (vt := h.tangential_velocity()) @ h.slide_dir < -0.5 * src._onset_speed:
            # the slip begun at an onset ran against its direction (_slide_guard): friction
            # opposes the slip from here
            h.follow(_unit(vt))
            h.end_onset()
            changed = True
        elif h.mode == Mode.SLIDE and np.linalg.norm(vt := h.tangential_velocity()) > src.stick_velocity:
            if vt @ h.slide_dir < (1 - TURN_TOL) * np.linalg.norm(vt):
                h.follow(_unit(vt))  # turned: follow the sliding direction, re-arm the guard
                changed = True  # (its friction turned with it: the supports' forces too)
        elif h.mode == Mode.SLIDE:
            h.stick()
            h.invalidate()
            changed = True
    if slipping:
        # only the one furthest outside its cone begins to slide: its slide changes the others' forces,
        # and the next pass judges them on those (two boxes stuck to the ground and leaning on each
        # other both slid at once where one sliding held the other, then stopped, stuck, and slid
        # again every 50 us)
        _, h, ft = max(slipping, key=lambda x: x[0])
        _begin_slide(src, sim, h, ft)
        changed = True
    return changed


def _begin_slide(src, sim, h: ContactHinge, ft: np.ndarray) -> None:
    """A sticking hinge whose static friction ``ft`` (2,) (N, tangent basis) left its cone slides:
    against its slip when it already slips faster than ``stick_velocity`` (an impact left it so;
    along the static force its slip's guard would start below zero), else from rest, against ``ft``
    or along the nearest direction its slip follows (:func:`sim.contact.onset.consistent_direction`);
    with none, it jams (sticks on, :meth:`ContactHinge.jam`)."""
    vt = h.tangential_velocity()
    if np.linalg.norm(vt) > src.stick_velocity:
        h.slide(_unit(vt))
    else:
        d0 = FrictionLaw.slip_direction(h.tangent_world(ft))
        d = onset.consistent_direction(sim, h, d0, src._onset_speed)
        src.onsets["jammed" if d is None else "along" if d is d0 else "turned"] += 1
        if d is None:
            h.jam()
            return
        h.slide(d, onset_speed=src._onset_speed)
    h.slipped = True  # it starts sliding now: not "stopped" within this update
    h.invalidate()


def modes_of(src) -> dict:
    """Each hinge's ``(region, support point count, mode)`` by pair: what :func:`choose_modes` logs
    changes against."""
    return {k: (h.region, len(h.support()), h.mode) for k, h in src.hinges.items()}


def choose_modes(src, sim, before: dict) -> None:
    """Support sets and friction modes of the source's hinges at the simulator's state: the support
    choice and :func:`friction_pass` in turn until a pass changes nothing, at most ``6 + 2 x hinges``
    rounds (a pass begins at most one slide; each hinge may slide and turn once); then each hinge
    anchored on its support and its changes logged against ``before`` (:func:`modes_of`; a pair not
    in it is new)."""
    for _ in range(6 + 2 * len(src.hinges)):
        if not src.hinges:
            break
        support_set.choose_supports(src, sim)
        if not src.hinges or not friction_pass(src, sim):
            break
    for k, h in list(src.hinges.items()):
        h.anchor_on_support()
        log_change(sim, h, before.get(k))


def log_change(sim, h: ContactHinge, before) -> None:
    """Log h's changes at an update: ``contact_made`` (``before`` None: it is new), ``contact_changed``
    (region or point count), ``slip`` / ``stick`` (mode); ``before``: its (region, points, mode)."""
    pts = len(h.support())
    data = dict(pair=list(h.names), region=str(h.region), points=pts, mode=str(h.mode))
    if before is None:
        sim.log("contact_made", f"{h.label}: {h.region} contact, {pts} points, {h.mode}", **data)
        h.announced = True
        return
    region, npts, mode = before
    if (region, npts) != (h.region, pts):
        sim.log("contact_changed", f"{h.label}: {region} -> {h.region} ({npts} -> {pts} points)",
                before=str(region), **data)
    if mode != h.mode and mode != Mode.NEW:
        kind = "slip" if h.mode == Mode.SLIDE else "stick" if h.mode == Mode.STICK else "contact_changed"
        sim.log(kind, f"{h.label}: {mode} -> {h.mode}", **data)
