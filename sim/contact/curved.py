"""Contact geometry of a cylinder (A) on a box or a half-space (B): its support points by the
region that touches, with the exact normal, and the stick rows of a rolling line contact.

A cylinder touches a flat surface in one of three ways, told by the angle between its axis a
and the contact normal n (world, from B towards A):

- **side** (``|a . n| <= SIDE_SIN``): a line along a generator. Its support points are points of
  the *axis* (material points that a turn about the axis does not move) with the cylinder's
  radius, as a ball's centre is: the contact point is ``x - r n`` (rolling keeps them valid);
  the line's ends are coal's patch points projected on the axis;
- **face** (``|a . n| >= 1 - SIDE_SIN``): the cap flat on the surface: ``RIM_POINTS`` material
  points on its rim, held as a box's face corners are;
- **rim** (between): the lowest point of the lower cap's rim, a vertex.

The other cap-rim points (a ``RIM_POINTS``-gon per cap) are the spare vertices: a tipping
cylinder comes down on them as a box comes down on its corners. The normal is exact: a
half-space's own, or for a box the direction from the box's point nearest to the axis (a face's
normal over a face; from an edge over an edge, as for a ball, :func:`_ball_on_box_normal`).
"""
from __future__ import annotations

import math

import coal
import numpy as np
import pinocchio as pin

from controlkit.vec3 import cross

from .bodies import _Body
from .rows import _rolling_rows

#: dimensionless: a cylinder's axis within this sine of the contact plane lies on its side (a line
#: contact); within this of the normal, stands on its cap (r sin^2 / 2 = 1.25e-8 m at r = 2.5 cm)
SIDE_SIN = 1e-3
#: how many points on each cap's rim: the support of a standing cylinder, the spares of the others
RIM_POINTS = 12
#: dimensionless: a box-offset component below this fraction of the offset is the search's round-off
SNAP = 1e-6
#: ternary-search steps for the axis point nearest to a box (interval shrinks by (2/3)^steps)
NEAREST_STEPS = 80


def rim_points(cyl: coal.Cylinder, sign: float) -> np.ndarray:
    """The ``RIM_POINTS`` rim points (k, 3) of a cylinder's cap at ``z = sign * halfLength`` (m,
    the geometry's frame, axis z)."""
    ang = 2.0 * math.pi * np.arange(RIM_POINTS) / RIM_POINTS
    r, h = float(cyl.radius), float(cyl.halfLength)
    return np.column_stack([r * np.cos(ang), r * np.sin(ang), np.full(RIM_POINTS, sign * h)])


def _box_offset(box: coal.Box, M: pin.SE3, x: np.ndarray) -> np.ndarray:
    """The vector (world, m) from a box's nearest point to the world point x (0 inside)."""
    loc = M.rotation.T @ (x - M.translation)
    h = np.asarray(box.halfSide)
    return M.rotation @ (loc - np.clip(loc, -h, h))


def cylinder_normal(cyl: coal.Cylinder, Ma: pin.SE3, sb, Mb: pin.SE3) -> np.ndarray | None:
    """The unit contact normal (world, from B towards the cylinder) of a cylinder at Ma on a
    half-space or a box sb at Mb; None when the cylinder's axis reaches into the box.

    For a box: from the box's point nearest to the axis segment (a convex function of the axis
    parameter: ternary search) towards that axis point. Over a face only one coordinate is
    clipped: the face's normal exactly; over an edge it is normal to the edge."""
    if isinstance(sb, coal.Halfspace):
        return Mb.rotation @ np.asarray(sb.n, dtype=float)
    c, a, h = Ma.translation, Ma.rotation[:, 2], float(cyl.halfLength)
    lo, hi = -h, h
    for _ in range(NEAREST_STEPS):
        m1, m2 = lo + (hi - lo) / 3.0, hi - (hi - lo) / 3.0
        if np.linalg.norm(_box_offset(sb, Mb, c + m1 * a)) <= np.linalg.norm(_box_offset(sb, Mb, c + m2 * a)):
            hi = m2
        else:
            lo = m1
    x = c + 0.5 * (lo + hi) * a
    loc = Mb.rotation.T @ (x - Mb.translation)
    d = loc - np.clip(loc, -np.asarray(sb.halfSide), np.asarray(sb.halfSide))
    nd = float(np.linalg.norm(d))
    if nd == 0.0:
        return None
    # (over a face parallel to the axis the distance is flat along it: the search may end a hair
    # past the face's end, a component of order its resolution, which is the face's normal's)
    d[np.abs(d) <= SNAP * nd] = 0.0
    return Mb.rotation @ (d / np.linalg.norm(d))


