"""Robustness maps: one metric of a sweep over one or two of its parameters, as a PNG.

Two grid parameters: a heatmap of the metric's median over the runs in each cell (samples and
any further parameters), each cell labelled with its value, cells whose runs all failed grey;
the colour scale is logarithmic when the values are positive and span more than two decades.
One parameter: the median as a line with the minimum and maximum over samples. Random
(continuous) parameters: the runs as points coloured by the metric.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .table import Table


def _values(table: Table, name: str) -> list:
    return list(dict.fromkeys(r.get(name) for r in table.rows))


def _numeric(values: list) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _groups(table: Table, names: list[str], metric: str) -> dict[tuple, list[float]]:
    """Metric values of the finished runs per combination of ``names``' values."""
    out: dict[tuple, list[float]] = {}
    for r in table.rows:
        key = tuple(r.get(n) for n in names)
        v = r.get(metric)
        out.setdefault(key, [])
        if not r.get("error") and isinstance(v, (int, float)) and math.isfinite(v):
            out[key].append(float(v))
    return out


def _label(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _norm(values: np.ndarray):
    """Colour scale: logarithmic when the values are positive and span more than two decades."""
    from matplotlib.colors import LogNorm, Normalize
    if len(values) and values.min() > 0 and values.max() > 100 * values.min():
        return LogNorm(values.min(), values.max())
    return Normalize(values.min(), values.max()) if len(values) else Normalize()


def _heatmap(ax, fig, table: Table, x: str, y: str, metric: str) -> None:
    xs, ys = _values(table, x), _values(table, y)
    if _numeric(xs):
        xs = sorted(xs)
    if _numeric(ys):
        ys = sorted(ys)
    groups = _groups(table, [x, y], metric)
    grid = np.full((len(ys), len(xs)), np.nan)
    for (a, b), vals in groups.items():
        if vals:
            grid[ys.index(b), xs.index(a)] = float(np.median(vals))
    ax.set_facecolor("0.8")  # all runs of a cell failed
    finite = grid[np.isfinite(grid)]
    norm = _norm(finite)
    im = ax.imshow(np.ma.masked_invalid(grid), origin="lower", aspect="auto", cmap="viridis", norm=norm)
    mid = norm(np.median(finite)) if len(finite) else 0.0
    for i in range(len(ys)):
        for j in range(len(xs)):
            v = grid[i, j]
            ax.text(j, i, "failed" if not np.isfinite(v) else f"{v:.3g}", ha="center", va="center", fontsize=7,
                    color="black" if not np.isfinite(v) or norm(v) > max(mid, 0.5) else "white")
    ax.set_xticks(range(len(xs)), [_label(v) for v in xs], rotation=45 if len(xs) > 6 else 0)
    ax.set_yticks(range(len(ys)), [_label(v) for v in ys])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    fig.colorbar(im, ax=ax, label=metric + (" (median)" if max(map(len, groups.values()), default=0) > 1 else ""))


def _lines(ax, table: Table, x: str, metric: str) -> None:
    xs = _values(table, x)
    numeric = _numeric(xs)
    if numeric:
        xs = sorted(xs)
    groups = _groups(table, [x], metric)
    pos = np.array(xs, dtype=float) if numeric else np.arange(len(xs))
    stats = np.array([[np.min(g), np.median(g), np.max(g)] if (g := groups[(v,)]) else [np.nan] * 3 for v in xs])
    ax.plot(pos, stats[:, 1], "o-", color="C0", label="median")
    if max(map(len, groups.values()), default=0) > 1:
        ax.fill_between(pos, stats[:, 0], stats[:, 2], color="C0", alpha=0.2, label="min to max over samples")
        ax.plot(pos, stats[:, 0], "--", color="C0", lw=0.8)
        ax.plot(pos, stats[:, 2], "--", color="C0", lw=0.8)
    failed = [p for p, v in zip(pos, xs) if not groups[(v,)]]
    if failed:
        ax.plot(failed, np.zeros(len(failed)), "x", color="C3", label="every run failed")
    if not numeric:
        ax.set_xticks(pos, [_label(v) for v in xs])
    ax.set_xlabel(x)
    ax.set_ylabel(metric)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)


def _points(ax, fig, table: Table, x: str, y: str | None, metric: str) -> None:
    ok = [r for r in table.rows if not r.get("error")]
    c = np.array([r.get(metric) if r.get(metric) is not None else np.nan for r in ok], dtype=float)
    px = np.array([r.get(x) for r in ok], dtype=float)
    if y is None:
        ax.plot(px, c, "o", ms=4)
        ax.set_ylabel(metric)
    else:
        sc = ax.scatter(px, np.array([r.get(y) for r in ok], dtype=float), c=c, s=18, cmap="viridis")
        fig.colorbar(sc, ax=ax, label=metric)
        ax.set_ylabel(y)
    bad = [r for r in table.rows if r.get("error")]
    if bad:
        ax.plot([r.get(x) for r in bad], [r.get(y) if y else 0.0 for r in bad], "x", color="C3", label="failed")
        ax.legend(fontsize=8)
    ax.set_xlabel(x)


def robustness_map(table: Table, metric: str, path: str | Path, *, grid: list[str] | None = None,
                   title: str = "") -> Path:
    """Draw ``metric`` over the sweep's parameters and write it to ``path`` (PNG).

    Args:
        table: the sweep's table.
        metric: a metric column.
        path: the output file.
        grid: the parameters that are grid axes (the others were drawn at random); default all.
        title: the figure's title.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    grid = list(table.params if grid is None else grid)
    varied = [p for p in table.params if len(_values(table, p)) > 1]
    axes = [p for p in varied if p in grid][:2]
    drawn = [p for p in varied if p not in grid]
    fig, ax = plt.subplots(figsize=(7.5, 5.0))
    if len(axes) == 2:
        _heatmap(ax, fig, table, axes[0], axes[1], metric)
    elif len(axes) == 1 and not drawn:
        _lines(ax, table, axes[0], metric)
    elif varied:
        names = (drawn + axes)[:2]
        _points(ax, fig, table, names[0], names[1] if len(names) > 1 else None, metric)
    else:
        ax.plot(np.arange(len(table)), table[metric], "o")
        ax.set_xlabel("run")
        ax.set_ylabel(metric)
    n_failed = len(table.failed)
    ax.set_title((title + "\n" if title else "") + f"{metric}: {len(table)} runs"
                 + (f", {n_failed} failed" if n_failed else ""), fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
