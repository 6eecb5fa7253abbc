"""Plots of recorded quantities, run statistics and the progress bar."""
from __future__ import annotations

import os
import re
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PIL import Image

from controlkit.errors import UnknownNameError
from controlkit.recording import Event, Recording
from controlkit.report import Progress, ReportError, format_statistics, plot_quantities, run_statistics
from controlkit.report.plots import figure_quantities

MU_S, MU_K, M, G = 0.9, 0.6, 48.0, 9.81


def friction_recording() -> Recording:
    """The thesis' sliding-block run (Fig. 5.10/5.11), computed in closed form on a 1 ms grid."""
    rec = Recording(1, 1, 1, meta={"model": "block"})
    x = v = 0.0
    sliding = False
    dt = 1e-3
    for k in range(6201):
        t = k * dt
        push = 0.0 if t < 1.0 or t >= 3.75 else 200.0 * np.exp(0.5 * (min(t, 3.25) - 1.0))
        if not sliding and push > MU_S * M * G:
            sliding = True
            rec.log_event(Event(t, "slip", "block starts to slide"))
        friction = -min(push, MU_S * M * G) if not sliding else -MU_K * M * G * np.sign(v if v else 1.0)
        a = (push + friction) / M if sliding else 0.0
        if sliding and v + a * dt < 0.0:
            sliding, a, v = False, 0.0, 0.0
            rec.log_event(Event(t, "stick", "block sticks again"))
        v += a * dt
        x += v * dt
        rec.append(t, [x], [v], [0.0], quantities={
            "block position": [x], "block velocity": [v], "block acceleration": [a],
            "friction force": [friction], "applied force": [push],
            "contact force": [friction, 0.0, M * G],
        })
    for name, unit in [("block position", "m"), ("block velocity", "m/s"), ("block acceleration", "m/s^2"),
                       ("friction force", "N"), ("applied force", "N"), ("contact force", "N")]:
        rec.set_unit(name, unit)
    rec.stats.update(wall_time=0.84, steps=6200, evaluations=24800, solve_time=0.21, pinocchio_time=0.12)
    return rec


@pytest.fixture(scope="module")
def rec():
    return friction_recording()


PANELS = [
    ("block position", 0, "Block - X position"),
    ("block velocity", None),
    ("block acceleration", 0),
    ("friction force", None, "Total frictional force"),
    ("applied force", None, "Applied force on block"),
    ("contact force", 2, "normal force"),
    ("contact force", None),
]


def test_figure_has_one_labelled_axis_per_requested_quantity(rec):
    fig = figure_quantities(rec, PANELS, title="friction run", columns=3)
    axes = [ax for ax in fig.axes if ax.get_visible() and hasattr(ax, "controlkit_quantity")]
    assert len(axes) == len(PANELS)
    for ax, (name, *_rest) in zip(axes, PANELS):
        assert ax.get_ylabel() == f"{ax.get_title()} [{rec.units[name]}]"
        assert ax.get_xlabel() == "t [s]"
        assert ax.lines, name
    assert axes[0].get_title() == "Block - X position"
    assert axes[1].get_title() == "block velocity"
    assert axes[5].get_title() == "normal force"
    assert axes[6].get_title() == "contact force" and len(axes[6].lines) == 3  # all three components
    assert [t.get_text() for t in axes[6].get_legend().get_texts()] == ["x", "y", "z"]
    assert axes[5].lines[0].get_ydata()[-1] == pytest.approx(M * G)
    assert fig._suptitle.get_text() == "friction run"


def test_png_and_svg_are_written(rec, tmp_path):
    png = plot_quantities(rec, PANELS, tmp_path / "friction.png", title="friction run", events=True)
    svg = plot_quantities(rec, PANELS, tmp_path / "out" / "friction.svg", title="friction run", events=["slip"])
    assert png == tmp_path / "friction.png" and png.exists() and svg.exists()
    with Image.open(png) as im:
        assert im.format == "PNG" and im.width > 1000 and im.height > 500
        assert len(im.convert("RGB").getcolors(1 << 20)) > 50  # graphs, not a blank page
    root = ET.parse(svg).getroot()  # valid XML
    assert root.tag.endswith("svg")
    texts = " ".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))
    fig = figure_quantities(rec, PANELS)
    for ax, (name, *_rest) in zip(fig.axes, PANELS):
        assert f"{ax.get_title()} [{rec.units[name]}]" in texts
    assert texts.count("t [s]") == len(PANELS)
    assert "Total frictional force" in texts and "friction run" in texts and "slip" in texts


