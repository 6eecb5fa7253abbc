"""Checks of the simulator's settings and run durations: a float, or an ArgumentError saying which
setting, what it must be and what it got."""
from __future__ import annotations

import math

from controlkit.errors import ArgumentError, ControlkitError


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


def mechanism(mech):
    """The Mechanism to simulate: ``mech`` itself, or a built model's ``mechanism``."""
    from controlkit.mechanism import Mechanism
    if not isinstance(mech, Mechanism) and isinstance(getattr(mech, "mechanism", None), Mechanism):
        mech = mech.mechanism  # (a built model: its mechanism)
    if not isinstance(mech, Mechanism):
        raise ArgumentError(f"Simulator: expected a controlkit Mechanism (e.g. robots.four_bar().mechanism), "
                            f"got {type(mech).__name__}")
    return mech


def options(*, external_force, record, record_every, fallback, evaluation) -> None:
    """Check the simulator's non-numeric settings (see :class:`sim.simulator.Simulator`)."""
    if external_force is not None and not callable(external_force):
        raise ArgumentError(f"Simulator: external_force must be a function f(t, mech) -> (nv,) generalized force "
                            f"(N, N m), got {type(external_force).__name__}")
    for name, qty in dict(record or {}).items():
        if not callable(getattr(qty, "position", None)):
            raise ArgumentError(f"Simulator: record[{name!r}] must be a quantity (e.g. FramePoint(mech, 'tool0')), "
                                f"got {type(qty).__name__}")
    if isinstance(record_every, bool) or not isinstance(record_every, int) or record_every < 1:
        raise ArgumentError(f"Simulator: record_every must be a positive integer, got {record_every!r}")
    if fallback not in (None, "hold_last_torques"):
        raise ControlkitError(f"Simulator: fallback must be None or 'hold_last_torques', got {fallback!r}")
    if evaluation not in ("plan", "reference"):
        raise ArgumentError(f"Simulator: evaluation must be 'plan' or 'reference', got {evaluation!r}")
