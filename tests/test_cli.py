"""The controlkit command: every subcommand runs, wrong names are explained."""
import subprocess
import sys

import pytest


def run(*args, check=True):
    p = subprocess.run([sys.executable, "-m", "controlkit.cli", *args], capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def test_demo_lists_each_demo_on_one_line():
    out = run("demo").stdout.splitlines()
    names = [line.split()[0] for line in out]
    assert "thesis_pendulum" in names
    assert all(len(line.split(None, 1)) == 2 for line in out)  # a name and a description


def test_a_short_demo_writes_its_replay_plot_and_recording(tmp_path):
    html, png = tmp_path / "p.html", tmp_path / "p.png"
    p = run("demo", "thesis_pendulum", "--seconds", "0.2", "--html", str(html), "--plot", str(png),
            "--out", str(tmp_path))
    assert html.stat().st_size > 10_000 and png.stat().st_size > 10_000
    assert (tmp_path / "thesis_pendulum.npz").exists()
    assert "simulated time" in p.stdout and "real-time factor" in p.stdout
    assert f"wrote {html}" in p.stdout


def test_html_and_plot_without_names_go_into_the_out_folder(tmp_path):
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "controlkit.cli", "demo", "thesis_pendulum", "--seconds", "0.1",
                        "--html", "--plot", "--out", str(out), "--quiet"], capture_output=True, text=True,
                       timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (out / "thesis_pendulum.html").stat().st_size > 10_000
    assert (out / "thesis_pendulum.png").stat().st_size > 10_000
    assert not (tmp_path / "thesis_pendulum.html").exists() and not (tmp_path / "thesis_pendulum.png").exists()


def test_a_wrong_demo_name_exits_non_zero_with_the_valid_names():
    p = run("demo", "no_such_demo", check=False)
    assert p.returncode != 0
    assert "unknown demo 'no_such_demo'" in p.stderr and "thesis_pendulum" in p.stderr


def test_info_prints_bodies_joints_dof_features_and_equations():
    out = run("info", "four_bar").stdout
    assert "nv = 3 (degrees of freedom)" in out
    assert "bodies:" in out and "crank" in out
    assert "joints:" in out and "hinge_1" in out
    assert "features:" in out
    assert "EQUATIONS OF FOUR_BAR" in out and "Hinge hinge_4" in out


def test_info_on_an_unknown_model_lists_valid_models():
    p = run("info", "robbie", check=False)
    assert p.returncode != 0 and "unknown model 'robbie'" in p.stderr and "talos" in p.stderr


def test_replay_rebuilds_the_model_and_writes_html(tmp_path):
    run("demo", "thesis_pendulum", "--seconds", "0.1", "--out", str(tmp_path), "--quiet")
    html = tmp_path / "replay.html"
    p = run("replay", str(tmp_path / "thesis_pendulum.npz"), "--html", str(html))
    assert html.stat().st_size > 10_000 and f"wrote {html}" in p.stdout


@pytest.mark.parametrize("sub", ["demo", "run", "info", "replay"])
def test_each_subcommand_has_help(sub):
    out = run(sub, "--help").stdout
    assert out.startswith("usage: controlkit " + sub)


def test_run_executes_a_users_script(tmp_path):
    script = tmp_path / "mine.py"
    script.write_text(
        '"""A user\'s scenario."""\n'
        "import robots\n"
        "from sim.runner import Scenario\n"
        "from sim.simulator import Simulator\n"
        "def build(integrator='rk4'):\n"
        "    b = robots.four_bar()\n"
        "    sim = Simulator(b.mechanism, b.q0, b.v0, dt=2e-3, integrator=integrator)\n"
        "    return Scenario('mine', 'four-bar', sim, 0.1, summary=lambda r: f'samples {len(r)}')\n")
    p = run("run", str(script), "--integrator", "semi_implicit_euler")
    assert "samples 51" in p.stdout
    assert "cannot be replayed" not in p.stderr  # nothing saved: nothing to warn about
    saved = run("run", str(script), "--out", str(tmp_path / "o"))
    assert "gives no model=" in saved.stderr and "cannot be replayed later" in saved.stderr
    assert (tmp_path / "o" / "mine.npz").exists()


