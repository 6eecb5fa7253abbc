"""The replay's stage: a floor under the robot's whole path and a camera that follows it.

Both are computed from the robot's world bounding boxes at the replay's frames:

- :func:`robot_boxes` — per frame, the lower and upper corner of the box around every
  visual geometry (m, world frame);
- :func:`floor_objects` — a flat, unlit floor (one colour, so a picture can tell it from
  the sky and the robot) with a grid of thin lines, covering the path plus a margin, just
  under the lowest point the robot reaches; meshcat's own 20 m x 20 m grid is hidden;
- :func:`follow_track` — the camera's target over time (the box centre, smoothed over
  about a second so the view does not shake with each step) and the camera offset that
  frames one robot rather than the whole path.
"""
from __future__ import annotations

import warnings

import numpy as np

with warnings.catch_warnings():  # meshcat's package imports a deprecated pyzmq module
    warnings.simplefilter("ignore", DeprecationWarning)
    import meshcat.geometry as mg

#: the floor's colour (sand) and the colour of its grid lines, as 0xRRGGBB
FLOOR_COLOR = 0xD9C8A9
FLOOR_LINE_COLOR = 0xB8A27E
#: at most this many grid lines along each side of the floor
MAX_FLOOR_LINES = 200
#: the camera looks along this direction (world frame, from the target towards the camera)
VIEW_DIRECTION = np.array([2.0, 1.2, 1.0]) / np.linalg.norm([2.0, 1.2, 1.0])
#: the half-angle (deg) of the cone that framed points stay in: 95 % of meshcat's 37.5 deg
#: vertical half-view (a window wider than tall shows all of it)
HALF_VIEW_DEG = 0.95 * 37.5
#: the width / height of the window the camera frames for (a narrower window cuts the sides)
ASPECT = 4.0 / 3.0


