"""Points of a box (and a cylinder's support set) in world coordinates: vertices, edges, the
support set along a direction, where a line enters a box, whether a point lies over it. Plain
functions of a coal shape and its placement (``pin.SE3``), used by :mod:`sim.contact.geometry`."""
from __future__ import annotations

import itertools
import math

import coal
import numpy as np
import pinocchio as pin

from ..collision import _dot3

#: a face whose normal lies within this sine of perpendicular to a line is passed along, not
#: crossed, by :func:`_entry_point`
ENTRY_SIN = 1e-3


def _box_vertices(box: coal.Box) -> np.ndarray:
    h = np.asarray(box.halfSide)
    return np.array(list(itertools.product(*[(-x, x) for x in h])))


def _support_set(shape, M: pin.SE3, d: np.ndarray, tol: float) -> np.ndarray | None:
    """The corners (k, 3) (m, world) of a box at M within ``tol`` (m) of its support plane along the
    unit direction d (coal's rule for a box's support set); for a cylinder its side's segment (2, 3),
    its rim's point (1, 3) or its cap's centre (1, 3) when the cap faces d; None for other shapes."""
    if isinstance(shape, coal.Cylinder):
        a, c, h, r = M.rotation[:, 2], M.translation, float(shape.halfLength), float(shape.radius)
        da = float(d @ a)
        top = c + (h if da >= 0.0 else -h) * a
        u = d - da * a
        nu = float(np.linalg.norm(u))
        if nu * r <= tol:  # (the cap: coal's patch is a polygon; its centre for the plane)
            return top[None]
        u /= nu
        if abs(da) * 2.0 * h < tol:  # the side's line
            return np.array([c - h * a + r * u, c + h * a + r * u])
        return (top + r * u)[None]
    if not isinstance(shape, coal.Box):
        return None
    V = _box_vertices(shape) @ M.rotation.T + M.translation
    val = V @ d
    return V[val.max() - val < tol]


def _ball_on_box_normal(c: np.ndarray, box: coal.Box, M: pin.SE3) -> np.ndarray | None:
    """The unit normal (world) from a box's nearest point towards a ball's centre c (m, world),
    None when c is inside the box. On a face it is the face's normal; over an edge or a corner it
    points from that edge or corner (a face's normal there would let the ball sink into the edge
    while its row held it on the face's plane)."""
    local = M.rotation.T @ (c - M.translation)
    h = np.asarray(box.halfSide)
    d = local - np.clip(local, -h, h)
    nd = float(np.linalg.norm(d))
    if nd == 0.0:
        return None
    return M.rotation @ (d / nd)


#: the corner pairs (12, 2) of :func:`_box_vertices` that are a box's edges
_EDGES = np.array([(i, j) for i, j in itertools.combinations(range(8), 2) if (i ^ j) in (1, 2, 4)])


def _box_edges(box: coal.Box, M: pin.SE3) -> np.ndarray:
    """The 12 edges of a placed box: their ends (12, 2, 3) (m, world)."""
    V = _box_vertices(box) @ M.rotation.T + M.translation
    return V[_EDGES]


def _segment_distance(p: np.ndarray, a: np.ndarray, u: np.ndarray) -> float:
    """Distance (m) of point p from the segment from a along u."""
    s = min(max((p - a) @ u / (u @ u), 0.0), 1.0)
    return float(np.linalg.norm(p - a - s * u))


def _nearest_edge(edges: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The edge (2, 3) of ``edges`` (k, 2, 3) nearest to point p (all k at once)."""
    a = edges[:, 0]
    u = edges[:, 1] - a
    r = p - a
    s = np.clip(_dot3(r, u) / _dot3(u, u), 0.0, 1.0)
    r -= s[:, None] * u
    return edges[int(np.argmin(_dot3(r, r)))]


def _entry_point(box: coal.Box, M: pin.SE3, p: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Where the line through p (world, m) along n (world, unit) enters the box (at M) coming from
    the -n side: the largest crossing of the faces that face -n, with p first moved into the box's
    extent across the faces parallel to n (a patch point just outside a side stays on that side)."""
    h = np.asarray(box.halfSide)
    nl = M.rotation.T @ n
    pl = np.clip(M.rotation.T @ (p - M.translation), -h, h)
    crossing = [(-math.copysign(h[k], nl[k]) - pl[k]) / nl[k] for k in range(3) if abs(nl[k]) > ENTRY_SIN]
    return M.act(pl) + max(crossing) * n


def _inside(face, x: np.ndarray, tol: float) -> bool:
    """Whether world point x lies over a box's face (``(box, placement)``; False means not a box: inside)."""
    if face is False or face is None:
        return True
    box, M = face
    loc = M.rotation.T @ (x - M.translation)
    return bool(np.all(np.abs(loc) <= np.asarray(box.halfSide) + tol))
