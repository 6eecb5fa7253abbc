"""Real-browser checks of the 3-D views: Debian's headless Chromium driven by selenium.

- the exported HTML replay of a UR5 recording loads from file:// with no server and
  fetches nothing from the network; the robot is drawn (hiding it changes > 1 % of the
  pixels, and the robot-free picture is not blank); two animation times differ;
- the live viewer's page shows the configuration set from Python;
- at the first and the last frame of a 15 m walk and of a UR5 reach the robot covers at
  least 3 % of the picture and the floor is under its feet (the camera follows, the floor
  spans the path); the four pictures are written to out/test-screenshots/.

No golden images: every assertion compares pictures of the same page. Waits are on
meshcat's JavaScript state (meshes loaded, animation actions present), never on time.
Skips (with the reason) only when /usr/bin/chromium or /usr/bin/chromedriver is missing.
"""
from __future__ import annotations

import base64
import io
import json
import os
import time
from pathlib import Path

import example_robot_data
import numpy as np
import pinocchio as pin
import pytest
from PIL import Image

import robots
from controlkit.mechanism import Mechanism
from controlkit.recording import Recording
from controlkit.report import Viewer, export_html
from controlkit.report._stage import FLOOR_COLOR, FLOOR_LINE_COLOR

SCREENSHOTS = Path(__file__).resolve().parents[1] / "out" / "test-screenshots"

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"

pytestmark = pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
    reason=f"real-browser tests need {CHROMIUM} and {CHROMEDRIVER} "
           "(apt-get install -y chromium chromium-driver, or `make browser`)")

CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
    "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
    # keep Chromium from calling home: every host name fails to resolve except the local viewer
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
    "--window-size=800,600",  # a landscape window, as most screens are
]

VISUALS = ["meshcat", "pinocchio", "visuals"]
LOADED_JS = """
const root = viewer.scene_tree.find(arguments[0]);
let meshes = 0;
for (const name in root.children) {
    const o = root.children[name].children["<object>"];
    if (o && o.object && o.object.isMesh && o.object.geometry.attributes.position.count > 0) meshes++;
}
return meshes;
"""


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_script_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def ur5():
    r = example_robot_data.load("ur5")
    return Mechanism(r.model, r.collision_model, r.visual_model, name="ur5")


def ur5_recording(mech: Mechanism) -> Recording:
    """Two seconds of every joint moving (100 Hz samples)."""
    rec = Recording(mech.nq, mech.nv, mech.ntau)
    for k in range(201):
        t = 0.01 * k
        q = np.array([0.6 * np.sin(1.5 * t), -1.2 + 0.4 * t, 0.3 + 0.6 * t, -0.5 * t, 0.9 * t, 0.4 * t])
        rec.append(t, q, np.zeros(mech.nv))
    return rec


def ur5_reach_recording(mech: Mechanism) -> Recording:
    """Two seconds of a reach from a ready pose (a quintic in each joint, 100 Hz samples)."""
    rec = Recording(mech.nq, mech.nv, mech.ntau)
    qa = np.array([0.0, -1.2, 1.4, -1.8, -1.57, 0.0])
    qb = qa + np.array([0.8, 0.3, -0.5, 0.2, 0.3, 0.5])
    for k in range(201):
        s = 0.005 * k
        rec.append(0.01 * k, qa + (10 * s**3 - 15 * s**4 + 6 * s**5) * (qb - qa), np.zeros(mech.nv))
    return rec


def biped_walk_recording(mech: Mechanism, q0: np.ndarray, metres: float = 15.0) -> Recording:
    """The biped standing at ``q0``, its base moving ``metres`` along x at 1 m/s while its legs
    swing (50 Hz samples)."""
    rec = Recording(mech.nq, mech.nv, mech.ntau)
    for k in range(int(50 * metres) + 1):
        t = 0.02 * k
        q = q0.copy()
        q[0] += t
        swing = 0.4 * np.sin(2 * np.pi * t)
        for start, sign in ((7, 1.0), (17, -1.0)):  # the hips' quaternions (x, y, z, w)
            q[start:start + 4] = pin.Quaternion(pin.exp3(np.array([0.0, sign * swing, 0.0]))).coeffs()
        q[11], q[21] = 0.3 + 0.75 * swing, 0.3 - 0.75 * swing  # knees
        rec.append(t, q, np.zeros(mech.nv))
    return rec


# ------------------------------------------------------------------ helpers
def wait_for(driver, script, *args, timeout=20.0, what="page state"):
    end = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script, *args)
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}; last value {value!r}")
        time.sleep(0.05)