def robot_boxes(corner_sets: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(lower (F, 3), upper (F, 3)) corners of each frame's world bounding box (m).

    ``corner_sets`` holds one (n, 3) array of world points per frame; non-finite points are ignored.
    """
    lo, hi = np.zeros((len(corner_sets), 3)), np.zeros((len(corner_sets), 3))
    for k, pts in enumerate(corner_sets):
        pts = pts[np.all(np.isfinite(pts), axis=1)]
        if len(pts) == 0:
            pts = np.zeros((1, 3))
        lo[k], hi[k] = pts.min(axis=0), pts.max(axis=0)
    return lo, hi


def robot_size(lo: np.ndarray, hi: np.ndarray) -> float:
    """The largest diagonal of one frame's bounding box (m), at least 0.1 m."""
    return max(float(np.max(np.linalg.norm(hi - lo, axis=1))), 0.1)


def floor_extent(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(xy lower corner, xy upper corner, height z) of a floor under the whole path (m)."""
    size = robot_size(lo, hi)
    margin = max(1.5 * size, 1.0)  # the floor reaches well behind the robot, not just under it
    xy_lo = lo[:, :2].min(axis=0) - margin
    xy_hi = hi[:, :2].max(axis=0) + margin
    z = float(lo[:, 2].min()) - 0.002 * size  # just under the soles: no flicker where they touch
    return xy_lo, xy_hi, z


def floor_objects(xy_lo, xy_hi, z: float) -> tuple[mg.Mesh, mg.LineSegments, float]:
    """(floor slab, grid lines, grid spacing m) covering [xy_lo, xy_hi] with its top at height ``z``."""
    xy_lo, xy_hi = np.asarray(xy_lo, dtype=float), np.asarray(xy_hi, dtype=float)
    span = xy_hi - xy_lo
    thickness = 0.01
    slab = mg.Mesh(mg.Box([float(span[0]), float(span[1]), thickness]),
                   mg.MeshBasicMaterial(color=FLOOR_COLOR))
    step = _nice_step(max(float(span.max()) / MAX_FLOOR_LINES, 0.25 if span.max() < 40 else 1.0))
    segments = []
    lift = z + 0.002  # just above the slab's top
    for x in np.arange(np.ceil(xy_lo[0] / step) * step, xy_hi[0], step):
        segments += [[x, xy_lo[1], lift], [x, xy_hi[1], lift]]
    for y in np.arange(np.ceil(xy_lo[1] / step) * step, xy_hi[1], step):
        segments += [[xy_lo[0], y, lift], [xy_hi[0], y, lift]]
    pts = np.array(segments, dtype=np.float32).reshape(-1, 3)
    lines = mg.LineSegments(mg.PointsGeometry(pts.T), mg.LineBasicMaterial(color=FLOOR_LINE_COLOR))
    return slab, lines, step


def slab_transform(xy_lo, xy_hi, z: float) -> np.ndarray:
    """The floor slab's placement (4, 4): centred on the area, its top face at height ``z``."""
    T = np.eye(4)
    T[:2, 3] = 0.5 * (np.asarray(xy_lo) + np.asarray(xy_hi))
    T[2, 3] = z - 0.005
    return T


def follow_track(times: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 points: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, bool]:
    """(targets (F, 3) m, camera offset (3,) m, travels) of a camera that follows the robot.

    The targets are the bounding boxes' centres smoothed by a centred moving average of
    about one second; the offset places the camera so every frame's ``points`` (n, 3),
    taken about their own box centre, stay in view. ``travels`` says whether the robot
    moves farther than half its own size (a fixed-base arm does not: following it would
    only sway the view).
    """
    centres = 0.5 * (lo + hi)
    n = len(centres)
    if n > 2:
        dt = float(np.median(np.diff(times))) if np.any(np.diff(times) > 0) else 1.0
        half = max(int(round(0.5 / max(dt, 1e-9))), 0)
        c = np.cumsum(np.vstack([np.zeros(3), centres]), axis=0)
        k = np.arange(n)
        a, b = np.clip(k - half, 0, n), np.clip(k + half + 1, 0, n)
        smooth = (c[b] - c[a]) / (b - a)[:, None]
    else:
        smooth = centres
    some = np.unique(np.round(np.linspace(0, n - 1, min(n, 100))).astype(int)) if n else []
    rel = [points[k] - smooth[k] for k in some]
    distance = fit_distance(np.concatenate(rel) if rel else np.zeros((1, 3)), VIEW_DIRECTION)
    travel = float(np.max(np.linalg.norm(smooth[:, :2] - smooth[0, :2], axis=1))) if n else 0.0
    return smooth, distance * VIEW_DIRECTION, travel > 0.5 * robot_size(lo, hi)


def fit_distance(points: np.ndarray, direction: np.ndarray, min_distance: float = 0.3) -> float:
    """The camera distance (m) along unit ``direction`` at which ``points`` (n, 3), relative to
    the target, all lie in view: within ``HALF_VIEW_DEG`` of the line of sight vertically and
    within the matching half-angle of a ``ASPECT``-wide window horizontally.

    A point ``p`` is at depth ``d - p.v`` and off the axis by ``p.r`` (right) and ``p.u`` (up),
    so ``d >= p.v + |p.u| / tan(vertical) `` and ``d >= p.v + |p.r| / tan(horizontal)``.
    """
    v = np.asarray(direction, dtype=float)
    right = np.cross(v, [0.0, 0.0, 1.0])
    right = right / np.linalg.norm(right) if np.linalg.norm(right) > 1e-9 else np.array([1.0, 0.0, 0.0])
    up = np.cross(right, v)
    tan_v = np.tan(np.radians(HALF_VIEW_DEG))
    along = points @ v
    need = np.maximum(np.abs(points @ up) / tan_v, np.abs(points @ right) / (tan_v * ASPECT)) + along
    return max(float(need.max()) if len(need) else 0.0, min_distance)


def frame_points(points: np.ndarray, direction: np.ndarray = VIEW_DIRECTION) -> tuple[np.ndarray, np.ndarray]:
    """(position, target) of a camera looking along ``direction`` that frames ``points`` (n, 3), m.

    Starts from the bounding-box centre and shifts the target (three rounds) until the
    points' extents in the picture are balanced left/right and up/down, then moves as
    close as :func:`fit_distance` allows.
    """
    v = np.asarray(direction, dtype=float)
    right = np.cross(v, [0.0, 0.0, 1.0])
    right = right / np.linalg.norm(right) if np.linalg.norm(right) > 1e-9 else np.array([1.0, 0.0, 0.0])
    up = np.cross(right, v)
    target = 0.5 * (points.min(axis=0) + points.max(axis=0))
    for _ in range(3):
        d = fit_distance(points - target, v)
        rel = points - (target + d * v)
        depth = np.maximum(-(rel @ v), 1e-9)
        x, y = (rel @ right) / depth, (rel @ up) / depth
        target = target + 0.5 * d * ((x.min() + x.max()) * right + (y.min() + y.max()) * up)
    return target + fit_distance(points - target, v) * v, target


def _nice_step(x: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is >= x."""
    p = 10.0 ** np.floor(np.log10(x))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if m * p >= x - 1e-12:
            return float(m * p)
    return float(10 * p)
