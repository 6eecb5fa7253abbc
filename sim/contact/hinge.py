"""The contact hinge: the temporary constraint of one touching pair (its support points, mode,
rows and forces)."""
from __future__ import annotations

import math

import numpy as np

from controlkit.constraints import Constraint
from controlkit.friction import FrictionLaw

from .bodies import _bodies, _Body, _sides
from .curved import line_rolling_block
from .geometry import POINT_TOL, Region, SupportPoint, _coincides, _Face, _PairContact, _same_key, _tangents
from .hinge_support import HingeSupport
from .mode import Mode
from .rows import _ball_centres, _rows_on_world, anchor_stick_block, ball_rolling_block, sliding_normal_rows

#: m/s (rad/s for the torsion row): relative motion slower than this is none (a stick row that
#: slips, a sliding contact that still moves)
SLIP_SPEED = 1e-9
#: dimensionless: at a slide's onset kinetic friction opposes ``v_t + ONSET_BLEND * onset_speed * slide_dir``
#: (:meth:`ContactHinge._sliding_direction`): the onset's direction while the slip is small, the slip's
#: own once it has grown past that speed in any direction (so friction never drives a slip that runs
#: across the onset's direction; beyond the slide guard's offset, which fires at one onset speed
#: against it, the blend never vanishes)
ONSET_BLEND = 2.0


#: which hinges build their rows in one compiled call (:mod:`sim.contact.row_kernel`, numba):
#: ``"all"``, ``"balls"`` (a ball on a ball or on a face: its one point) or ``"none"`` (the Python
#: reference everywhere). A linked support's members and a carrier with riders always take the
#: reference (their friction is spread over other hinges' points); see docs/architecture.md
#: "Evaluation speed".
COMPILED_ROWS = "all"
#: how many row builds took each path: the compiled kernel, the Python reference
ROW_COUNTS = {"kernel": 0, "reference": 0}
row_kernel = None  # sim.contact.row_kernel, once the first hinge takes the compiled path

# (module names for the hot paths: an enum member's lookup costs ~0.1 us in Python 3.11, and the
# mode is read at every assembly and guard evaluation)
_STICK, _SLIDE = Mode.STICK, Mode.SLIDE
_WITH_TORSION = (Region.EDGE, Region.FACE)
_POINT = Region.POINT


def _compiled(h) -> bool:
    """Whether :data:`COMPILED_ROWS` selects the compiled rows for hinge h."""
    which = COMPILED_ROWS
    if h.group is not None or h.carried:  # (friction spread over a linked support, or over its riders'
        return False                      # points: the reference rows)
    return which == "all" or which == "balls" and bool(h.points) and (h.balls or h.region == _POINT)


def _multipliers_of(sol, h: "ContactHinge") -> np.ndarray:
    """A hinge's multipliers in a solution (zeros when there is none, or it has none: detached, or
    solved before it existed). Not ``dict.get``'s default: that would build the zeros at every
    call, twice per step."""
    lam = None if sol is None else sol.lam.get(h.name)
    return np.zeros(h.size) if lam is None else lam