def wait_for_robot(driver, n_visuals: int):
    wait_for(driver, "return typeof viewer !== 'undefined' && viewer.scene_tree !== undefined",
             what="the meshcat viewer")
    count = "return (function () {" + LOADED_JS + "}).apply(null, arguments) === arguments[1];"
    wait_for(driver, count, VISUALS, n_visuals, what=f"{n_visuals} visual meshes")


def capture(driver) -> np.ndarray:
    url = driver.execute_script("return viewer.capture_image();")
    assert url.startswith("data:image/png;base64,")
    with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as im:
        return np.asarray(im.convert("RGB"), dtype=np.int16)


def changed_fraction(a: np.ndarray, b: np.ndarray) -> float:
    assert a.shape == b.shape
    return float(np.mean(np.abs(a - b).max(axis=2) > 16))


def assert_not_blank(img: np.ndarray):
    colours = len(np.unique(img.reshape(-1, 3), axis=0))
    assert colours > 50, f"the picture has only {colours} colours: blank page?"


def set_robot_visible(driver, visible: bool):
    driver.execute_script(
        "viewer.scene_tree.find(arguments[0]).object.visible = arguments[1]; viewer.set_dirty();", VISUALS, visible)


def requested_urls(driver) -> list[str]:
    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    return urls


# -------------------------------------------------------------------- tests
def test_html_replay_plays_from_file_without_network(browser, ur5, tmp_path):
    rec = ur5_recording(ur5)
    path = export_html(ur5, rec, tmp_path / "ur5 replay.html", fps=30, frames=["tool0"])
    browser.get_log("performance")  # drop earlier entries
    browser.get(path.resolve().as_uri())
    wait_for_robot(browser, ur5.visual_model.ngeoms)
    wait_for(browser, "return window.controlkit_scene_loaded === true && viewer.animator.actions.length > 0",
             what="the replay animation")
    info = browser.execute_script("return window.controlkit_replay;")
    assert info["frames"] == len(rec.frame_indices(30)) and info["duration"] == pytest.approx(2.0)

    browser.execute_script("viewer.animator.play(); viewer.animator.pause(); viewer.animator.seek(0.3);")
    with_robot = capture(browser)
    set_robot_visible(browser, False)
    without_robot = capture(browser)
    set_robot_visible(browser, True)
    assert changed_fraction(with_robot, without_robot) > 0.01, "hiding the robot changed almost nothing"
    assert_not_blank(without_robot)

    browser.execute_script("viewer.animator.seek(1.7);")
    later = capture(browser)
    assert changed_fraction(with_robot, later) > 0.005, "the animation does not move the robot"
    browser.execute_script("viewer.animator.seek(0.3);")
    assert changed_fraction(with_robot, capture(browser)) < 0.001, "seeking back does not give the same picture"

    urls = requested_urls(browser)
    assert urls and all(u.split(":", 1)[0] in ("file", "data", "blob") for u in urls), urls
    severe = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == [], severe  # no script error, no Content-Security-Policy violation


def test_live_viewer_shows_the_configuration_set_from_python(browser, ur5):
    q1 = np.array([0.0, -1.0, 1.2, -0.5, 0.8, 0.0])
    q2 = np.array([1.4, -0.3, 0.4, 0.9, -0.6, 0.7])
    data, gdata = ur5.model.createData(), ur5.visual_model.createData()
    gid = ur5.visual_model.getGeometryId("wrist_3_link_0")

    def wrist_position(q):
        pin.forwardKinematics(ur5.model, data, q)
        pin.updateGeometryPlacements(ur5.model, data, ur5.visual_model, gdata)
        return gdata.oMg[gid].translation.tolist()

    position_js = "return viewer.scene_tree.find(arguments[0]).object.position.toArray();"
    node = VISUALS + ["wrist_3_link_0"]

    def shows(q):
        expected = wrist_position(q)
        return wait_for(browser, position_js.replace("return ", "const p = ")
                        + "; return p.every((x, i) => Math.abs(x - arguments[1][i]) < 1e-6) && p;",
                        node, expected, what=f"the wrist at {expected}")

    viewer = Viewer(ur5)
    try:
        viewer.set_camera([1.1, 0.9, 0.8])  # world frame, looking at the origin (the UR5's base)
        viewer.display(q1)
        browser.get(viewer.url())
        wait_for_robot(browser, ur5.visual_model.ngeoms)
        shows(q1)
        first = capture(browser)

        viewer.display(q2)  # sent from Python while the page is open
        shows(q2)
        second = capture(browser)
        assert changed_fraction(first, second) > 0.01, "a new configuration changed almost nothing"

        viewer.meshcat["pinocchio/visuals"].set_property("visible", False)
        wait_for(browser, "return viewer.scene_tree.find(arguments[0]).object.visible === false", VISUALS,
                 what="the robot to be hidden")
        hidden = capture(browser)
        assert changed_fraction(second, hidden) > 0.01
        assert_not_blank(hidden)
    finally:
        viewer.close()
        browser.get("about:blank")
    assert viewer.meshcat.window.server_proc.poll() is not None


