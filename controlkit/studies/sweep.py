"""Parameter sweeps and Monte Carlo studies of a demo or script, run on Dask.

:func:`sweep` runs a scenario script's ``build(**options)`` over a grid or random samples of its
options (:mod:`controlkit.studies.specs`), each run a Dask task (:func:`controlkit.studies.runs.run_one`)
on an embedded ``LocalCluster`` (one worker process per core) or an existing cluster
(``scheduler="tcp://host:8786"``), and returns the :class:`~controlkit.studies.table.Table` of
rows. In the output folder:

- ``rows/<run>.json``: each finished run, written as it arrives; a run's key hashes the target,
  its options, seconds, seed and the code version (the sources of ``controlkit``, ``sim``,
  ``robots``, ``controllers`` and the script), so the same sweep again skips finished runs;
- ``results.csv`` (and ``results.parquet`` when pyarrow is installed), ``sweep.json`` (what was
  swept), ``map_<metric>.png`` (:func:`controlkit.studies.maps.robustness_map`);
- ``runs/<run>.npz``: recordings, with ``keep_recordings``.

A run that raises is a row with its ``error``; a worker that dies has its tasks rerun by Dask on
the other workers; a task Dask gives up on is a row with the error but is not stored in
``rows/``, so the next sweep runs it again.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Mapping, Sequence

from controlkit.errors import ControlkitError, UnknownNameError

from .runs import run_one
from .specs import Axis, Draw, expand, parse_setting, parse_settings
from .table import Table

PACKAGES = ("controlkit", "sim", "robots", "controllers")


class SweepError(ControlkitError):
    """A sweep cannot start or cannot reach its cluster."""


def resolve_target(target: str) -> tuple[str, Path]:
    """A demo name or a script path as ``(name, path)``; an unknown demo lists the demos."""
    from controlkit.cli import EXAMPLES, _demos
    path = Path(target)
    if target.endswith(".py") or path.is_file():
        if not path.is_file():
            raise SweepError(f"no such script: {target}")
        return path.stem, path.resolve()
    demos = _demos()
    if target not in demos:
        raise UnknownNameError("demo", target, demos, "controlkit sweep (or give a script's path)")
    return target, EXAMPLES / f"{target}.py"


def code_version(script: Path) -> str:
    """A hash of the Python sources of controlkit, sim, robots, controllers and ``script``."""
    h = hashlib.sha256()
    for pkg in PACKAGES:
        spec = find_spec(pkg)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            for f in sorted(Path(folder).rglob("*.py")):
                h.update(str(f.relative_to(folder)).encode())
                h.update(f.read_bytes())
    h.update(script.read_bytes())
    return h.hexdigest()[:16]


def run_key(target: str, options: dict, seconds: float | None, seed: int, code: str) -> str:
    """The key of one run: a hash of what determines its result."""
    text = json.dumps({"target": target, "options": options, "seconds": seconds, "seed": seed, "code": code},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _settings(settings) -> list[Axis | Draw]:
    """``NAME=SPEC`` strings, or a mapping name -> SPEC string or list of values."""
    if isinstance(settings, Mapping):
        out = []
        for name, spec in settings.items():
            if isinstance(spec, str):
                out.append(parse_setting(f"{name}={spec}"))
            else:
                values = tuple(spec) if isinstance(spec, (list, tuple)) else (spec,)
                out.append(Axis(name, values))
        return out
    return parse_settings(settings)


def _check_options(build, names: list[str]) -> None:
    """The names must be options of ``build``: the CLI's ``--set`` check (an unknown name lists them)."""
    from controlkit.cli import _build_options
    _build_options(build, [f"{n}=0" for n in names])


def _writable(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".controlkit-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise SweepError(f"--out {out}: cannot write there ({exc.strerror or exc}); choose a writable folder") from None


def _write_json(path: Path, data) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, default=str))
    os.replace(tmp, path)  # a reader never sees half a row


