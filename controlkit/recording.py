"""The recording of a run: plain data (states, quantities, events, statistics).

Viewers, plots and statistics are built from a :class:`Recording` after the run.
It saves to one ``.npz`` (arrays) with its metadata as JSON inside, loads back
to identical arrays, and exports quantities to CSV.
"""
from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ControlkitError, UnknownNameError


@dataclass
class Event:
    """One handled event.

    Args:
        time: simulation time (s).
        kind: e.g. ``impact``, ``contact_made``, ``contact_broken``, ``stick``, ``slip``,
            ``lock``, ``unlock``, ``control``, ``fallback``.
        description: one readable line.
        data: extra values (bodies, joints, velocities before/after, ...), JSON-serializable.
    """

    time: float
    kind: str
    description: str
    data: dict[str, Any] = field(default_factory=dict)


class Recording:
    """Samples of t, q, v, control torques and named quantities, plus events and statistics.

    Args:
        nq, nv, ntau: sizes of the mechanism's state and torque vectors.
        meta: JSON-serializable description (model name and how to rebuild it, settings).
    """

    def __init__(self, nq: int, nv: int, ntau: int = 0, meta: dict | None = None):
        self.nq, self.nv, self.ntau = nq, nv, ntau
        self.meta: dict[str, Any] = dict(meta or {})
        self.units: dict[str, str] = {}
        self.events: list[Event] = []
        self.stats: dict[str, Any] = {}
        self._rows: dict[str, list] = {"t": [], "q": [], "v": [], "tau": []}
        self._qrows: dict[str, list] = {}
        self._frozen: dict[str, np.ndarray] | None = None

    # ------------------------------------------------------------- writing
    def append(self, t: float, q: np.ndarray, v: np.ndarray, tau: np.ndarray | None = None,
               quantities: dict[str, np.ndarray] | None = None) -> None:
        """Add one sample (t in s; q (nq,), v (nv,), tau (ntau,) in SI units)."""
        r = self._rows
        r["t"].append(float(t))
        r["q"].append(np.array(q, dtype=float))
        r["v"].append(np.array(v, dtype=float))
        r["tau"].append(np.zeros(self.ntau) if tau is None else np.array(tau, dtype=float))
        n = len(r["t"])
        for name, val in (quantities or {}).items():
            rows = self._qrows.setdefault(name, [])
            val = np.atleast_1d(np.asarray(val, dtype=float)).ravel()
            while len(rows) < n - 1:  # a quantity that started late is NaN before
                rows.append(np.full(val.shape, np.nan))
            rows.append(val)
        self._frozen = None

    def log_event(self, event: Event) -> None:
        """Add a handled event."""
        self.events.append(event)

    def set_unit(self, name: str, unit: str) -> None:
        """Declare the unit of a recorded quantity (e.g. ``"m"``, ``"N m"``)."""
        self.units[name] = unit

    # ------------------------------------------------------------- reading
    def _arrays(self) -> dict[str, np.ndarray]:
        if self._frozen is None:
            r = self._rows
            n = len(r["t"])
            out = {
                "t": np.array(r["t"], dtype=float),
                "q": np.array(r["q"], dtype=float).reshape(n, self.nq),
                "v": np.array(r["v"], dtype=float).reshape(n, self.nv),
                "tau": np.array(r["tau"], dtype=float).reshape(n, self.ntau),
            }
            for name, rows in self._qrows.items():
                rows = list(rows) + [np.full(rows[-1].shape, np.nan)] * (n - len(rows))
                out["quantity:" + name] = np.array(rows, dtype=float)
            self._frozen = out
        return self._frozen

    @property
    def t(self) -> np.ndarray:
        """Sample times (N,), s."""
        return self._arrays()["t"]

    @property
    def q(self) -> np.ndarray:
        """Configurations (N, nq)."""
        return self._arrays()["q"]

    @property
    def v(self) -> np.ndarray:
        """Velocities (N, nv)."""
        return self._arrays()["v"]

    @property
    def tau(self) -> np.ndarray:
        """Control torques (N, ntau), N m or N."""
        return self._arrays()["tau"]

    @property
    def quantity_names(self) -> list[str]:
        """Names of the recorded quantities."""
        return list(self._qrows)

    def __len__(self) -> int:
        return len(self._rows["t"])

    def quantity(self, name: str) -> np.ndarray:
        """Samples of a recorded quantity (N, k)."""
        key = "quantity:" + name
        arrays = self._arrays()
        if key not in arrays:
            raise UnknownNameError("recorded quantity", name, self.quantity_names)
        return arrays[key]

    def events_of(self, kind: str) -> list[Event]:
        """The handled events of one kind, in time order."""
        return [e for e in self.events if e.kind == kind]

    def frame_indices(self, fps: float) -> np.ndarray:
        """Sample indices decimated to at most ``fps`` frames per simulated second (always keeps the last)."""
        t = self.t
        if len(t) == 0:
            return np.zeros(0, dtype=int)
        keep, next_t = [], -np.inf
        for i, ti in enumerate(t):
            if ti >= next_t - 1e-12:
                keep.append(i)
                next_t = ti + 1.0 / fps
        if keep[-1] != len(t) - 1:
            keep.append(len(t) - 1)
        return np.array(keep, dtype=int)

    # --------------------------------------------------------- persistence
    def save(self, path: str | Path) -> Path:
        """Write arrays and metadata (JSON inside the archive) to one ``.npz`` file."""
        path = Path(path)
        header = {
            "sizes": [self.nq, self.nv, self.ntau],
            "meta": self.meta,
            "units": self.units,
            "events": [asdict(e) for e in self.events],
            "stats": self.stats,
            "quantities": self.quantity_names,
        }
        arrays = dict(self._arrays())
        np.savez_compressed(path, __header__=np.array(json.dumps(header, default=_jsonable)), **arrays)
        return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")

    @classmethod
    def load(cls, path: str | Path) -> "Recording":
        """Read a recording written by :meth:`save`."""
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as z:
                header = json.loads(str(z["__header__"]))
                arrays = {k: z[k] for k in z.files if k != "__header__"}
        except (OSError, KeyError, ValueError) as exc:
            raise ControlkitError(f"cannot read recording {path}: {exc}") from exc
        nq, nv, ntau = header["sizes"]
        rec = cls(nq, nv, ntau, header["meta"])
        rec.units = header["units"]
        rec.stats = header["stats"]
        rec.events = [Event(**e) for e in header["events"]]
        rec._rows = {k: list(arrays[k]) for k in ("t", "q", "v", "tau")}
        rec._rows["t"] = [float(x) for x in arrays["t"]]
        rec._qrows = {n: list(arrays["quantity:" + n]) for n in header["quantities"]}
        rec._frozen = None
        return rec

    def to_csv(self, path: str | Path, names: list[str] | None = None) -> Path:
        """Write time and chosen quantities (default all) as CSV columns ``name[i]``, with units in the header."""
        path = Path(path)
        names = self.quantity_names if names is None else names
        cols = [self.quantity(n) for n in names]
        header = ["t [s]"]
        for n, c in zip(names, cols):
            unit = self.units.get(n, "")
            header += [f"{n}[{i}]" + (f" [{unit}]" if unit else "") for i in range(c.shape[1])]
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            for k, t in enumerate(self.t):
                w.writerow([repr(float(t))] + [repr(float(x)) for c in cols for x in c[k]])
        return path


def _jsonable(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    raise TypeError(f"not JSON-serializable: {type(x).__name__}")
