"""Gait parameters as data: what a walk's steps look like, independent of the robot.

A :class:`Gait` is read by both walking programs (:mod:`controllers.walking`, part 1 on magnetic
shoes, and :mod:`controllers.walking_fd`, forward dynamics on real contact) and by the footstep
and centre-of-mass plan (:class:`controllers.walking_fd.WalkPlan`). The demos' ``build(**gait)``
takes its fields by name, so ``controlkit demo walking_fd --set stride=0.2`` changes the step
length. Units: m, s, rad, m/s.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from controlkit.errors import ControlkitError

__all__ = ["Gait", "gait_with"]


@dataclass(frozen=True)
class Gait:
    """How a biped walks (defaults: the forward-dynamics walk of :mod:`controllers.walking_fd`).

    Args:
        stride: how far a heel lands ahead of the other heel (m), along the walking direction.
        step_time: a swing's duration, lift-off to touchdown (s).
        double_support: both feet down between two swings (s): the load moves over.
        clearance: the swing heel's lift at mid-swing, above the straight path (m).
        com_height: the centre of mass's height while walking (m); None: its standing height
            less ``com_drop``.
        com_drop: how far the centre of mass is lowered from standing in the first second (m),
            when ``com_height`` is None.
        start: the first lift-off (s): the weight shift onto the first stance foot before it.
        inside_step_fraction: a landing heel steps this share of the hip-to-hip width inside its
            own hip line (1: onto the other foot's line; 0: under its hip).
        strike_speed: the heel's vertical speed at touchdown (m/s, negative: down).
        strike_forward_speed: the heel's speed along the walking direction at touchdown (m/s).
        turn: heading change per step (rad, positive: to the left); 0 walks straight.
    """

    stride: float = 0.15
    step_time: float = 0.6
    double_support: float = 0.4
    clearance: float = 0.04
    com_height: float | None = None
    com_drop: float = 0.03
    start: float = 1.2
    inside_step_fraction: float = 0.20
    strike_speed: float = -0.05
    strike_forward_speed: float = 0.0
    turn: float = 0.0

    def __post_init__(self):
        not_numbers = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
                       if not _is_number(getattr(self, f.name)) and not (f.name == "com_height" and self.com_height is None)]
        if not_numbers:
            raise ControlkitError("Gait: these must be numbers (m, s, rad, m/s): " + ", ".join(not_numbers))
        bad = []
        for name in ("step_time", "start"):
            if not getattr(self, name) > 0:
                bad.append(f"{name}={getattr(self, name)!r} (s) must be positive")
        for name in ("double_support", "clearance", "com_drop"):
            if not getattr(self, name) >= 0:
                bad.append(f"{name}={getattr(self, name)!r} must not be negative")
        if not math.isfinite(self.stride):
            bad.append(f"stride={self.stride!r} (m) must be finite")
        if self.com_height is not None and not self.com_height > 0:
            bad.append(f"com_height={self.com_height!r} (m) must be positive (or None: standing height - com_drop)")
        if not 0.0 <= self.inside_step_fraction <= 1.0:
            bad.append(f"inside_step_fraction={self.inside_step_fraction!r} must be in [0, 1]")
        if not self.strike_speed <= 0:
            bad.append(f"strike_speed={self.strike_speed!r} (m/s) must be downward (<= 0)")
        if not abs(self.turn) < math.pi / 4:
            bad.append(f"turn={self.turn!r} (rad per step) must be under pi/4 in size")
        if bad:
            raise ControlkitError("Gait: " + "; ".join(bad))

    @property
    def period(self) -> float:
        """One step: a swing and a double support (s)."""
        return self.step_time + self.double_support


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def gait_with(base: Gait, **changes) -> Gait:
    """``base`` with some fields changed (a demo's ``--set stride=0.2``); an unknown name raises
    :class:`~controlkit.errors.ControlkitError` listing the gait's fields."""
    fields = [f.name for f in dataclasses.fields(Gait)]
    unknown = [k for k in changes if k not in fields]
    if unknown:
        raise ControlkitError(f"unknown gait parameter(s) {', '.join(map(repr, unknown))}; "
                              f"a Gait has: {', '.join(fields)}")
    return dataclasses.replace(base, **changes)