def sweep(target: str, settings: Sequence[str] | Mapping[str, object], *, out: str | Path,
          seconds: float | None = None, samples: int = 1, seed: int = 0, metrics: Sequence[str] = (),
          scheduler: str | None = None, workers: int | None = None, keep_recordings: bool = False,
          quiet: bool = False, connect_timeout: float = 10.0) -> Table:
    """Run ``target`` over the settings' grid and samples; returns the table (also written to ``out``).

    Args:
        target: a demo name (``controlkit demo`` lists them) or a script's path defining ``build``.
        settings: ``["mass_error=-0.2:0.2:9", "mu=0.5,0.8"]`` (see :mod:`controlkit.studies.specs`)
            or ``{"mu": [0.5, 0.8], "mass_error": "uniform(-0.2,0.2)"}``.
        out: the output folder.
        seconds: simulated time per run (s); default the scenario's own.
        samples: runs per grid point (random settings drawn anew for each).
        seed: seed of the first sample (sample k has ``seed + k``).
        metrics: metrics to map (default the first metric of the table).
        scheduler: address of a running Dask scheduler; None starts a ``LocalCluster``.
        workers: worker processes of the ``LocalCluster`` (default one per core).
        keep_recordings: write each run's recording to ``out/runs/<run>.npz``.
        quiet: no progress bar, no printing.
        connect_timeout: how long to wait for ``scheduler`` (s).
    """
    from .runs import load_target
    out = Path(out)
    name, path = resolve_target(target)
    parsed = _settings(settings)
    module = load_target(str(path))
    _check_options(module.build, [s.name for s in parsed])
    _writable(out)
    code = code_version(path)
    source = path.read_text()
    tasks = {}  # by key: a value listed twice is one run
    for options, run_seed in expand(parsed, samples, seed):
        key = run_key(name, options, seconds, run_seed, code)
        tasks.setdefault(key, {"run": key, "path": str(path), "source": source, "options": options,
                               "seconds": seconds, "seed": run_seed, "keep": keep_recordings})
    tasks = list(tasks.values())
    params = [s.name for s in parsed]
    grid = [s.name for s in parsed if isinstance(s, Axis)]
    _write_json(out / "sweep.json", {"target": name, "path": str(path), "settings": [repr(s) for s in parsed],
                                     "params": params, "grid": grid, "seconds": seconds, "samples": samples,
                                     "seed": seed, "metrics": list(metrics), "code": code})
    rows_dir = out / "rows"
    rows_dir.mkdir(exist_ok=True)
    todo = [t for t in tasks if not (rows_dir / f"{t['run']}.json").is_file()]
    transient = {}
    if not quiet:
        print(f"sweep {name}: {_runs(len(tasks))}, {len(tasks) - len(todo)} already done")
    if todo:
        transient = _execute(todo, out, scheduler, workers, connect_timeout, quiet)
    rows = [transient.get(t["run"]) or json.loads((rows_dir / f"{t['run']}.json").read_text()) for t in tasks]
    table = Table(rows, params)
    written = write_results(table, out, metrics, grid=grid, title=f"{name} sweep")
    if not quiet:
        print(f"{_runs(len(table))}, {len(table.failed)} failed")
        for p in written:
            print(f"wrote {p}")
    return table


def _runs(n: int) -> str:
    return f"{n} run" + ("" if n == 1 else "s")


def _client(scheduler: str | None, workers: int | None, connect_timeout: float):
    """A Dask client on ``scheduler`` or on a new LocalCluster; returns ``(client, cluster or None)``."""
    from distributed import Client, LocalCluster
    if scheduler is not None:
        try:
            return Client(scheduler, timeout=connect_timeout), None
        except (OSError, TimeoutError, ValueError) as exc:
            raise SweepError(f"--scheduler {scheduler}: no Dask scheduler answered within {connect_timeout:g} s "
                             f"({type(exc).__name__}); start one with `dask scheduler` and pass the address it "
                             "prints, or omit --scheduler to run on this machine") from None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n = workers or cores
    # the dashboard on a free port (its status pages need bokeh; the /info pages do not); workers' logs
    # silenced: a failing run is a row, a lost worker a rerun, and closing makes heartbeat noise
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=logging.CRITICAL)
    return Client(cluster), cluster


