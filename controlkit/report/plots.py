"""Graphs of recorded quantities against time: a grid of small labelled panels.

In the manner of the Newton thesis' result figures (Fig. 5.11: block position,
velocity, acceleration, total friction force and applied force of the friction
run, each in its own small graph), :func:`plot_quantities` draws one panel per
requested quantity or component, labelled with the quantity's name and unit.
Figures are drawn with matplotlib's Agg canvas (no window, no pyplot state) and
written as PNG or SVG (text kept as text) chosen by the file suffix.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ._errors import ReportError

SUFFIXES = (".png", ".svg")
_AXIS_NAMES = ("x", "y", "z")
_LINE_COLOR = "#1f4e99"
_EVENT_COLORS = ("#c0392b", "#8e44ad", "#16a085", "#d35400", "#2c3e50", "#7f8c8d")


def _panel_spec(panel) -> tuple[str, int | None, str | None]:
    """Normalize a panel: ``name``, ``(name, component)`` or ``(name, component, label)``."""
    if isinstance(panel, str):
        return panel, None, None
    try:
        items = tuple(panel)
    except TypeError:
        items = ()
    if not 1 <= len(items) <= 3 or not isinstance(items[0], str):
        raise ReportError(
            f"plot panel {panel!r}: expected a quantity name or (name, component index or None[, label])")
    name = items[0]
    comp = items[1] if len(items) > 1 else None
    label = items[2] if len(items) > 2 else None
    if comp is not None and not isinstance(comp, (int, np.integer)):
        raise ReportError(f"plot panel {panel!r}: the component must be an integer index or None, got {comp!r}")
    return name, (None if comp is None else int(comp)), label


def _component_name(i: int, k: int) -> str:
    return _AXIS_NAMES[i] if k == 3 else f"[{i}]"


def axis_label(recording, name: str) -> str:
    """``"name [unit]"`` (just ``name`` when the recording declares no unit)."""
    unit = recording.units.get(name, "")
    return f"{name} [{unit}]" if unit else name


def figure_quantities(recording, panels: Sequence, *, title: str | None = None, columns: int = 3,
                      events: bool | Iterable[str] = False, panel_size: tuple[float, float] = (3.3, 2.3)):
    """Build (without saving) the figure :func:`plot_quantities` writes; returns a matplotlib Figure.

    Each panel's axes carry ``ax.controlkit_quantity`` (the quantity name) for inspection.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    specs = [_panel_spec(p) for p in panels]
    if not specs:
        raise ReportError("plot_quantities: no panels requested")
    if int(columns) < 1:
        raise ReportError(f"plot_quantities: columns must be at least 1, got {columns}")
    t = recording.t
    data = {}
    for name, comp, _ in specs:
        X = recording.quantity(name)  # raises UnknownNameError for an unknown name
        if comp is not None and not -X.shape[1] <= comp < X.shape[1]:
            raise ReportError(
                f"plot panel {name!r}: component {comp} does not exist; the quantity has {X.shape[1]} components")
        data[name] = X
    event_list = _events(recording, events)

    columns = min(int(columns), len(specs))
    rows = -(-len(specs) // columns)
    w, h = panel_size
    fig = Figure(figsize=(w * columns, h * rows + (0.4 if title else 0.0)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, columns, squeeze=False)
    kinds = sorted({e.kind for e in event_list})
    for ax, (name, comp, label) in zip(axes.flat, specs):
        X = data[name]
        k = X.shape[1]
        if comp is None:
            for i in range(k):
                ax.plot(t, X[:, i], lw=1.1, color=None if k > 1 else _LINE_COLOR,
                        label=_component_name(i, k) if k > 1 else None)
            if k > 1:
                ax.legend(fontsize=7, frameon=False, loc="best", handlelength=1.2)
            default_title = name
        else:
            ax.plot(t, X[:, comp], lw=1.1, color=_LINE_COLOR)
            default_title = f"{name} {_component_name(comp % k, k)}" if k > 1 else name
        for e in event_list:
            ax.axvline(e.time, color=_EVENT_COLORS[kinds.index(e.kind) % len(_EVENT_COLORS)],
                       lw=0.7, ls=":", alpha=0.8)
        ax.set_title(label or default_title, fontsize=9)
        ax.set_ylabel(axis_label(recording, name), fontsize=8)
        ax.set_xlabel("t [s]", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.ticklabel_format(axis="y", useOffset=False)  # a constant reads as its value, not "1e-10 + 470.88"
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.yaxis.set_major_locator(MaxNLocator(4))
        ax.grid(True, lw=0.4, alpha=0.5)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        if len(t):
            ax.set_xlim(t[0], t[-1] if t[-1] > t[0] else t[0] + 1.0)
        ax.controlkit_quantity = name
    for ax in axes.flat[len(specs):]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title, fontsize=11)
    if kinds:
        from matplotlib.lines import Line2D

        handles = [Line2D([0], [0], color=_EVENT_COLORS[i % len(_EVENT_COLORS)], lw=0.9, ls=":", label=kd)
                   for i, kd in enumerate(kinds)]
        fig.legend(handles=handles, loc="outside lower center", ncols=min(len(kinds), 6), fontsize=7,
                   frameon=False, title="events", title_fontsize=7)
    return fig


def plot_quantities(recording, panels: Sequence, path, *, title: str | None = None, columns: int = 3,
                    events: bool | Iterable[str] = False, dpi: int = 150) -> Path:
    """Draw a grid of small graphs of recorded quantities against time and write it to ``path``.

    Args:
        recording: the :class:`~controlkit.recording.Recording` to plot.
        panels: one entry per graph: ``(quantity name, component index or None for all
            components, optional label)``; a bare name means all components.
        path: output file; ``.png`` or ``.svg`` (parent folders are created).
        title: figure title.
        columns: graphs per row.
        events: mark handled events as dotted vertical lines: True for all, or the kinds to mark.
        dpi: resolution of a PNG.

    Each graph's y axis reads ``"<quantity> [<unit>]"`` (units from ``recording.units``),
    its x axis ``"t [s]"``. Raises UnknownNameError for a quantity that was not recorded.
    """
    import matplotlib

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ReportError(f"plot_quantities: cannot write {path.name!r}; use one of the suffixes {', '.join(SUFFIXES)}")
    fig = figure_quantities(recording, panels, title=title, columns=columns, events=events)
    path.parent.mkdir(parents=True, exist_ok=True)
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "controlkit"}):
        if suffix == ".svg":
            fig.savefig(path, format="svg", metadata={"Date": None})
        else:
            fig.savefig(path, format="png", dpi=dpi)
    return path


def _events(recording, events) -> list:
    if events is False or events is None:
        return []
    if events is True:
        return list(recording.events)
    kinds = {events} if isinstance(events, str) else set(events)
    return [e for e in recording.events if e.kind in kinds]
