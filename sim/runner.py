"""Running a scenario the way the command line does: progress, statistics, outputs.

A *scenario* is a prepared simulator plus what to report about it. Example
scripts and users' scripts define ``build(**options) -> Scenario``;
``controlkit demo NAME`` and ``controlkit run SCRIPT.py`` call it and then
:func:`run_scenario`.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from controlkit.errors import ControlkitError
from controlkit.recording import Recording


@dataclass
class Scenario:
    """A ready-to-run simulation and how to report it.

    Args:
        name: short name (file names of outputs).
        description: one line for listings.
        sim: the prepared :class:`sim.simulator.Simulator`.
        seconds: default simulated duration (s).
        model: how to rebuild the mechanism for a replay: ``{"factory": "module:function",
            "kwargs": {...}}``.
        panels: plot panels (see :func:`controlkit.report.plot_quantities`).
        html: keyword options of :func:`controlkit.report.export_html` (traces, arrows, frames).
        summary: ``summary(recording) -> str`` printed after the run.
        info: what else the script hands its callers (tests, benchmarks): e.g. a servo, a plan.
    """

    name: str
    description: str
    sim: object
    seconds: float
    model: dict = field(default_factory=dict)
    panels: list = field(default_factory=list)
    html: dict = field(default_factory=dict)
    summary: Callable[[Recording], str] | None = None
    info: dict = field(default_factory=dict)


def load_script(path: str | Path):
    """Import a scenario script (a file defining ``build(**options)``) as a module."""
    path = Path(path)
    if not path.is_file():
        raise ControlkitError(f"no such script: {path}")
    spec = importlib.util.spec_from_file_location(f"controlkit_script_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise ControlkitError(f"{path}: syntax error at line {exc.lineno}: {exc.msg}"
                              + (f": {exc.text.strip()}" if exc.text else "")) from None
    except ControlkitError:
        raise
    except Exception as exc:
        raise ControlkitError(f"{path}: running the script raised {type(exc).__name__}: {exc}") from exc
    if not callable(getattr(module, "build", None)):
        raise ControlkitError(f"{path}: a scenario script must define build(**options) returning a Scenario")
    return module


def build_scenario(module, options: dict) -> Scenario:
    """``module.build(**options)``, checked: a Scenario, or a ControlkitError naming the script and options."""
    where = getattr(module, "__file__", None) or module.__name__
    shown = ", ".join(f"{k}={v!r}" for k, v in options.items())
    try:
        scn = module.build(**options)
    except ControlkitError:
        raise
    except Exception as exc:
        raise ControlkitError(f"{where}: build({shown}) raised {type(exc).__name__}: {exc}"
                              + ("; check the --set values" if options else "")) from exc
    if not isinstance(scn, Scenario) and not all(hasattr(scn, a) for a in ("sim", "name", "seconds")):
        raise ControlkitError(f"{where}: build({shown}) returned {type(scn).__name__}, not a sim.runner.Scenario; "
                              f"end build() with `return Scenario(name, description, sim, seconds, ...)`")
    return scn


def check_writable(folder: Path | None, *files) -> None:
    """Raise a ControlkitError now (before a run) when outputs could not be written there."""
    import os
    import tempfile
    if folder is not None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".controlkit-write-check"):
                pass
        except OSError as exc:
            raise ControlkitError(f"cannot write to the output folder {str(folder)!r} ({exc.strerror or exc}); "
                                  f"choose another --out") from None
    for f in files:
        if f:
            parent = Path(f).parent
            if not parent.is_dir() or not os.access(parent, os.W_OK):
                raise ControlkitError(f"cannot write {str(f)!r}: folder {str(parent)!r} does not exist or is not writable")


def build_mechanism(model: dict):
    """Rebuild a mechanism from a recording's ``meta["model"]`` description."""
    factory = model.get("factory") if model else None
    if not factory:
        raise ControlkitError("the recording does not say how to rebuild its model (meta['model'] is empty)")
    mod, _, fn = factory.partition(":")
    built = getattr(importlib.import_module(mod), fn)(**model.get("kwargs", {}))
    return getattr(built, "mechanism", built)


def run_scenario(scn: Scenario, *, seconds: float | None = None, out: str | Path | None = None,
                 html: str | Path | None = None, plot: str | Path | None = None, live: bool = False,
                 quiet: bool = False, save: bool = True) -> Recording:
    """Run a scenario, print its statistics and summary, write the requested outputs.

    Args:
        scn: the scenario.
        seconds: simulated duration (s); default the scenario's.
        out: folder for outputs written by default (recording .npz; html and plot when
            ``html``/``plot`` are True-like paths are not given).
        html, plot: output paths for the HTML replay and the plot (PNG or SVG).
        live: show a live meshcat view while running (opens a local server).
        quiet: no progress bar, no printing.
    """
    from controlkit.report import Progress, export_html, format_statistics, plot_quantities, run_statistics

    from .validation import run_duration
    sim = scn.sim
    duration = run_duration(scn.seconds if seconds is None else seconds)  # (before the progress bar uses it)
    out = Path(out) if out is not None else None
    check_writable(out if save else None, html, plot if scn.panels else None)  # before the run, not after it
    sim.recording.meta["model"] = scn.model
    sim.recording.meta["scenario"] = scn.name
    viewer = None
    if live:
        from controlkit.report import Viewer
        viewer = Viewer(sim.mech, open=False)
        if not quiet:
            print(f"live view: {viewer.url()}")
        sim.control_phase.append(lambda s: viewer.display(s.q) if s.steps % 20 == 0 else None)
    progress = Progress(sim.t + duration, enabled=not quiet, start_time=sim.t)
    try:
        rec = sim.run(duration, progress=progress)
    except ControlkitError as exc:
        progress.close()
        _save_partial(exc, scn, out if save else None, quiet)
        raise
    finally:
        progress.close()
        if viewer is not None:
            viewer.close()
    written = []
    if out is not None and save:
        out.mkdir(parents=True, exist_ok=True)
        written.append(rec.save(out / f"{scn.name}.npz"))
    if html:
        written.append(export_html(sim.mech, rec, Path(html), title=scn.description, **scn.html))
    if plot and scn.panels:
        written.append(plot_quantities(rec, scn.panels, Path(plot), title=scn.description, events=True))
    elif plot:
        print(f"note: scenario {scn.name!r} declares no plot panels (Scenario(panels=...)); no plot written",
              file=sys.stderr)
    if not quiet:
        print(format_statistics(run_statistics(rec)))
        for e in rec.events_of("undetermined"):
            print(f"warning: at t = {e.time:.6g} s {e.description}")
        if scn.summary is not None:
            print(scn.summary(rec))
        for p in written:
            print(f"wrote {p}")
    return rec


def _save_partial(exc: ControlkitError, scn: Scenario, out: Path | None, quiet: bool) -> None:
    """Write the recording a failed run carries (up to the failure) to ``out``, and say so."""
    rec = exc.recording
    if out is None or rec is None or not len(rec):
        return
    rec.stats["failed"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    path = rec.save(out / f"{scn.name}.npz")
    if not quiet:
        print(f"controlkit: the run failed at t = {rec.last_time():.6g} s; wrote the partial recording "
              f"({len(rec)} samples) to {path}", file=sys.stderr)