def _execute(todo: list[dict], out: Path, scheduler, workers, connect_timeout, quiet) -> dict:
    """Submit the runs, store each finished row; returns the rows of tasks Dask gave up on."""
    from distributed import as_completed
    from tqdm import tqdm
    client, cluster = _client(scheduler, workers, connect_timeout)
    transient = {}
    try:
        if not quiet:
            link = client.dashboard_link
            if link and not find_spec("bokeh"):
                link = link.rsplit("/", 1)[0] + "/info/main/workers.html (the status pages need bokeh)"
            print(f"Dask: {len(client.scheduler_info().get('workers', {}))} workers at {client.scheduler.address}"
                  + (f", dashboard {link}" if link else ""))
        futures = {client.submit(run_one, t, key=f"controlkit-run-{t['run']}", pure=False): t for t in todo}
        for fut in tqdm(as_completed(futures), total=len(futures), disable=quiet, unit="run", file=sys.stderr):
            task = futures[fut]
            try:
                row = fut.result()
            except Exception as exc:  # KilledWorker and the like: a row now, run again next time
                transient[task["run"]] = {"run": task["run"], "seed": task["seed"], **task["options"],
                                          "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
                continue
            _store(row, out)
            fut.release()
    except KeyboardInterrupt:
        done = sum((out / "rows" / f"{t['run']}.json").is_file() for t in todo)
        raise SweepError(f"interrupted with {done} of {_runs(len(todo))} done (kept in {out / 'rows'}); "
                         "the same sweep again resumes") from None
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return transient


def _store(row: dict, out: Path) -> None:
    recording = row.pop("_recording", None)
    if recording is not None:
        (out / "runs").mkdir(exist_ok=True)
        (out / "runs" / f"{row['run']}.npz").write_bytes(recording)
    _write_json(out / "rows" / f"{row['run']}.json", row)


def write_results(table: Table, out: Path, metrics: Sequence[str] = (), *, grid: list[str] | None = None,
                  title: str = "") -> list[Path]:
    """Write ``results.csv`` (and ``.parquet``) and a robustness map per metric (default the first)."""
    from .maps import robustness_map
    written = [table.to_csv(out / "results.csv")]
    parquet = table.to_parquet(out / "results.parquet")
    if parquet is not None:
        written.append(parquet)
    chosen = list(metrics) or table.metrics[:1]
    unknown = [m for m in chosen if m not in table.metrics]
    if unknown:
        raise UnknownNameError("metric", unknown[0], table.metrics,
                               f"the sweep's results ({out / 'results.csv'}; redraw with --report)")
    for metric in chosen:
        written.append(robustness_map(table, metric, out / f"map_{metric}.png", grid=grid, title=title))
    return written


def report(out: str | Path, metrics: Sequence[str] = (), quiet: bool = False) -> Table:
    """Redraw a finished sweep's maps from ``out/results.csv`` (``controlkit sweep --report DIR``)."""
    out = Path(out)
    meta_path = out / "sweep.json"
    if not (out / "results.csv").is_file() or not meta_path.is_file():
        raise SweepError(f"--report {out}: no sweep results there (results.csv and sweep.json); run a sweep "
                         "with --out first")
    meta = json.loads(meta_path.read_text())
    table = Table.from_csv(out / "results.csv", meta["params"])
    written = write_results(table, out, metrics or meta.get("metrics", ()), grid=meta.get("grid"),
                            title=f"{meta['target']} sweep")
    if not quiet:
        for p in written[1:]:
            print(f"wrote {p}")
    return table
