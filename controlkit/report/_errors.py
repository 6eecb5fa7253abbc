"""The report layer's exception type (a candidate for ``controlkit/errors.py``)."""
from __future__ import annotations

from ..errors import ControlkitError


class ReportError(ControlkitError, ValueError):
    """A viewer, replay or plot request cannot be honoured (bad argument, missing data)."""
