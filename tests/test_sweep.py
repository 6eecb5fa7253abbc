"""Sweeps on Dask: grids and samples of a demo's options, resumed, failing runs as rows, bad input.

The sweeps run the thesis pendulum (the cheapest demo) for a few hundredths of a second on a
real embedded LocalCluster; the distributed path with separate scheduler and worker processes
is in tests/test_sweep_distributed.py.
"""
from __future__ import annotations

import contextlib
import io
import json
import socket
import time

import numpy as np
import pytest

import controlkit
import controlkit.cli
from controlkit.cli import main
from controlkit.recording import Recording
from controlkit.studies.specs import Axis, Draw, SpecError, expand, parse_setting
from controlkit.studies.table import Table

SECONDS = 0.02
DTS = (1e-3, 2e-3, 4e-3)


def cli(*argv) -> tuple[int, str, str]:
    """Run ``controlkit ARGV``; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_specs_give_ranges_lists_and_seeded_draws():
    assert parse_setting("mass_error=-0.2:0.2:5") == Axis("mass_error", (-0.2, -0.1, 0.0, 0.1, 0.2))
    assert parse_setting("integrator=rk4,euler") == Axis("integrator", ("rk4", "euler"))
    assert parse_setting("mu=0.8") == Axis("mu", (0.8,))
    assert parse_setting("mu=uniform(0.5, 1)") == Draw("mu", "uniform", 0.5, 1.0)
    settings = [parse_setting("a=1,2"), parse_setting("b=uniform(-1,1)"), parse_setting("c=loguniform(1e-3,1e-1)")]
    runs = expand(settings, samples=4, seed=7)
    assert len(runs) == 8 and [s for _, s in runs] == [7, 8, 9, 10] * 2
    draws = np.array([[o["b"], o["c"]] for o, _ in runs])
    assert np.all(np.abs(draws[:, 0]) <= 1) and np.all((draws[:, 1] >= 1e-3) & (draws[:, 1] <= 1e-1))
    assert np.array_equal(draws[:4], draws[4:])  # common random numbers across grid points
    assert len(set(draws[:4, 0])) == 4  # each sample its own draw
    assert expand(settings, samples=4, seed=7) == runs and expand(settings, samples=4, seed=8) != runs


@pytest.mark.parametrize("item", ["dt=1:2", "dt=1:2:0", "dt=1:2:x", "dt=gauss(0,1)", "dt=uniform(1)",
                                  "dt=uniform(2,1)", "dt=", "dt=1,,2", "=1"])
def test_malformed_spec_is_one_line_naming_the_accepted_forms(item):
    with pytest.raises(SpecError) as info:
        parse_setting(item)
    message = str(info.value)
    assert "\n" not in message and repr(item) in message
    assert all(form in message for form in ("START:STOP:COUNT", "V1,V2,...", "uniform(LO,HI)"))
    code, _, err = cli("sweep", "thesis_pendulum", "--set", item, "--out", "unused")
    assert code == 1 and "accepted forms" in err and len(err.strip().splitlines()) == 1


def test_unknown_option_lists_the_valid_ones(tmp_path):
    code, _, err = cli("sweep", "thesis_pendulum", "--set", "length=1,2", "--out", str(tmp_path / "s"))
    assert code == 1 and "length" in err and "integrator, dt" in err
    assert not (tmp_path / "s").exists()


def test_unwritable_out_is_an_error_before_any_run(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    code, _, err = cli("sweep", "thesis_pendulum", "--set", "dt=1e-3,2e-3", "--out", str(blocker / "sweep"))
    assert code == 1 and "--out" in err and "cannot write" in err


def test_unreachable_scheduler_fails_clearly_within_the_timeout(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    code, _, err = cli("sweep", "thesis_pendulum", "--set", "dt=1e-3,2e-3", "--seconds", "0.01", "--out",
                       str(tmp_path / "s"), "--scheduler", f"tcp://127.0.0.1:{port}", "--connect-timeout", "2")
    assert code == 1 and f"tcp://127.0.0.1:{port}" in err and "no Dask scheduler answered within 2 s" in err
    assert time.monotonic() - t0 < 15


def _rows(folder) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in (folder / "rows").glob("*.json")}


def test_grid_on_the_local_cluster_resumes_and_keeps_failing_runs_as_rows(tmp_path):
    out = tmp_path / "sweep"
    code, printed, _ = cli("sweep", "thesis_pendulum", "--seconds", str(SECONDS), "--set", "integrator=rk4,euler",
                           "--set", "dt=" + ",".join(map(str, DTS)), "--metric", "sim.steps", "--out", str(out),
                           "--keep-recordings", "--quiet")
    assert code == 0 and printed == ""
    table = Table.from_csv(out / "results.csv", ["integrator", "dt"])
    assert len(table) == 6 and not table.failed
    assert [(r["integrator"], r["dt"]) for r in table] == [(i, dt) for i in ("rk4", "euler") for dt in DTS]
    # the runs really ran with those options: the steps taken are the duration over the step
    assert list(table["sim.steps"]) == [round(SECONDS / dt) for _ in range(2) for dt in DTS]
    # rk4 evaluates 4 derivatives per step, euler one (plus the initial solve)
    evals = table["sim.evaluations"] / table["sim.steps"]
    assert np.all(np.abs(evals[:3] - 4) < 0.5) and np.all(np.abs(evals[3:] - 1) < 0.5)
    assert len(set(table["run"])) == 6 and all(r["worker"].startswith("tcp://") for r in table)
    for r in table:
        rec = Recording.load(out / "runs" / f"{r['run']}.npz")
        assert rec.t[-1] == pytest.approx(SECONDS)
    assert (out / "map_sim.steps.png").read_bytes()[:4] == b"\x89PNG"

    before = {k: (out / "rows" / f"{k}.json").stat().st_mtime_ns for k in _rows(out)}
    code, printed, _ = cli("sweep", "thesis_pendulum", "--seconds", str(SECONDS), "--set", "integrator=rk4,euler",
                           "--set", "dt=" + ",".join(map(str, DTS)), "--metric", "sim.steps", "--out", str(out))
    assert code == 0 and "6 runs, 6 already done" in printed and "Dask" not in printed  # no cluster started
    assert {k: (out / "rows" / f"{k}.json").stat().st_mtime_ns for k in _rows(out)} == before
    assert Table.from_csv(out / "results.csv", ["integrator", "dt"]).rows == table.rows

    # a third integrator that does not exist: its runs are rows with the error, the six stand as they were
    table3 = controlkit.sweep("thesis_pendulum", {"integrator": ["rk4", "euler", "bogus"], "dt": list(DTS)},
                              seconds=SECONDS, out=out, quiet=True, workers=1)
    assert len(table3) == 9 and len(_rows(out)) == 9
    assert [r["run"] for r in table3.rows[:6]] == [r["run"] for r in table.rows]
    assert [r["wall_time"] for r in table3.rows[:6]] == [r["wall_time"] for r in table.rows]  # not run again
    bad = table3.rows[6:]
    assert [r["integrator"] for r in bad] == ["bogus"] * 3
    assert all(r["error"].startswith("UnknownNameError: unknown integrator 'bogus'") for r in bad)
    assert all(np.isnan(r) for r in table3["sim.steps"][6:]) and table3.failed == bad

    code, printed, _ = cli("sweep", "--report", str(out), "--metric", "sim.real_time_factor")
    assert code == 0 and "map_sim.real_time_factor.png" in printed
    code, _, err = cli("sweep", "--report", str(out), "--metric", "sim.stepz")
    assert code == 1 and "Did you mean 'sim.steps'" in err


def test_walking_robustness_example_rows_are_walks_with_their_mass_error_and_friction(tmp_path):
    import importlib.util
    path = controlkit.cli.EXAMPLES / "walking_robustness.py"
    spec = importlib.util.spec_from_file_location("walking_robustness", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    table = example.study(tmp_path, seconds=0.3, mass_error="0,0.1", mu="0.8", quiet=True, workers=1)
    assert [(r["mass_error"], r["mu"]) for r in table] == [(0.0, 0.8), (0.1, 0.8)] and not table.failed
    # 0.3 s is inside the weight shift: standing, no step yet, torso at its height
    assert list(table["fell"]) == [0, 0] and list(table["steps"]) == [0, 0]
    assert np.all(table["torso_height_mean"] > 1.0) and np.all(table["max_stance_slip"] < 1e-3)
    assert "mu 0.80: walks with mass errors +0% to +10% (2 of 2)" in example.summary(table)
    assert (tmp_path / "map_max_stance_slip.png").is_file() and (tmp_path / "map_fell.png").is_file()


def test_the_core_and_the_sweep_api_import_no_simulator_layers():
    import subprocess
    import sys
    code = ("import sys, controlkit, controlkit.studies; controlkit.sweep; "
            "print(sorted(m for m in ('sim', 'robots', 'controllers', 'distributed') if m in sys.modules))")
    printed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert printed.strip() == "[]"


def test_a_run_on_a_machine_without_the_script_uses_the_source_shipped_with_it(tmp_path):
    from controlkit.studies.runs import run_one
    source = (controlkit.cli.EXAMPLES / "thesis_pendulum.py").read_text()
    task = {"run": "x", "path": str(tmp_path / "elsewhere" / "pendulum_study.py"), "source": source,
            "options": {"integrator": "euler", "dt": 5e-3}, "seconds": 0.05, "seed": 1, "keep": True}
    row = run_one(task)
    assert row["error"] == "" and row["sim.steps"] == 10 and row["integrator"] == "euler"
    rec_path = tmp_path / "run.npz"
    rec_path.write_bytes(row["_recording"])
    assert Recording.load(rec_path).t[-1] == pytest.approx(0.05)
    failed = run_one({**task, "options": {"dt": "fast"}})
    # a bad option is the simulator's own clear error, kept as the row's error with its traceback
    assert failed["error"].startswith("ArgumentError") and "dt" in failed["error"]
    assert "Traceback" in failed["_traceback"]
