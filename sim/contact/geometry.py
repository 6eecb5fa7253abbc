"""Contact geometry from coal: support points, the contact region, box faces, edges and vertices
of the touching pairs, built from coal's contact patches."""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Sequence

import coal
import numpy as np
import pinocchio as pin

from ..collision import CollisionWorld
from . import curved
from .bodies import _Body
from .rows import _closest_on_lines
from .shape_points import (
    _ball_on_box_normal,
    _box_edges,
    _box_vertices,
    _entry_point,
    _inside,
    _nearest_edge,
    _segment_distance,
    _support_set,
)

#: m: patch points and support points closer than this are one point
POINT_TOL = 1e-9
#: dimensionless: a box's reach along a direction (:func:`_box_support`) counts its axes' terms off
#: the largest only when they sum to more than this fraction of it (less: a face's normal, round-off)
SUPPORT_ROUNDOFF = 1e-12
#: m and dimensionless: a support point coincides with another of its owner within
#: ``COINCIDE_ATOL + COINCIDE_RTOL |x|`` per coordinate (numpy's allclose)
COINCIDE_ATOL = 1e-7
COINCIDE_RTOL = 1e-5
#: m: support points whose spread (singular values about their centroid) is below this span no
#: more dimensions (the region: vertex, edge or face)
REGION_TOL = 1e-7
#: dimensionless: a patch point within ``NEAR_FACTOR * touch_distance`` of a corner or an edge is
#: that corner's or on that edge
NEAR_FACTOR = 10.0
#: dimensionless: B's face normal stays the contact normal unless A's is closer to coal's by this much
NORMAL_TIE = 1e-9
#: dimensionless: two edges whose directions' cross product is below this fraction of their
#: lengths' product are parallel (sin of the angle: 1 mrad)
PARALLEL_SIN = 1e-3
#: dimensionless: coal's contact normal farther than this (cos of 1e-4 rad) from the face normal it
#: snaps to gives no patch: the patch is taken along the face normal (a 0.1 m face clipped at 1e-4 rad
#: is 1e-5 m out of plane, well inside coal's patch tolerance of 1 mm)
REPATCH_COS = math.cos(1e-4)
#: s: the finite step that gives the face margins' rates (piecewise linear: exact)
RATE_STEP = 1e-6
#: a box whose face normals all lie farther than this (rad) from the contact normal touches with an
#: edge or a vertex: its patch points go onto its surface along the normal (:func:`_entry_point`)
FACE_ANGLE = 0.01


class Region(StrEnum):
    """The shape of a contact's support: the affine dimension of its points, or a ball's point."""

    NONE = "none"  # no support point carries a force (a controlled hinge lifting off)
    POINT = "point"  # a ball's one point (rolling, or on another ball)
    VERTEX = "vertex"
    EDGE = "edge"
    FACE = "face"

    @classmethod
    def of_count(cls, n: int, empty: "Region") -> "Region":
        """The region of ``n`` support points in general position (``empty`` for none)."""
        return empty if n == 0 else cls.VERTEX if n == 1 else cls.EDGE if n == 2 else cls.FACE


@dataclass
class SupportPoint:
    """A support point of a contact hinge: a material point of one body on the other's surface.

    Attributes:
        local_a: the material point (m, in its owner's joint frame); a sphere's centre.
        local_o: the point of the other body's surface under it at creation (m, its joint frame).
        radius: sphere radius (m): the contact point is ``x - radius n``; 0 for polyhedra.
        owner: 0 when the point belongs to A (on B's surface, normal ``n``), 1 when it is a
            vertex of B on A's face (normal: A's outward face normal), as at the corners of
            the overlap of two boxes' faces that are B's.
    """

    local_a: np.ndarray
    local_o: np.ndarray
    radius: float = 0.0
    owner: int = 0
    offset: float = 0.0  # spare vertices: how far (m) below the surface it already was when watched
    #: where an edge of one face crosses an edge of the other: a point of neither body, which
    #: moves along both edges as they slide; the source re-places it after every step
    crossing: bool = False
    #: an edge of A crossing an edge of B at an angle: ``(a0, a1, b0, b1, sign)``, the edges'
    #: ends in A's and B's joint frames; its row is the edges' distance along ``sign e_A x e_B``
    #: (see :func:`_edge_rows`), ``local_a``/``local_o`` the crossing's closest points
    edges: tuple | None = None
    #: a ball of A on a ball of B: B's radius (m); ``local_o`` is then B's centre (its joint frame)
    radius_b: float = 0.0


