"""Helpers shared by the benchmark scripts: timing, tables, JSON output."""
from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Callable

RESULTS = Path(__file__).parent / "results"


def best_time(fn: Callable[[], object], repeat: int = 5, number: int = 200) -> float:
    """Best mean wall time (s) of ``fn`` over ``repeat`` batches of ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def table(rows: list[dict], columns: list[str]) -> str:
    """A plain-text table of dict rows."""
    cells = [[_fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(x[i]) for x in cells]) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(x.ljust(w) for x, w in zip(row, widths)) for row in cells]
    return "\n".join(out)


def _fmt(x) -> str:
    if isinstance(x, float):
        return f"{x:.3g}" if abs(x) < 1e4 else f"{x:.0f}"
    return str(x)


def write_json(name: str, payload: dict) -> Path:
    """Write results to bench/results/<name>.json with machine information."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {"machine": {"python": platform.python_version(), "processor": platform.processor(),
                           "node": platform.node()}, **payload}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2))
    return path
