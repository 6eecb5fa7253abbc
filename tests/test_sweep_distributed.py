"""The distributed path for real: `dask scheduler` and two `dask worker` processes on 127.0.0.1,
a Monte Carlo sweep sent to them with --scheduler, one worker killed mid-sweep; every row arrives
exactly once.
"""
from __future__ import annotations

import csv
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controlkit.studies.specs import expand, parse_setting

RUNS = 12  # random samples of the step, each ~0.3 s of work (rk4, 1 simulated second)
DT = "dt=uniform(1e-3,1.25e-3)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dask() -> str:
    beside = Path(sys.executable).parent / "dask"
    return str(beside) if beside.is_file() else shutil.which("dask")


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@pytest.fixture
def dask_cluster(tmp_path):
    """A scheduler and two workers (no nannies: a killed worker stays dead), stopped afterwards."""
    from distributed import Client
    procs: list[subprocess.Popen] = []
    log = (tmp_path / "dask.log").open("w")
    address = f"tcp://127.0.0.1:{_free_port()}"
    try:
        procs.append(subprocess.Popen([_dask(), "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                                       "--no-dashboard"], stdout=log, stderr=subprocess.STDOUT))
        for name in ("w0", "w1"):
            procs.append(subprocess.Popen([_dask(), "worker", address, "--host", "127.0.0.1", "--name", name,
                                           "--nthreads", "1", "--no-nanny", "--no-dashboard"],
                                          stdout=log, stderr=subprocess.STDOUT))
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
            workers = {info["name"]: addr for addr, info in client.scheduler_info()["workers"].items()}
        yield address, {name: (workers[name], p) for name, p in zip(("w0", "w1"), procs[1:])}
    finally:
        _stop(procs[1:])  # the workers first: a worker whose scheduler is gone waits for it to come back
        _stop(procs[:1])
        log.close()


def test_killed_worker_runs_are_retried_and_every_row_is_present_once(dask_cluster, tmp_path):
    from distributed import Client
    address, workers = dask_cluster
    out = tmp_path / "sweep"
    victim_address, victim = workers["w0"]
    survivor_address = workers["w1"][0]
    cmd = [sys.executable, "-m", "controlkit.cli", "sweep", "thesis_pendulum", "--seconds", "1",
           "--set", "integrator=rk4", "--set", DT, "--samples", str(RUNS), "--seed", "3", "--out", str(out),
           "--scheduler", address]
    with (tmp_path / "sweep.log").open("w") as log:
        sweep = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while len(list((out / "rows").glob("*.json"))) < 2 and time.monotonic() < deadline:
                assert sweep.poll() is None, (tmp_path / "sweep.log").read_text()
                time.sleep(0.02)
            with Client(address, timeout=30) as client:
                running = []
                while not running and time.monotonic() < deadline:  # the victim in the middle of a run
                    running = client.processing(workers=[victim_address])[victim_address]
                os.kill(victim.pid, signal.SIGKILL)
            done_at_kill = len(list((out / "rows").glob("*.json")))
            assert sweep.wait(timeout=120) == 0, (tmp_path / "sweep.log").read_text()
        finally:
            _stop([sweep])
    assert 2 <= done_at_kill < RUNS and running
    assert victim.poll() is not None  # the victim is gone
    with (out / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    drawn = {seed: options["dt"] for options, seed in expand([parse_setting(DT)], RUNS, seed=3)}
    assert sorted(int(r["seed"]) for r in rows) == list(range(3, 3 + RUNS))  # every run, once
    assert all(float(r["dt"]) == drawn[int(r["seed"])] for r in rows)
    assert len({r["run"] for r in rows}) == RUNS == len(list((out / "rows").glob("*.json")))
    assert all(r["error"] == "" and float(r["sim.simulated_time"]) == pytest.approx(1.0) for r in rows)
    assert all(abs(float(r["sim.steps"]) - 1 / float(r["dt"])) <= 1 for r in rows)
    # the run the kill cut short (and any the scheduler had queued on the victim) ran on the survivor
    assert all(r["worker"] == survivor_address for r in rows if f"controlkit-run-{r['run']}" in running)
    by = [r["worker"] for r in rows]
    assert set(by) <= {victim_address, survivor_address} and by.count(survivor_address) > RUNS // 2
