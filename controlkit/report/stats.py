"""Run statistics (the Newton thesis' "statistical output", Fig. 6.6) from a recording.

:func:`run_statistics` gathers simulated time, wall time, real-time factor, step and
derivative-evaluation counts, time spent in solves, Pinocchio kernels and equation
assembly (from ``recording.stats``, written by the simulator) and the handled events
counted by kind; :func:`format_statistics` prints them as an aligned table, showing
``-`` for what the run did not report.
"""
from __future__ import annotations

from collections import Counter

#: keys read from ``recording.stats``
STAT_KEYS = ("wall_time", "steps", "evaluations", "solve_time", "pinocchio_time", "assembly_time")


def run_statistics(recording) -> dict:
    """A dict of the run's statistics; absent values are None.

    Keys: ``simulated_time`` (s), ``start_time``/``end_time`` (s), ``samples``,
    ``wall_time`` (s), ``real_time_factor`` (simulated s per wall s), ``steps``,
    ``evaluations`` (derivative evaluations), ``solve_time``, ``pinocchio_time``,
    ``assembly_time`` (s), ``events`` ({kind: count}, in order of first occurrence)
    and ``event_count``.
    """
    t = recording.t
    out: dict = {
        "start_time": float(t[0]) if len(t) else None,
        "end_time": float(t[-1]) if len(t) else None,
        "simulated_time": float(t[-1] - t[0]) if len(t) else 0.0,
        "samples": len(t),
    }
    stats = recording.stats or {}
    for key in STAT_KEYS:
        value = stats.get(key)
        out[key] = None if value is None else (int(value) if key in ("steps", "evaluations") else float(value))
    wall = out["wall_time"]
    out["real_time_factor"] = out["simulated_time"] / wall if wall else None
    counts = Counter(e.kind for e in recording.events)
    out["events"] = {kind: counts[kind] for kind in dict.fromkeys(e.kind for e in recording.events)}
    out["event_count"] = len(recording.events)
    return out


def _seconds(x) -> str:
    if x is None:
        return "-"
    return f"{x:.3f} s" if abs(x) >= 1e-3 or x == 0 else f"{x * 1e3:.3f} ms"


def _share(x, wall) -> str:
    return f"   ({100.0 * x / wall:.0f} % of wall time)" if x is not None and wall else ""


def format_statistics(stats: dict) -> str:
    """The statistics of :func:`run_statistics` as readable lines (missing values shown as ``-``)."""
    g = stats.get
    wall = g("wall_time")
    rtf = g("real_time_factor")
    steps, evals = g("steps"), g("evaluations")
    rows = [
        ("simulated time", _seconds(g("simulated_time"))),
        ("wall time", _seconds(wall)),
        ("real-time factor", "-" if rtf is None else f"{rtf:.3g} x"),
        ("steps", "-" if steps is None else f"{steps:d}"),
        ("derivative evaluations", "-" if evals is None else f"{evals:d}"
         + (f"   ({evals / steps:.2f} per step)" if steps else "")),
        ("time in solves", _seconds(g("solve_time")) + _share(g("solve_time"), wall)),
        ("time in Pinocchio kernels", _seconds(g("pinocchio_time")) + _share(g("pinocchio_time"), wall)),
        ("time in equation assembly", _seconds(g("assembly_time")) + _share(g("assembly_time"), wall)),
        ("events", str(g("event_count", sum((g("events") or {}).values())))),
    ]
    rows += [(f"  {kind}", str(n)) for kind, n in (g("events") or {}).items()]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)
