"""Collision geometry between bodies: signed distances, witness points, normals, contact Jacobians.

A :class:`CollisionWorld` watches a set of geometry pairs of a mechanism's collision
model (coal shapes attached to joints through a ``pinocchio.GeometryModel``:
spheres, boxes, cylinders, capsules, half-spaces, planes, convex meshes). At a
configuration it computes, for every active pair, with Pinocchio's
``computeDistance`` (coal's GJK/EPA with signed distance):

- ``distance`` (m): signed, negative when the shapes overlap (penetration depth);
- ``point_a``, ``point_b`` (m, world): the witness points on each shape;
- ``normal`` (world, unit): from shape a towards shape b, so that the signed
  distance grows at the rate ``normal . (v(point_b) - v(point_a))``;
- ``jacobian`` (nv,): the row ``J_n`` with ``J_n v`` = that normal relative velocity
  (m/s), built from Pinocchio's joint Jacobians of the witness points.

Pairs: by default the collision model's own collision pairs when it defines any (the
robots/ builder does: every two bodies except hinged neighbours and declared
non-self-colliding groups); otherwise every pair of geometries on different bodies,
except pairs both fixed to the world and pairs of moving bodies joined by a rotational
hinge (a link and its parent link touch at their hinge), see :func:`default_filter`. ``pairs=`` names pairs explicitly
(geometry names, or body/joint names meaning all of that body's geometries);
``filter=`` is an extra predicate ``filter(geom_a, geom_b) -> bool`` on
``pinocchio.GeometryObject``\\ s (see :func:`exclude_subtree`, :func:`exclude_pairs`).

The world keeps its own ``pinocchio.Data`` and ``GeometryData``, so evaluating guards
at trial states never disturbs the mechanism's cached kernels.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import coal
import numpy as np
import pinocchio as pin

from controlkit.errors import ModelError, UnknownNameError

from . import coal_state  # noqa: F401  (coal's box support set exactly before any query: sim.coal_state)

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
#: dimensionless: edge-edge axes of the separating-axis test of two boxes shorter than this
#: (nearly parallel edges) are left out: the face axes cover them
SAT_PARALLEL = 1e-6
#: the default of ``CollisionWorld(reproducible=...)`` (and of ``enable_contacts``)
REPRODUCIBLE = False
#: m: a distance from coal at or below this is its failure value (-DBL_MAX: GJK/EPA gave up), not a depth
COAL_FAILED = -1e300
_I3 = np.eye(3)  # (pin.SE3 copies it; one allocation instead of two per point Jacobian)

PairFilter = Callable[[pin.GeometryObject, pin.GeometryObject], bool]


@dataclass
class Contact:
    """One watched pair at one state.

    Attributes:
        index: index of the pair in the world (and of its guard).
        geom_a, geom_b: geometry names; body_a, body_b: names of the joints carrying them
            (``"universe"`` for the fixed world).
        distance: signed distance (m), negative when overlapping.
        point_a, point_b: witness points (m, world frame).
        normal: unit normal (world frame) from a towards b.
        jacobian: (nv,) row with ``jacobian @ v`` = normal relative velocity (m/s), > 0 separating;
            None when the world was evaluated without Jacobians.
        normal_velocity: ``jacobian @ v`` (m/s) at the state, or None.
    """

    index: int
    geom_a: str
    geom_b: str
    body_a: str
    body_b: str
    distance: float
    point_a: np.ndarray
    point_b: np.ndarray
    normal: np.ndarray
    jacobian: np.ndarray | None = None
    normal_velocity: float | None = None

    @property
    def bodies(self) -> tuple[str, str]:
        return (self.body_a, self.body_b)

    def describe(self) -> str:
        """One line: the pair, distance and normal velocity."""
        vn = "" if self.normal_velocity is None else f", normal velocity {self.normal_velocity:.6g} m/s"
        return f"{self.geom_a} <-> {self.geom_b}: distance {self.distance:.6g} m{vn}"


# ------------------------------------------------------------------ filters
def _ancestors(model: pin.Model, joint: int) -> set[int]:
    out = set()
    while joint > 0:
        joint = model.parents[joint]
        out.add(joint)
    return out


_TRANSLATING = ("FreeFlyer", "JointModelP", "Translation", "Planar")


def _hinged(model: pin.Model, child: int, parent: int) -> bool:
    """Whether joint ``child`` hangs from the moving body ``parent`` through a joint without
    translation (revolute, spherical, universal: the two bodies touch at the hinge)."""
    if child <= 0 or parent <= 0 or model.parents[child] != parent:
        return False
    short = model.joints[child].shortname()
    return not any(short.startswith(t) or t in short for t in _TRANSLATING)


def default_filter(model: pin.Model) -> PairFilter:
    """Exclude pairs on one body and pairs of moving bodies hinged to each other by a
    rotational joint.

    Bodies hinged to the world still collide with world geometry (a pendulum's first link
    with the ground); free-flying, prismatic and planar bodies collide with their parent.
    Pass ``pairs=`` (or define collision pairs in the collision model) to say otherwise."""

    def keep(ga: pin.GeometryObject, gb: pin.GeometryObject) -> bool:
        ja, jb = ga.parentJoint, gb.parentJoint
        if ja == jb:
            return False
        return not (_hinged(model, ja, jb) or _hinged(model, jb, ja))

    return keep


def exclude_subtree(model: pin.Model, joint: str) -> PairFilter:
    """A filter dropping pairs whose two geometries both move with ``joint``'s subtree
    (e.g. a pendulum's own links do not collide with each other)."""
    if not model.existJointName(joint):
        raise UnknownNameError("joint", joint, list(model.names)[1:], "exclude_subtree")
    root = model.getJointId(joint)

    def inside(j: int) -> bool:
        return j == root or root in _ancestors(model, j)

    return lambda ga, gb: not (inside(ga.parentJoint) and inside(gb.parentJoint))


def exclude_pairs(names: Iterable[tuple[str, str]]) -> PairFilter:
    """A filter dropping the listed (geometry name, geometry name) pairs, in either order."""
    drop = {frozenset(p) for p in names}
    return lambda ga, gb: frozenset((ga.name, gb.name)) not in drop


# -------------------------------------------------------------------- world
class CollisionWorld:
    """Distances, witness points, normals and contact Jacobians for a set of geometry pairs.

    Args:
        mech: the mechanism (its ``collision_model`` holds the coal geometries).
        pairs: pairs to watch as ``(name_a, name_b)``; a name is a geometry name or a
            body/joint name (all geometries on that body). Default: every pair the filters keep.
        filter: extra predicate ``filter(geom_a, geom_b) -> bool`` (True keeps the pair);
            applied on top of :func:`default_filter` when ``pairs`` is None.
        precision: GJK/EPA tolerance (m) of the distance queries (coal's default, 1e-6, is
            too coarse to isolate impact times of curved shapes to 1e-9 s).
        reproducible: pairs of two boxes take their distances, normals and witness points from
            the separating-axis test (:func:`box_separations`), and contact patches are computed
            from contacts built from those (``sim.contact.geometry``), so that results do not
            depend on what ran before in the process; default :data:`REPRODUCIBLE`.
    """

    def __init__(self, mech, pairs: Sequence[tuple[str, str]] | None = None, filter: PairFilter | None = None,
                 precision: float = 1e-10, reproducible: bool | None = None):
        self.mech = mech
        self.model: pin.Model = mech.model
        src = mech.collision_model
        if src.ngeoms == 0:
            raise ModelError(f"CollisionWorld: mechanism {mech.name!r} has no collision geometry")
        self.gmodel = src.copy()
        self.gmodel.removeAllCollisionPairs()
        index = self._resolve_pairs(pairs, filter)
        for ia, ib in index:
            self.gmodel.addCollisionPair(pin.CollisionPair(ia, ib))
        self.pair_indices: list[tuple[int, int]] = index
        self.gdata = pin.GeometryData(self.gmodel)
        for req in self.gdata.distanceRequests:
            req.enable_signed_distance = True
            req.gjk_tolerance = precision
            req.epa_tolerance = precision
        self.data = self.model.createData()
        objs = self.gmodel.geometryObjects
        self.names = [(objs[a].name, objs[b].name) for a, b in index]
        self.joints = [(objs[a].parentJoint, objs[b].parentJoint) for a, b in index]
        self.bodies = [(self.model.names[ja], self.model.names[jb]) for ja, jb in self.joints]
        self.thickness = np.array([_half_thickness(objs[a].geometry) + _half_thickness(objs[b].geometry)
                                   for a, b in index])
        self._finite = np.isfinite(self.thickness).tolist()  # pairs that can be tunnelled (no half-space)
        # per joint: how far (m) its geometry reaches from the joint's origin, so |v_o| + |w| reach
        # bounds the speed of any of its points (inf for a moving half-space)
        self._reach = np.zeros(self.model.njoints)
        for g in objs:
            if g.parentJoint:
                r = float(np.linalg.norm(g.placement.translation)) + _bounding_radius(g.geometry)
                self._reach[g.parentJoint] = max(self._reach[g.parentJoint], r)
        # pairs of two boxes: their distance, normal and witness points come from the separating-axis
        # test, not coal: coal's GJK/EPA answers for them depend on memory that earlier queries in
        # the process left (coal 3.0.x, two stacked boxes: -3e-12 m and a normal 4.6e-5 rad off in a
        # fresh process, 0 and exact after another scene; 0.059999999997 m for two apart by 0.06),
        # so a scene's events depended on what ran before it in the process
        self.reproducible = REPRODUCIBLE if reproducible is None else bool(reproducible)
        box = [k for k, (a, b) in enumerate(index) if self.reproducible and
               isinstance(objs[a].geometry, coal.Box) and isinstance(objs[b].geometry, coal.Box)]
        self._boxes = set(box)
        self._box_index = np.array(box, dtype=int)
        self._box_geoms = [index[k] for k in box]
        self._box_half = (np.array([np.asarray(objs[index[k][0]].geometry.halfSide, dtype=float) for k in box]).reshape(-1, 3),
                          np.array([np.asarray(objs[index[k][1]].geometry.halfSide, dtype=float) for k in box]).reshape(-1, 3))
        self._coal_pairs = [k for k in range(len(index)) if k not in self._boxes]
        self._q_key: bytes | None = None  # the configuration placed (its bytes: a cheap comparison)
        self._dist: np.ndarray | None = None  # distances at _q_key (m), computed on demand
        self._sat: tuple | None = None  # the box pairs' separating-axis results at _q_key, on demand
        self._jac_done = False

    # ------------------------------------------------------------ pairs
    def _geoms_named(self, name: str) -> list[int]:
        gm = self.gmodel
        if gm.existGeometryName(name):
            return [gm.getGeometryId(name)]
        m = self.model
        if m.existJointName(name) or m.existFrame(name):
            joint = m.getJointId(name) if m.existJointName(name) else m.frames[m.getFrameId(name)].parentJoint
            ids = [i for i, g in enumerate(gm.geometryObjects) if g.parentJoint == joint]
            if ids:
                return ids
        valid = [g.name for g in gm.geometryObjects] + list(m.names)
        raise UnknownNameError("geometry or body", name, valid, f"collision model of {self.mech.name!r}")

    def _resolve_pairs(self, pairs, extra) -> list[tuple[int, int]]:
        objs = self.gmodel.geometryObjects
        n = len(objs)
        if pairs is None and len(self.mech.collision_model.collisionPairs):
            cand = sorted({(min(p.first, p.second), max(p.first, p.second))
                           for p in self.mech.collision_model.collisionPairs})
        elif pairs is None:
            keep = default_filter(self.model)
            cand = [(a, b) for a in range(n) for b in range(a + 1, n)
                    if not (objs[a].parentJoint == 0 and objs[b].parentJoint == 0) and keep(objs[a], objs[b])]
        else:
            cand = []
            for pa, pb in pairs:
                for a in self._geoms_named(pa):
                    for b in self._geoms_named(pb):
                        if a == b or objs[a].parentJoint == objs[b].parentJoint:
                            raise ModelError(f"CollisionWorld: pair ({pa!r}, {pb!r}) joins geometries on one body "
                                             f"({objs[a].name!r}, {objs[b].name!r})")
                        key = (min(a, b), max(a, b))
                        if key not in cand:
                            cand.append(key)
        if extra is not None:
            cand = [(a, b) for a, b in cand if extra(objs[a], objs[b])]
        if not cand:
            raise ModelError(f"CollisionWorld: no collision pair left to watch in mechanism {self.mech.name!r} "
                             f"(check pairs= and filter=)")
        return cand

    def __len__(self) -> int:
        return len(self.pair_indices)

    def pair_names(self) -> list[tuple[str, str]]:
        """(geometry a, geometry b) for each watched pair, in guard order."""
        return list(self.names)

    # -------------------------------------------------------- evaluation
    def place(self, q: np.ndarray, jacobians: bool = False) -> None:
        """Place the world's bodies and geometries at configuration q (nq,) (and compute the joint
        Jacobians when ``jacobians``); nothing is recomputed while q's values stay the same."""
        key = np.asarray(q, dtype=float).tobytes()
        if key != self._q_key:
            pin.forwardKinematics(self.model, self.data, q)
            pin.updateGeometryPlacements(self.model, self.data, self.gmodel, self.gdata)
            self._q_key = key
            self._jac_done = False
            self._dist = None
            self._sat = None
        if jacobians and not self._jac_done:
            pin.computeJointJacobians(self.model, self.data, q)
            self._jac_done = True

    def distances(self, q: np.ndarray | None = None) -> np.ndarray:
        """Signed distance (m) of every watched pair at configuration q (default the mechanism's)."""
        q = self.mech.q if q is None else q
        self.place(q, False)
        if self._dist is None:  # a step's end guards and the next step's bound read the same q
            gm, gd = self.gmodel, self.gdata
            d = np.empty(len(self.pair_indices))
            for k in self._coal_pairs:
                d[k] = pin.computeDistance(gm, gd, k).min_distance
                if not d[k] > COAL_FAILED:
                    d[k] = self._recovered(k)[0]
            if len(self._box_index):
                d[self._box_index] = self._box_sat()[0]
            self._dist = d
        return self._dist.copy()

    def _recovered(self, k: int) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """Pair k at the placed state where coal's distance came back as its failure value (coal
        3.0.3: -1.8e308 m for a brick's edge resting on another brick's face, the brick stack at 0.52 s
        from offset 1.4e-12 m): its distance (m), witness points on a and b (m, world) and normal
        (world, unit, from a towards b); two boxes' by the separating-axis test, others' by coal's
        distance on the two shapes alone."""
        ia, ib = self.pair_indices[k]
        objs, oMg = self.gmodel.geometryObjects, self.gdata.oMg
        ga, gb = objs[ia].geometry, objs[ib].geometry
        Ma, Mb = oMg[ia], oMg[ib]
        if isinstance(ga, coal.Box) and isinstance(gb, coal.Box):
            d, n = box_separations(np.array([ga.halfSide]), Ma.rotation[None], Ma.translation[None],
                                   np.array([gb.halfSide]), Mb.rotation[None], Mb.translation[None])
            dist, n = float(d[0]), n[0]
            return (dist, *self._box_witness(k, dist, n), n)
        res = coal.DistanceResult()
        coal.distance(ga, coal.Transform3s(Ma.rotation, Ma.translation), gb, coal.Transform3s(Mb.rotation, Mb.translation),
                      coal.DistanceRequest(), res)
        return _coal_answer(res)

    def _box_sat(self) -> tuple[np.ndarray, np.ndarray]:
        """The box pairs at the placed state: their separations (m) by the separating-axis test and
        its axes (world, unit, from a towards b) (:func:`box_separations`; once per placement)."""
        if self._sat is None:
            oMg = self.gdata.oMg
            Ma = [oMg[a] for a, _ in self._box_geoms]
            Mb = [oMg[b] for _, b in self._box_geoms]
            self._sat = box_separations(self._box_half[0], np.array([M.rotation for M in Ma]),
                                        np.array([M.translation for M in Ma]), self._box_half[1],
                                        np.array([M.rotation for M in Mb]), np.array([M.translation for M in Mb]))
        return self._sat

    def _box_axis(self, k: int) -> tuple[float, np.ndarray]:
        """Box pair k at the placed state: its separation (m) and axis (see :func:`box_separations`)."""
        i = int(np.searchsorted(self._box_index, k))
        d, n = self._box_sat()
        return float(d[i]), n[i].copy()

    def _box_witness(self, k: int, dist: float, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Witness points (m, world) of box pair k touching along n (world, unit, from a towards b),
        from the two support features (a's corners farthest along n, b's along -n): a lone corner
        and its image on the other's support plane, the closest points of two crossing edges, else
        the middle of where a's support lies over b's extent (its bounding box in b's frame, clipped
        to b), on either support plane."""
        ia, ib = self.pair_indices[k]
        objs = self.gmodel.geometryObjects  # (any two boxes: the registered ones, and coal's failures)
        ha, hb = (np.asarray(objs[i].geometry.halfSide, dtype=float) for i in (ia, ib))
        Ma, Mb = self.gdata.oMg[ia], self.gdata.oMg[ib]
        Sa, Sb = _support_corners(ha, Ma, n), _support_corners(hb, Mb, -n)
        if len(Sa) == 2 and len(Sb) == 2:
            u, w = Sa[1] - Sa[0], Sb[1] - Sb[0]
            den = (u @ u) * (w @ w) - (u @ w) ** 2
            if den > SAT_PARALLEL * (u @ u) * (w @ w):
                r = Sa[0] - Sb[0]
                sa = float(np.clip(((u @ w) * (w @ r) - (w @ w) * (u @ r)) / den, 0.0, 1.0))
                sb = float(np.clip(((u @ u) * (w @ r) - (u @ w) * (u @ r)) / den, 0.0, 1.0))
                return Sa[0] + sa * u, Sb[0] + sb * w
        if len(Sa) == 1:
            c = Sa[0]
        elif len(Sb) == 1:
            c = Sb[0]
        else:
            local = (Sa - Mb.translation) @ Mb.rotation
            lo, hi = np.clip(local.min(axis=0), -hb, hb), np.clip(local.max(axis=0), -hb, hb)
            c = Mb.rotation @ (0.5 * (lo + hi)) + Mb.translation
        return c + n * float(n @ (Sa[0] - c)), c + n * float(n @ (Sb[0] - c))

    def point_jacobian(self, joint: int, point: np.ndarray) -> np.ndarray:
        """3 x nv Jacobian of the velocity (m/s, world axes) of a point (world, m) fixed to a joint."""
        if joint == 0:
            return np.zeros((3, self.model.nv))
        local = self.data.oMi[joint].actInv(pin.SE3(_I3, np.asarray(point, dtype=float)))
        return pin.getFrameJacobian(self.model, self.data, joint, pin.SE3(_I3, local.translation), LWA)[:3]

    def contacts(self, q: np.ndarray | None = None, v: np.ndarray | None = None,
                 which: Iterable[int] | None = None, jacobians: bool = True) -> list[Contact]:
        """Contact records of the watched pairs (all, or the indices in ``which``) at (q, v).

        Args:
            q: configuration (nq,); default the mechanism's.
            v: velocity (nv,) for the normal velocities; default the mechanism's.
            which: pair indices to evaluate; default all.
            jacobians: also build each pair's normal Jacobian row and normal velocity.
        """
        q = self.mech.q if q is None else q
        v = self.mech.v if v is None else v
        self.place(q, jacobians)
        gm, gd = self.gmodel, self.gdata
        fresh = self._dist is not None  # distances() ran at this placement: its results stand
        out = []
        for k in (range(len(self.pair_indices)) if which is None else which):
            k = int(k)
            if k in self._boxes:
                dist, n = self._box_axis(k)
                pa, pb = self._box_witness(k, dist, n)
            else:
                dist, pa, pb, n = _coal_answer(gd.distanceResults[k] if fresh else pin.computeDistance(gm, gd, k))
                if not dist > COAL_FAILED:
                    dist, pa, pb, n = self._recovered(k)
            c = Contact(k, *self.names[k], *self.bodies[k], dist, pa, pb, n)
            if jacobians:
                ja, jb = self.joints[k]
                J = n.dot(self.point_jacobian(jb, pb) - self.point_jacobian(ja, pa))
                c.jacobian = J
                c.normal_velocity = float(J.dot(v))
            out.append(c)
        return out

    def jacobian(self, contacts: Sequence[Contact]) -> np.ndarray:
        """Stack of the contacts' normal Jacobian rows (k, nv)."""
        if not contacts:
            return np.zeros((0, self.model.nv))
        return np.vstack([c.jacobian for c in contacts])

    def time_to_contact(self, q: np.ndarray, v: np.ndarray, safety: float = 0.5,
                        velocity_tolerance: float = 1e-9, exclude: set[int] | frozenset = frozenset(),
                        separation: float = 1e-6, a: np.ndarray | None = None, horizon: float = np.inf) -> float:
        """A step (s) short enough that no sign change of a pair's distance can be missed.

        - Approaching pair at distance d > 0, closing at c = -J_n v > 0: ``safety * (d + w) / c``
          with w the sum of the two shapes' half-thicknesses (smallest half-extents of their
          local bounding boxes): in such a step the pair either stays apart or ends
          overlapping, so the crossing is seen (anti-tunnelling).
        - Separating pair still overlapping (d <= 0, J_n v > velocity_tolerance), e.g. just
          after an impact: ``2 max(|d|, separation) / (J_n v)``, so that a step ends once the
          pair is apart again (by ``separation`` m at least) and a later return to contact is a
          visible crossing (a ball bouncing back down within one long step would otherwise be
          missed). Without the floor, a pair leaving from d = 0 (touching) got zero-length steps:
          its distance stays 0 to coal's precision for thousands of them (the brick stack of
          Fig. 5.7 spent 40 000 steps of 1e-14 s at one separation).
          With the accelerations ``a`` (nv,) and the pair pulled back (``J_n a < 0``), the step
          also ends by the apex of its flight, ``u / |J_n a|``: a slow bounce (a ball near the
          accumulation point of its bounces) lands within ``2 u / |J_n a|``, which the
          separation bound alone would step over, leaving the ball inside the ground with no
          crossing to see.

        ``exclude``: pair indices not to consider (pairs held in contact by a hinge). ``horizon``
        (s): the step will be no longer than this anyway, so pairs that cannot set a shorter
        bound need not be evaluated (the result is then ``min(bound, horizon)`` or above it).
        """
        best = np.inf
        d = self.distances(q)
        # half-spaces cannot be tunnelled (a few pairs at every step: Python's floats beat numpy's per-call cost)
        which = [k for k, (dk, fk) in enumerate(zip(d.tolist(), self._finite)) if (dk <= 0.0 or fk) and k not in exclude]
        if not which:  # (every pair held by a hinge: no Jacobians needed)
            return best
        if len(which) > 8:
            which = self._within_reach(q, v, d, which, safety, horizon, velocity_tolerance)
        for c in self.contacts(q, v, which=which):
            u = c.normal_velocity
            if c.distance > 0.0 and u < 0.0:
                w = self.thickness[c.index]
                best = min(best, safety * (c.distance + w) / -u)
            elif c.distance <= 0.0 and u > velocity_tolerance:
                best = min(best, 2.0 * max(-c.distance, separation) / u)
                if a is not None:
                    an = float(c.jacobian.dot(a))  # (the centripetal part left out: a bound, not a root)
                    if an < 0.0:
                        best = min(best, u / -an)
        return best


    def _within_reach(self, q, v, d, which, safety, horizon, velocity_tolerance=0.0) -> list[int]:
        """The pairs of ``which`` that touch, or could close their distance fast enough to set the
        bound: a pair apart by d closes at most at the sum of its bodies' speed bounds s, so its
        bound is at least ``safety (d + w) / s``; pairs taken nearest first, until that lower bound
        exceeds the one already met (many distant pairs, like a 20-ball cradle's 190, then
        need no Jacobians). A touching pair whose s is at most ``velocity_tolerance`` cannot
        separate faster than that, so it sets no bound either (a cradle's resting balls)."""
        pin.forwardKinematics(self.model, self.data, q, v)  # (same placements: q is the one placed)
        speed = [0.0] * self.model.njoints
        reach = self._reach.tolist()
        for j in range(1, self.model.njoints):
            # (a bound on floats: six numbers, where two numpy norms cost five times as much)
            x = self.data.v[j].vector.tolist()
            speed[j] = math.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]) + \
                math.sqrt(x[3] * x[3] + x[4] * x[4] + x[5] * x[5]) * reach[j]
        near, apart = [], []
        for k in which:
            ja, jb = self.joints[k]
            s = speed[ja] + speed[jb]
            if d[k] <= 0.0:
                if s > velocity_tolerance:
                    near.append(k)
            else:
                if s > 0.0:
                    apart.append((safety * (d[k] + self.thickness[k]) / s, k))
        apart.sort()
        bound = min(self._bound(q, v, near, safety), horizon)
        for lower, k in apart:
            if lower >= bound:
                break
            bound = min(bound, self._bound(q, v, [k], safety))
            near.append(k)
        return near

    def _bound(self, q, v, which, safety) -> float:
        best = np.inf
        for c in self.contacts(q, v, which=which):
            u = c.normal_velocity
            if c.distance > 0.0 and u < 0.0:
                best = min(best, safety * (c.distance + self.thickness[c.index]) / -u)
        return best