def classify(a: np.ndarray, n: np.ndarray) -> str:
    """``"side"``, ``"face"`` or ``"rim"``: how a cylinder with axis a (world, unit) touches a
    surface of normal n (see the module docstring)."""
    s = abs(float(a @ n))
    return "side" if s <= SIDE_SIN else "face" if s >= 1.0 - SIDE_SIN else "rim"


def cylinder_points(cyl: coal.Cylinder, Ma: pin.SE3, n: np.ndarray, plane_b: np.ndarray, pts, near: float,
                    inside) -> tuple[str, list[tuple[np.ndarray, float]], np.ndarray]:
    """The support points of a cylinder at Ma on a surface through ``plane_b`` (m, world) with
    normal n (world, unit).

    Args:
        pts: coal's patch points (world); near: how far (m) from the surface a rim point touches;
        inside: ``inside(x)``: whether world point x lies over B's face.
    Returns ``(kind, [(world point of A, radius)], spare world points of A (k, 3))``: for a side
    contact points on the axis with the radius, otherwise rim points with radius 0."""
    a, c, h, r = Ma.rotation[:, 2], Ma.translation, float(cyl.halfLength), float(cyl.radius)
    kind = classify(a, n)
    rims = np.vstack([rim_points(cyl, 1.0), rim_points(cyl, -1.0)]) @ Ma.rotation.T + c
    if kind == "side":
        s = sorted({round(float(np.clip((p - c) @ a, -h, h)), 12) for p in pts}) or [0.0]
        s = [s[0], s[-1]] if s[-1] - s[0] > 1e-9 else [s[0]]
        return kind, [(c + x * a, r) for x in s], rims
    if kind == "face":
        sign = -1.0 if (a @ n) > 0 else 1.0  # the cap facing B
        ring = rim_points(cyl, sign) @ Ma.rotation.T + c
        touch = [x for x in ring if (x - plane_b) @ n <= near and inside(x)]
        if touch:
            return kind, [(x, 0.0) for x in touch], rims
        kind = "rim"
    sign = -1.0 if (a @ n) > 0 else 1.0
    u = n - (n @ a) * a
    x = c + sign * h * a - r * u / np.linalg.norm(u)
    return kind, [(x, 0.0)], rims


def line_rolling_block(h, A: _Body, B: _Body, n: np.ndarray, k: int):
    """Stick rows of a cylinder's side on a surface (n fixed in B): no slip at the current middle
    of the contact line (:func:`_rolling_rows`: the line's middle moves over both bodies as the
    cylinder rolls) and, when ``k == 3``, no turn about the normal (a line resists a twist).
    Returns ``(phi, J, drift, G)`` with k rows."""
    la = np.mean([p.local_a for p in h.points], axis=0)[None]
    r = h.points[0].radius
    c = A.point(la)
    vc = A.velocity(c)[0]
    c = c[0]
    T = h._tangent_basis(B, n)
    ndot = cross(B.w, n)
    tdot = np.array([cross(B.w, t) for t in T])
    JD = np.empty((k, h.mech.nv + 1))
    JD[:2] = _rolling_rows(A, B, c - r * n, vc - r * ndot, T, tdot)
    if k == 3:
        JD[2] = A.JA[3:].T.dot(n)  # n . (w_A - w_B), its drift n . alpha
        if not B.world:
            JD[2] -= B.JA[3:].T.dot(n)
            JD[2, -1] += ndot.dot(A.w - B.w)
    J = JD[:, :-1]
    return np.zeros(k), J, JD[:, -1], J