def test_a_constant_is_written_out_not_autoscaled_to_its_noise(rec):
    """The normal force 470.88 N with 1e-10 N rounding noise reads "constant 470.88 N" on a
    range around its value, and no graph carries an offset or power-of-ten label."""
    noisy = Recording(1, 1, 1)
    for k in range(200):
        noisy.append(0.01 * k, [0.0], [0.0], [0.0], quantities={
            "normal force": [M * G + 1e-10 * np.sin(k)], "error": [0.0], "gap": [3e-11 * k]})
    noisy.set_unit("normal force", "N")
    noisy.set_unit("gap", "m")
    fig = figure_quantities(noisy, [("normal force", 0), ("error", 0), ("gap", 0)])
    fig.canvas.draw()
    force, error, gap = fig.axes[:3]
    texts = [t.get_text() for t in force.texts]
    assert texts == [f"constant {M * G:.6g} N"] and texts[0] == "constant 470.88 N"
    lo, hi = force.get_ylim()
    assert lo < M * G < hi and hi - lo > 1.0  # not a 1e-10 N wide range
    assert [t.get_text() for t in error.texts] == ["constant 0"]
    assert gap.get_ylabel() == "gap [1e-9 m]" and gap.lines[0].get_ydata().max() == pytest.approx(5.97)
    for ax in fig.axes[:3]:
        assert ax.yaxis.get_offset_text().get_text() == ""


def test_events_are_ticks_along_the_top_not_lines_across_each_graph():
    """500 events in 6 graphs: one tick collection per kind and graph, in a strip above it."""
    r = Recording(1, 1, 1)
    for k in range(1001):
        r.append(0.01 * k, [0.0], [0.0], [0.0], quantities={"x": [np.sin(0.01 * k)]})
        if k % 2:
            r.log_event(Event(0.01 * k, "impact" if k % 4 == 1 else "liftoff", ""))
    fig = figure_quantities(r, [("x", 0, f"x {i}") for i in range(6)], events=True)
    for ax in fig.axes[:6]:
        assert len(ax.lines) == 1  # the curve alone: no vertical line per event
        ticks = ax.collections
        assert len(ticks) == 2 and sum(len(c.get_segments()) for c in ticks) == 500
        ys = np.concatenate([np.asarray(seg)[:, 1] for c in ticks for seg in c.get_segments()])
        assert ys.min() > 1.0 and ys.max() < 1.1  # axes fraction: above the curves, below the title


def test_each_component_has_its_own_label(rec):
    rpy = Recording(1, 1, 1)
    for k in range(10):
        rpy.append(0.1 * k, [0.0], [0.0], [0.0], quantities={"torso roll pitch yaw": [0.1 * k, 0.2, -0.1 * k]})
    rpy.set_unit("torso roll pitch yaw", "rad")
    fig = figure_quantities(rpy, [("torso roll pitch yaw", i, f"torso {n}") for i, n in enumerate(("roll", "pitch", "yaw"))])
    assert [ax.get_ylabel() for ax in fig.axes[:3]] == ["torso roll [rad]", "torso pitch [rad]", "torso yaw [rad]"]


def test_unitless_quantity_is_labelled_by_name(tmp_path):
    r = Recording(1, 1)
    for k in range(5):
        r.append(0.1 * k, [0.0], [0.0], quantities={"phase": [k % 2]})
    fig = figure_quantities(r, ["phase"])
    assert fig.axes[0].get_ylabel() == "phase"