# ------------------------------------------------------------- contact hinge
class ContactHinge(HingeSupport, Constraint):
    """The temporary hinge of one contacting pair (its rows: see :mod:`sim.contact`).

    Args:
        name: constraint name (``contact <geom_a>/<geom_b>``).
        pair: index of the pair in the collision world.
        geoms: (geometry of A, geometry of B); joints: their joint ids (0 = world).
        normal_b: B's outward surface normal in B's joint frame (unit).
        mu: (mu_static, mu_kinetic).

    Its state: the support (``points`` held, ``dependent`` on them, ``candidates``, ``spare``
    vertices, the ``carrier`` it rides on or the hinges it ``carried``), ``region`` (:class:`Region`),
    ``mode`` (:class:`Mode`) and ``slide_dir``. The
    contact source changes it through the transitions (:meth:`begin`, :meth:`stick`,
    :meth:`slide`, :meth:`follow`, :meth:`reshape`, :meth:`reset_support`, :meth:`hold`,
    :meth:`set_basis`, :meth:`ride`, :meth:`move_support`, :meth:`detach`/:meth:`attach`), each of which
    drops what was derived from the old state (:meth:`invalidate`).
    """

    kind = "contact"
    second_order = False  # redundant support points are resolved by the support set

    def __init__(self, name: str, pair: int, geoms: tuple[str, str], joints: tuple[int, int],
                 normal_b: np.ndarray, mu: tuple[float, float]):
        super().__init__(name)
        self.pair, self.geoms, self.joints = pair, geoms, joints
        # the names as first met: the roles (which body is A) may swap at a later change
        self.names = tuple(geoms)
        self.label = f"{geoms[0]}/{geoms[1]}"
        self.normal_b = np.asarray(normal_b, dtype=float)
        self.normal_a = None  # A's outward face normal (A's joint frame), for points owned by B
        self.mu_s, self.mu_k = mu
        self.points: list[SupportPoint] = []  # the support points whose normal rows are held
        # the other support points: each an affine combination of ``points`` in the contact plane,
        # so holding ``points`` holds them too; forces may be shifted onto them (support_margin)
        self.dependent: list[SupportPoint] = []
        # support points whose normal rows are combinations of held rows through other bodies (a plank
        # across two free blocks: its second block's points); their forces are the linked support's
        self.linked: list[SupportPoint] = []
        # the linked support it belongs to (sim.contact.linked.LinkedSupport), or None: its support
        # margin and, while any of that support's hinges slides, its kinetic friction are the group's
        self.group = None
        self.candidates: list[SupportPoint] = []  # the resting points of the contact region
        self.spare_geometry: list[np.ndarray] = []
        self.spare: list[SupportPoint] = []  # other vertices, watched for touching down
        self.faces: tuple[_Face | None, _Face | None] = (None, None)  # finite faces of B and of A
        self.region = Region.NONE
        self.mode = Mode.STICK if self.mu_s > 0 else Mode.FRICTIONLESS
        self.slide_dir = np.zeros(3)  # world, at slip onset
        self.slipped = False
        # sticking through Painlevé's inconsistency (no onset direction consistent: sim.contact.onset;
        # or a tangential impact: support_set.choose_supports), its friction outside its cone: no slide
        # begins from it, and its guard watches that friction return inside the cone; cleared at each
        # update (ContactSource.update) and where its friction is inside the cone (friction_pass)
        self.jammed = False
        # m/s, > 0 while a slide begun from rest (static friction exceeded) has not yet run along
        # slide_dir that fast (its onset): its slide guard fires on a slip that runs the other way
        # (ContactSource._slide_guard) and its friction's direction blends with the slip's (slide)
        self.onset_speed = 0.0
        self.stick_keep = np.ones(3, dtype=bool)  # stick rows held (dependent ones are dropped)
        self.detached = False  # True while the support LCP applies its forces as external forces
        # held by a controller (inverse dynamics): every candidate point stays, and the solve keeps
        # the forces compressive and inside the friction pyramid (force_inequalities)
        self.controlled = False
        self.announced = False  # its contact_made was logged (the source logs contact_broken then)
        # a hinge whose support points all lie in the plane of another's held points between the same
        # two bodies (a plank across two blocks) rides on that one, its ``carrier``: it holds no rows,
        # its points are dependent on the carrier's held points, and the carrier's support margin and
        # friction cover them (the carrier lists its riders in ``carried``); see :meth:`ride`
        self.carrier: ContactHinge | None = None
        self.carried: list[ContactHinge] = []
        self.version = 0  # moves whenever the support, mode or normals change (invalidate)
        self._anchor_a = None  # the stick rows' anchor (A's joint frame, m), set at stick onset
        self._tangents_b = _tangents(self.normal_b)
        # caches of functions of the state and the support (each with its key)
        self._cache_version = -1
        self._cache = None
        self._affine = None
        self._group_key = None
        self._group_cache = []
        self._group_mean = math.nan
        self._labels = None
        self._world_memo: list = []
        self._centroid = None
        self._sides_cache = None
        self._packed = None  # ((version, mode, stick rows), row_kernel.pack's parameters)
        self.balls = False  # a ball on a ball: the normal is the centres' line, not fixed in B
        # its source's batched compiled rows (sim.contact.row_batch.RowBatch), or None: rows alone
        self.batch = None
        self.depth0 = 0.0  # the pair's signed distance (m, <= 0) when its support was last set
        self.shown0 = 0.0  # the penetration (m, <= 0) its support points showed then (shown_depth)

    # the constraint protocol ------------------------------------------------
    @property
    def ideal(self) -> bool:
        """Its forces act along its rows unless it slides (kinetic friction) or belongs to a linked
        support one of whose hinges slides (the friction spread over that support's points)."""
        if self.detached:
            return True
        group = self.group
        return self.mode != _SLIDE if group is None else not group.sliding()

    @property
    def signature(self):
        return (self.name, self.version, self.detached, self.mode)

    @property
    def size(self) -> int:
        if self.detached:
            return 0
        k = self.stick_row_count()  # (read at every assembly: a list sum beats numpy's on 3 flags)
        return len(self.points) + (sum(self.stick_keep.tolist()[:k]) if k else 0)

    def stick_mask(self) -> np.ndarray:
        """Which of its stick rows (t1, t2, torsion) are held (the others depend on other rows)."""
        return self.stick_keep[: self.stick_row_count()]

    def stick_row_count(self) -> int:
        """How many stick rows it has: none unless sticking; t1, t2 and, for an edge or a face,
        the torsion about the normal; none while it rides on a carrier (whose stick rows hold it)."""
        if self.mode != _STICK or self.carrier is not None:
            return 0
        return 3 if self.region in _WITH_TORSION else 2

    def row_labels(self) -> list[str]:
        # read at every assembly: cached on what they depend on (the lists are only read)
        key = (len(self.points), self.detached, self.mode, self.region, self.stick_keep.tobytes())
        cached = self._labels
        if cached is not None and cached[0] == key:
            return cached[1]
        labs = [] if self.detached else [f"{self.name}.n{i}" for i in range(len(self.points))] + \
            [f"{self.name}.{s}" for s, k in zip(("t1", "t2", "torsion"), self.stick_mask()) if k]
        self._labels = (key, labs)
        return labs

    def describe(self) -> str:
        return f"contact {self.label}: {self.region}, {len(self.support())} points, {self.mode}"

    def rows(self):
        """``(phi, J, drift, G)``: gaps (m), Jacobian rows, drifts and force rows of all its rows
        at the state, before the stick mask (normals, then t1, t2, torsion); kept per state.

        Built in one compiled call (:meth:`kernel_rows`) where it covers the hinge and
        :data:`COMPILED_ROWS` selects it, else by the Python reference (:meth:`reference_rows`)."""
        if self._cache_version == self.mech.state_version:
            return self._cache
        out = None
        if _compiled(self):
            batch = self.batch
            if batch is not None:  # every compiled hinge of its source in one call
                batch.fill(self.mech, _compiled)
                if self._cache_version == self.mech.state_version:
                    ROW_COUNTS["kernel"] += 1
                    return self._cache
            out = self.kernel_rows()
        if out is None:
            ROW_COUNTS["reference"] += 1
            out = self.reference_rows()
        else:
            ROW_COUNTS["kernel"] += 1
        self._cache = out
        self._cache_version = self.mech.state_version
        return out

    def kernel_rows(self):
        """:meth:`rows` in one compiled call (:func:`sim.contact.row_kernel.rows_of`), or None where
        it does not cover the hinge; agrees with :meth:`reference_rows` to rounding."""
        global row_kernel
        if row_kernel is None:  # (numba: imported, and the kernel compiled or loaded, on first use)
            from . import row_kernel
        return row_kernel.rows_of(self)

    def reference_rows(self):
        """:meth:`rows` by the Python formulas of :mod:`sim.contact.rows` (the reference)."""
        sides = self.sides()
        A, B, n = sides[0]
        groups = self._groups()
        if B.world and self.mode != _SLIDE and len(groups) == 1 and groups[0][0] == 0 \
                and len(groups[0][1]) == len(self.points) and not self.balls \
                and not (self.mode == _STICK and self._rolls):
            # the common case (a foot on the ground): A's material points on the fixed world
            _, _, la, lo, rad = groups[0]
            return _rows_on_world(A, n, la, lo, rad, self._anchor_a, self._tangents_b, self.stick_row_count(),
                                  self._world_memo)
        blocks = []
        if self.points:
            blocks.append(self._normal_rows(sides))
        k = self.stick_row_count()
        if k:
            blocks.append(self._stick_block(A, B, n, k))
        nv = self.mech.nv
        if not blocks:
            z = np.zeros(0)
            return z, np.zeros((0, nv)), z, np.zeros((0, nv))
        if len(blocks) == 1:
            return blocks[0]
        (p0, J0, d0, G0), (p1, J1, d1, G1) = blocks
        J = np.concatenate((J0, J1))
        # (ideal rows, the force rows are the Jacobian's: one array for both)
        return np.concatenate((p0, p1)), J, np.concatenate((d0, d1)), J if G0 is J0 and G1 is J1 else np.concatenate((G0, G1))

    def sides(self):
        """See :func:`_sides` (kept while the state and the normals are the same)."""
        c = self._sides_cache
        if c is not None and c[0] == self.mech.state_version and c[1] is self.normal_b and c[2] is self.normal_a \
                and c[3] == self.joints:
            return c[4]
        if self.balls:  # the normal follows the centres' line
            A, B = _bodies(self.mech, self.joints)
            p = self.points[0] if self.points else self.candidates[0]
            n = _ball_centres(A, B, p.local_a[None], p.local_o[None])[3]
            out = ((A, B, n), (B, A, -n))
        else:
            out = _sides(self.mech, self.joints, self.normal_b, self.normal_a)
        self._sides_cache = (self.mech.state_version, self.normal_b, self.normal_a, self.joints, out)
        return out

    def slips(self, v: np.ndarray, tol: float = SLIP_SPEED) -> bool:
        """Whether its held stick rows see a relative motion (``|J v| > tol``, m/s or rad/s) at v."""
        k = len(self.points)
        J = self.jacobian()[k:]
        return bool(len(J)) and float(np.abs(J @ v).max()) > tol

    def still(self, v: np.ndarray, tol: float = SLIP_SPEED) -> bool:
        """Whether a sticking hinge's bodies do not move relative to each other along its stick rows,
        held or dropped as dependent (``|J v| <= tol``, m/s or rad/s, at v); False unless sticking at
        material points (a ball or a cylinder rolls while its stick rows see no slip)."""
        n = self.stick_row_count()
        if not n or self._rolls:
            return False
        k = len(self.points)
        J = self.rows()[1][k:k + n]
        return float(np.abs(J.dot(v)).max()) <= tol

    @property
    def _rolls(self) -> bool:
        """A ball's point contact: its stick rows are rolling rows at the current contact point."""
        return bool(self.points) and self.points[0].radius > 0.0

    def _tangent_basis(self, B: _Body, n: np.ndarray) -> np.ndarray:
        """The stick rows' tangents (2, 3) (world): fixed in B, or for a ball on a ball, from n."""
        return _tangents(n) if self.balls else self._tangents_b.dot(B.R.T)

    def _groups(self):
        """The held points by owner, as arrays: ``[(owner, index, local_a, local_o, radius)]``
        (cached while the points are the same objects)."""
        # the key holds the points themselves: ids of freed points could be reused
        key = (self.version, tuple(self.points))
        if not _same_key(self._group_key, key):
            own = np.array([-1 if p.edges is not None else p.owner for p in self.points], dtype=int)
            self._group_cache = [
                (owner, idx, np.array([self.points[i].local_a for i in idx], dtype=float),
                 np.array([self.points[i].local_o for i in idx], dtype=float),
                 np.array([self.points[i].radius for i in idx], dtype=float))
                for owner in (0, 1) if (idx := np.flatnonzero(own == owner)).size]
            # (a rider holds no points: its support's radius, for its sliding velocity)
            sup = self.points or self.dependent or self.linked
            self._group_mean = np.mean([p.radius for p in sup]) if sup else math.nan
            self._group_key = key
        return self._group_cache

    def _mean_radius(self) -> float:
        """The held points' mean radius (m): their contact points lie that far below them along n
        (kept with the point groups)."""
        self._groups()
        return self._group_mean

    def _normal_rows(self, sides):
        # (in a linked support the friction is the support's: force_jacobian)
        sliding = self.mode == _SLIDE and self.group is None
        return sliding_normal_rows(self, sides, *(self._sliding_direction(*sides[0]) if sliding else (None, False)))

    def _stick_block(self, A: _Body, B: _Body, n: np.ndarray, k: int):
        if self._rolls:  # (a ball's point, or a cylinder's side: its line, sec. sim.contact.curved)
            return ball_rolling_block(self, A, B, n) if len(self.points) == 1 else line_rolling_block(self, A, B, n, k)
        return anchor_stick_block(self, A, B, n, k)

    def _part(self, i: int) -> np.ndarray:
        if self.detached:
            return np.zeros((0, self.mech.nv)) if i % 2 else np.zeros(0)
        keep = self.row_mask()
        part = self.rows()[i]
        return part if False not in keep.tolist() else part[keep]

    def force_inequalities(self):
        """``-lam_n <= 0`` per point and, sticking, ``|f_t1| + |f_t2| <= mu_s sum(lam_n)`` (a pyramid
        inside Coulomb's cone), while the hinge is ``controlled``."""
        if not self.controlled or self.detached:
            return None
        k = len(self.points)
        C = [np.hstack([-np.eye(k), np.zeros((k, self.size - k))])]
        m = self.stick_mask()[:2]
        if m.any():
            C.append(FrictionLaw.multiplier_pyramid(k, int(m.sum()), self.size, self.mu_s))
        C = np.vstack(C)
        return C, np.zeros(len(C))

    def row_mask(self) -> np.ndarray:
        """Which of the full rows (normals, then t1, t2, torsion) are held."""
        return np.concatenate([np.ones(len(self.points), dtype=bool), self.stick_mask()])

    def terms(self):
        """``(error, jacobian, drift)`` in one call (the rows are built once per state)."""
        if self.detached:
            nv = self.mech.nv
            return np.zeros(0), np.zeros((0, nv)), np.zeros(0)
        phi, J, drift, _ = self.rows()
        if self.mode == _STICK and not all(self.stick_keep.tolist()[: self.stick_row_count()]):
            keep = self.row_mask()
            return phi[keep], J[keep], drift[keep]
        return phi, J, drift

    def error(self):
        return self._part(0)

    def jacobian(self):
        return self._part(1)

    def drift(self):
        return self._part(2)

    def force_jacobian(self):
        if self.group is not None and not self.detached:
            return self.group.force_rows(self, self._part(1))
        return self._part(3)

    # contact kinematics -------------------------------------------------------
    def _sliding_direction(self, A: _Body, B: _Body, n: np.ndarray) -> tuple[np.ndarray, bool]:
        """The contact's sliding direction (world, unit) and whether each point takes its own (False
        past a stop: then every point's friction keeps ``slide_dir``; and at a slide's onset, where
        all take ``unit(v_t + ONSET_BLEND onset_speed slide_dir)``, v_t the centroid's slip)."""
        vt = self.tangential_velocity(A, B, n)
        if self.onset_speed > 0.0:  # (at its onset: the slip's direction blended with slide_dir)
            w = vt + self.blend_speed * self.slide_dir
            L = math.sqrt(w.dot(w))  # (0 only for a slip of -blend_speed along slide_dir, past its guard)
            return (w / L if L > 0.0 else self.slide_dir), False
        s = math.sqrt(vt.dot(vt))  # (numpy.linalg.norm's own sum, without its wrapper)
        # past a stop (within an integration step) friction keeps its direction, so that the
        # stop is a visible zero crossing of the slide guard instead of chatter inside a step
        moving = s > SLIP_SPEED and vt.dot(self.slide_dir) > 0
        return (vt / s if moving else self.slide_dir), moving

    def sliding_friction(self, fn: np.ndarray) -> np.ndarray:
        """The kinetic friction on A (N, world (3,)) of a sliding contact whose held points carry the
        normal forces ``fn`` (k,) N: ``-mu_k fn_i u_i`` summed, u_i each point's sliding direction (over
        its whole support, ``fn`` spread by :meth:`spread_weights`, when it carries other hinges; in a linked
        support ``fn`` (len(support()),) is already the support's spread over all its points)."""
        sides = self.sides()
        A, B, n = sides[0]
        u, own = self._sliding_direction(A, B, n)
        if not own:
            return FrictionLaw.kinetic_force(fn, u, self.mu_k)
        pts = self.points
        if self.group is not None:
            pts = self.support()
            X = self.positions(pts, sides)
        elif self.carried:  # (spread over the whole support, as its rows: rows.spread_friction_rows)
            pts = self.support()
            X = np.vstack([self.positions(pts, sides)] + [r.positions(r.dependent) for r in self.carried])
            fn = self.spread_weights(sides).dot(fn)
            pts = pts + [p for r in self.carried for p in r.dependent]
        else:
            X = self.positions(pts, sides)
        x = X - np.array([p.radius for p in pts])[:, None] * n
        return FrictionLaw.kinetic_force(fn, FrictionLaw.slide_directions(A.velocity(x) - B.velocity(x), n, u), self.mu_k)

    def centroid_local(self) -> np.ndarray:
        """The support points' centroid as a point of A (m, A's joint frame)."""
        sup = self.support()
        key = (self.version, tuple(map(id, sup)))
        cached = self._centroid
        if cached is not None and cached[0] == key:  # only kept for material points of A
            return cached[1]
        sides = self.sides()
        A = sides[0][0]
        c = A.R.T @ (self.positions(sup, sides).mean(axis=0) - A.t)
        # points of A alone (no crossing points, none of B): the same point of A at every state
        self._centroid = (key, c) if all(p.owner == 0 and not p.crossing for p in sup) else None
        return c

    def tangential_velocity(self, A: _Body | None = None, B: _Body | None = None, n=None) -> np.ndarray:
        """Velocity (m/s, world) of A relative to B at the support centroid, in B's tangent plane."""
        if A is None:
            A, B, n = self.sides()[0]
        x = A.point(self.centroid_local()) - self._mean_radius() * n
        dv = A.velocity(x) - B.velocity(x)
        return dv - n.dot(dv) * n

    def _centroid_anchor(self) -> np.ndarray:
        """The support centroid's contact point as a point of A (m, A's joint frame)."""
        A, B, n = self.sides()[0]
        x = A.point(self.centroid_local()) - self._mean_radius() * n
        return A.R.T @ (x - A.t)

    def set_anchor(self) -> None:
        """Hold the current relative placement at the support centroid (stick onset)."""
        self._anchor_a = self._centroid_anchor()
        self._cache_version = -1
        self._packed = None

    def anchor_on_support(self) -> None:
        """A sticking hinge held at one point anchors its stick rows at that point: anchored at an
        earlier support's centroid (an edge reduced to one of its ends by the support choice), its
        rows held that other point of A still, and the point it rests on slid while sticking (a
        leaning plank's foot: 24 mm/s)."""
        if self.mode != _STICK or self._anchor_a is None or self._rolls or len(self.support()) != 1:
            return
        if float(np.linalg.norm(self._centroid_anchor() - self._anchor_a)) > POINT_TOL:
            self.set_anchor()

    def tangent_world(self, ft: np.ndarray) -> np.ndarray:
        """A tangential force (2,) in the hinge's tangent basis as a world vector (3,)."""
        A, B, n = self.sides()[0]
        return ft @ self._tangent_basis(B, n)

    def shown_depth(self) -> float:
        """The deepest penetration (m, <= 0) its support points show: their normal rows' gaps
        (the dependent points' are the affine combinations of the held ones'), 0 when none is below
        the surface. Their rows hold them: a drift of these gaps is corrected by the stabilization."""
        m = len(self.points)
        if not m or self.detached:
            return 0.0
        phi = self.rows()[0][:m].tolist()  # (read at every step's guards: a few floats)
        s = min(phi)
        if self.dependent:  # (plain loops: generators cost more than these few products)
            for row in self.affine().tolist():
                d = 0.0
                for c, p in zip(row, phi):
                    d += c * p
                s = min(s, d)
        return min(s, 0.0)

    def forces(self, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Split a multiplier vector into normal forces (k,) N and tangential force (2,) N (views of
        ``lam`` where they can be: read them, do not write them)."""
        k = len(self.points)
        if self.mode == _STICK:
            keep = self.stick_keep.tolist()  # (read at every step's force guards: floats, no masks)
            if keep[0] and keep[1]:
                return lam[:k], lam[k:k + 2]
        ft = np.zeros(2)
        m = self.stick_mask()[:2]
        ft[m] = lam[k:k + int(m.sum())]
        return lam[:k], ft

    # state transitions ----------------------------------------------------------
    @classmethod
    def made(cls, g: _PairContact, mu: tuple[float, float]) -> "ContactHinge":
        """A new hinge on a contact patch: its points and region, its mode chosen by :meth:`begin`."""
        h = cls(f"contact {g.geoms[0]}/{g.geoms[1]}", g.pair, g.geoms, g.joints, g.normal_b, mu)
        h.points, h.region = list(g.points), g.region
        h.mode = Mode.NEW
        return h

    def invalidate(self, rows_only: bool = False) -> None:
        """Forget what was derived from the support and the mode: the rows (rebuilt at their next
        use) and, unless ``rows_only``, everything keyed by :attr:`version`, which moves (the point
        groups, affine coordinates, centroid, the solver's constraint plan)."""
        self._cache_version = -1
        self._packed = None
        if not rows_only:
            self.version += 1
            self._affine = None

    def begin(self, stick_velocity: float) -> None:
        """A new hinge's mode: frictionless (mu_s = 0), sticking when its sliding speed is at most
        ``stick_velocity`` (m/s), else sliding along its sliding velocity."""
        vt = self.tangential_velocity()
        if self.mu_s == 0:
            self.mode = Mode.FRICTIONLESS
        elif np.linalg.norm(vt) <= stick_velocity:
            self.mode = Mode.STICK
            self.set_anchor()
        else:
            self.mode, self.slide_dir = Mode.SLIDE, vt / np.linalg.norm(vt)
        self.invalidate()

    def stick(self) -> None:
        """Stick from here: stick rows anchored at the current support centroid."""
        self.mode, self.onset_speed, self.jammed = Mode.STICK, 0.0, False
        self.set_anchor()
        self.invalidate()

    def jam(self) -> None:
        """Stick through Painlevé's inconsistency: its static friction left its cone and no sliding
        direction is consistent (:mod:`sim.contact.onset`), or its sliding support is tensile right
        after it struck (a tangential impact); see ``jammed``."""
        self.stick()
        self.jammed = True

    def slide(self, direction: np.ndarray, onset_speed: float = 0.0) -> None:
        """Slide from here along ``direction`` (world, unit): kinetic friction, the slide guard's
        direction. ``onset_speed`` (m/s) > 0: it begins from rest (its static friction exceeded), so
        its slip is yet to run along ``direction`` at that speed (:meth:`end_onset` then)."""
        self.mode, self.slide_dir, self.onset_speed, self.jammed = Mode.SLIDE, direction, float(onset_speed), False
        self.invalidate()

    @property
    def onset(self) -> bool:
        """Whether it slides at a slide's onset (see :meth:`slide`)."""
        return self.onset_speed > 0.0

    @property
    def blend_speed(self) -> float:
        """m/s: at a slide's onset, the speed along ``slide_dir`` that the slip's direction is blended
        with (``ONSET_BLEND * onset_speed``; 0 past the onset)."""
        return ONSET_BLEND * self.onset_speed

    def end_onset(self) -> None:
        """Its slip ran along ``slide_dir`` (or the slide turned): friction takes each point's own
        sliding direction from here (:meth:`_sliding_direction`)."""
        self.onset_speed = 0.0
        self.invalidate(rows_only=True)

    def follow(self, direction: np.ndarray) -> None:
        """A sliding hinge turned: its slide guard watches the new direction (world, unit)."""
        self.slide_dir = direction
        self.invalidate(rows_only=True)

    def reshape(self, g: _PairContact, idx: list[int]) -> None:
        """Take the contact patch g (roles, normals, faces) with its resting points ``idx`` as the
        candidates, every one held; the other vertices are spares."""
        self.joints, self.geoms, self.normal_b, self.normal_a = g.joints, g.geoms, g.normal_b, g.normal_a
        self.balls = g.balls
        self._tangents_b = _tangents(g.normal_b)
        self.candidates = [g.points[i] for i in idx]
        self.points, self.dependent, self.linked = list(self.candidates), [], []
        self.region = g.region if len(idx) == len(g.points) else Region.of_count(len(idx), Region.FACE)
        if g.region == Region.POINT:
            self.region = Region.POINT
        self.spare_geometry = [s for s in g.spare if not _coincides(s, self.points)]
        self.spare = list(self.spare_geometry)
        self.faces = g.faces
        self._leave_carrier()
        self.invalidate()

    def detach(self) -> None:
        """No rows while the support LCP applies its forces as external forces."""
        self.detached = True

    def attach(self) -> None:
        """Its rows again, after :meth:`detach`."""
        self.detached = False
        self.invalidate(rows_only=True)
