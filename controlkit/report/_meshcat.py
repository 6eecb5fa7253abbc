"""Meshcat plumbing shared by the live :class:`~controlkit.report.viewer.Viewer` and the offline replay.

- :class:`SceneRecorder` is a meshcat "window" that keeps the scene tree in memory
  (the same bookkeeping the meshcat server does) instead of talking to a server, and
  writes it out as one self-contained HTML page. Exporting a replay therefore never
  starts a server process.
- :func:`robot_visualizer` loads a mechanism's visual geometry into a meshcat
  visualizer with ``pinocchio.visualize.MeshcatVisualizer``.
- The overlay helpers build the objects drawn on top of the robot (force arrows,
  frame triads, trajectory lines) and their poses.

Scene paths: the robot lives under ``/meshcat/pinocchio/visuals/<geometry name>``
(pinocchio's layout), overlays under ``/meshcat/controlkit/{arrows,frames,traces}/<name>``.
"""
from __future__ import annotations

import base64
import html as _html
import json
import os
import warnings

import coal
import numpy as np
import pinocchio as pin
import umsgpack

with warnings.catch_warnings():  # meshcat's server module imports a deprecated pyzmq module
    warnings.simplefilter("ignore", DeprecationWarning)
    import meshcat
    import meshcat.geometry as mg
    from meshcat.servers.tree import SceneTree, find_node, walk
    from pinocchio.visualize import MeshcatVisualizer

from ._errors import ReportError

ROBOT_ROOT = "pinocchio"
OVERLAY_ROOT = "controlkit"
FLOOR_PATH = "controlkit/floor"
CAMERA_NODE = "/Cameras/default"
CAMERA_OBJECT = "/Cameras/default/rotated/<object>"

VIEWER_JS = os.path.join(os.path.dirname(meshcat.__file__), "viewer", "dist", "main.min.js")

ARROW_COLOR = 0xE03020
TRACE_COLOR = 0x2060D0


# --------------------------------------------------------------------- offline scene
class SceneRecorder:
    """A meshcat window that records commands into a scene tree instead of sending them.

    It mirrors ``meshcat.servers.zmqserver.ZMQWebSocketBridge``'s bookkeeping: an object
    replaces the node's object and its properties, a transform replaces the node's
    transform, properties accumulate, ``delete`` removes a subtree; the animation is
    kept apart and emitted last so that every animated node exists when it loads.
    """

    web_url = None
    server_proc = None

    def __init__(self):
        self.tree = SceneTree()
        self.animation: bytes | None = None

    def send(self, command) -> None:
        data = command.lower()
        kind = data["type"]
        path = [p for p in data.get("path", "").split("/") if p]
        if kind == "delete":
            if path:
                find_node(self.tree, path[:-1]).pop(path[-1], None)
            else:
                self.tree = SceneTree()
            return
        packed = umsgpack.packb(data)
        if kind == "set_animation":
            self.animation = packed
            return
        node = find_node(self.tree, path)
        if kind == "set_object":
            node.object = packed
            node.properties = []
        elif kind == "set_transform":
            node.transform = packed
        elif kind == "set_property":
            node.properties.append(packed)
        else:  # pragma: no cover - meshcat has no other scene commands
            raise ReportError(f"offline meshcat scene: unsupported command {kind!r}")

    def commands(self) -> list[bytes]:
        """The msgpack-encoded commands that rebuild the scene, in order (animation last)."""
        out: list[bytes] = []
        for node in walk(self.tree):
            if node.object is not None:
                out.append(node.object)
            out.extend(node.properties)
            if node.transform is not None:
                out.append(node.transform)
        if self.animation is not None:
            out.append(self.animation)
        return out

    def get_image(self):
        raise ReportError("an offline meshcat scene has no browser to capture an image from; use Viewer")

    def get_scene(self) -> str:
        return static_html(self)

    def connect_zmq(self):  # meshcat API compatibility
        pass


def offline_visualizer() -> tuple[meshcat.Visualizer, SceneRecorder]:
    """A meshcat visualizer writing into an in-memory scene (no server)."""
    window = SceneRecorder()
    return meshcat.Visualizer(window=window), window


# Everything the page needs is inline; the policy makes the browser refuse any fetch
# from the network even if a future meshcat build references one.
_CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; connect-src data: blob:; worker-src blob:; media-src data: blob:"
)

