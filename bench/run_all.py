"""Run every benchmark script in bench/ and write bench/results/report.md (``make bench``).

Scripts are discovered (every ``bench/*.py`` except helpers), so a new script is picked
up without editing this file. Each runs in its own process on single-threaded BLAS, one
after the other; its printed tables (or the markdown it writes to
``bench/results/<name>.md``) become its section of the report, followed by the JSON and
PNG files it wrote. A script that fails is reported with its error and the others still
run; the exit status is then 1.

Run: ``.venv/bin/python bench/run_all.py [--only peers walking] [--timeout 3600]``.
"""
from __future__ import annotations

import argparse
import ast
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
HELPERS = {"__init__.py", "common.py", "run_all.py"}
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass
class ScriptRun:
    """The outcome of one benchmark script: return code, captured output, wall time (s), start time."""

    path: Path
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    started: float

    @property
    def name(self) -> str:
        """The script's stem (``peers`` for bench/peers.py)."""
        return self.path.stem


def discover(only: list[str] | None = None) -> list[Path]:
    """The benchmark scripts in bench/, sorted by name (only those named in ``only`` if given)."""
    paths = sorted(p for p in BENCH.glob("*.py") if p.name not in HELPERS)
    if only:
        missing = sorted(set(only) - {p.stem for p in paths})
        for name in missing:
            print(f"run_all: no script bench/{name}.py; skipped")
        paths = [p for p in paths if p.stem in only]
    return paths


def single_threaded_env() -> dict[str, str]:
    """The environment for the scripts: one BLAS / OpenMP thread, the repository on sys.path."""
    env = dict(os.environ)
    for var in THREAD_VARS:
        env[var] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


def run_script(path: Path, timeout: float) -> ScriptRun:
    """Run one script with this interpreter; never raises for the script's own failure."""
    print(f"run_all: {path.relative_to(ROOT)} ...", flush=True)
    started = time.time()
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, str(path)], cwd=ROOT, env=single_threaded_env(), capture_output=True,
                              text=True, timeout=timeout)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, out, err = -1, _text(exc.stdout), _text(exc.stderr) + f"\ntimed out after {timeout:g} s"
    run = ScriptRun(path, code, out, err, time.perf_counter() - t0, started)
    print(f"run_all: {path.name} {'ok' if code == 0 else f'FAILED ({code})'} in {run.wall_s:.1f} s", flush=True)
    return run


def _text(x) -> str:
    if x is None:
        return ""
    return x.decode(errors="replace") if isinstance(x, bytes) else x


def summary_line(path: Path) -> str:
    """The first line of a script's module docstring."""
    try:
        doc = ast.get_docstring(ast.parse(path.read_text()))
    except SyntaxError:
        doc = None
    return doc.splitlines()[0] if doc else ""


def outputs(run: ScriptRun) -> list[Path]:
    """Files in bench/results/ named after the script and written while it ran."""
    return sorted(p for p in RESULTS.glob(f"{run.name}*") if p.stat().st_mtime >= run.started - 1
                  and p.suffix in (".json", ".png", ".md", ".csv"))


def section(run: ScriptRun) -> str:
    """A script's section of the report: its markdown or printed tables, its files, or its error."""
    head = f"## {run.name} — {summary_line(run.path)}\n\n`bench/{run.path.name}`, {run.wall_s:.1f} s wall."
    if run.returncode != 0:
        tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-25:])
        return f"{head} **Failed** (exit {run.returncode}):\n\n```text\n{tail}\n```\n"
    files = outputs(run)
    md = RESULTS / f"{run.name}.md"
    body = md.read_text() if md in files else f"```text\n{run.stdout.strip()}\n```\n"
    listed = ", ".join(f"[{p.name}]({p.name})" for p in files if p != md)
    return f"{head}\n\n{body}\n" + (f"Files: {listed}\n" if listed else "")


def git_commit() -> str:
    """The checked-out commit (and whether the tree has local changes), or 'unknown'."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                               text=True).stdout.strip()
        return f"{rev}{' (with local changes)' if dirty else ''}" if rev else "unknown"
    except OSError:
        return "unknown"


def report(runs: list[ScriptRun]) -> str:
    """The whole report.md."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        "# Benchmarks",
        "",
        f"Generated by `make bench` (`bench/run_all.py`) on {when}, commit {git_commit()}; "
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs "
        "(shared: read ratios within this run, not absolute times). Every figure below is "
        "printed or written by the script named in its section.",
        "",
        "| script | status | wall (s) |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {r.name} | {'ok' if r.returncode == 0 else 'failed'} | {r.wall_s:.1f} |" for r in runs]
    return "\n".join(lines) + "\n\n" + "\n".join(section(r) for r in runs)


def main(argv: list[str] | None = None) -> int:
    """Run the scripts, write the report; 1 if any script failed."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="script names (stems) to run; default all")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed per script")
    args = ap.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    runs = [run_script(p, args.timeout) for p in discover(args.only)]
    path = RESULTS / "report.md"
    path.write_text(report(runs))
    print(f"run_all: wrote {path}")
    return 0 if all(r.returncode == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
