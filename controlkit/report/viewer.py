"""A live 3-D view of a mechanism in the browser (meshcat), opt-in.

Nothing in controlkit starts a meshcat server unless a :class:`Viewer` is created
without ``zmq_url``; :meth:`Viewer.close` (or leaving a ``with`` block) stops the
server process the viewer started. Offline replays (``controlkit.report.replay``)
never need a server.

Example::

    with Viewer(mechanism) as viewer:
        print("open", viewer.url())
        viewer.play(recording, speed=0.5)
"""
from __future__ import annotations

import contextlib
import io
import logging
import subprocess
import time

import pinocchio as pin

from ..errors import UnknownNameError
from . import _meshcat as mc
from ._errors import ReportError

log = logging.getLogger(__name__)


class Viewer:
    """Show a mechanism's visual geometry (primitives and URDF meshes) in a meshcat viewer.

    Args:
        mechanism: the :class:`~controlkit.mechanism.Mechanism` to show.
        open: also open the viewer page in the default web browser.
        zmq_url: connect to an already running ``meshcat-server`` at this ZMQ address
            (e.g. ``"tcp://127.0.0.1:6000"``) instead of starting one; such a server is
            left running by :meth:`close`.
        collisions: also load and show the collision geometry (default: visual only).
        compact_meshes: send mesh files as their loaded triangles (default; complete shapes
            in ``meshColor``); False sends the files with their materials, but meshcat
            0.3.2 drops the parts of multi-material Collada meshes.
        connect_timeout: seconds to wait for an existing server at ``zmq_url`` to answer.
    """

    def __init__(self, mechanism, *, open: bool = False, zmq_url: str | None = None,
                 collisions: bool = False, compact_meshes: bool = True, connect_timeout: float = 5.0):
        import meshcat

        self.mechanism = mechanism
        if zmq_url is not None:
            _check_server(zmq_url, connect_timeout)
        quiet = io.StringIO()  # meshcat prints the URL; url() returns it instead
        try:
            with contextlib.redirect_stdout(quiet):
                self._vis = meshcat.Visualizer(zmq_url=zmq_url)
        except RuntimeError as exc:
            raise ReportError(f"could not start a meshcat server for {mechanism.name!r}: {exc}") from exc
        self._owns_server = zmq_url is None
        self._closed = False
        log.info("meshcat viewer for %r at %s", mechanism.name, self.url())
        try:
            self._viz = mc.robot_visualizer(mechanism, self._vis, collisions=collisions,
                                              compact_meshes=compact_meshes)
        except BaseException:
            self.close()
            raise
        self._frames: dict[str, tuple[int, float]] = {}
        self._arrows: dict[str, list[bool]] = {}
        self._traces: set[str] = set()
        self._q = mechanism.neutral()
        self.display(self._q)
        if open:
            self._vis.open()

    # ------------------------------------------------------------------ basics
    def url(self) -> str:
        """The viewer page's address (e.g. ``http://127.0.0.1:7000/static/``)."""
        return self._vis.url()

    @property
    def meshcat(self):
        """The underlying ``meshcat.Visualizer`` (for anything not wrapped here)."""
        return self._vis

    def display(self, q) -> None:
        """Show configuration ``q`` (nq,) and move the drawn frame triads with it."""
        self._require_open()
        q = self.mechanism.check_q(q, "Viewer.display")
        self._viz.display(q)
        self._q = q.copy()
        if self._frames:
            self._update_frames()

    def play(self, recording, speed: float = 1.0, fps: float = 30.0) -> None:
        """Replay a recording's configurations in (scaled) real time.

        Args:
            recording: a :class:`~controlkit.recording.Recording` of this mechanism.
            speed: playback speed relative to simulated time (0.5 = twice slower).
            fps: at most this many frames per simulated second are shown.
        """
        self._require_open()
        if not speed > 0:
            raise ReportError(f"Viewer.play: speed must be positive, got {speed}")
        if not fps > 0:
            raise ReportError(f"Viewer.play: fps must be positive, got {fps}")
        _check_recording(self.mechanism, recording)
        t, q = recording.t, recording.q
        idx = recording.frame_indices(fps)
        if len(idx) == 0:
            return
        wall0, t0 = time.perf_counter(), t[idx[0]]
        for i in idx:
            delay = wall0 + (t[i] - t0) / speed - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            self.display(q[i])

    # ---------------------------------------------------------------- overlays
    def draw_arrows(self, name: str, points, vectors, scale: float = 1e-3, color: int = mc.ARROW_COLOR) -> None:
        """Draw arrows (e.g. contact forces) ``vectors * scale`` starting at ``points``.

        Args:
            name: the arrow group; drawing it again replaces it.
            points: arrow origins (k, 3), m, world frame.
            vectors: arrow vectors (k, 3) in their own unit (N for forces); rows with NaN
                or of zero length are hidden.
            scale: metres of arrow per unit of vector (default 1 mm per N).
        """
        self._require_open()
        P = mc.check_points(name, points)
        V = mc.check_points(name, vectors, "vectors")
        if P.shape != V.shape:
            raise ReportError(f"draw_arrows {name!r}: {len(P)} points but {len(V)} vectors")
        shown = self._arrows.get(name, [])
        for i in range(len(P)):
            node = self._vis[mc.arrow_path(name, i)]
            if i >= len(shown):
                node.set_object(mc.arrow_object(color))
                shown.append(True)
            pose = mc.arrow_pose(P[i], V[i], scale)
            if pose is not None:
                R, p, length = pose
                node.set_transform(mc.homogeneous(R, p, (1.0, 1.0, length)))
            if shown[i] != (pose is not None):
                node.set_property("visible", pose is not None)
                shown[i] = pose is not None
        for i in range(len(P), len(shown)):
            self._vis[mc.arrow_path(name, i)].delete()
        self._arrows[name] = shown[: len(P)]

    def draw_frame(self, frame_name: str, length: float = 0.1) -> None:
        """Draw the x/y/z axes (red/green/blue, ``length`` m) of a frame; they follow :meth:`display`."""
        self._require_open()
        fid = self.mechanism.frame_id(frame_name)
        self._vis[mc.frame_path(frame_name)].set_object(mc.triad_object(length))
        self._frames[frame_name] = (fid, length)
        self._update_frames()

    def trace(self, name: str, points, color: int = mc.TRACE_COLOR) -> None:
        """Draw a polyline through ``points`` (N, 3), m (e.g. a recorded end-effector path)."""
        self._require_open()
        pts = mc.check_points(name, points)
        self._vis[mc.trace_path(name)].set_object(mc.line_object(pts, color))
        self._traces.add(name)

    def remove(self, name: str) -> None:
        """Remove an arrow group, frame triad or trace by name; raises UnknownNameError."""
        self._require_open()
        drawn = set(self._arrows) | set(self._frames) | self._traces
        if name not in drawn:
            raise UnknownNameError("drawn overlay", name, drawn, f"viewer of {self.mechanism.name!r}")
        if self._arrows.pop(name, None) is not None:
            self._vis[f"{mc.OVERLAY_ROOT}/arrows/{name}"].delete()
        if self._frames.pop(name, None) is not None:
            self._vis[mc.frame_path(name)].delete()
        if name in self._traces:
            self._traces.discard(name)
            self._vis[mc.trace_path(name)].delete()

    def set_camera(self, position) -> None:
        """Place the camera at ``position`` (m, world frame, z up); it looks at the world origin.

        (meshcat 0.3.2 offers no command to move the orbit target of a live viewer.)
        """
        self._require_open()
        mc.set_camera(self._vis, position)

    # ------------------------------------------------------------------ closing
    def close(self) -> None:
        """Disconnect; stop the meshcat server process if this viewer started it."""
        if self._closed:
            return
        self._closed = True
        window = self._vis.window
        with contextlib.suppress(Exception):
            window.zmq_socket.close(linger=0)
        proc = getattr(window, "server_proc", None) if self._owns_server else None
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def server_pid(self) -> int | None:
        """Process id of the meshcat server this viewer started (None when it connected to one)."""
        proc = getattr(self._vis.window, "server_proc", None) if self._owns_server else None
        return None if proc is None else proc.pid

    def __enter__(self) -> "Viewer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else self.url()
        return f"Viewer({self.mechanism.name!r}, {state})"

    # --------------------------------------------------------------- internals
    def _require_open(self) -> None:
        if self._closed:
            raise ReportError(f"the viewer of {self.mechanism.name!r} is closed")

    def _update_frames(self) -> None:
        model, data = self._viz.model, self._viz.data
        pin.forwardKinematics(model, data, self._q)
        pin.updateFramePlacements(model, data)
        for name, (fid, _) in self._frames.items():
            self._vis[mc.frame_path(name)].set_transform(data.oMf[fid].homogeneous)


def _check_recording(mechanism, recording) -> None:
    if recording.nq != mechanism.nq:
        raise ReportError(
            f"recording has nq = {recording.nq} but mechanism {mechanism.name!r} has nq = {mechanism.nq}; "
            "was it recorded from another model?")
    if len(recording) == 0:
        raise ReportError("the recording is empty: nothing to show")


def _check_server(zmq_url: str, timeout: float) -> None:
    """Fail fast (instead of hanging) when no meshcat server answers at ``zmq_url``."""
    import zmq

    sock = zmq.Context.instance().socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, int(timeout * 1000))
    try:
        sock.connect(zmq_url)
        sock.send(b"url")
        sock.recv()
    except zmq.ZMQError as exc:
        raise ReportError(
            f"no meshcat server answered at {zmq_url} within {timeout:g} s ({exc}); "
            "start one with `meshcat-server` or pass zmq_url=None to start one") from exc
    finally:
        sock.close()
