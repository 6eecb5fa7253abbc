"""The report layer: what is built from a :class:`~controlkit.recording.Recording` after a run.

- :class:`Viewer` — a live meshcat view of a mechanism (opt-in: only it starts a server),
- :func:`export_html` — one self-contained HTML file replaying a recording offline,
- :func:`plot_quantities` — a grid of small labelled graphs against time (PNG or SVG),
- :func:`run_statistics` / :func:`format_statistics` — the run's statistics as text,
- :class:`Progress` — a progress bar for long runs in a terminal.

Names are imported lazily so that ``import controlkit.report`` stays cheap: meshcat
and matplotlib load only when the viewer, the replay or the plots are used.
"""
from __future__ import annotations

import importlib

from ._errors import ReportError

_LAZY = {
    "Viewer": ".viewer",
    "export_html": ".replay",
    "plot_quantities": ".plots",
    "run_statistics": ".stats",
    "format_statistics": ".stats",
    "Progress": ".progress",
}

__all__ = ["ReportError", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
