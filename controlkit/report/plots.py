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
#: height of one kind's row of event ticks above a graph (a fraction of the graph's height)
EVENT_ROW = 0.04
#: a longer curve is drawn through its envelope (min and max of short runs): ~2 points per pixel
MAX_DRAWN_POINTS = 3000
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
    kinds = sorted({e.kind for e in event_list})
    strip = EVENT_ROW * (h - 0.75) * len(kinds)  # inches of event ticks above each graph
    top, bottom = 0.3 + strip + (0.4 if title else 0.0), 0.45 + (0.5 if kinds else 0.0)
    gap_h = 0.75 + strip
    fig_w, fig_h = w * columns, (h + strip) * rows + top + bottom - gap_h
    fig = Figure(figsize=(fig_w, fig_h))
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, columns, squeeze=False,
                        gridspec_kw=_grid(fig_w, fig_h, rows, columns, top, bottom, gap_h))
    for ax, (name, comp, label) in zip(axes.flat, specs):
        _draw_panel(ax, recording, t, data[name], name, comp, label, event_list, kinds, strip)
    for ax in axes.flat[len(specs):]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title, fontsize=11, y=1 - 0.08 / fig_h, va="top")
    if kinds:
        from matplotlib.lines import Line2D

        handles = [Line2D([0], [0], color=_EVENT_COLORS[i % len(_EVENT_COLORS)], lw=1.2, label=kd)
                   for i, kd in enumerate(kinds)]
        fig.legend(handles=handles, loc="lower center", ncols=min(len(kinds), 6), fontsize=7,
                   frameon=False, title="events (ticks above each graph)", title_fontsize=7)
    return fig


def _draw_panel(ax, recording, t, X, name, comp, label, event_list, kinds, strip: float) -> None:
    """One graph: the quantity's component(s) against time, labels, event ticks, a constant's note."""
    from matplotlib.ticker import MaxNLocator

    k = X.shape[1]
    cols = list(range(k)) if comp is None else [comp]
    Y = X[:, cols]
    scale, unit_text = _y_scale(Y, recording.units.get(name, ""))
    for i, y in zip(cols, Y.T):
        keep = _envelope(y)
        ax.plot(t[keep], y[keep] / scale, lw=1.1, color=None if len(cols) > 1 else _LINE_COLOR,
                label=_component_name(i % k, k) if len(cols) > 1 else None)
    if len(cols) > 1:
        ax.legend(fontsize=7, frameon=False, loc="best", handlelength=1.2)
        default_title = name
    else:
        default_title = f"{name} {_component_name(comp % k, k)}" if k > 1 else name
    shown = label or default_title
    _mark_events(ax, event_list, kinds)
    ax.set_title(shown, fontsize=9, pad=4 + 72 * strip)  # above the event ticks
    ax.set_ylabel(f"{shown} [{unit_text}]" if unit_text else shown, fontsize=8)
    ax.set_xlabel("t [s]", fontsize=8)
    ax.tick_params(labelsize=7)
    # no offset and no "1e-13" above the axes: a scale goes into the unit, a constant is written out
    ax.ticklabel_format(axis="y", useOffset=False, style="plain")
    ax.xaxis.set_major_locator(MaxNLocator(5))
    ax.yaxis.set_major_locator(MaxNLocator(4))
    _note_constant(ax, Y / scale, unit_text)
    ax.grid(True, lw=0.4, alpha=0.5)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if len(t):
        ax.set_xlim(t[0], t[-1] if t[-1] > t[0] else t[0] + 1.0)
    ax.controlkit_quantity = name


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
        events: mark handled events as thin ticks along the top of each graph, one colour per
            kind, in a strip above each graph: True for all, or the kinds to mark.
        dpi: resolution of a PNG.

    Each graph's y axis reads ``"<label> [<unit>]"`` (the panel's label, else the quantity's
    name and component; units from ``recording.units``, with a power of ten for values below
    1e-3 or from 1e5 on), its x axis ``"t [s]"``. A constant signal is written out
    ("constant 470.88 N"). Raises UnknownNameError for a quantity that was not recorded.
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