@dataclass
class _Face:
    """A rectangular face of a box B: centre and in-plane axes with half-extents, in B's joint frame."""

    center: np.ndarray
    axes: np.ndarray  # (2, 3)
    half: np.ndarray  # (2,)


def _coincides(s: SupportPoint, points: Sequence[SupportPoint]) -> bool:
    """Whether a point of the same owner coincides with s (in the owner's frame; numpy's
    ``allclose``: within ``COINCIDE_ATOL + COINCIDE_RTOL |p|`` of p's coordinates)."""
    mine = [p.local_a for p in points if p.owner == s.owner]
    if not mine:
        return False
    P = np.asarray(mine)
    return bool((np.abs(s.local_a - P) <= COINCIDE_ATOL + COINCIDE_RTOL * np.abs(P)).all(axis=1).any())


def _same_key(a, b) -> bool:
    """Whether two cache keys ``(version, tuple of objects, ...)`` hold the same version and objects."""
    if a is None or a[0] != b[0] or len(a) != len(b):
        return False
    for x, y in zip(a[1:], b[1:]):
        if len(x) != len(y) or not all(map(operator.is_, x, y)):
            return False
    return True


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x)


def _tangents(n: np.ndarray) -> np.ndarray:
    """Two unit tangents (2, 3) of the unit normal n: ``t1 = n x a / |n x a|``, ``t2 = n x t1``."""
    # (a helper axis well away from n: x unless n is close to x). Built on Python floats (a ball
    # on a ball asks at every evaluation): the same products and differences as numpy.cross, and
    # the norm as numpy.linalg.norm takes it (sqrt of the vector's dot product with itself)
    n0, n1, n2 = n.tolist()
    b0, b1, b2 = (1.0, 0.0, 0.0) if abs(n0) < 0.9 else (0.0, 1.0, 0.0)
    t1 = np.array([n1 * b2 - n2 * b1, n2 * b0 - n0 * b2, n0 * b1 - n1 * b0])
    t1 /= math.sqrt(t1.dot(t1))
    a0, a1, a2 = t1.tolist()
    return np.array([[a0, a1, a2], [n1 * a2 - n2 * a1, n2 * a0 - n0 * a2, n0 * a1 - n1 * a0]])


@dataclass
class _PairContact:
    """The contact geometry of one touching pair at one state (A, B chosen, points built)."""

    pair: int
    geoms: tuple[str, str]
    joints: tuple[int, int]
    normal_b: np.ndarray
    points: list[SupportPoint]
    region: Region
    spare: list[SupportPoint] = field(default_factory=list)
    faces: tuple = (None, None)
    normal_a: np.ndarray | None = None
    balls: bool = False


def _se3_to_tf(M: pin.SE3) -> coal.Transform3s:
    return coal.Transform3s(M.rotation, M.translation)


