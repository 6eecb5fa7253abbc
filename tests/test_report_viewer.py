"""The meshcat viewer and the offline HTML replay (without a browser; see test_browser.py).

Real models only: the UR5 from example-robot-data (Collada meshes) and a tiny
two-link pendulum built here from coal primitives.
"""
from __future__ import annotations

import base64
import re

import coal
import example_robot_data
import numpy as np
import pinocchio as pin
import pytest
import umsgpack

from controlkit.errors import StateError, UnknownNameError
from controlkit.mechanism import Mechanism
from controlkit.recording import Recording
from controlkit.report import ReportError, Viewer, export_html


# ------------------------------------------------------------------ models
def ur5_mechanism() -> Mechanism:
    r = example_robot_data.load("ur5")
    return Mechanism(r.model, r.collision_model, r.visual_model, name="ur5")


def tiny_mechanism() -> Mechanism:
    """Two revolute links (a box and a sphere on a box), primitive coal geometry with colours."""
    model = pin.Model()
    j1 = model.addJoint(0, pin.JointModelRY(), pin.SE3(np.eye(3), np.array([0.0, 0.0, 1.0])), "hinge1")
    model.appendBodyToJoint(j1, pin.Inertia.FromBox(2.0, 0.06, 0.06, 0.5), pin.SE3(np.eye(3), np.array([0, 0, -0.25])))
    f1 = model.addBodyFrame("link1", j1, pin.SE3.Identity(), 0)
    j2 = model.addJoint(j1, pin.JointModelRY(), pin.SE3(np.eye(3), np.array([0.0, 0.0, -0.5])), "hinge2")
    model.appendBodyToJoint(j2, pin.Inertia.FromSphere(1.0, 0.08), pin.SE3(np.eye(3), np.array([0, 0, -0.4])))
    model.addBodyFrame("link2", j2, pin.SE3.Identity(), f1)
    model.addFrame(pin.Frame("tip", j2, pin.SE3(np.eye(3), np.array([0, 0, -0.48])), pin.FrameType.OP_FRAME))
    geom = pin.GeometryModel()
    for name, joint, z, shape, rgba in [
        ("link1_box", j1, -0.25, coal.Box(0.06, 0.06, 0.5), (0.8, 0.3, 0.2, 1.0)),
        ("link2_box", j2, -0.2, coal.Box(0.04, 0.04, 0.4), (0.2, 0.5, 0.8, 1.0)),
        ("ball", j2, -0.4, coal.Sphere(0.08), (0.9, 0.8, 0.1, 1.0)),
    ]:
        g = pin.GeometryObject(name, joint, pin.SE3(np.eye(3), np.array([0.0, 0.0, z])), shape)
        g.meshColor = np.array(rgba)
        geom.addGeometryObject(g)
    return Mechanism(model, geom, geom.copy(), name="pendulum")


def joint_sweep_recording(mech: Mechanism, duration: float = 2.0, dt: float = 0.01) -> Recording:
    """q moves every joint smoothly; a tool point and a force on it are recorded as quantities."""
    rec = Recording(mech.nq, mech.nv, mech.ntau, meta={"model": mech.name})
    q0 = mech.neutral()
    fid = mech.model.nframes - 1
    data = mech.model.createData()
    for k in range(int(round(duration / dt)) + 1):
        t = k * dt
        q = q0 + np.array([0.9 * np.sin(1.5 * t + i) - 0.9 * np.sin(i) for i in range(mech.nq)])
        pin.framesForwardKinematics(mech.model, data, q)
        p = data.oMf[fid].translation.copy()
        force = np.array([0.0, 0.0, 50.0 + 40.0 * np.sin(3 * t)])
        if 0.5 < t < 0.8:
            force[:] = np.nan  # contact broken: arrow hidden
        rec.append(t, q, np.zeros(mech.nv), quantities={"tool position": p, "tool force": force})
    rec.set_unit("tool position", "m")
    rec.set_unit("tool force", "N")
    return rec


@pytest.fixture(scope="module")
def ur5():
    return ur5_mechanism()


@pytest.fixture(scope="module")
def ur5_recording(ur5):
    return joint_sweep_recording(ur5)


# ----------------------------------------------------------------- helpers
def decoded_commands(html: str) -> list[dict]:
    """The meshcat commands inlined in a replay page, decoded."""
    m = re.search(r"var commands = \[(.*?)\];", html, re.S)
    assert m, "no command array in the page"
    return [umsgpack.unpackb(base64.b64decode(s)) for s in re.findall(r'"([A-Za-z0-9+/=]+)"', m.group(1))]


