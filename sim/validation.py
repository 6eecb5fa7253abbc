"""Checks of the simulator's settings and run durations: a float, or an ArgumentError saying which
setting, what it must be and what it got."""
from __future__ import annotations

import math

from controlkit.errors import ArgumentError


def number(name: str, value, unit: str, *, positive: bool = False, minimum: float | None = None,
           infinite: bool = False) -> float:
    """A setting as a float, or an ArgumentError saying which one and what it must be."""
    what = "a positive number" if positive else (f"a number >= {minimum:g}" if minimum is not None else "a number")
    what += "" if infinite else " (finite)"
    try:
        if isinstance(value, (str, bytes, bool)):
            raise TypeError
        x = float(value)
    except (TypeError, ValueError):
        raise ArgumentError(f"Simulator: {name} must be {what}{' in ' + unit if unit else ''}, got {value!r}") from None
    ok = not math.isnan(x) and (infinite or math.isfinite(x)) and (not positive or x > 0) and \
        (minimum is None or x >= minimum)
    if not ok:
        raise ArgumentError(f"Simulator: {name} must be {what}{' in ' + unit if unit else ''}, got {value!r}")
    return x


def run_duration(duration, stop_condition: bool = False) -> float:
    """A run's duration (s) as a float >= 0, or an ArgumentError; infinite only with a stop condition."""
    try:
        if isinstance(duration, (str, bytes, bool)):
            raise TypeError
        d = float(duration)
    except (TypeError, ValueError):
        raise ArgumentError(f"run: the duration must be a number of seconds, got {duration!r}") from None
    if math.isnan(d) or d < 0:
        raise ArgumentError(f"run: the duration must be a number of seconds >= 0, got {duration!r}")
    if math.isinf(d) and not stop_condition:
        raise ArgumentError("run: an infinite duration never ends; give a finite number of seconds, or a stop "
                            "condition (Simulator.run(float('inf'), until=lambda sim: ...))")
    return d