def test_set_passes_options_to_build_and_names_the_valid_ones(tmp_path):
    """``--set NAME=VALUE``: VALUE a Python literal (or else the text), for any option of build()."""
    script = tmp_path / "opts.py"
    script.write_text(
        "import robots\n"
        "from sim.runner import Scenario\n"
        "from sim.simulator import Simulator\n"
        "def build(integrator='rk4', dt=2e-3, label='plain', damped=False):\n"
        "    b = robots.four_bar()\n"
        "    sim = Simulator(b.mechanism, b.q0, b.v0, dt=dt, integrator=integrator)\n"
        "    what = f'{label} {type(dt).__name__} {damped!r}'\n"
        "    return Scenario('opts', 'four-bar', sim, 0.1, summary=lambda r: f'{what} samples {len(r)}')\n")
    p = run("run", str(script), "--set", "dt=1e-2", "--set", "label=tuned", "--set", "damped=True")
    assert "tuned float True samples 11" in p.stdout  # 0.1 s at 10 ms
    p = run("run", str(script), "--plot", str(tmp_path / "opts.png"))
    assert "declares no plot panels" in p.stderr and not (tmp_path / "opts.png").exists()  # said, not silent
    bad = run("run", str(script), "--set", "gain=2", check=False)
    assert bad.returncode == 1 and "--set gain: not an option" in bad.stderr
    assert "integrator, dt, label, damped" in bad.stderr
    bad = run("run", str(script), "--set", "dt", check=False)
    assert bad.returncode == 1 and "expected NAME=VALUE" in bad.stderr
    bad = run("run", str(script), "--set", "dt=fast", check=False)
    assert bad.returncode == 1 and "--set dt='fast': expected a number (default 0.002)" in bad.stderr
    bad = run("run", str(script), "--set", "damped=1", check=False)
    assert bad.returncode == 1 and "--set damped=1: expected True or False" in bad.stderr


def test_the_coroutine_example_is_short_and_reaches_its_phase_change(tmp_path):
    from pathlib import Path
    src = Path(__file__).resolve().parents[1] / "examples" / "ur5_phases.py"
    program = src.read_text().split('if __name__ == "__main__":')[0]
    assert len(program.rstrip().splitlines()) < 40
    p = run("demo", "ur5_phases", "--seconds", "1.2", "--out", str(tmp_path))
    assert "control" in p.stdout  # the until() condition fired and was logged as a control event


def test_run_prints_the_programs_log_lines_and_quiet_hides_them(tmp_path):
    loud = run("demo", "ur5_phases", "--seconds", "0.5")
    line = next(ln for ln in loud.stdout.splitlines() if "tool moved 20 cm" in ln and "until" not in ln)
    t = float(line.split("]")[0].strip("[ s"))
    assert 0.2 < t < 0.5 and "tool=" in line  # the ctl.log line, at its time, with its data
    quiet = run("demo", "ur5_phases", "--seconds", "0.5", "--quiet")
    assert quiet.stdout == ""


def test_out_alone_writes_the_recording_only(tmp_path):
    p = run("demo", "thesis_pendulum", "--seconds", "0.1", "--out", str(tmp_path))
    assert sorted(f.name for f in tmp_path.iterdir()) == ["thesis_pendulum.npz"]
    assert f"wrote {tmp_path / 'thesis_pendulum.npz'}" in p.stdout


def test_replay_writes_next_to_the_recording_by_default(tmp_path):
    run("demo", "thesis_pendulum", "--seconds", "0.1", "--out", str(tmp_path), "--quiet")
    p = run("replay", str(tmp_path / "thesis_pendulum.npz"))
    assert (tmp_path / "thesis_pendulum.html").stat().st_size > 10_000
    assert "thesis_pendulum.html" in p.stdout


def test_compare_takes_the_same_option_names_as_demo(tmp_path):
    p = run("compare", "redundant_arm", "--seconds", "0.05", "--set", "mass_error=0.2", "--set", "clocks=[1e-3]",
            "--out", str(tmp_path))
    assert "+20% mass" in p.stdout and "250 Hz" not in p.stdout
    assert (tmp_path / "compare_redundant_arm.png").exists()
    bad = run("compare", "redundant_arm", "--set", "speed=2", check=False)
    assert bad.returncode == 1 and "mass_error" in bad.stderr


def test_integrator_help_lists_every_integrator():
    from sim.integrators import make_integrator
    text = " ".join(run("demo", "--help").stdout.split())
    for name in ("euler", "semi_implicit_euler", "rk4", "abm4", "dopri5", "dop853"):
        make_integrator(name)  # each one named in the help exists
        assert name in text


def test_live_keeps_serving_for_live_seconds_then_stops():
    import time
    t0 = time.monotonic()
    p = run("demo", "thesis_pendulum", "--seconds", "0.05", "--live", "--live-seconds", "1.5", "--quiet")
    assert time.monotonic() - t0 >= 1.5
    url = p.stdout.splitlines()[0].removeprefix("live view: ")
    assert url.startswith("http://127.0.0.1:") and f"serving the live view at {url} for 1.5 s" in p.stdout


def test_info_on_a_urdf_robot_says_where_its_frames_are():
    out = run("info", "ur5").stdout
    assert "features: none declared (a URDF model" in out and "tool0" in out


def test_every_example_runs_on_its_own():
    """Each examples/*.py has a __main__ block (ur5_phases' is run by the guide's test)."""
    import ast
    from pathlib import Path
    for path in sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py")):
        tree = ast.parse(path.read_text())
        mains = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
        assert mains, f"{path.name} does nothing when run as a script"
