"""A contact hinge's friction mode."""
from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    """A contact hinge's friction mode."""

    NEW = "new"  # made at this event: its mode is chosen by the support pass
    STICK = "stick"  # normal rows and stick rows (tangents, torsion); static friction
    SLIDE = "slide"  # normal rows only; kinetic friction along the sliding direction
    FRICTIONLESS = "frictionless"  # normal rows only; mu_s = 0