class _Geometry:
    """Builds support points from coal's contact patches for the world's pairs."""

    SUPPORTED_A = (coal.Box, coal.Sphere, coal.Cylinder)
    SUPPORTED_B = (coal.Box, coal.Halfspace)

    def __init__(self, world: CollisionWorld, touch_distance: float):
        self.world = world
        self.touch_distance = touch_distance
        gm = world.gmodel
        self.objs = [gm.geometryObjects[i] for i in range(gm.ngeoms)]
        self.preq = coal.ContactPatchRequest()
        # (coal's default, 1 mm, held a box landing tilted by a few mrad on face points far in the air)
        self.preq.setPatchTolerance(NEAR_FACTOR * touch_distance)

    def roles(self, pair: int) -> tuple[int, int] | None:
        """Geometry indices (A, B) able to carry a hinge, B preferring the world / a half-space."""
        ia, ib = self.world.pair_indices[pair]
        ga, gb = self.objs[ia].geometry, self.objs[ib].geometry
        options = []
        for a, b, sa, sb in ((ia, ib, ga, gb), (ib, ia, gb, ga)):
            if isinstance(sa, self.SUPPORTED_A) and isinstance(sb, self.SUPPORTED_B) or \
                    isinstance(sa, coal.Sphere) and isinstance(sb, coal.Sphere):
                fixed = self.objs[b].parentJoint == 0 or isinstance(sb, coal.Halfspace)
                options.append((not fixed, (a, b)))
        return min(options)[1] if options else None

    def contact(self, pair: int, full: bool = True) -> _PairContact | None:
        """The pair's contact patch at the world's placed state, or None when not touching.
        ``full=False``: two polyhedra's points from the patch alone (no vertices the patch left
        out, no spare vertices), which is all that re-placing crossing points needs."""
        roles = self.roles(pair)
        if roles is None:
            return None
        ia, ib = roles
        gd = self.world.gdata
        Ma, Mb = gd.oMg[ia], gd.oMg[ib]
        sa, sb = self.objs[ia].geometry, self.objs[ib].geometry
        if isinstance(sb, coal.Sphere):
            return self._balls(pair, ia, ib, sa, sb, Ma, Mb)
        if not self.world.reproducible:
            return self._from_coal(pair, ia, ib, sa, sb, Ma, Mb, full)
        if pair in self.world._boxes:
            # two boxes: the separating-axis test's distance and axis (reproducible; coal's EPA
            # answer near an exact touch is not: see CollisionWorld)
            d, axis = self.world._box_axis(pair)
            if d > self.touch_distance:
                return None
            n = -axis if (ia, ib) == self.world.pair_indices[pair] else axis  # from B towards A
        else:
            res = self._collide(sa, Ma, sb, Mb)
            if res is None:
                return None
            n = -np.asarray(res.getContact(0).normal, dtype=float)  # coal: from shape 1 (A) to shape 2 (B)
        # the normal only chooses the face (or the exact normal replaces it); the patch is built
        # from the chosen normal (_patch_points)
        if isinstance(sa, coal.Sphere):  # (one point, the centre's: no patch needed)
            exact = _ball_on_box_normal(Ma.translation, sb, Mb) if isinstance(sb, coal.Box) else None
            return self._build(pair, ia, ib, sa, sb, Ma, Mb, exact if exact is not None else
                               self._snap_normal(n, sa, Ma, sb, Mb)[0], [])
        if isinstance(sa, coal.Cylinder):
            nc = curved.cylinder_normal(sa, Ma, sb, Mb)
            if nc is None:  # (the axis inside the box: coal's normal, snapped to B's nearest face)
                nc = self._snap_normal(n, sa, Ma, sb, Mb)[0]
            pts = _patch_points(sa, Ma, sb, Mb, nc, self.preq)
            return None if pts is None else self._cylinder(pair, ia, ib, sa, sb, Ma, Mb, nc, pts)
        n, swap = self._snap_normal(n, sa, Ma, sb, Mb)
        # (the patch of the pair in coal's order, along the normal from B towards A of either role)
        pts = _patch_points(sa, Ma, sb, Mb, -n if swap else n, self.preq)
        if pts is None:
            return None
        if swap:
            ia, ib, sa, sb, Ma, Mb = ib, ia, sb, sa, Mb, Ma
        return self._build(pair, ia, ib, sa, sb, Ma, Mb, n, pts, full)

    def _collide(self, sa, Ma, sb, Mb) -> coal.CollisionResult | None:
        """coal's collision of shape ``sa`` at ``Ma`` with ``sb`` at ``Mb`` within the touch distance
        (one contact), or None when they are farther apart."""
        req = coal.CollisionRequest()
        req.security_margin = self.touch_distance
        req.num_max_contacts = 1
        res = coal.CollisionResult()
        coal.collide(sa, _se3_to_tf(Ma), sb, _se3_to_tf(Mb), req, res)
        return res if res.isCollision() else None

    def _from_coal(self, pair, ia, ib, sa, sb, Ma, Mb, full) -> _PairContact | None:
        """The contact from coal's own collision contact and its patch (its normal snapped to a
        face): what a world that is not ``reproducible`` uses."""
        res = self._collide(sa, Ma, sb, Mb)
        if res is None:
            return None
        pres = coal.ContactPatchResult()
        coal.computeContactPatch(sa, _se3_to_tf(Ma), sb, _se3_to_tf(Mb), res, self.preq, pres)
        if pres.numContactPatches() == 0:
            return None
        patch = pres.getContactPatch(0)
        n = -np.asarray(patch.getNormal(), dtype=float)  # coal: from shape 1 (A) to shape 2 (B)
        pts = [np.asarray(patch.getPoint(k), dtype=float) for k in range(patch.size())]
        if isinstance(sa, coal.Cylinder):
            nc = curved.cylinder_normal(sa, Ma, sb, Mb)
            if nc is None:  # (the axis inside the box: coal's normal, snapped to B's nearest face)
                nc = self._snap_normal(n, sa, Ma, sb, Mb)[0]
            return self._cylinder(pair, ia, ib, sa, sb, Ma, Mb, nc, pts)
        if isinstance(sa, coal.Sphere) and isinstance(sb, coal.Box):
            exact = _ball_on_box_normal(Ma.translation, sb, Mb)
            if exact is not None:  # (a centre inside the box keeps the face's normal)
                return self._build(pair, ia, ib, sa, sb, Ma, Mb, exact, pts, full)
        n0 = n
        n, swap = self._snap_normal(n, sa, Ma, sb, Mb)
        if abs(float(n0 @ n)) < REPATCH_COS and (_face_on_face(sa, Ma, sb, Mb, n) or _edge_on_face(sa, Ma, sb, Mb, n, swap)):
            # coal's contact normal off the snapped face's: two faces flat on each other (EPA at an
            # exact face-on-face touch: a plank flat on a block, 0.064 rad off; its patch, clipped in
            # a plane at that angle, is a sliver along one edge), or a box's edge or corner on the
            # other's face with coal's normal its own face's (a turned box's corner under a leaning
            # plank: the patch lay in the box's top, its points 4.7 mm off the plank): the patch
            # along the snapped normal instead, as when reproducible
            pts = _patch_points(sa, Ma, sb, Mb, -n if swap else n, self.preq)
            if pts is None:
                return None
        if swap:
            ia, ib, sa, sb, Ma, Mb = ib, ia, sb, sa, Mb, Ma
        deepest = np.asarray(res.getContact(0).pos, dtype=float)
        return self._build(pair, ia, ib, sa, sb, Ma, Mb, n, pts, full, deepest)

    def _balls(self, pair, ia, ib, sa, sb, Ma, Mb) -> _PairContact | None:
        """A ball on a ball: one support point, A's centre, held at ``ra + rb`` from B's centre."""
        d = Ma.translation - Mb.translation
        L = float(np.linalg.norm(d))
        ra, rb = float(sa.radius), float(sb.radius)
        if L - ra - rb > self.touch_distance or L == 0.0:
            return None
        ja, jb = self.objs[ia].parentJoint, self.objs[ib].parentJoint
        data = self.world.data
        Ja = data.oMi[ja] if ja else pin.SE3.Identity()
        Jb = data.oMi[jb] if jb else pin.SE3.Identity()
        point = SupportPoint(Ja.actInv(Ma.translation), Jb.actInv(Mb.translation), ra, radius_b=rb)
        return _PairContact(pair, (self.objs[ia].name, self.objs[ib].name), (ja, jb), Jb.rotation.T @ (d / L),
                            [point], Region.POINT, balls=True)

    def _cylinder(self, pair, ia, ib, sa, sb, Ma, Mb, n, pts) -> _PairContact:
        """A cylinder A on a box or a half-space B (:mod:`sim.contact.curved`) along the normal n
        (world, from B towards A): its side's axis points with the radius, its cap's rim points, or
        its rim's lowest point, on B's surface."""
        objs = self.objs
        ja, jb = objs[ia].parentJoint, objs[ib].parentJoint
        data = self.world.data
        Ja = data.oMi[ja] if ja else pin.SE3.Identity()
        Jb = data.oMi[jb] if jb else pin.SE3.Identity()
        plane_b = self._support_point(sb, Mb, n)
        box = isinstance(sb, coal.Box) and (sb, Mb)
        kind, touch, rims = curved.cylinder_points(sa, Ma, n, plane_b, pts, NEAR_FACTOR * self.touch_distance,
                                                   lambda x: _inside(box, x, self.touch_distance))
        points = [SupportPoint(Ja.actInv(x), Jb.actInv(_held_at(x, x - n * (n @ (x - plane_b)), n, r)), r) for x, r in touch]
        spare = [SupportPoint(Ja.actInv(x), Jb.actInv(plane_b)) for x in rims
                 if all(np.linalg.norm(x - y) > POINT_TOL for y, _ in touch)]
        region = Region.of_count(len(points), Region.FACE)
        face_b = self._face(sb, Mb, Jb, n) if box else None
        return _PairContact(pair, (objs[ia].name, objs[ib].name), (ja, jb), Jb.rotation.T @ n, points, region,
                            spare, (face_b, None))

    def _snap_normal(self, n, sa, Ma, sb, Mb):
        """Use the exact face normal of the box whose face is in contact (B's, or A's with roles swapped)."""
        if isinstance(sb, coal.Halfspace):
            return Mb.rotation @ np.asarray(sb.n, dtype=float), False
        best = (-2.0, n, False)
        if isinstance(sb, coal.Box):
            for k in range(3):
                for s in (1.0, -1.0):
                    axis = s * Mb.rotation[:, k]
                    best = max(best, (axis @ n, axis, False), key=lambda z: z[0])
        if isinstance(sa, coal.Box) and isinstance(sb, coal.Box):
            for k in range(3):
                for s in (1.0, -1.0):
                    axis = s * Ma.rotation[:, k]  # A's outward face normal is -n
                    if -axis @ n > best[0] + NORMAL_TIE:
                        best = (-axis @ n, axis, True)
        return best[1], best[2]

    def _build(self, pair, ia, ib, sa, sb, Ma, Mb, n, pts, full: bool = True, deepest=None) -> _PairContact:
        """The contact of A (geometry ia, shape sa at Ma) on B along the normal n (world, from B
        towards A) from coal's patch points ``pts`` (world): support points, region, spares, faces
        (with ``full=False`` the patch's points only, no spares). ``deepest``: coal's deepest point
        (world, m), an edge crossing of its own where it lies on both bodies' edges and no patch
        point is near it."""
        objs = self.objs
        ja, jb = objs[ia].parentJoint, objs[ib].parentJoint
        data = self.world.data
        Ja = data.oMi[ja] if ja else pin.SE3.Identity()
        Jb = data.oMi[jb] if jb else pin.SE3.Identity()
        nb = Jb.rotation.T @ n
        if isinstance(sa, coal.Sphere):
            c = Ma.translation
            plane_b = self._support_point(sb, Mb, n)
            point = SupportPoint(Ja.actInv(c), Jb.actInv(_held_at(c, c - n * (n @ (c - plane_b)), n, float(sa.radius))),
                                 float(sa.radius))
            return _PairContact(pair, (objs[ia].name, objs[ib].name), (ja, jb), nb, [point], Region.POINT)
        plane_b = self._plane_point(sb, Mb, n)
        face_a = self._plane_point(sa, Ma, -n)
        edge_a = float(np.abs(Ma.rotation.T @ n).max()) < math.cos(FACE_ANGLE)
        verts_a = _box_vertices(sa) @ Ma.rotation.T + Ma.translation
        verts_b = _box_vertices(sb) @ Mb.rotation.T + Mb.translation if isinstance(sb, coal.Box) else np.zeros((0, 3))
        near = NEAR_FACTOR * self.touch_distance
        face_b = self._face(sb, Mb, Jb, n) if isinstance(sb, coal.Box) else None
        face_a_l = self._face(sa, Ma, Ja, -n)
        mech = self.world.mech
        mech.kinematics()
        A, B = _Body(mech, ja), _Body(mech, jb)
        points = []
        snapped: list[np.ndarray] = []
        edges_a = _box_edges(sa, Ma)
        edges_b = _box_edges(sb, Mb) if isinstance(sb, coal.Box) else []
        for p in _dedupe(pts):
            ee = self._edge_crossing(edges_a, edges_b, p, n, near, Ma.translation)
            if ee is not None:  # an edge crossing the other's edge at an angle: the edges' own row
                a0, a1, b0, b1, sign, xa, xb = ee
                snapped.append(xa)
                points.append(SupportPoint(Ja.actInv(xa), Jb.actInv(xb), crossing=True, edges=(
                    Ja.actInv(a0), Ja.actInv(a1), Jb.actInv(b0), Jb.actInv(b1), sign)))
                continue
            # onto A's surface along n: its face's plane, or on an edge or vertex contact (no face of A
            # along n) where the line enters A (A's plane through its centre's level would be inside A)
            xa = _entry_point(sa, Ma, p, n) if edge_a else p + n * (n @ (face_a - p))
            xb = p - n * (n @ (p - plane_b))  # onto B's
            # a corner stays its body's own corner (a tilted sole's support plane through its lowest
            # corner would put the others' images off the sole)
            if np.min(np.linalg.norm(verts_a - p, axis=1)) <= near:
                xa = verts_a[int(np.argmin(np.linalg.norm(verts_a - p, axis=1)))]
            if len(verts_b) and np.min(np.linalg.norm(verts_b - p, axis=1)) <= near:
                xb = verts_b[int(np.argmin(np.linalg.norm(verts_b - p, axis=1)))]
            if any(np.linalg.norm(xa - y) <= POINT_TOL for y in snapped):
                continue  # two patch points at one corner: one support point
            snapped.append(xa)
            crossing = _margin(face_b, B, xa[None])[0] <= near and _margin(face_a_l, A, xb[None])[0] <= near
            if self._owner(face_b, face_a_l, A, B, xa, xb, near) == 0:
                points.append(SupportPoint(Ja.actInv(xa), Jb.actInv(_held_at(xa, xb, n)), crossing=crossing))
            else:
                points.append(SupportPoint(Jb.actInv(xb), Ja.actInv(_held_at(xb, xa, -n)), owner=1, crossing=crossing))
        if deepest is not None:
            # coal's deepest point where an edge crosses the other's edge and no patch point is near
            # (the patch along the snapped normal misses it: a box's top edge through a leaning plank's side)
            ee = self._edge_crossing(edges_a, edges_b, deepest, n, near, Ma.translation)
            if ee is not None and all(np.linalg.norm(ee[5] - y) > near for y in snapped):
                a0, a1, b0, b1, sign, xa, xb = ee
                points.append(SupportPoint(Ja.actInv(xa), Jb.actInv(xb), crossing=True, edges=(
                    Ja.actInv(a0), Ja.actInv(a1), Jb.actInv(b0), Jb.actInv(b1), sign)))
        spare = []
        if full:
            self._add_left_out(points, ((verts_a, plane_b, n, isinstance(sb, coal.Box) and (sb, Mb), Ja, Jb),
                                        (verts_b, face_a, -n, (sa, Ma), Jb, Ja)), Ja, Jb, near)
            spare = [SupportPoint(Ja.actInv(x), Jb.actInv(plane_b)) for x in verts_a]
            spare += [SupportPoint(Jb.actInv(x), Ja.actInv(face_a), owner=1) for x in verts_b]
        region = Region.of_count(len(points), Region.FACE)
        faces = (face_b, face_a_l)
        return _PairContact(pair, (objs[ia].name, objs[ib].name), (ja, jb), nb, points, region, spare, faces,
                            Ja.rotation.T @ -n)

    def _add_left_out(self, points: list[SupportPoint], sides, Ja, Jb, near: float) -> None:
        """Add to ``points`` the vertices touching the other face that the patch left out (its points
        lie around the deepest one). ``sides``: per owner (A's vertices on B's plane, then B's on A's
        face), ``(vertices (k, 3) world, a point of the other's plane, its normal, the other's box
        and placement or False, the owner's and the other's joint placements)``."""
        for owner, (verts, plane, k, face, Jp, Jq) in enumerate(sides):
            for x in verts:
                if (x - plane) @ k > self.touch_distance or not _inside(face, x, self.touch_distance):
                    continue
                have = [Ja.act(p.local_a) if p.owner == 0 else Jb.act(p.local_a) for p in points]
                if all(np.linalg.norm(x - y) > near for y in have):
                    points.append(SupportPoint(Jp.actInv(x), Jq.actInv(_held_at(x, x - k * ((x - plane) @ k), k)), owner=owner))

    def _edge_crossing(self, edges_a, edges_b, p, n, near, center_a):
        """The edges of A and B through patch point p (world) when they cross at an angle, else None.

        Both edges pass within ``near`` of p, are not parallel, their closest points lie inside both
        segments (farther than ``near`` from the ends: a corner is a vertex point), and they are
        not both in the contact plane (normal n; such coplanar crossings are face points). Returns
        ``(a0, a1, b0, b1, sign, x_a, x_b)``: the edges' ends, the sign that makes ``sign e_A x e_B``
        point from B towards A (A's centre ``center_a`` on its positive side) and the closest points."""
        if not len(edges_a) or not len(edges_b):
            return None
        (a0, a1), (b0, b1) = _nearest_edge(edges_a, p), _nearest_edge(edges_b, p)
        u, w = a1 - a0, b1 - b0
        if _segment_distance(p, a0, u) > near or _segment_distance(p, b0, w) > near:
            return None
        c = np.cross(u, w)
        if np.linalg.norm(c) < PARALLEL_SIN * np.linalg.norm(u) * np.linalg.norm(w):
            return None  # (nearly) parallel: a line contact, its ends are the points
        if abs(n @ u) <= self.touch_distance and abs(n @ w) <= self.touch_distance:
            return None  # coplanar in the contact plane: a crossing point on a face
        s, t, inside = _closest_on_lines(a0, u, b0, w)
        if inside <= near:
            return None
        xa, xb = a0 + s * u, b0 + t * w
        sign = 1.0 if c @ (center_a - xa) > 0 else -1.0
        return a0, a1, b0, b1, sign, xa, xb

    @staticmethod
    def _owner(face_b, face_a, A: _Body, B: _Body, xa: np.ndarray, xb: np.ndarray, near: float) -> int:
        """Whose material point a patch point becomes: A's (0) on B's face or B's (1) on A's face.

        A corner of one face inside the other stays its own; a point on one face's boundary and well
        outside the other face is the other body's (where it lies on a face); a point on both faces' boundaries
        (an edge crossing an edge, or a corner on the other's edge) goes to the body in whose
        material it stays over the other face longer, judged by the relative sliding velocity:
        a block sliding over an edge rests on the edge's points, not on its own passing corners
        (which would leave the face at once, an event per step)."""
        mb, ma = _margin(face_b, B, xa[None])[0], _margin(face_a, A, xb[None])[0]
        if mb > near:
            return 0
        if ma > near:
            return 1
        # on one face's boundary and clearly off the other face: the point on the boundary (A's corner
        # beyond B's face is B's edge point on A's face), else its face guard starts below zero
        if mb < -near <= ma:
            return 1
        if ma < -near <= mb:
            return 0
        tau = RATE_STEP
        dv = A.velocity(xa[None])[0] - B.velocity(xa[None])[0]
        rate_a = _margin(face_b, B, (xa + tau * dv)[None])[0] - mb
        rate_b = _margin(face_a, A, (xb - tau * dv)[None])[0] - ma
        return 0 if rate_a >= rate_b else 1

    @staticmethod
    def _plane_point(sb, Mb, n):
        """A point (world, m) of the plane across n (world, unit, from B towards A) that a polyhedral
        patch is projected on: a half-space's surface, or the plane through the centre of the box's
        face that lies furthest along n (its support plane where n is that face's normal, as the
        snapped normals of two boxes are)."""
        if isinstance(sb, coal.Halfspace):
            return _Geometry._support_point(sb, Mb, n)
        h = np.asarray(sb.halfSide)
        return Mb.translation + n * np.max(np.abs(Mb.rotation.T @ n) * h)

    @staticmethod
    def _support_point(sb, Mb, n):
        """A point (world, m) of B's support plane along n (world, unit, from B towards A): a
        half-space's surface, or the plane through a box's face, edge or corner furthest along n
        (a ball's or a cylinder's normal from a box's edge or corner is no face's normal)."""
        if isinstance(sb, coal.Halfspace):
            nl = np.asarray(sb.n, dtype=float)
            return Mb.act(nl * float(sb.d))
        return Mb.translation + n * _box_support(np.asarray(sb.halfSide), Mb.rotation.T @ n)

    @staticmethod
    def _face(sb, Mb, Jb, n) -> _Face:
        h = np.asarray(sb.halfSide)
        loc = Mb.rotation.T @ n
        k = int(np.argmax(np.abs(loc)))
        others = [i for i in range(3) if i != k]
        center = Mb.translation + Mb.rotation[:, k] * math.copysign(h[k], loc[k])  # the face's own centre
        axes = np.array([Mb.rotation[:, i] for i in others])
        R = Jb.rotation.T
        return _Face(Jb.actInv(center), axes @ R.T, h[others])