_NAMESPACES = ("http://www.w3.org/",)
FETCHING = [
    re.compile(r"""\b(?:src|href|action|poster|data)\s*=\s*["']?\s*(?:https?:)?//""", re.I),
    re.compile(r"""url\(\s*["']?\s*(?:https?:)?//""", re.I),
    re.compile(r"""\bimport\s*(?:\(\s*)?["'](?:https?:)?//""", re.I),
    re.compile(r"""@import\s+(?:url\()?\s*["']?(?:https?:)?//""", re.I),
    re.compile(r"""\b(?:fetch|importScripts|XMLHttpRequest\(\)\.open)\s*\(\s*["'](?:https?:)?//""", re.I),
    re.compile(r"""\bnew\s+(?:WebSocket|EventSource|Worker)\s*\(\s*["'](?:wss?|https?):""", re.I),
]


def external_references(html: str) -> list[str]:
    """Every reference in the page that a browser would fetch from a network address."""
    found = [m.group(0) for rx in FETCHING for m in rx.finditer(html)]
    # any other absolute http(s) URL must be an XML namespace name (never fetched)
    for m in re.finditer(r"https?://[^\s\"'<>)]+", html):
        if not m.group(0).startswith(_NAMESPACES):
            found.append(m.group(0))
    return found


def test_the_url_scanner_finds_what_a_browser_would_fetch():
    page = """<script src="https://cdn.example.com/three.js"></script><link href='//fonts.example/x.css'>
    <style>@import url("https://x.example/a.css"); body { background: url(http://x.example/b.png) }</style>
    <script>import("https://esm.example/m.js"); fetch("http://api.example/")</script>"""
    assert len(external_references(page)) >= 6
    assert external_references('<svg xmlns="http://www.w3.org/2000/svg"></svg><img src="data:image/png;base64,AA">') == []


# ------------------------------------------------------------------ replay
@pytest.fixture(scope="module")
def ur5_replay(ur5, ur5_recording, tmp_path_factory):
    path = tmp_path_factory.mktemp("replay") / "ur5.html"
    out = export_html(ur5, ur5_recording, path, fps=30, frames=["tool0"],
                      traces={"tool path": "tool position"}, arrows={"tool force": ("tool position", "tool force")})
    return out, out.read_text(encoding="utf-8")


def test_replay_is_one_file_with_no_network_reference(ur5_replay):
    path, html = ur5_replay
    assert path.exists() and path.suffix == ".html"
    assert external_references(html) == []
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    # the meshes inside the commands reference nothing outside either
    for cmd in decoded_commands(html):
        obj = cmd.get("object", {}).get("object", {}) if cmd["type"] == "set_object" else {}
        for value in obj.get("resources", {}).values():
            assert value == "" or value.startswith("data:")
        assert "url" not in obj


def test_replay_holds_the_visual_robot_without_collision_geometry(ur5, ur5_replay):
    _, html = ur5_replay
    cmds = decoded_commands(html)
    objects = [c["path"] for c in cmds if c["type"] == "set_object"]
    for g in ur5.visual_model.geometryObjects:
        assert f"/meshcat/pinocchio/visuals/{g.name}" in objects
    assert not [p for p in objects if "/collisions/" in p]
    assert "/meshcat/controlkit/frames/tool0" in objects
    assert "/meshcat/controlkit/traces/tool path" in objects
    assert "/meshcat/controlkit/arrows/tool force/0" in objects
    assert cmds[-1]["type"] == "set_animation"  # loaded after every animated node exists


def test_replay_animation_is_decimated_to_fps(ur5, ur5_recording, ur5_replay):
    _, html = ur5_replay
    anim = decoded_commands(html)[-1]
    clips = {a["path"]: a["clip"] for a in anim["animations"]}
    wrist = clips["/meshcat/pinocchio/visuals/wrist_3_link_0"]
    assert wrist["fps"] == 30
    times = [k["time"] for k in wrist["tracks"][0]["keys"]]
    n = len(ur5_recording.frame_indices(30))
    assert len(times) == n < len(ur5_recording)
    assert times[0] == 0.0 and times[-1] == pytest.approx(ur5_recording.t[-1] * 30)  # plays in simulated time
    # the hidden-arrow interval shows up as visible = false keys
    arrow = clips["/meshcat/controlkit/arrows/tool force/0"]
    visible = next(tr for tr in arrow["tracks"] if tr["name"] == ".visible")
    assert {k["value"] for k in visible["keys"]} == {True, False}
    info = re.search(r"var info = (\{.*?\});", html).group(1)
    assert '"frames": %d' % n in info


