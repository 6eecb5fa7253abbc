"""The contact event source: guards of every watched pair, the handler that re-establishes the
contacts (impacts, support sets, stick/slip), reporting; and ``enable_contacts``."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from controlkit.errors import ControlkitError, InconsistentEquationsError, ModelError
from controlkit.friction import FrictionLaw
from controlkit.solver import require_consistent

from ..collision import CollisionWorld, PairFilter
from ..events import VELOCITY, EventSource
from ..impact import LAWS, RestitutionTable
from . import impacts, mode_pass, onset, settle
from .geometry import POINT_TOL, SupportPoint, _Geometry, _margin, _PairContact, _same_key
from .hinge import _SLIDE, _STICK, ContactHinge, _multipliers_of
from .linked import LinkedSupport
from .query import ContactForceProbe, ContactState, hinge_states, pair_forces
from .row_batch import RowBatch
from .rows import _edge_geometry
from .support import FORCE_FLOOR, FORCE_RTOL

#: a slide's onset (ContactSource._slide_guard): a slip that runs against the slide direction faster
#: than this multiple of ``stick_velocity`` is an event, where friction turns to oppose it (at half
#: stick_velocity the update stuck such pairs again, and a leaning brick stack slipped and stuck
#: at every few microseconds)
ONSET_SPEED_RATIO = 2.0
#: m: how far a crossing support point may lag its edges' crossing before it is an event
CROSSING_SLACK = 1e-3
#: m: how far below its depth at the impact a pair that struck and parts may go before its return
#: is an event (coal's distances of a resting box pair vary by ~1e-12 m)
PARTING_SLACK = 1e-9
#: m: how far a held point may go below where its row holds it before that is an event: the rows
#: hold their points to the integration's drift (~10 um under semi-implicit Euler at 1 ms); a point
#: driven through by a near-singular sliding support (a ball pressing a box that slides on a corner:
#: 65 kN, the corner 1.1 mm deep within one 0.5 ms RK4 step) is an impact at this depth instead
HELD_SLACK = 5e-5
#: s: the longest time tolerance of event isolation enable_contacts takes from the simulator
MAX_TOLERANCE = 1e-9


class ContactSource(EventSource):
    """Impacts, contact hinges and stick/slip friction for the pairs of a collision world.

    Args:
        world: the collision world.
        friction: a :class:`FrictionLaw` (``FrictionTable``), ``(mu_s, mu_k)``, one mu, 0 (frictionless) or a dict.
        restitution: impact restitution: one e, ``{(mat_a, mat_b): e, "default": e}`` or a table.
        law: impact law: ``"simultaneous"`` (default), ``"propagative"`` or ``"plastic"``.
        tolerance: time tolerance (s) of event isolation.
        touch_distance: pairs closer than this (m) are touching.
        penetration_tolerance: slack (m) of the watched vertices and face margins.
        rest_velocity: a contact whose normal velocity after an impact is below this (m/s) rests.
        stick_velocity: a new contact whose sliding speed is below this (m/s) sticks.
    """

    kind = VELOCITY

    def __init__(self, world: CollisionWorld, friction=None, restitution=0.0, *, law: str = "simultaneous",
                 tolerance: float = 1e-9, touch_distance: float = 1e-5, penetration_tolerance: float = 1e-6,
                 rest_velocity: float = 1e-3, stick_velocity: float = 1e-4, impact_velocity: float = 1e-7,
                 name: str = "contacts"):
        if law not in LAWS:
            raise ControlkitError(f"enable_contacts: law must be one of {', '.join(LAWS)}; got {law!r}")
        for what, val in (("tolerance", tolerance), ("touch_distance", touch_distance),
                          ("penetration_tolerance", penetration_tolerance), ("rest_velocity", rest_velocity),
                          ("stick_velocity", stick_velocity)):
            if not val > 0:
                raise ControlkitError(f"enable_contacts: {what} must be positive, got {val}")
        mats = world.mech.materials
        self.world = world
        self.friction = FrictionLaw.make(friction, mats)
        self.restitution = RestitutionTable.make(restitution, mats)
        self.law = law
        self.tolerance = float(tolerance)
        self.touch_distance = float(touch_distance)
        self.slack = float(penetration_tolerance)
        self.rest_velocity = float(rest_velocity)
        self.stick_velocity = float(stick_velocity)
        self.impact_velocity = float(impact_velocity)
        self.crossing_slack = CROSSING_SLACK
        self.name = name
        self.geometry = _Geometry(world, self.touch_distance)
        self.hinges: dict[int, ContactHinge] = {}
        # pairs whose contact broke while they still touched -> their distance then (m, <= 0)
        self._grace: dict[int, float] = {}
        # of those, pairs that struck and part while another of their features may come down:
        # watched from their depth then with PARTING_SLACK, not the slack (a contact made one
        # slack deep is pushed out by the rows against its weight)
        self._parting: set[int] = set()
        # unhinged pairs left overlapping by an update (parting after their impact), until a step
        # ends with them apart: watched by where they stop parting too (see _overlapping)
        self._overlap: set[int] = set()
        self.support_solves: list[float] = []  # wall time (s) of each support-set solve
        # support solves whose LCP the pivoting did not solve (it cycled; the QP's forces were taken):
        # sliding friction can make the contact matrix unsymmetric, its symmetric part indefinite
        self.unsolved_supports = 0
        self._stuck: list[ContactHinge] = []  # sticking hinges that still slipped at the last update
        self.impacts = 0
        self._struck: set[int] = set()  # during an update: the pairs that struck in its impact
        # sliding contacts of a pair that just struck, whose last point its friction pulled off,
        # stuck by a tangential impact instead (support_set.choose_supports)
        self.tangential_impacts = 0
        # slides begun from rest by how their direction was found (sim.contact.onset): along the
        # static force, turned to the nearest consistent direction, or none consistent (jammed)
        self.onsets = dict(along=0, turned=0, jammed=0)
        self._watch: dict[int, tuple] = {}  # pair -> (key, the hinge's watched points as arrays): _watched
        self.row_batch = RowBatch(self.hinges)  # the compiled rows of all its hinges in one call per state
        # the hinges with support points linked through other bodies and their one support margin
        # (sim.contact.linked), or None; chosen with the supports
        self.linked: LinkedSupport | None = None

    # --------------------------------------------------------------- guards
    def guards(self, sim, t, q, v):
        self._layout = None
        self._step = sim.dt  # s: the longest step (how far a crossing point may lag)
        d = self.world.distances(q)
        for k, d0 in self._grace.items():
            # broken while touching: a later return is a crossing past the slack, counted from
            # where the pair was (a drifted contact may break slightly overlapping)
            d[k] += (PARTING_SLACK if k in self._parting else self.slack) - d0
        self._overlapping(q, v, d)
        if not self.hinges:
            return d
        mech = sim.mech
        # the solution must be this state's under the simulator's statements: a program's guard
        # may have set the state (to read a point) without solving
        try:
            if not (mech.state_is(q, v) and mech.solved(sim.equations)):
                sim.accelerations_at(t, q, v)
            require_consistent(mech.solution)  # (least squares along nearly dependent rows: as inconsistent)
        except InconsistentEquationsError:
            # the supports' rows can no longer hold together (nearly dependent, drifted apart):
            # their force guards read as crossed, so the first such instant is an event and the
            # supports are chosen again there
            self._net(d)
            return np.concatenate([d] + [np.full(len(self._hinge_guards(h, np.zeros(h.size), None)), -1.0)
                                         for h in self.hinges.values()] + [np.full(int(self.linked is not None), -1.0)])
        self._net(d)
        sol = mech.solution
        out, starts, at = [d], [], len(d)
        for h in self.hinges.values():
            starts.append(at)
            out.append(self._hinge_guards(h, _multipliers_of(sol, h), sol))
            at += len(out[-1])
        if self.linked is not None:
            out.append(np.array([self._linked_guard(mech, sol)]))
            at += 1
        self._layout = (self._layout_key(q), starts, at, sol, self._onsets_ended)
        return np.concatenate(out)

    def _linked_guard(self, mech, sol) -> float:
        """The linked support's margin (N), which fires at <= 0 (as a hinge's support margin)."""
        t, scale = self.linked.margin(mech, lambda h: _multipliers_of(sol, h))
        return t + FORCE_RTOL * (scale + FORCE_FLOOR)

    _layout = None
    _step = 0.0
    _onsets_ended = 0  # how many slides' onsets ended (after_step): the slide guards' one input besides state and forces

    def _overlapping(self, q, v, d: np.ndarray) -> None:
        """The distance guards (in place) of the pairs an update left overlapping, unhinged: while
        at or below 0, ``max(d, u - impact_velocity)`` (m and m/s: only the sign matters), u the
        pair's normal velocity.

        Such a pair (parting after its impact, a few nanometres deep) is watched by its distance
        crossing 0, which needs a step that ends with the pair apart; a pair pulled back faster
        than the step bound foresees (a box's edge swinging onto a ball: its normal turns with
        the box) returns inside one step, and no crossing shows (random drop seed 20: a ball
        49 mm inside a box). With this guard it fires where it stops parting while still
        overlapping. Once a step ends with it apart its guard is its distance again
        (:meth:`after_step`): a pair that comes from apart must fire where it arrives, even if it
        would part again within the step (two corners grazing)."""
        which = [k for k in self._overlap if d[k] <= 0.0]
        if which:
            for c in self.world.contacts(q, v, which=which):
                d[c.index] = max(d[c.index], c.normal_velocity - self.impact_velocity)

    def _net(self, d: np.ndarray) -> None:
        """The hinged pairs' distance guards (in place; the mechanism at the guards' state).

        A hinged pair is watched through its hinge, and its distance as a safety net: an edge
        crossing into a face (a block sliding over the end of the ground) has no vertex to watch,
        and shows only as the pair's penetration growing past the tolerance. Only the penetration
        its support points do not show counts: theirs is their own rows' error, which the
        stabilization corrects (semi-implicit Euler's drift: a sticking sole under a swinging leg
        sinks ~50 um/s at 1 ms steps until Baumgarte's offset, ~10 um, holds it)."""
        for k, h in self.hinges.items():
            d[k] += self.slack - h.depth0 - (h.shown_depth() - h.shown0)

    def _layout_key(self, q):
        """What the state-only guards depend on besides the statements."""
        hinges = []  # (twice per step: a loop, no generator)
        for k, h in self.hinges.items():
            hinges.append((k, id(h), h.version, h.mode, h.jammed, h.controlled, h.depth0, h.shown0))
        return (q.tobytes(), tuple(self._grace.items()), tuple(sorted(self._parting)), tuple(sorted(self._overlap)),
                tuple(hinges))

    def guards_after_control(self, sim, t, q, v, before):
        """Only the force guards again (the support margins, stick and slide): distances and
        vertex gaps depend on the state alone, which a control phase does not change; ``before``
        itself when the forces are still the solve they were read from (no statement changed)
        and no slide's onset ended since."""
        lay, mech = self._layout, sim.mech
        if lay is None or len(before) != lay[2] or lay[0] != self._layout_key(q) \
                or not (mech.state_is(q, v) and mech.solved(sim.equations)):
            return self.guards(sim, t, q, v)
        sol = mech.solution
        if sol is lay[3] and self._onsets_ended == lay[4]:
            return before
        out = before.copy()
        for h, start in zip(self.hinges.values(), lay[1]):
            f = self._force_guards(h, _multipliers_of(sol, h), sol)
            out[start:start + len(f)] = f
        if self.linked is not None:
            out[-1] = self._linked_guard(mech, sol)
        return out

    def _hinge_guards(self, h: ContactHinge, lam: np.ndarray, sol) -> np.ndarray:
        return np.concatenate([np.asarray(self._force_guards(h, lam, sol), dtype=float), *self._geometry_guards(h)])

    def _force_guards(self, h: ContactHinge, lam: np.ndarray, sol) -> list[float]:
        """The guards that depend on the forces (the statements): support margin, stick or slide
        (none for a controlled hinge: the solve keeps its forces compressive and in the pyramid; none
        for a hinge that rides on a carrier: the carrier's guards cover its points and friction; a hinge
        of a linked support has no margin of its own (the support's is one guard, ``_linked_guard``) and
        its static law reads the support's spread, :meth:`LinkedSupport.loads_of`)."""
        if h.controlled or h.carrier is not None:
            return []
        if h.group is not None:  # (its support margin is its linked support's; its friction on the spread)
            if h.mode == _STICK:
                fn, ft = h.group.loads_of(h, sol)
                return [onset.stick_guard(h, FrictionLaw.static_margin(h.mu_s, fn.tolist(), ft))]
            return [self._slide_guard(h)] if h.mode == _SLIDE else []
        if len(lam) == 3 and len(h.points) == 1 and h.stick_row_count() == 2 and not h.dependent:
            # one point sticking with both stick rows (a resting ball): the lines below on floats
            # (0.0 + x: sum()'s own first addition, so a zero keeps sum()'s sign)
            f0, t1, t2 = lam.tolist()
            return [f0 + FORCE_RTOL * ((0.0 + abs(f0)) + FORCE_FLOOR), onset.stick_guard(h, h.mu_s * (0.0 + f0) - math.hypot(t1, t2))]
        fn, ft = h.forces(lam)
        f = fn.tolist()  # (a few numbers: Python's floats beat numpy's per-call cost)
        # the support holds while some compressive distribution over all its points gives these
        # forces; a margin that is zero in theory (a point resting with no load) fires only on a
        # tensile force beyond round-off, not on noise around zero
        g = [h.support_margin(fn) + FORCE_RTOL * (sum(map(abs, f)) + FORCE_FLOOR)]
        if h.mode == _STICK:
            g.append(onset.stick_guard(h, FrictionLaw.static_margin(h.mu_s, f, ft)))
        elif h.mode == _SLIDE:
            g.append(self._slide_guard(h))
        return g

    def _slide_guard(self, h: ContactHinge) -> float:
        """A sliding hinge's guard (m/s): its slip along ``slide_dir``, which crosses 0 where it stops.

        At a slide's onset the slip is 0 and friction keeps ``slide_dir`` until the slip runs along
        it (:meth:`ContactHinge._sliding_direction`); a slip that develops the other way (a
        direction decided on an edge, the support then a face) would be driven by that friction
        with its guard already below 0 (random drop 22: a box pushed across the ground, +2 % of the
        scene's energy). So until the slip has run along ``slide_dir`` at ``ONSET_SPEED_RATIO``
        times ``stick_velocity`` (:meth:`after_step`), the guard is offset by that speed: a slip
        the other way fires there, and the update turns the slide to follow it (:func:`sim.contact.mode_pass.friction_pass`)."""
        s = h.tangential_velocity().dot(h.slide_dir)
        return s + self._onset_speed if h.onset else s

    @property
    def _onset_speed(self) -> float:
        """m/s: the slip along (or against) ``slide_dir`` that ends a slide's onset (see :meth:`_slide_guard`)."""
        return ONSET_SPEED_RATIO * self.stick_velocity

    def _geometry_guards(self, h: ContactHinge) -> list[np.ndarray]:
        """Spare vertices touching down (inside the other's face) and support points leaving a face
        (arrays, in guard order)."""
        g: list[np.ndarray] = []
        watched, edges = self._watched(h)
        sides = None  # (read only when something is watched: a ball's held point on no face is not)
        for owner, la, lo, offset, pts, slack, crossings in watched:
            face = h.faces[owner]
            if not len(la) and (face is None or not len(pts)):
                continue
            if sides is None:
                sides = h.sides()
            P, Q, k = sides[owner]
            if len(la):
                x = P.point(la)
                # (over the fixed world, lo's points are world points already)
                gap = (x - (lo if Q.world else Q.point(lo))).dot(k) - offset
                # a vertex matters only over the face: max(gap, -margin) <= 0 means below and inside
                g.append((gap if face is None else np.maximum(gap, -_margin(face, Q, x))) + self.slack)
            if face is not None and len(pts):
                # a crossing point follows its edges (re-placed after each step); its guard only
                # catches a crossing that ends (the edges no longer cross near it). Held fixed in
                # its owner during a step it lags by up to a step's relative motion, which its
                # slack allows (a block sliding at 3 m/s over the ground's end at 2 ms steps:
                # 6 mm, else a zero-energy event every step)
                x = P.point(pts)
                margin = _margin(face, Q, x) + slack
                if crossings:
                    crossing = slack > self.slack
                    dv = P.velocity(x[crossing]) - Q.velocity(x[crossing])
                    dv -= np.outer(dv.dot(k), k)
                    margin[crossing] += self._step * np.sqrt(np.einsum("ij,ij->i", dv, dv))
                g.append(margin)
        if edges:  # an edge crossing: it ends where it leaves either edge
            sides = sides or h.sides()
            g.append(np.array([_edge_geometry(*sides[0][:2], p.edges)[-1] + self.slack for p in edges]))
        if h.points and not h.detached:  # a held point driven through its surface (HELD_SLACK)
            g.append(np.array([min(h.rows()[0][:len(h.points)].tolist()) + HELD_SLACK]))
        return g

    def _watched(self, h: ContactHinge):
        """Per owner: the spare vertices (local points of both bodies, offsets) and the support
        points with their slacks, as arrays, and whether any of those is a crossing point; and the
        edge-crossing support points (cached while the hinge's points are the same)."""
        key = (h.version, (h,), tuple(h.spare), tuple(h.support()))
        cached = self._watch.get(h.pair)
        if cached is None or not _same_key(cached[0], key):
            out = []
            for owner in (0, 1):
                spare = [s for s in h.spare if s.owner == owner]
                pts = [p for p in h.support() if p.owner == owner and p.edges is None]
                if not spare and not pts:
                    continue
                out.append((owner, np.array([s.local_a for s in spare]).reshape(-1, 3),
                            np.array([s.local_o for s in spare]).reshape(-1, 3), np.array([s.offset for s in spare]),
                            np.array([p.local_a for p in pts]).reshape(-1, 3),
                            np.array([self.crossing_slack if p.crossing else self.slack for p in pts]),
                            any(p.crossing for p in pts)))
            cached = self._watch[h.pair] = (key, (out, [p for p in h.support() if p.edges is not None]))
        return cached[1]

    def max_step(self, sim, t, q, v):
        # (a pair watched past the slack needs no step bound for its crossing: one resting
        # unhinged, edge on edge, parting at nm/s under gravity, bounded the steps to nanoseconds)
        return self.world.time_to_contact(q, v, exclude=set(self.hinges) | set(self._grace), a=sim.accelerations,
                                          horizon=sim.step_horizon)

    def after_step(self, sim) -> None:
        """The control-phase hook: crossing points follow their edges; and after a handler (a
        velocity jump: a lock, another source's impact), a touching pair without a hinge that now
        approaches is an impact at that instant (its distance guard, already <= 0, shows none)."""
        handled = sim.restarting
        self.follow_crossings(sim)
        self._onsets_run(sim)
        if self._overlap:
            d = self.world.distances(sim.q)
            self._overlap = {k for k in self._overlap if d[k] <= 0.0}
        if not handled:
            return
        d = self.world.distances(sim.q)
        near = [k for k in np.flatnonzero(d <= self.touch_distance).tolist() if k not in self.hinges]
        if near and min(c.normal_velocity for c in self.world.contacts(sim.q, sim.v, which=near)) < -self.impact_velocity:
            self.update(sim)

    def _onsets_run(self, sim) -> None:
        """After a step: a slide begun at an onset whose slip now runs along its direction faster
        than the onset speed is watched by its plain slide guard from here (see :meth:`_slide_guard`)."""
        for h in self.hinges.values():
            if h.onset:
                if not sim.mech.state_is(sim.q, sim.v):
                    sim.mech.set_state(sim.q, sim.v, check=False)
                if h.tangential_velocity().dot(h.slide_dir) > self._onset_speed:
                    h.end_onset()
                    sim.mech.forget_solution()  # (its friction's direction changed: the step's end solve is stale)
                    self._onsets_ended += 1  # (its slide guard changes: guards_after_control reads it)

    def follow_crossings(self, sim) -> None:
        """After a step: move each crossing support point to where its two edges now cross.

        Such a point is a material point of neither body: held fixed in one, it would leave that
        body's face at once (an event every micrometre of sliding). Re-placed after every step,
        it lags its true place by at most one step's motion. An edge crossing an edge at an angle
        has its rows from the edges themselves; only its recorded closest points move here."""
        placed = moved = False
        for k, h in self.hinges.items():
            support = h.support()
            old, edges = [], []  # (every step: loops, no comprehension objects)
            for i, p in enumerate(support):
                if p.edges is not None:
                    edges.append(i)
                elif p.crossing:
                    old.append(i)
            if not old and not edges:
                continue
            if not placed:
                sim.mech.set_state(sim.q, sim.v, check=False)
                self.world.place(sim.q, True)
                placed = True
            if h.mode == _STICK and not h.controlled and h.still(sim.v):
                continue  # (its bodies do not move relative to each other: its crossings stay where they are)
            sides = h.sides()
            changed = False
            for i in edges:
                p = support[i]
                A, B = sides[0][0], sides[0][1]
                xa, xb = _edge_geometry(A, B, p.edges)[:2]
                la = A.R.T @ (xa - A.t)
                if np.linalg.norm(la - p.local_a) > POINT_TOL:
                    support[i] = SupportPoint(la, B.R.T @ (xb - B.t), crossing=True, edges=p.edges)
                    changed = True
            g = self.geometry.contact(k, full=False) if old else None
            new = [p for p in g.points if p.crossing and p.edges is None] \
                if g is not None and g.joints == h.joints else []
            if not new:
                old = []  # the crossing ended: its margin guard fires
            where = np.array([sides[p.owner][0].point(p.local_a) for p in new]).reshape(-1, 3)
            for i in old:
                p = support[i]
                x = sides[p.owner][0].point(p.local_a)
                j = int(np.argmin(np.linalg.norm(where - x, axis=1)))
                if POINT_TOL < np.linalg.norm(where[j] - x) <= self.crossing_slack:
                    support[i] = new[j]
                    changed = True
            h.move_support(support, changed)
            moved = moved or changed
        if moved:
            sim.set_state()

    # -------------------------------------------------------------- handler
    def handle(self, sim, t, fired):
        self.update(sim)

    def update(self, sim) -> None:
        """Re-establish every contact at the simulator's state: impacts, support sets, stick/slip."""
        mech = sim.mech
        for h in self.hinges.values():
            h.jammed = False  # (judged again: a slide may be consistent now)
        mech.set_state(sim.q, sim.v, check=False)
        self.world.place(sim.q, True)
        d = self.world.distances(sim.q)
        self._grace = {k: d0 for k, d0 in self._grace.items() if d[k] <= self.touch_distance}
        touching = sorted(set(np.flatnonzero(d <= self.touch_distance)) | set(self.hinges))
        geo = {k: self.geometry.contact(int(k)) for k in touching}
        geo = {k: g for k, g in geo.items() if g is not None}
        struck = impacts.impact(self, sim, geo)
        self._struck = struck
        knocked = self._establish(sim, geo, bool(struck))
        self._struck = set()
        settle.settle(self, sim)
        # the guards count from the distances here (q is unchanged): broken pairs and hinged ones;
        # a broken pair hinged again is watched through its hinge alone (its offset counted once)
        self._grace = {k: min(float(d[k]), 0.0) for k in self._grace if k not in self.hinges}
        # an unhinged pair left touching (an edge on an edge after their impact, or a box parting
        # at one corner while another swings down): its distance starts at or below 0, where no
        # crossing of 0 can fire; watched from here past the slack instead
        self._parting &= set(self._grace)
        # a hinge knocked off by the impact, touching and parting: its return is an event at its
        # depth here, not the slack below it (a plank landing on a turned box rocked between its
        # foot and the box at ~700 Hz, each return 1 um deeper, which fed the rocking)
        knocked = [k for k in knocked if k in self._grace and d[k] >= -self.slack]
        if knocked:
            for c in self.world.contacts(sim.q, sim.v, which=knocked):
                if c.normal_velocity > self.rest_velocity:
                    self._parting.add(c.index)
        for k, parting in impacts.lingering(self, sim, geo, d, struck):
            self._grace[k] = min(float(d[k]), 0.0)
            if parting:
                self._parting.add(k)
        for k, h in self.hinges.items():
            h.depth0 = min(float(d[k]), 0.0)
            h.shown0 = h.shown_depth()
        self._overlap = {k for k in np.flatnonzero(d <= 0.0).tolist() if k not in self.hinges and k not in self._grace}

    def rest_speed(self, mech) -> float:
        """The separating speed (m/s) below which a bounce ends in rest: ``rest_velocity``, or
        ``sqrt(2 g slack)`` when larger (g the gravity's magnitude): a bounce that cannot rise by
        more than the penetration tolerance would land back inside the tolerance band, and the
        next watched crossing lies one tolerance deeper (a box bouncing by micrometres sank by
        the tolerance at every bounce)."""
        g = float(np.linalg.norm(mech.model.gravity.linear))
        return max(self.rest_velocity, math.sqrt(2.0 * g * self.slack))

    def _establish(self, sim, geo, after_impact: bool = False) -> list[int]:
        """Hinges for the resting points of ``geo``, their supports and friction modes; returns the
        pairs whose hinge the impact (``after_impact``) knocked off: all their points part."""
        mech = sim.mech
        knocked = []
        J, u, owners = impacts.point_rows(sim, geo) if geo else (np.zeros((0, mech.nv)), np.zeros(0), [])
        resting = {}
        for (k, i), ui in zip(owners, u):
            if ui <= self.rest_velocity:
                resting.setdefault(k, []).append(i)
        old = mode_pass.modes_of(self)
        # candidate hinges: every resting point, normal rows lifted
        for k in list(self.hinges):
            if k not in resting:
                self._remove(sim, k, "separating")
                if after_impact:
                    knocked.append(k)
        for k, idx in resting.items():
            g = geo[k]
            h = self.hinges.get(k)
            if h is None:
                h = self._new_hinge(sim, g)
            h.reshape(g, idx)
        for h in self.hinges.values():
            h.slipped = False
        self.linked = None  # (chosen again with the supports)
        mode_pass.choose_modes(self, sim, old)  # support sets and friction modes depend on each other
        # sticking hinges whose stick rows still see a slip (a stick begun at up to stick_velocity,
        # an edge or face still turning about its normal): what settle.settle takes out
        self._stuck = settle.still_slipping(self, sim)
        sim.set_state()
        return knocked

    def _new_hinge(self, sim, g: _PairContact) -> ContactHinge:
        """A hinge for the contact patch g, bound to the mechanism and active."""
        h = ContactHinge.made(g, self.friction(*g.geoms))
        h.bind(sim.mech)
        h.batch = self.row_batch
        self.hinges[g.pair] = h
        sim.mech.constraints[h.name] = h
        return h

    def _remove(self, sim, k: int, why: str) -> None:
        """Remove pair k's hinge (logged as broken if its contact was logged as made)."""
        h = self.hinges.pop(k)
        self._watch.pop(k, None)
        sim.mech.constraints.pop(h.name, None)
        self._grace[k] = 0.0  # its distance is set at the end of update()
        if h.announced:  # a candidate dropped in the update that proposed it was never made
            sim.log("contact_broken", f"{h.label}: contact broken ({why})", pair=list(h.names))

    # ------------------------------------------------------------ reporting
    def pair_forces(self, sim) -> dict[str, dict]:
        """Contact forces on A of every hinged pair at the last solve, by ``"geom_a/geom_b"``: see
        :func:`sim.contact.query.pair_forces`."""
        sol = sim.mech.solution
        return pair_forces(self.hinges.values(), lambda h: _multipliers_of(sol, h), sim.mech)

    def contacts_of(self, body: str) -> list[ContactState]:
        """The contacts of this source's pairs touching ``body`` (a geometry name, or a body's: its
        joint's), with the forces of the last solve: see :func:`sim.contact.contacts_of`."""
        sol = self.world.mech.solution
        return hinge_states(self.hinges.values(), lambda h: _multipliers_of(sol, h), self.world.mech.model, body)

    def force_probe(self, sim, geom_a: str, geom_b: str) -> ContactForceProbe:
        """A recordable quantity: (normal N, friction x, y, z N) of one pair, zeros when apart."""
        return ContactForceProbe(self, sim, f"{geom_a}/{geom_b}")


def enable_contacts(sim, friction=None, restitution=0.0, pairs: Sequence[tuple[str, str]] | None = None,
                    filter: PairFilter | None = None, reproducible: bool | None = None, **options) -> ContactSource:
    """Continuous contact with Coulomb friction and impacts between the mechanism's geometries.

    Args:
        sim: the simulator.
        friction: ``(mu_static, mu_kinetic)``, one mu, 0 (frictionless), ``{(mat_a, mat_b): (mu_s, mu_k),
            "default": ...}`` or a :class:`FrictionLaw` (default (0.5, 0.4)).
        restitution: impact restitution (default 0: plastic), as for :func:`sim.impact.add_impacts`.
        pairs: geometry (or body) pairs to watch; default all pairs the collision filters keep.
        filter: extra pair predicate.
        reproducible: results independent of what ran before in the process (box pairs by the
            separating-axis test, patches from contacts built from it): see
            :class:`~sim.collision.CollisionWorld`; default ``sim.collision.REPRODUCIBLE``.
        options: see :class:`ContactSource` (``law``, ``tolerance``, ``touch_distance``,
            ``penetration_tolerance``, ``rest_velocity``, ``stick_velocity``, ``name``).
    Returns:
        the registered source; it also establishes the contacts of the current state
        (bodies resting on each other at the start get their hinges at once).
    Raises:
        ModelError: a pair has no continuous contact model, or two bodies overlap at the start by
            more than ``touch_distance``.
    """
    world = CollisionWorld(sim.mech, pairs=pairs, filter=filter, reproducible=reproducible)
    options.setdefault("tolerance", min(sim.event_tolerance, MAX_TOLERANCE))
    src = ContactSource(world, friction, restitution, **options)
    unsupported = [k for k in range(len(world)) if src.geometry.roles(k) is None]
    if unsupported:
        objs = src.geometry.objs
        names = ", ".join(f"{a}/{b} ({type(objs[ia].geometry).__name__}/{type(objs[ib].geometry).__name__})"
                          for k in unsupported for (a, b), (ia, ib) in [(world.names[k], world.pair_indices[k])])
        raise ModelError(f"enable_contacts: no continuous contact model for the pairs {names}: contacts hold "
                         f"boxes, balls and cylinders on boxes and half-spaces, and balls on balls; leave those pairs out "
                         f"(pairs=, filter=) or watch them with impacts alone (sim.enable_impacts)")
    _require_apart(world, sim.q, src.touch_distance)
    sim.add_source(src)
    sim.control_phase.append(src.after_step)
    src.update(sim)
    return src


def _require_apart(world: CollisionWorld, q: np.ndarray, depth: float) -> None:
    """Raise :class:`ModelError` naming the pairs that overlap by more than ``depth`` (m) at q (nq,):
    contacts begin where bodies touch, and an overlap at the start is no contact state (the bodies
    would be pushed apart by the rows' feedback, or pass through each other, with no impact)."""
    d = world.distances(q)
    deep = np.flatnonzero(d < -depth).tolist()
    if deep:
        pairs = ", ".join(f"{world.names[k][0]}/{world.names[k][1]} by {-d[k] * 1e3:.3g} mm" for k in deep)
        raise ModelError(f"enable_contacts: bodies overlap at the start: {pairs} (more than touch_distance = "
                         f"{depth:g} m); place them apart or touching")