def _face_on_face(sa, Ma: pin.SE3, sb, Mb: pin.SE3, n: np.ndarray) -> bool:
    """Whether two boxes both have a face normal to n (world, unit) within ``REPATCH_COS``."""
    if not isinstance(sa, coal.Box) or not isinstance(sb, coal.Box):
        return False
    return np.abs(n @ Ma.rotation).max() >= REPATCH_COS and np.abs(n @ Mb.rotation).max() >= REPATCH_COS


def _patch_origin(sa, Ma: pin.SE3, sb, Mb: pin.SE3, m: np.ndarray, tol: float) -> np.ndarray:
    """A contact point (m, world) of A and B touching along m (world, unit, from A towards B) from
    their placements alone: a lone corner of either support set, where two edges cross, else the
    middle of A's support set (or A's origin). coal's patch is the overlap of the two support sets
    in a plane through this point, and this point itself when the overlap is a point; the plane
    is at the level of A's support plane."""
    S1, S2 = _support_set(sa, Ma, m, tol), _support_set(sb, Mb, -m, tol)
    for S in (S1, S2):
        if S is not None and len(S) == 1:
            return S[0]
    if S1 is not None and S2 is not None and len(S1) == 2 and len(S2) == 2:
        u, w = S1[1] - S1[0], S2[1] - S2[0]
        u, w = u - m * (m @ u), w - m * (m @ w)  # (in the contact plane)
        if np.linalg.norm(np.cross(u, w)) >= PARALLEL_SIN * np.linalg.norm(u) * np.linalg.norm(w):
            s, t, _ = _closest_on_lines(S1[0], u, S2[0], w)
            return 0.5 * (S1[0] + s * u + S2[0] + t * w)
    if S1 is None:
        return Ma.translation.copy()
    c = S1.mean(axis=0)  # (at the level of A's support plane: patch points near a corner stay near it)
    return c + m * float((S1 @ m).max() - c @ m)