def test_replay_animation_matches_pinocchio_placements(ur5, ur5_recording, ur5_replay):
    _, html = ur5_replay
    anim = decoded_commands(html)[-1]
    clip = next(a["clip"] for a in anim["animations"] if a["path"].endswith("wrist_3_link_0"))
    pos = next(tr for tr in clip["tracks"] if tr["name"] == ".position")
    k = 10
    i = ur5_recording.frame_indices(30)[k]
    gm, gd = ur5.visual_model, ur5.visual_model.createData()
    data = ur5.model.createData()
    pin.forwardKinematics(ur5.model, data, ur5_recording.q[i])
    pin.updateGeometryPlacements(ur5.model, data, gm, gd)
    expected = gd.oMg[gm.getGeometryId("wrist_3_link_0")].translation
    assert np.allclose(pos["keys"][k]["value"], expected, atol=1e-9)


def test_replay_max_frames_and_compact_meshes(ur5, ur5_recording, tmp_path):
    full = export_html(ur5, ur5_recording, tmp_path / "full.html", camera=None, compact_meshes=False)
    small = export_html(ur5, ur5_recording, tmp_path / "small.html", max_frames=10)
    anim = decoded_commands(small.read_text())[-1]
    keys = anim["animations"][0]["clip"]["tracks"][0]["keys"]
    assert len(keys) == 10 and keys[-1]["time"] == pytest.approx(ur5_recording.t[-1] * 30)
    assert small.stat().st_size < 0.5 * full.stat().st_size
    dae = [c for c in decoded_commands(full.read_text()) if c["type"] == "set_object"
           and c["object"]["object"].get("type") == "_meshfile_object"]
    assert len(dae) == ur5.visual_model.ngeoms  # the Collada files themselves, inlined


def test_replay_of_primitive_model(tmp_path):
    mech = tiny_mechanism()
    rec = joint_sweep_recording(mech, duration=1.0)
    path = export_html(mech, rec, tmp_path / "sub" / "pendulum.html", frames=["tip"])
    cmds = decoded_commands(path.read_text())
    boxes = [c for c in cmds if c["type"] == "set_object" and c["path"].endswith("link1_box")]
    assert boxes and boxes[0]["object"]["geometries"][0]["type"] == "BoxGeometry"
    assert boxes[0]["object"]["materials"][0]["color"] == int(0.8 * 255) * 65536 + int(0.3 * 255) * 256 + int(0.2 * 255)


def test_replay_of_a_model_without_visuals_shows_its_collision_geometry(tmp_path):
    m = tiny_mechanism()
    mech = Mechanism(m.model, m.collision_model, None, name="bare")
    rec = joint_sweep_recording(mech, duration=0.2)
    cmds = decoded_commands(export_html(mech, rec, tmp_path / "bare.html").read_text())
    assert "/meshcat/pinocchio/visuals/ball" in [c["path"] for c in cmds if c["type"] == "set_object"]


def test_replay_errors_name_the_problem(ur5, ur5_recording, tmp_path):
    with pytest.raises(UnknownNameError, match="tool positon"):
        export_html(ur5, ur5_recording, tmp_path / "x.html", traces={"p": "tool positon"})
    with pytest.raises(UnknownNameError, match="Did you mean 'tool0'"):
        export_html(ur5, ur5_recording, tmp_path / "x.html", frames=["tool1"])
    with pytest.raises(ReportError, match="nq = 6 but mechanism 'pendulum' has nq = 2"):
        export_html(tiny_mechanism(), ur5_recording, tmp_path / "x.html")
    odd = Recording(6, 6, 6)
    odd.append(0.0, np.zeros(6), np.zeros(6), quantities={"p": np.zeros(3), "two numbers": np.zeros(2)})
    with pytest.raises(ReportError, match="3k components"):
        export_html(ur5, odd, tmp_path / "x.html", arrows={"bad": ("p", "two numbers")})
    with pytest.raises(ReportError, match="expected 3"):
        export_html(ur5, odd, tmp_path / "x.html", traces={"bad": "two numbers"})
    with pytest.raises(ReportError, match="empty"):
        export_html(ur5, Recording(6, 6, 6), tmp_path / "x.html")
    assert not (tmp_path / "x.html").exists()