def test_plot_errors(rec, tmp_path):
    with pytest.raises(UnknownNameError, match=r"unknown recorded quantity 'frictoin force'.*Did you mean 'friction force'"):
        plot_quantities(rec, [("frictoin force", None)], tmp_path / "x.png")
    with pytest.raises(ReportError, match="component 3 does not exist; the quantity has 3 components"):
        plot_quantities(rec, [("contact force", 3)], tmp_path / "x.png")
    with pytest.raises(ReportError, match=r"suffixes \.png, \.svg"):
        plot_quantities(rec, PANELS, tmp_path / "x.jpg")
    with pytest.raises(ReportError, match="no panels"):
        plot_quantities(rec, [], tmp_path / "x.png")
    with pytest.raises(ReportError, match="component must be an integer"):
        plot_quantities(rec, [("friction force", "x")], tmp_path / "x.png")
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------ statistics
def test_statistics_of_a_run(rec):
    s = run_statistics(rec)
    assert s["simulated_time"] == pytest.approx(6.2)
    assert s["real_time_factor"] == pytest.approx(6.2 / 0.84)
    assert s["steps"] == 6200 and s["evaluations"] == 24800
    assert s["events"] == {"slip": 1, "stick": 1} and s["event_count"] == 2
    assert s["assembly_time"] is None
    text = format_statistics(s)
    lines = dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in text.splitlines())
    assert lines["simulated time"] == "6.200 s"
    assert lines["wall time"] == "0.840 s"
    assert lines["real-time factor"] == "7.38 x"
    assert lines["steps"] == "6200"
    assert lines["derivative evaluations"].startswith("24800") and "4.00 per step" in lines["derivative evaluations"]
    assert lines["time in solves"].startswith("0.210 s") and "25 % of wall time" in lines["time in solves"]
    assert lines["time in Pinocchio kernels"].startswith("0.120 s")
    assert lines["time in equation assembly"] == "-"
    assert lines["events"] == "2" and lines["slip"] == "1" and lines["stick"] == "1"


def test_statistics_with_nothing_reported():
    r = Recording(1, 1)
    r.append(0.0, [0.0], [0.0])
    r.append(0.5, [0.0], [0.0])
    text = format_statistics(run_statistics(r))
    assert "simulated time" in text and "0.500 s" in text
    for field in ("wall time", "real-time factor", "steps", "derivative evaluations", "time in solves"):
        assert re.search(rf"^{field}\s+-$", text, re.M), field
    assert re.search(r"^events\s+0$", text, re.M)


# --------------------------------------------------------------------- progress
def test_progress_is_silent_when_not_a_terminal(capsys):
    with Progress(2.0, enabled=True, delay=0.0) as p:  # pytest captures stdout: not a terminal
        assert not p.active
        for k in range(21):
            p.update(0.1 * k)
    assert capsys.readouterr() == ("", "")
    with pytest.raises(ReportError, match="must end after it starts"):
        Progress(0.0)


def _on_a_terminal(monkeypatch, body) -> str:
    """Run ``body(term)`` with stdout on a real pseudo-terminal; return what the terminal received."""
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 24 rows x 100 columns
    term = os.fdopen(slave, "w")
    try:
        with monkeypatch.context() as mp:
            mp.setattr(sys, "stdout", term)  # a real terminal in place of pytest's captured stdout
            body(term)
        term.flush()
        # a pseudo-terminal hands written bytes over in chunks: read until none come for 0.2 s
        import select

        chunks = []
        while select.select([master], [], [], 0.2)[0]:
            chunk = os.read(master, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")
    finally:
        term.close()
        os.close(master)


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_draws_a_bar_on_a_terminal(monkeypatch):
    def run(term):
        p = Progress(2.0, enabled=True, delay=0.0, file=term)
        assert p.active
        p.update(1.0)
        p.update(2.5)  # clamped to the end
        p._bar.refresh()
        assert not Progress(2.0, enabled=False, file=term).active
        p.close()

    out = _on_a_terminal(monkeypatch, run)
    assert "simulating" in out and "t = 2.000 / 2.000 s" in out


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_delay_hides_short_runs(monkeypatch):
    def run(term):
        with Progress(1.0, file=term) as p:  # default delay: 2 s of wall time
            assert p.active
            p.update(0.5)
            p.update(1.0)

    assert "simulating" not in _on_a_terminal(monkeypatch, run)