def _edge_on_face(sa, Ma: pin.SE3, sb, Mb: pin.SE3, n: np.ndarray, swap: bool) -> bool:
    """Whether the box that touches with an edge or a corner (no face within ``FACE_ANGLE`` of the
    normal n) is the one not snapped to: coal's patch along its own normal then lies in that box's
    face plane, millimetres off the other's face."""
    s, M = (sb, Mb) if swap else (sa, Ma)
    return isinstance(s, coal.Box) and float(np.abs(M.rotation.T @ n).max()) < math.cos(FACE_ANGLE)


def _patch_points(sa, Ma: pin.SE3, sb, Mb: pin.SE3, n: np.ndarray, preq) -> list[np.ndarray] | None:
    """coal's contact patch points (world, m) of A (sa at Ma) and B (sb at Mb) along the normal n
    (world, unit, from B towards A), None when coal finds no patch.

    coal's patch is computed from the contact it is given: here one built from n and
    :func:`_patch_origin`, never coal's own EPA contact. Near an exact touch (a brick resting on
    another) EPA's normal and point depend on memory left by earlier queries in the process
    (coal 3.0.x: the first brick-on-brick collide normal is off by 2.3e-6 in a fresh process and
    exact after a tilted box's patch on a half-space); a patch built from them made the brick
    stack's events depend on which scene ran before it (327, 442 or 447 events in 2 s)."""
    m = -n  # coal: from shape 1 (A) towards shape 2 (B)
    pos = _patch_origin(sa, Ma, sb, Mb, m, preq.getPatchTolerance())
    res = coal.CollisionResult()
    res.addContact(coal.Contact(sa, sb, -1, -1, pos, m, 0.0))
    pres = coal.ContactPatchResult()
    coal.computeContactPatch(sa, _se3_to_tf(Ma), sb, _se3_to_tf(Mb), res, preq, pres)
    if pres.numContactPatches() == 0:
        return None
    patch = pres.getContactPatch(0)
    return [np.asarray(patch.getPoint(k), dtype=float) for k in range(patch.size())]


