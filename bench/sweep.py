"""Sweeps on Dask: 16 forward-dynamics walks, serial against a LocalCluster on the cores.

- ``serial``: the 16 runs one after the other in this process (``controlkit.studies.runs.run_one``,
  the function the workers execute), after one short warm-up walk so the imports are not counted.
- ``LocalCluster``: the same 16 runs by :func:`controlkit.sweep` into a fresh folder, one worker
  process per core, end to end: the cluster's start, each worker's imports, scheduling, the runs,
  the results written.

Reported: both wall times and their ratio (the speedup, measured in the same run), the sum of the
runs' own wall times on the workers, and Dask's overhead per run two ways: (a) within the sweep,
``(cluster wall x workers - sum of run wall times) / runs`` (start, imports, scheduling,
transfer, idle cores at the end), and (b) a round trip of one task carrying a run's payload
(a task dict and a row of metrics) on a started cluster, one at a time (latency) and 64 at once
(per task). The runs are ``walking_fd`` for ``--seconds`` (4) with ``mass_error`` over 16 values
from -0.15 to 0.15.

Run: ``.venv/bin/python bench/sweep.py [--seconds 4] [--runs 16] [--workers N]``; writes
``bench/results/sweep.json`` and ``bench/results/sweep.md``.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import RESULTS, table, write_json  # noqa: E402


def _echo(task: dict) -> dict:
    """A no-op task: returns a row-sized dict (what a run sends back)."""
    return {"run": task["run"], "seed": 0, "wall_time": 0.0, "worker": "", "error": "",
            **{f"metric_{i}": float(i) for i in range(20)}}


def dask_round_trip(workers: int, tasks: list[dict], repeat: int = 64) -> dict:
    """Per-task overhead (ms) of Dask on a started LocalCluster: one at a time, and ``repeat`` at once."""
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        client.submit(_echo, tasks[0], pure=False).result()  # connections made
        t0 = time.perf_counter()
        for i in range(repeat):
            client.submit(_echo, tasks[i % len(tasks)], pure=False).result()
        latency = (time.perf_counter() - t0) / repeat
        t0 = time.perf_counter()
        client.gather([client.submit(_echo, tasks[i % len(tasks)], pure=False) for i in range(repeat)])
        bulk = (time.perf_counter() - t0) / repeat
    return {"latency_ms": 1e3 * latency, "bulk_ms_per_task": 1e3 * bulk}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=4.0, help="simulated time per walk (s)")
    p.add_argument("--runs", type=int, default=16)
    p.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)), help="default: the cores")
    args = p.parse_args(argv)
    import controlkit
    from controlkit.studies.runs import run_one
    from controlkit.studies.specs import expand, parse_setting
    from controlkit.studies.sweep import resolve_target

    settings = [f"mass_error=-0.15:0.15:{args.runs}"]
    _, path = resolve_target("walking_fd")
    source = path.read_text()
    tasks = [{"run": f"serial-{i}", "path": str(path), "source": source, "options": o, "seconds": args.seconds,
              "seed": s, "keep": False} for i, (o, s) in enumerate(expand([parse_setting(x) for x in settings]))]

    run_one({**tasks[0], "seconds": 0.05})  # warm-up: imports and the script loaded
    t0 = time.perf_counter()
    serial_rows = [run_one(t) for t in tasks]
    serial = time.perf_counter() - t0
    assert not any(r["error"] for r in serial_rows), [r["error"] for r in serial_rows]

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        sweep_table = controlkit.sweep("walking_fd", settings, seconds=args.seconds, out=tmp, workers=args.workers,
                                       quiet=True)
        parallel = time.perf_counter() - t0
    assert not sweep_table.failed, [r["error"] for r in sweep_table.failed]
    run_sum = float(sum(r["wall_time"] for r in sweep_table))
    same = all(abs(a["steps"] - b["steps"]) == 0 and a["fell"] == b["fell"] for a, b in zip(serial_rows, sweep_table))
    trip = dask_round_trip(args.workers, tasks)
    result = {
        "runs": args.runs, "seconds_per_run": args.seconds, "workers": args.workers,
        "cores": len(os.sched_getaffinity(0)), "load_average_1min": os.getloadavg()[0],
        "serial_s": serial, "serial_mean_run_s": serial / args.runs,
        "local_cluster_s": parallel, "speedup": serial / parallel,
        "speedup_share_of_workers": serial / parallel / args.workers,
        "worker_run_sum_s": run_sum,
        "overhead_per_run_in_sweep_ms": 1e3 * (parallel * args.workers - run_sum) / args.runs,
        "dask_task_latency_ms": trip["latency_ms"], "dask_task_bulk_ms": trip["bulk_ms_per_task"],
        "rows_agree_with_serial": same,
    }
    path_json = write_json("sweep", result)
    rows = [{"what": k, "value": v} for k, v in result.items()]
    text = table(rows, ["what", "value"])
    md = (f"16 forward-dynamics walks of {args.seconds:g} s (`walking_fd`, mass_error -0.15..0.15): serial in one "
          f"process vs `controlkit.sweep` on a LocalCluster of {args.workers} worker processes "
          f"({result['cores']} cores, 1-min load average {result['load_average_1min']:.1f} at the end: "
          "the machine is shared).\n\n```\n" + text + "\n```\n")
    (RESULTS / "sweep.md").write_text(md)
    print(text)
    print(f"wrote {path_json}")
    print(json.dumps({"speedup": round(result["speedup"], 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
