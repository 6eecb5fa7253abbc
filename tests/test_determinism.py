"""Runs are deterministic: the same scenario run twice gives bit-identical arrays and events.

A contact scenario (a pushed block: stick, slip, stick events, quadprog support sets) and a
controlled arm (coroutine programs, an ``until`` event, PD and quintic statements), each built
and run twice in one process, and the contact scenario once more in a fresh interpreter.
"""
import subprocess
import sys
from pathlib import Path

import numpy as np

from sim.runner import load_script

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _run(script: str, seconds: float):
    scn = load_script(EXAMPLES / script).build()
    return scn.sim.run(seconds)


def _same(a, b) -> None:
    for name in ("t", "q", "v", "tau"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in a.quantity_names:
        assert np.array_equal(a.quantity(name), b.quantity(name), equal_nan=True), name
    assert [(e.time, e.kind, e.description) for e in a.events] == [(e.time, e.kind, e.description) for e in b.events]


def test_a_pushed_block_runs_identically_twice():
    first, second = _run("friction_block.py", 3.0), _run("friction_block.py", 3.0)
    assert first.events_of("slip")  # (the run reaches its events)
    _same(first, second)


def test_a_ur5_program_runs_identically_twice():
    first, second = _run("ur5_phases.py", 0.4), _run("ur5_phases.py", 0.4)
    assert first.events_of("control")
    _same(first, second)


def test_a_run_in_another_process_gives_the_same_bytes(tmp_path):
    here = _run("friction_block.py", 3.0)
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
            f"from test_determinism import _run\n"
            f"_run('friction_block.py', 3.0).save({str(tmp_path / 'other.npz')!r})\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(Path(__file__).resolve().parents[1]))
    from controlkit.recording import Recording
    _same(here, Recording.load(tmp_path / "other.npz"))