_TEMPLATE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<title>{title}</title>
<style>
body {{ margin: 0; }}
#meshcat-pane {{ width: 100vw; height: 100vh; overflow: hidden; }}
</style>
</head>
<body>
<div id="meshcat-pane"></div>
<script>
{viewer_js}
</script>
<script>
var viewer = new MeshCat.Viewer(document.getElementById("meshcat-pane"));
(function () {{
  var commands = [
{commands}
  ];
  for (var k = 0; k < commands.length; k++) {{
    var s = atob(commands[k]);
    var bytes = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
    viewer.handle_command_bytearray(bytes);
  }}
  var info = {info};
  function rig(p) {{ return [p[0], p[2], -p[1]]; }}  // world (z up) -> the camera rig's frame (y up)
  function place(position, target) {{
    var p = rig(position), c = rig(target);
    viewer.controls.target.set(c[0], c[1], c[2]);
    viewer.camera.position.set(p[0], p[1], p[2]);
    viewer.set_dirty();
  }}
  function placeFixed() {{  // the orbit target has no meshcat command: set it on the page
    if (info.camera) place(info.camera.position, info.camera.target);
  }}
  var follow = info.follow, last = null;
  var state = {{"follow robot": !!(follow && follow.on), "loop": info.loop !== false}};
  function animationTime() {{
    var a = viewer.animator.actions, m = 0;
    for (var i = 0; i < a.length; i++) m = Math.max(m, a[i].time);
    return m;
  }}
  function targetAt(time) {{  // linear interpolation of the smoothed track
    var T = follow.times, P = follow.targets, n = T.length;
    if (n === 1 || time <= T[0]) return P[0];
    if (time >= T[n - 1]) return P[n - 1];
    var lo = 0, hi = n - 1;
    while (hi - lo > 1) {{ var mid = (lo + hi) >> 1; if (T[mid] <= time) lo = mid; else hi = mid; }}
    var s = (time - T[lo]) / (T[hi] - T[lo]);
    return [0, 1, 2].map(function (k) {{ return P[lo][k] + s * (P[hi][k] - P[lo][k]); }});
  }}
  function track() {{  // move camera and orbit target with the robot; the user's own orbit is kept
    if (!follow || !state["follow robot"]) return;
    var c = targetAt(animationTime());
    if (last === null) {{
      var o = follow.offset;
      place([c[0] + o[0], c[1] + o[1], c[2] + o[2]], c);
    }} else {{
      var d = rig([c[0] - last[0], c[1] - last[1], c[2] - last[2]]);
      viewer.controls.target.x += d[0]; viewer.controls.target.y += d[1]; viewer.controls.target.z += d[2];
      viewer.camera.position.x += d[0]; viewer.camera.position.y += d[1]; viewer.camera.position.z += d[2];
    }}
    last = c;
  }}
  var render = viewer.render.bind(viewer);
  viewer.render = function () {{ track(); render(); }};
  if (state["follow robot"]) track(); else placeFixed();
  viewer.controls.update();
  viewer.set_dirty();
  if (viewer.animator.actions.length > 0) {{
    var folder = viewer.gui.addFolder("Replay");
    if (follow) folder.add(state, "follow robot").onChange(function (on) {{
      last = null;
      if (on) track(); else placeFixed();
      viewer.set_dirty();
    }});
    folder.add(state, "loop").onChange(function (on) {{
      viewer.animator.actions.forEach(function (a) {{ a.setLoop(a.loop, on ? Infinity : 1); }});
    }});
    folder.open();
    viewer.animator.folder.open();
  }}
  for (var name in viewer.gui.__folders) {{  // the playback controls in view, the scene tree folded
    if (name === "Scene" || name === "Save / Load / Capture") viewer.gui.__folders[name].close();
  }}
  viewer.gui.open();
  window.controlkit_view = {{state: state, track: track, placeFixed: placeFixed, targetAt: targetAt}};
  window.controlkit_replay = info;
  window.controlkit_scene_loaded = true;
}})();
</script>
</body>
</html>
"""


def static_html(recorder: SceneRecorder, title: str = "controlkit replay", info: dict | None = None) -> str:
    """One HTML page holding the meshcat viewer code and the recorded scene (data only, no URLs).

    ``info`` (JSON-serializable) is published to the page as ``window.controlkit_replay``.
    """
    with open(VIEWER_JS, encoding="utf-8") as f:
        viewer_js = f.read()
    if "</script" in viewer_js.lower():  # pragma: no cover - guards a future meshcat build
        raise ReportError("meshcat's viewer code contains '</script>' and cannot be inlined")
    commands = ",\n".join('"' + base64.b64encode(c).decode("ascii") + '"' for c in recorder.commands())
    info_js = json.dumps(info or {}).replace("</", "<\\/")
    return _TEMPLATE.format(csp=_CSP, title=_html.escape(title), viewer_js=viewer_js, commands=commands,
                            info=info_js)


# ------------------------------------------------------------------------ the robot
def display_models(mechanism, collisions: bool = False) -> tuple[pin.GeometryModel, pin.GeometryModel]:
    """(collision, visual) geometry to show: the visual model, or the collision model when it is empty."""
    visual = mechanism.visual_model
    if visual.ngeoms == 0:
        visual = mechanism.collision_model
    collision = mechanism.collision_model if collisions else pin.GeometryModel()
    return collision, visual


def compact_geometry(model: pin.GeometryModel) -> pin.GeometryModel:
    """A copy whose mesh-file objects are sent as the loaded triangles (binary) instead of the file.

    Collada files are verbose XML: the UR5's visual meshes are ~8 MB as files and ~2 MB
    as float32 triangles; and meshcat 0.3.2's viewer merges a multi-material Collada file
    into one geometry with mismatched material groups, so parts of it are not drawn
    (the UR5's housings go missing). The file's own materials are lost; ``meshColor`` is used.
    The loaded triangles are already scaled, so ``meshScale`` becomes 1.
    """
    out = pin.GeometryModel()
    for g in model.geometryObjects:
        c = pin.GeometryObject(g)
        if c.meshPath and isinstance(c.geometry, coal.BVHModelBase):
            c.meshPath = ""
            c.meshScale = np.ones(3)
        out.addGeometryObject(c)
    return out


def robot_visualizer(mechanism, viewer: meshcat.Visualizer, *, collisions: bool = False,
                     compact_meshes: bool = False) -> MeshcatVisualizer:
    """A pinocchio MeshcatVisualizer of the mechanism's visual geometry, loaded into ``viewer``.

    Hidden collision geometry is left out unless ``collisions`` is True (then it is
    loaded and shown as well). ``compact_meshes``: see :func:`compact_geometry`.
    """
    collision, visual = display_models(mechanism, collisions)
    if compact_meshes:
        visual = compact_geometry(visual)
    viz = MeshcatVisualizer(mechanism.model, collision, visual)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        viz.initViewer(viewer=viewer)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        viz.loadViewerModel(rootNodeName=ROBOT_ROOT)
    for w in caught:
        if issubclass(w.category, UserWarning):
            warnings.warn(f"mechanism {mechanism.name!r}: {w.message}", UserWarning, stacklevel=3)
    if collisions:
        viz.displayCollisions(True)
    return viz


# ----------------------------------------------------------------------- overlays
def arrow_path(name: str, i: int) -> str:
    return f"{OVERLAY_ROOT}/arrows/{name}/{i}"


def frame_path(name: str) -> str:
    return f"{OVERLAY_ROOT}/frames/{name}"


def trace_path(name: str) -> str:
    return f"{OVERLAY_ROOT}/traces/{name}"


def _unit_arrow_mesh(radius: float = 0.006, head_radius: float = 0.016, head: float = 0.25, n: int = 16):
    """Vertices and faces of an arrow from the origin to (0, 0, 1): shaft radius and head radius in m."""
    ang = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    ring = np.stack([np.cos(ang), np.sin(ang), np.zeros(n)], axis=1)
    z_head = 1.0 - head
    v = [ring * radius, ring * radius + [0, 0, z_head], ring * head_radius + [0, 0, z_head],
         np.array([[0.0, 0.0, 1.0]]), np.array([[0.0, 0.0, 0.0]]), np.array([[0.0, 0.0, z_head]])]
    verts = np.concatenate(v)
    b0, b1, h0, tip, c0, c1 = 0, n, 2 * n, 3 * n, 3 * n + 1, 3 * n + 2
    faces = []
    for i in range(n):
        j = (i + 1) % n
        faces += [[b0 + i, b0 + j, b1 + j], [b0 + i, b1 + j, b1 + i]]  # shaft
        faces += [[h0 + i, h0 + j, tip]]  # head
        faces += [[c0, b0 + j, b0 + i]]  # bottom cap
        faces += [[c1, h0 + i, h0 + j], [c1, b1 + j, b1 + i]]  # head underside
    return verts, np.array(faces)


def arrow_object(color: int = ARROW_COLOR) -> mg.Mesh:
    """A unit arrow along +z, scaled along z to the arrow's length."""
    verts, faces = _unit_arrow_mesh()
    return mg.Mesh(mg.TriangularMeshGeometry(verts, faces), mg.MeshLambertMaterial(color=color))


def arrow_pose(point, vector, scale: float):
    """(rotation (3,3), position (3,), length m) of an arrow drawing ``vector * scale`` at ``point``.

    Returns None when the arrow is absent (NaN) or shorter than 0.1 mm.
    """
    p = np.asarray(point, dtype=float)
    v = np.asarray(vector, dtype=float) * scale
    if not (np.all(np.isfinite(p)) and np.all(np.isfinite(v))):
        return None
    length = float(np.linalg.norm(v))
    if length < 1e-4:
        return None
    R = pin.Quaternion.FromTwoVectors(np.array([0.0, 0.0, 1.0]), v / length).toRotationMatrix()
    return R, p, length


def homogeneous(R, p, scale=(1.0, 1.0, 1.0)) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = np.asarray(R) @ np.diag(scale)
    T[:3, 3] = p
    return T


def triad_object(length: float) -> mg.LineSegments:
    """Red/green/blue x/y/z axes of the given length (m)."""
    return mg.triad(length)


def line_object(points: np.ndarray, color: int = TRACE_COLOR) -> mg.Line:
    """A polyline through points (N, 3), m; rows with NaN are dropped."""
    pts = np.asarray(points, dtype=float)
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    return mg.Line(mg.PointsGeometry(pts.T.astype(np.float32)), mg.LineBasicMaterial(color=color))


def check_points(name: str, points, what: str = "points") -> np.ndarray:
    """Validate an (n, 3) array of points or vectors."""
    a = np.asarray(points, dtype=float)
    if a.ndim == 1 and a.size == 3:
        a = a.reshape(1, 3)
    if a.ndim != 2 or a.shape[1] != 3:
        raise ReportError(f"{name!r}: {what} must be an array of shape (n, 3), got shape {np.shape(points)}")
    return a


# ------------------------------------------------------------------------- camera
def set_camera(viewer: meshcat.Visualizer, position) -> None:
    """Place the default camera at ``position`` (m, world frame, z up); it looks at the origin.

    meshcat 0.3.2 has no command for the orbit target (it stays at the world origin in
    a live viewer); the offline replay sets it in the page instead.
    """
    p = np.asarray(position, dtype=float).reshape(3)
    if np.linalg.norm(p) < 1e-9:
        raise ReportError(f"camera position {p.tolist()} coincides with the orbit target (the origin)")
    viewer[CAMERA_OBJECT].set_property("position", three_camera_position(p))


def three_camera_position(p) -> list[float]:
    """World (z up) position -> position inside meshcat's camera rig (y up, rotated +90 deg about x)."""
    p = np.asarray(p, dtype=float).reshape(3)
    return [float(p[0]), float(p[2]), float(-p[1])]


def local_box_corners(geometry_model: pin.GeometryModel) -> np.ndarray:
    """(ngeoms, 8, 3) corners of each geometry's bounding box in its own frame (m)."""
    out = np.zeros((geometry_model.ngeoms, 8, 3))
    for k, g in enumerate(geometry_model.geometryObjects):
        try:
            g.geometry.computeLocalAABB()
            lo, hi = np.array(g.geometry.aabb_local.min_), np.array(g.geometry.aabb_local.max_)
        except Exception:  # a geometry without a bounding box counts as its origin
            lo = hi = np.zeros(3)
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))) or np.any(hi - lo > 1e3):
            lo = hi = np.zeros(3)  # planes and half-spaces: unbounded
        out[k] = [[(lo, hi)[i][0], (lo, hi)[j][1], (lo, hi)[m][2]] for i in (0, 1) for j in (0, 1) for m in (0, 1)]
    return out


def world_box_corners(corners: np.ndarray, placements) -> np.ndarray:
    """Corners (ngeoms, 8, 3) moved to the geometries' world placements (a list of SE3)."""
    return np.concatenate([c @ M.rotation.T + M.translation for c, M in zip(corners, placements)]) \
        if len(corners) else np.zeros((0, 3))


def auto_camera(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position, target) of a camera that frames the given world points (m).

    The camera looks along ``_stage.VIEW_DIRECTION``, as close as keeps every point in
    view, the points centred in the picture (see ``_stage.frame_points``).
    """
    from ._stage import frame_points

    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    if len(pts) == 0:
        pts = np.zeros((1, 3))
    return frame_points(pts)
