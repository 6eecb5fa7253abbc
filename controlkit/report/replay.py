"""Offline replay: one self-contained HTML file that plays a recording in any browser.

The file holds meshcat's viewer code, the mechanism's visual meshes and a meshcat
animation of the decimated recording, all inline (meshes and commands as base64
data); it plays from ``file://`` with no server and no network access, and its
Content-Security-Policy forbids the browser to fetch anything. The scene is built
in memory (no meshcat server is started); hidden collision geometry is left out.

Example::

    export_html(mech, rec, "out/walk.html", fps=30, frames=["l_sole"],
                arrows={"contacts": ("contact points", "contact forces")})
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import pinocchio as pin
from meshcat.animation import Animation

from . import _meshcat as mc
from . import _stage as stage
from ._errors import ReportError
from .viewer import _check_recording

#: a trace longer than this many points is thinned before it is drawn
MAX_TRACE_POINTS = 10_000
#: with ``arrow_scale=None`` the largest arrow of the run is drawn this long (m)
AUTO_ARROW_LENGTH = 0.3


def export_html(
    mechanism,
    recording,
    path,
    *,
    fps: float = 30.0,
    frames: Iterable[str] = (),
    traces: Mapping[str, str] | None = None,
    arrows: Mapping[str, tuple[str, str]] | None = None,
    arrow_scale: float | None = None,
    frame_length: float = 0.1,
    max_frames: int = 3000,
    camera="auto",
    compact_meshes: bool = True,
    autoplay: bool = True,
    title: str | None = None,
    follow: bool | None = None,
    floor: bool = True,
    loop: bool = True,
) -> Path:
    """Write a self-contained HTML replay of ``recording`` and return its path.

    Args:
        mechanism: the :class:`~controlkit.mechanism.Mechanism` the recording was made with.
        recording: the :class:`~controlkit.recording.Recording` to replay.
        path: the HTML file to write (parent folders are created).
        fps: animation frames per simulated second (``recording.frame_indices(fps)``);
            playback runs at simulated time whatever the decimation.
        frames: frame/feature names whose x/y/z axes are drawn, moving with the robot.
        traces: ``{name: quantity}`` polylines through a recorded (N, 3) quantity (m),
            e.g. an end-effector position, drawn whole.
        arrows: ``{name: (points quantity, vectors quantity)}`` animated arrows; both
            quantities are (N, 3k) for k arrows (k contact points); NaN rows hide an arrow.
        arrow_scale: metres of arrow per unit of vector (e.g. m/N); default: the run's
            largest vector is drawn ``AUTO_ARROW_LENGTH`` long.
        frame_length: length of the frame axes (m).
        max_frames: upper bound on animation frames; a longer run is decimated further.
        camera: ``"auto"`` (frame the robot's whole motion), None (meshcat's default
            camera) or ``(position, target)`` in world coordinates (m, z up).
        compact_meshes: send mesh files as their loaded triangles (default): complete
            shapes in ``meshColor``, about 3x smaller for Collada files. False inlines the
            mesh files with their own materials and textures, but meshcat 0.3.2's viewer
            drops the parts of multi-material Collada meshes (e.g. the UR5's housings).
        autoplay: start playing when the page opens.
        title: page title (default: the mechanism's name).
        follow: start with the camera following the robot (it keeps its angle and
            distance and moves with the robot's smoothed centre); None (default): follow
            when ``camera`` is ``"auto"`` and the robot travels farther than half its own
            size (a walking biped, not a fixed-base arm). The page's "follow robot" box
            switches between the following camera and the fixed view of the whole motion.
        floor: draw a floor (sand colour with a grid) under the robot's whole path, just
            below the lowest point it reaches, instead of meshcat's 20 m x 20 m grid.
        loop: the animation repeats (the page's "loop" box turns it off).

    The page opens with its controls shown (play, pause, time, speed, follow, loop) and
    publishes ``window.controlkit_replay`` (frames, duration, camera, floor, follow track).
    """
    _check_recording(mechanism, recording)
    if not fps > 0:
        raise ReportError(f"export_html: fps must be positive, got {fps}")
    if int(max_frames) < 2:
        raise ReportError(f"export_html: max_frames must be at least 2, got {max_frames}")
    frames = list(frames)
    frame_ids = {name: mechanism.frame_id(name) for name in frames}
    trace_data = {name: _trace_points(recording, name, q) for name, q in (traces or {}).items()}
    arrow_data = {name: _arrow_quantities(recording, name, pq, vq) for name, (pq, vq) in (arrows or {}).items()}

    t, Q = recording.t, recording.q
    idx = recording.frame_indices(fps)
    if len(idx) > max_frames:
        idx = np.unique(idx[np.round(np.linspace(0, len(idx) - 1, int(max_frames))).astype(int)])
    t0 = t[idx[0]]

    scale = arrow_scale
    if scale is None:
        scale = _auto_arrow_scale([V[idx] for _, V in arrow_data.values()])
    elif not scale > 0:
        raise ReportError(f"export_html: arrow_scale must be positive, got {arrow_scale}")

    vis, scene = mc.offline_visualizer()
    viz = mc.robot_visualizer(mechanism, vis, compact_meshes=compact_meshes)
    data = viz.data

    for name, pts in trace_data.items():
        vis[mc.trace_path(name)].set_object(mc.line_object(pts))
    for name in frames:
        vis[mc.frame_path(name)].set_object(mc.triad_object(frame_length))
    for name, (P, _) in arrow_data.items():
        for i in range(P.shape[1] // 3):
            vis[mc.arrow_path(name, i)].set_object(mc.arrow_object())

    # The still scene shows the first frame (what a browser shows before the animation runs).
    _show(viz, vis, Q[idx[0]], idx[0], frame_ids, arrow_data, scale)

    anim = Animation(default_framerate=fps)
    corners = mc.local_box_corners(viz.visual_model)
    seen = []
    for i in idx:
        view = anim.at_frame(vis, float((t[i] - t0) * fps))
        _show(viz, view, Q[i], i, frame_ids, arrow_data, scale, animated=True)
        seen.append(np.concatenate([mc.world_box_corners(corners, viz.visual_data.oMg),
                                    np.array([M.translation for M in data.oMi[1:]]).reshape(-1, 3)]))
    viz.viewer = vis
    if len(idx) > 1:
        # Infinity repetitions: three.js' LoopRepeat without end (msgpack carries the float)
        vis.set_animation(anim, play=autoplay, repetitions=float("inf") if loop else 1)

    lo, hi = stage.robot_boxes(seen)
    if follow is None and not (isinstance(camera, str) and camera == "auto"):
        follow = False  # a camera the caller placed is the view they asked for
    stage_info = _stage(vis, t[idx] - t0, lo, hi, seen, floor, follow)
    cam = None
    if isinstance(camera, str) and camera == "auto":
        some = np.unique(np.round(np.linspace(0, len(seen) - 1, min(len(seen), 100))).astype(int))
        cam = mc.auto_camera(np.concatenate([seen[k] for k in some]))
    elif camera is not None:
        try:
            position, target = (np.asarray(x, dtype=float).reshape(3) for x in camera)
        except (TypeError, ValueError) as exc:
            raise ReportError(f"export_html: camera must be 'auto', None or (position, target), got {camera!r}") from exc
        if np.linalg.norm(position - target) < 1e-9:
            raise ReportError(f"export_html: camera position {position.tolist()} coincides with its target")
        cam = (position, target)

    info = {
        "mechanism": mechanism.name,
        "frames": int(len(idx)),
        "fps": float(fps),
        "duration": float(t[idx[-1]] - t0),
        "start_time": float(t0),
        "visuals": [g.name for g in viz.visual_model.geometryObjects],
        "arrow_scale": float(scale),
        "loop": bool(loop),
        **stage_info,
    }
    if cam is not None:
        info["camera"] = {"position": [float(x) for x in cam[0]], "target": [float(x) for x in cam[1]]}
    text = mc.static_html(scene, title or f"{mechanism.name} - controlkit replay", info)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------- internals
def _stage(vis, times: np.ndarray, lo: np.ndarray, hi: np.ndarray, seen: list[np.ndarray], floor: bool,
           follow: bool | None) -> dict:
    """Draw the floor; return the page's ``floor`` and ``follow`` information."""
    out: dict = {}
    if floor:
        xy_lo, xy_hi, z = stage.floor_extent(lo, hi)
        slab, lines, step = stage.floor_objects(xy_lo, xy_hi, z)
        vis[mc.FLOOR_PATH + "/slab"].set_object(slab)
        vis[mc.FLOOR_PATH + "/slab"].set_transform(stage.slab_transform(xy_lo, xy_hi, z))
        vis[mc.FLOOR_PATH + "/grid"].set_object(lines)
        for hidden in ("/Grid", "/Axes"):  # meshcat's own 20 m grid ends under a walking robot
            vis[hidden].set_property("visible", False)
        out["floor"] = {"lower": [float(x) for x in xy_lo], "upper": [float(x) for x in xy_hi], "z": z,
                        "grid": step, "color": f"#{stage.FLOOR_COLOR:06x}"}
    targets, offset, travels = stage.follow_track(times, lo, hi, seen)
    # the track is sampled at most ~10 times per second: the page interpolates linearly
    keep = np.unique(np.concatenate([np.searchsorted(times, np.arange(times[0], times[-1], 0.1)),
                                     [len(times) - 1]]))
    out["follow"] = {
        "on": bool(travels if follow is None else follow),
        "times": [round(float(x), 4) for x in times[keep]],
        "targets": [[round(float(v), 4) for v in p] for p in targets[keep]],
        "offset": [float(x) for x in offset],
    }
    return out


def _show(viz, view, q, i, frame_ids, arrow_data, scale, animated: bool = False) -> None:
    """Place robot, frame triads and arrows of sample ``i`` into ``view`` (a scene or an animation frame)."""
    viz.viewer = view
    viz.display(q)  # forward kinematics into viz.data, then every visual's transform
    if frame_ids:
        pin.updateFramePlacements(viz.model, viz.data)
        for name, fid in frame_ids.items():
            view[mc.frame_path(name)].set_transform(viz.data.oMf[fid].homogeneous)
    for name, (P, V) in arrow_data.items():
        for k in range(P.shape[1] // 3):
            node = view[mc.arrow_path(name, k)]
            pose = mc.arrow_pose(P[i, 3 * k:3 * k + 3], V[i, 3 * k:3 * k + 3], scale)
            if animated:
                R, p, length = pose if pose is not None else (np.eye(3), np.zeros(3), 1e-6)
                node.set_transform(mc.homogeneous(R, p))
                node.set_property("scale", "vector3", [1.0, 1.0, float(length)])
                node.set_property("visible", "boolean", pose is not None)
            elif pose is None:
                node.set_property("visible", False)
            else:
                R, p, length = pose
                node.set_transform(mc.homogeneous(R, p, (1.0, 1.0, length)))


def _trace_points(recording, name: str, quantity: str) -> np.ndarray:
    X = recording.quantity(quantity)
    if X.shape[1] != 3:
        raise ReportError(f"trace {name!r}: quantity {quantity!r} has {X.shape[1]} components, expected 3 (a point)")
    if len(X) > MAX_TRACE_POINTS:
        X = X[np.unique(np.round(np.linspace(0, len(X) - 1, MAX_TRACE_POINTS)).astype(int))]
    return X


def _arrow_quantities(recording, name: str, points: str, vectors: str) -> tuple[np.ndarray, np.ndarray]:
    P, V = recording.quantity(points), recording.quantity(vectors)
    if P.shape != V.shape or P.shape[1] % 3:
        raise ReportError(
            f"arrows {name!r}: points {points!r} {P.shape[1:]} and vectors {vectors!r} {V.shape[1:]} "
            "must both have 3k components (k arrows)")
    return P, V


def _auto_arrow_scale(vector_samples: list[np.ndarray]) -> float:
    biggest = 0.0
    for V in vector_samples:
        if V.size:
            n = np.linalg.norm(V.reshape(len(V), -1, 3), axis=2)
            if np.any(np.isfinite(n)):
                biggest = max(biggest, float(np.nanmax(n)))
    return AUTO_ARROW_LENGTH / biggest if biggest > 0 else 1e-3