def _dot3(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Dot products over the last axis (3) (elementwise, so the same inputs give the same bits
    whatever the arrays' memory alignment)."""
    return x[..., 0] * y[..., 0] + x[..., 1] * y[..., 1] + x[..., 2] * y[..., 2]


def _coal_answer(res) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """A coal distance result as (distance m, witness point on a, on b (m, world), unit normal from a
    towards b (world; zero when coal gives none))."""
    n = np.array(res.normal, dtype=float)
    nn = np.linalg.norm(n)
    return (float(res.min_distance), np.array(res.getNearestPoint1()), np.array(res.getNearestPoint2()),
            n / nn if nn > 0 else n)


def box_separations(ha: np.ndarray, Ra: np.ndarray, ta: np.ndarray, hb: np.ndarray, Rb: np.ndarray,
                    tb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The separating-axis test of P pairs of boxes.

    Args:
        ha, hb: half-extents (P, 3) (m); Ra, Rb: rotations (P, 3, 3); ta, tb: centres (P, 3) (m, world).
    Returns:
        the largest separation (m) of each pair over the 6 face axes and the 9 edge-edge axes (P,),
        and that axis (P, 3) (world, unit, from a towards b). For boxes that overlap or touch it is
        their signed distance (minus the penetration depth), exactly; for boxes apart, a lower bound
        of their distance (equal to it when a face or two edges are nearest), positive.
    """
    Fa, Fb = np.swapaxes(Ra, 1, 2), np.swapaxes(Rb, 1, 2)  # (P, 3, 3): the axes as rows
    a, b = Fa[:, :, None, :], Fb[:, None, :, :]  # (the 9 cross products, written out: np.cross is slow)
    cr = np.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1], a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                   a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1).reshape(-1, 9, 3)
    norms = np.sqrt(_dot3(cr, cr))
    keep = norms > SAT_PARALLEL
    cr = np.where(keep[..., None], cr / np.where(keep, norms, 1.0)[..., None], 0.0)
    axes = np.concatenate([Fa, Fb, cr], axis=1)  # (P, 15, 3)
    p = _dot3(axes, (tb - ta)[:, None, :])
    ra = sum(np.abs(_dot3(axes, Fa[:, None, i, :])) * ha[:, None, i] for i in range(3))
    rb = sum(np.abs(_dot3(axes, Fb[:, None, i, :])) * hb[:, None, i] for i in range(3))
    sep = np.abs(p) - ra - rb
    sep[:, 6:][~keep] = -np.inf
    i = np.argmax(sep, axis=1)
    rows = np.arange(len(sep))
    axis = axes[rows, i]
    return sep[rows, i], np.where((p[rows, i] >= 0.0)[:, None], axis, -axis)


def _support_corners(h: np.ndarray, M, d: np.ndarray) -> np.ndarray:
    """The corners (k, 3) (m, world) of a box (half-extents h, placement M) farthest along d: its
    support vertex, edge or face (an axis normal to d within 1e-9 leaves its coordinate free)."""
    loc = M.rotation.T @ d
    free = np.abs(loc) <= 1e-9
    sign = np.sign(loc)
    out = []
    for s in itertools.product(*[(-1.0, 1.0) if f else (float(g),) for f, g in zip(free, sign)]):
        out.append(M.rotation @ (np.array(s) * h) + M.translation)
    return np.array(out)


def _bounding_radius(geometry) -> float:
    """Radius (m) of a ball about the geometry's origin holding it (inf when unbounded)."""
    try:
        geometry.computeLocalAABB()
        lo, hi = np.asarray(geometry.aabb_local.min_), np.asarray(geometry.aabb_local.max_)
    except Exception:  # shapes without a bounding box: no bound
        return np.inf
    r = float(np.linalg.norm(np.maximum(np.abs(lo), np.abs(hi))))
    return r if np.isfinite(r) and r < 1e300 else np.inf


def _half_thickness(geometry) -> float:
    """Smallest half-extent (m) of a shape's local bounding box (inf for half-spaces)."""
    try:
        geometry.computeLocalAABB()
        lo, hi = np.asarray(geometry.aabb_local.min_), np.asarray(geometry.aabb_local.max_)
    except Exception:  # shapes without a bounding box: no thickness credit
        return 0.0
    ext = 0.5 * hi - 0.5 * lo
    if not np.all(np.isfinite(ext)) or np.any(ext > 1e300):
        return np.inf
    return float(max(ext.min(), 0.0))