def _margin(face: _Face | None, Q: _Body, x: np.ndarray) -> np.ndarray:
    """How far (m) world points x (k, 3) lie inside Q's finite face (in its plane), inf without one."""
    if face is None:
        return np.full(len(x), np.inf)
    if Q.world:  # (the fixed world's face is in world axes already: every step's guards ask)
        return (face.half - np.abs((x - face.center).dot(face.axes.T))).min(axis=1)
    r = x - Q.point(face.center)
    return (face.half - np.abs(r.dot(face.axes.dot(Q.R.T).T))).min(axis=1)


def _box_support(half: np.ndarray, local_n: np.ndarray) -> float:
    """How far (m) a box of half sides ``half`` (3,) reaches from its centre along the unit direction
    ``local_n`` (3,) (in the box's axes): ``sum |n_i| h_i``, through the face, edge or corner furthest
    along it. Along a face's normal the other axes' terms are round-off and left out, so the plane is
    the face's own to the last bit."""
    a = np.abs(local_n) * half
    top = float(a.max())
    rest = float(a.sum()) - top
    return top + rest if rest > SUPPORT_ROUNDOFF * top else top


def _held_at(x: np.ndarray, o: np.ndarray, k: np.ndarray, radius: float = 0.0) -> np.ndarray:
    """The other body's point (world, m) under a support point x: o, the surface point under x along
    the normal k, moved down by the point's depth when x (less ``radius``) lies below that surface,
    so the point is held at the depth it was found at: closing that depth would lift the body by
    its weight times the depth, work that no impact or force did."""
    gap = float(k @ (x - o)) - radius
    return o + gap * k if gap < 0.0 else o


def _dedupe(pts, tol=POINT_TOL):
    out = []
    for p in pts:
        if all(np.linalg.norm(p - q) > tol for q in out):
            out.append(p)
    return out


def _region(X: np.ndarray, tol: float = REGION_TOL) -> Region:
    """``vertex``, ``edge`` or ``face``: the affine dimension of support points X (k, 3) (m)."""
    if len(X) <= 1:
        return Region.VERTEX
    sv = np.linalg.svd(X - X.mean(axis=0), compute_uv=False)
    return Region.of_count(int(np.sum(sv > tol)) + 1, Region.VERTEX)