# -------------------------------------------------------------- live viewer
def test_live_viewer_starts_draws_and_stops_its_server():
    mech = tiny_mechanism()
    with Viewer(mech) as viewer:
        proc = viewer.meshcat.window.server_proc
        assert proc.poll() is None
        assert viewer.url().startswith("http://127.0.0.1:")
        viewer.display([0.3, -0.5])
        viewer.draw_frame("tip")
        viewer.draw_arrows("contact", [[0, 0, 0], [0.1, 0, 0]], [[0, 0, 100], [np.nan, 0, 0]], scale=1e-3)
        viewer.draw_arrows("contact", [[0, 0, 0]], [[0, 0, 50]])  # fewer arrows: the extra one is removed
        viewer.trace("path", np.array([[0, 0, 0], [0.1, 0, 0.1], [0.2, 0, 0.1]]))
        viewer.set_camera([1.5, -1.5, 1.2])
        rec = joint_sweep_recording(mech, duration=0.3)
        viewer.play(rec, speed=4.0)
        viewer.remove("path")
        with pytest.raises(UnknownNameError, match="drawn overlay"):
            viewer.remove("path")
        with pytest.raises(StateError, match="nq = 2"):
            viewer.display([0.0, 0.0, 0.0])
        with pytest.raises(ReportError, match=r"shape \(n, 3\)"):
            viewer.draw_arrows("bad", [[0, 0]], [[0, 0]])
        with pytest.raises(ReportError, match="speed must be positive"):
            viewer.play(rec, speed=0)
    assert proc.poll() is not None  # the server process is gone
    assert viewer.closed
    with pytest.raises(ReportError, match="closed"):
        viewer.display([0.0, 0.0])


def test_live_viewer_reports_a_missing_server_instead_of_hanging():
    with pytest.raises(ReportError, match="no meshcat server answered"):
        Viewer(tiny_mechanism(), zmq_url="tcp://127.0.0.1:5999", connect_timeout=0.5)


def replay_info(html: str) -> dict:
    import json
    return json.loads(re.search(r"var info = (\{.*?\});\n", html).group(1))


def test_a_walk_is_followed_and_its_floor_spans_the_path(tmp_path):
    """A 15 m walk: the floor covers the whole path under the lowest sole, the camera follows the
    walker at the distance of one robot (not of the path), and the animation loops for ever."""
    from test_browser import biped_walk_recording

    import robots

    built = robots.biped()
    mech, rec = built.mechanism, biped_walk_recording(built.mechanism, built.q0, metres=15.0)
    html = export_html(mech, rec, tmp_path / "walk.html").read_text()
    info = replay_info(html)
    floor, follow = info["floor"], info["follow"]
    assert floor["lower"][0] < -1.0 and floor["upper"][0] > 16.0  # x: the path (0 -> 15 m) and margins
    assert floor["lower"][1] < -1.0 < 1.0 < floor["upper"][1]
    # q0 stands on z = 0; the swinging legs (hip and knee angles only, no foot placement) dip a sole
    # a few cm lower: the floor is under the lowest point, not under the first one
    assert -0.1 < floor["z"] < 0.0
    assert follow["on"] is True
    targets = np.array(follow["targets"])
    assert targets[0, 0] < 1.0 and targets[-1, 0] > 14.0  # the camera target walks with the robot
    offset = np.linalg.norm(follow["offset"])
    fixed = np.linalg.norm(np.subtract(info["camera"]["position"], info["camera"]["target"]))
    assert 1.5 < offset < 6.0 and fixed > 1.5 * offset  # one 1.8 m robot in view, against the whole path
    anim = [c for c in decoded_commands(html) if c["type"] == "set_animation"]
    assert anim[0]["options"]["repetitions"] == float("inf")  # loops
    hidden = {c["path"] for c in decoded_commands(html) if c["type"] == "set_property" and c["value"] is False}
    assert {"/Grid", "/Axes"} <= hidden  # meshcat's 20 m grid ends under a walking robot: ours replaces it


def test_an_arm_on_its_base_is_filmed_from_one_place(ur5, ur5_recording, tmp_path):
    info = replay_info(export_html(ur5, ur5_recording, tmp_path / "arm.html").read_text())
    assert info["follow"]["on"] is False and info["loop"] is True
    no_floor = replay_info(export_html(ur5, ur5_recording, tmp_path / "bare.html", floor=False,
                                       loop=False).read_text())
    assert "floor" not in no_floor and no_floor["loop"] is False
