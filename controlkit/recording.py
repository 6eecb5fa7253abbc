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

from .errors import RecordingError, UnknownNameError


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

    Samples are kept in preallocated arrays that grow by half when full (at most 1.5 times the
    data's size, 8 bytes per number); ``t``, ``q``, ``v``, ``tau`` and :meth:`quantity` return
    views of the filled rows.
    """

    GROWTH = 1.5  # capacity factor when full: memory stays within 1.5x the samples' data
    FIRST = 256  # samples allocated at the first append

    def __init__(self, nq: int, nv: int, ntau: int = 0, meta: dict | None = None):
        self.nq, self.nv, self.ntau = nq, nv, ntau
        self.meta: dict[str, Any] = dict(meta or {})
        self.units: dict[str, str] = {}
        self.events: list[Event] = []
        self.stats: dict[str, Any] = {}
        self._n = 0
        self._cap = 0
        self._t = np.zeros(0)
        self._q, self._v, self._tau = np.zeros((0, nq)), np.zeros((0, nv)), np.zeros((0, ntau))
        self._quant: dict[str, np.ndarray] = {}  # name -> (capacity, k), NaN where not recorded

    # ------------------------------------------------------------- writing
    def _grow(self, need: int) -> None:
        cap = max(self.FIRST, int(self._cap * self.GROWTH) + 1, need)
        n = self._n

        def grown(a: np.ndarray, fill: float = 0.0) -> np.ndarray:
            b = np.full((cap,) + a.shape[1:], fill) if fill != 0.0 else np.zeros((cap,) + a.shape[1:])
            b[:n] = a[:n]
            return b

        self._t, self._q, self._v, self._tau = grown(self._t), grown(self._q), grown(self._v), grown(self._tau)
        self._quant = {k: grown(a, np.nan) for k, a in self._quant.items()}
        self._cap = cap

    def append(self, t: float, q: np.ndarray, v: np.ndarray, tau: np.ndarray | None = None,
               quantities: dict[str, np.ndarray] | None = None) -> None:
        """Add one sample (t in s; q (nq,), v (nv,), tau (ntau,) in SI units)."""
        n = self._n
        if n == self._cap:
            self._grow(n + 1)
        self._t[n] = t
        self._q[n] = q
        self._v[n] = v
        if tau is not None and self.ntau:
            self._tau[n] = tau
        if quantities:
            for name, val in quantities.items():
                val = np.asarray(val, dtype=float).ravel()
                buf = self._quant.get(name)
                if buf is None or buf.shape[1] != val.size:
                    buf = self._new_quantity(name, val.size)
                buf[n] = val
        self._n = n + 1

    def reserve(self, k: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Room for k more samples, for a writer that fills rows itself (a simulation loop):
        ``(n, t, q, v, tau)``, the index of the next sample and the sample buffers, valid until
        the next append or reserve. Rows n .. n + k - 1 are the writer's; :meth:`commit` adds
        those it filled. Recorded quantities stay NaN in them."""
        n = self._n
        if n + k > self._cap:
            self._grow(n + k)
        return n, self._t, self._q, self._v, self._tau

    def commit(self, count: int) -> None:
        """Add ``count`` samples written in the rows :meth:`reserve` gave (in order, from its n)."""
        if not 0 <= self._n + count <= self._cap:
            raise RecordingError(f"Recording.commit({count}): only {self._cap - self._n} reserved rows are free")
        self._n += count

    def _new_quantity(self, name: str, k: int) -> np.ndarray:
        """A quantity's buffer, NaN before its first sample (a quantity that starts late, or changes size)."""
        old = self._quant.get(name)
        buf = np.full((self._cap, k), np.nan)
        if old is not None:  # (a new size: the common columns kept)
            m = min(k, old.shape[1])
            buf[:, :m] = old[:, :m]
        self._quant[name] = buf
        return buf

    def log_event(self, event: Event) -> None:
        """Add a handled event."""
        self.events.append(event)

    def set_unit(self, name: str, unit: str) -> None:
        """Declare the unit of a recorded quantity (e.g. ``"m"``, ``"N m"``)."""
        self.units[name] = unit

    # ------------------------------------------------------------- reading
    def _arrays(self) -> dict[str, np.ndarray]:
        n = self._n
        out = {"t": self._t[:n], "q": self._q[:n], "v": self._v[:n], "tau": self._tau[:n]}
        for name, buf in self._quant.items():
            out["quantity:" + name] = buf[:n]
        return out

    @property
    def t(self) -> np.ndarray:
        """Sample times (N,), s."""
        return self._t[:self._n]

    @property
    def q(self) -> np.ndarray:
        """Configurations (N, nq)."""
        return self._q[:self._n]

    @property
    def v(self) -> np.ndarray:
        """Velocities (N, nv)."""
        return self._v[:self._n]

    @property
    def tau(self) -> np.ndarray:
        """Control torques (N, ntau), N m or N."""
        return self._tau[:self._n]

    def last_time(self) -> float:
        """Time (s) of the last sample (-inf when there is none)."""
        return float(self._t[self._n - 1]) if self._n else -np.inf

    @property
    def quantity_names(self) -> list[str]:
        """Names of the recorded quantities."""
        return list(self._quant)

    def __len__(self) -> int:
        return self._n

    def nbytes(self) -> int:
        """Memory held by the sample arrays (bytes)."""
        return sum(a.nbytes for a in (self._t, self._q, self._v, self._tau, *self._quant.values()))

    def quantity(self, name: str) -> np.ndarray:
        """Samples of a recorded quantity (N, k)."""
        buf = self._quant.get(name)
        if buf is None:
            raise UnknownNameError("recorded quantity", name, self.quantity_names)
        return buf[:self._n]

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
        """Write arrays and metadata (JSON inside the archive) to one ``.npz`` file.

        Missing parent folders are created; ``.npz`` is appended if the name lacks it.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
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
        what = "a recording written by controlkit (an .npz archive made by Recording.save or --out)"
        try:
            with open(path, "rb") as f:
                magic = f.read(4)
        except OSError as exc:
            raise RecordingError(f"cannot read recording {path}: {exc.strerror or exc}") from None
        if magic != b"PK\x03\x04":  # (a zip archive; np.load would take other files for pickles)
            raise RecordingError(f"cannot read recording {path}: the file is not {what}")
        try:
            with np.load(path, allow_pickle=False) as z:
                header = json.loads(str(z["__header__"]))
                arrays = {k: z[k] for k in z.files if k != "__header__"}
            nq, nv, ntau = header["sizes"]
            missing = [k for k in ("t", "q", "v", "tau") if k not in arrays]
            if missing:
                raise KeyError(", ".join(missing))
        except (OSError, KeyError, ValueError, TypeError) as exc:
            raise RecordingError(f"cannot read recording {path}: it is not {what} ({type(exc).__name__}: {exc})") from None
        rec = cls(nq, nv, ntau, header["meta"])
        rec.units = header["units"]
        rec.stats = header["stats"]
        rec.events = [Event(**e) for e in header["events"]]
        n = len(arrays["t"])
        rec._t = np.array(arrays["t"], dtype=float).reshape(n)
        rec._q = np.array(arrays["q"], dtype=float).reshape(n, nq)
        rec._v = np.array(arrays["v"], dtype=float).reshape(n, nv)
        rec._tau = np.array(arrays["tau"], dtype=float).reshape(n, ntau)
        rec._quant = {name: np.array(arrays["quantity:" + name], dtype=float).reshape(n, -1)
                      for name in header["quantities"]}
        rec._n = rec._cap = n
        return rec

    def to_csv(self, path: str | Path, names: list[str] | None = None) -> Path:
        """Write time and chosen quantities (default all) as CSV columns ``name[i]``, with units in the header."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
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