def _grid(fig_w: float, fig_h: float, rows: int, cols: int, top: float, bottom: float, gap_h: float) -> dict:
    """Subplot margins and gaps (figure fractions) from fixed sizes in inches: every graph has the
    same fonts, so the room for its labels is known; matplotlib's constrained layout measures
    every tick label of every graph instead, which cost more than drawing a 19-graph figure."""
    left, right, gap_w = 0.7, 0.15, 0.85
    aw = (fig_w - left - right - (cols - 1) * gap_w) / cols
    ah = (fig_h - top - bottom - (rows - 1) * gap_h) / rows
    return dict(left=left / fig_w, right=1 - right / fig_w, bottom=bottom / fig_h, top=1 - top / fig_h,
                wspace=gap_w / aw, hspace=gap_h / ah)


def _envelope(y: np.ndarray, buckets: int = MAX_DRAWN_POINTS // 2) -> np.ndarray:
    """Indices that draw like all of ``y`` at a graph's resolution: the first, the smallest and
    the largest sample of each of ``buckets`` runs (all indices when ``y`` is short)."""
    n = len(y)
    if n <= MAX_DRAWN_POINTS:
        return np.arange(n)
    edges = np.linspace(0, n, buckets + 1).astype(int)
    z = np.where(np.isfinite(y), y, 0.0)
    lo = np.minimum.reduceat(z, edges[:-1])
    hi = np.maximum.reduceat(z, edges[:-1])
    k = np.arange(n)
    # the index of each bucket's min and max: first sample equal to it after the bucket's start
    is_lo = z == np.repeat(lo, np.diff(edges))
    is_hi = z == np.repeat(hi, np.diff(edges))
    first_lo = np.maximum.reduceat(np.where(is_lo, -k, -n), edges[:-1]) * -1
    first_hi = np.maximum.reduceat(np.where(is_hi, -k, -n), edges[:-1]) * -1
    idx = np.concatenate([edges[:-1], first_lo, first_hi, [n - 1], np.flatnonzero(~np.isfinite(y))])
    return np.unique(idx)


def _mark_events(ax, event_list, kinds) -> None:
    """Thin ticks in a strip just above the graph, one row and one line collection per kind (cheap
    for hundreds of events; the curves stay clear)."""
    for n, kind in enumerate(kinds):
        times = [e.time for e in event_list if e.kind == kind]
        y0 = 1.01 + EVENT_ROW * n
        ax.vlines(times, y0, y0 + 0.8 * EVENT_ROW, transform=ax.get_xaxis_transform(),
                  colors=_EVENT_COLORS[n % len(_EVENT_COLORS)], lw=0.8, clip_on=False)


def _y_scale(Y: np.ndarray, unit: str) -> tuple[float, str]:
    """(divisor, unit text): values below 1e-3 or from 1e5 on are drawn in a power of ten written
    into the unit ("1e-10 m"), so no multiplier floats above the graph."""
    finite = np.abs(Y[np.isfinite(Y)])
    biggest = float(finite.max()) if finite.size else 0.0
    if biggest == 0.0 or 1e-3 <= biggest < 1e5 or _is_constant(Y):
        return 1.0, unit
    e = int(np.floor(np.log10(biggest)))
    return 10.0 ** e, f"1e{e} {unit}".strip()


def _is_constant(Y: np.ndarray) -> bool:
    """Every finite value equal to 1e-9 relative (exact zeros included; a 1e-10 m error is not)."""
    finite = Y[np.isfinite(Y)]
    if finite.size == 0:
        return False
    return float(np.ptp(finite)) <= 1e-9 * float(np.abs(finite).max())


def _note_constant(ax, Y: np.ndarray, unit: str) -> None:
    """A signal that does not change (to 1e-9 relative) is written out ("constant 470.88 N") and
    drawn on a fixed range around its value, instead of autoscaling its rounding noise."""
    if not _is_constant(Y):
        return
    finite = Y[np.isfinite(Y)]
    value = float(np.median(finite))
    value = 0.0 if abs(value) < 1e-12 else value
    half = max(0.1 * abs(value), 1.0)
    ax.set_ylim(value - half, value + half)
    ax.text(0.5, 0.62, f"constant {value:.6g} {unit}".rstrip(), transform=ax.transAxes, ha="center",
            fontsize=8, color="#444444")


def _events(recording, events) -> list:
    if events is False or events is None:
        return []
    if events is True:
        return list(recording.events)
    kinds = {events} if isinstance(events, str) else set(events)
    return [e for e in recording.events if e.kind in kinds]