def near_colour(img: np.ndarray, colour: int, tol: int = 6) -> np.ndarray:
    rgb = np.array([(colour >> 16) & 255, (colour >> 8) & 255, colour & 255])
    return np.abs(img - rgb).max(axis=2) <= tol


def robot_and_floor(driver, time_s: float, name: str) -> tuple[float, float]:
    """(share of the picture the robot covers, share of floor colour just under its lowest pixels).

    The robot's pixels are those that change when it is hidden; "under its feet" are the
    8 rows of the robot-free picture below the robot's lowest row, across the columns of
    its lowest 10 rows. Both pictures are written to SCREENSHOTS.
    """
    driver.execute_script("viewer.animator.play(); viewer.animator.pause(); viewer.animator.seek(arguments[0]);",
                          time_s)
    with_robot = capture(driver)
    set_robot_visible(driver, False)
    without_robot = capture(driver)
    set_robot_visible(driver, True)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    Image.fromarray(with_robot.astype(np.uint8)).save(SCREENSHOTS / f"{name}.png")
    Image.fromarray(without_robot.astype(np.uint8)).save(SCREENSHOTS / f"{name}_without_robot.png")
    mask = np.abs(with_robot - without_robot).max(axis=2) > 16
    rows = np.flatnonzero(mask.any(axis=1))
    assert len(rows), f"{name}: the robot is not in the picture"
    bottom = rows[-1]
    cols = np.flatnonzero(mask[max(bottom - 10, 0):bottom + 1].any(axis=0))
    below = without_robot[bottom + 2:bottom + 10, cols.min():cols.max() + 1]
    assert below.size, f"{name}: the robot's lowest pixel is on the picture's lower edge"
    floor = near_colour(below, FLOOR_COLOR) | near_colour(below, FLOOR_LINE_COLOR, 40)
    print(f"{SCREENSHOTS / name}.png: robot {mask.mean():.1%} of the picture, floor {floor.mean():.0%} under it")
    return float(mask.mean()), float(floor.mean())


@pytest.mark.parametrize("robot", ["biped_walk", "ur5"])
def test_replay_keeps_the_robot_in_view_on_a_floor(browser, ur5, robot, tmp_path):
    if robot == "ur5":
        mech, rec = ur5, ur5_reach_recording(ur5)
    else:
        built = robots.biped()
        mech, rec = built.mechanism, biped_walk_recording(built.mechanism, built.q0)
    path = export_html(mech, rec, tmp_path / f"{robot}.html", fps=30)
    browser.get(path.resolve().as_uri())
    wait_for_robot(browser, mech.visual_model.ngeoms)
    wait_for(browser, "return window.controlkit_scene_loaded === true && viewer.animator.actions.length > 0",
             what="the replay animation")
    info = browser.execute_script("return window.controlkit_replay;")
    assert info["follow"]["on"] is (robot == "biped_walk")  # an arm on its base is filmed from one place
    assert info["loop"] is True
    assert browser.execute_script("return viewer.animator.actions.every(a => a.repetitions === Infinity)")
    assert browser.execute_script("return viewer.gui.closed === false && viewer.gui.__folders.Replay.closed === false")
    assert browser.execute_script("return viewer.scene_tree.find(['Grid']).object.visible") is False

    for when, t in (("first", 0.0), ("last", info["duration"])):
        cover, floor = robot_and_floor(browser, t, f"replay_{robot}_{when}_frame")
        assert cover >= 0.03, f"{robot} at the {when} frame covers {cover:.1%} of the picture"
        assert floor >= 0.8, f"{robot} at the {when} frame: only {floor:.0%} floor colour under its feet"

    if robot == "biped_walk":  # the toggle: the fixed view of the whole 15 m shows a much smaller robot
        browser.execute_script("window.controlkit_view.state['follow robot'] = false; "
                               "window.controlkit_view.placeFixed();")
        fixed_cover, _ = robot_and_floor(browser, info["duration"], "replay_biped_walk_last_frame_fixed_view")
        assert fixed_cover < 0.6 * cover
