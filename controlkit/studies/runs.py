"""One run of a sweep, as a Dask worker executes it: build the scenario, simulate, summarize.

:func:`run_one` takes a plain dict (the run's target, options, seconds, seed) and returns a plain
dict (the table row), so it crosses process and machine boundaries by pickle alone. A run that
raises is a row with its ``error``; the worker process lives on.
"""
from __future__ import annotations

import hashlib
import inspect
import math
import os
import random
import socket
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

#: the columns every row has, before the options and the metrics
FIXED = ("run", "seed", "wall_time", "worker", "error")
#: run_statistics keys that become ``sim.`` metrics (the run's own wall time is the row's ``wall_time``)
GENERIC = ("real_time_factor", "simulated_time", "steps", "evaluations", "event_count", "solve_time")


def load_target(path: str, source: str | None = None):
    """The target script as a module: from ``path`` when this machine has it, else from ``source``
    (its text, shipped with the run) written to a temporary file of the same name."""
    from sim.runner import load_script
    if Path(path).is_file() or source is None:
        return load_script(path)
    folder = Path(tempfile.gettempdir()) / "controlkit-sweep" / hashlib.sha256(source.encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / Path(path).name
    if not copy.is_file():
        copy.write_text(source)
    return load_script(copy)


def flat_metrics(values: dict, prefix: str = "") -> dict:
    """A metrics dict as scalar columns: numbers and booleans kept (booleans as 0/1), nested dicts
    as ``outer.inner``, lists and other values dropped; non-finite numbers kept as NaN."""
    out = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat_metrics(value, name + "."))
        elif isinstance(value, (bool, np.bool_)):
            out[name] = int(bool(value))
        elif isinstance(value, (int, np.integer)):
            out[name] = int(value)
        elif isinstance(value, (float, np.floating)):
            out[name] = float(value) if math.isfinite(value) else float("nan")
    return out


def _metrics(module, rec) -> dict:
    """The script's own ``metrics(recording)`` if it defines one, then the simulator's statistics
    (:func:`controlkit.report.run_statistics`) as ``sim.<name>`` (``sim.steps``, ``sim.events.impact``):
    a script's ``steps`` (a walk's) never collides with the integrator's."""
    from controlkit.report import run_statistics
    stats = run_statistics(rec)
    out = {k: stats[k] for k in GENERIC if stats.get(k) is not None}
    out["events"] = stats["events"]
    own = getattr(module, "metrics", None)
    mine = flat_metrics(own(rec)) if callable(own) else {}
    return {**mine, **flat_metrics(out, "sim.")}


def _worker_name() -> str:
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return f"{socket.gethostname()}:{os.getpid()}"


def run_one(task: dict) -> dict:
    """Run one sweep task; returns its row (``run``, ``seed``, ``wall_time`` s, ``worker``,
    ``error``, the options, the metrics) and, with ``task["keep"]``, the recording's ``.npz``
    bytes under ``"_recording"``.

    ``task``: ``run`` (its key), ``path`` and ``source`` (the script), ``options`` (keyword
    arguments of its ``build``), ``seconds`` (None: the scenario's own), ``seed``, ``keep``.
    The seed seeds numpy's and Python's global generators and is passed to ``build`` as ``seed``
    when ``build`` takes one and the sweep does not set it.
    """
    t0 = time.perf_counter()
    row = {"run": task["run"], "seed": task["seed"], "wall_time": None, "worker": _worker_name(), "error": "",
           **task["options"]}
    try:
        from sim.runner import run_scenario
        np.random.seed(task["seed"] % 2**32)
        random.seed(task["seed"])
        module = load_target(task["path"], task.get("source"))
        options = dict(task["options"])
        if "seed" in inspect.signature(module.build).parameters and "seed" not in options:
            options["seed"] = task["seed"]
        scn = module.build(**options)
        rec = run_scenario(scn, seconds=task["seconds"], quiet=True, save=False)
        row.update(_metrics(module, rec))
        if task.get("keep"):
            with tempfile.TemporaryDirectory() as tmp:
                row["_recording"] = rec.save(Path(tmp) / "run.npz").read_bytes()
    except Exception as exc:  # a failing run is a row, never the end of the sweep
        row["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
        row["_traceback"] = traceback.format_exc()
    row["wall_time"] = time.perf_counter() - t0
    return row
