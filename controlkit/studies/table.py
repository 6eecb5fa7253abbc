"""A sweep's results: one row per run, written as CSV (and Parquet when pyarrow is installed).

:class:`Table` is a list of row dicts with named columns; ``table["mu"]`` is a column as a
numpy array. Columns: ``run`` (the run's key), the options swept, ``seed``, the metrics, then
``wall_time`` (s, the whole run on its worker: build and simulation), ``worker`` and ``error``
(empty when the run finished).
"""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

TAIL = ("wall_time", "worker", "error")


def _cell(text: str):
    """A CSV cell back as a value: empty -> None, numbers, booleans, else the text."""
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


class Table:
    """Rows (dicts) over named columns; ``params`` are the swept options, ``metrics`` the rest.

    Args:
        rows: one dict per run (keys starting with ``_`` are kept out of the columns).
        params: names of the swept options, in their ``--set`` order.
    """

    def __init__(self, rows: Sequence[dict], params: Sequence[str]):
        self.rows = [dict(r) for r in rows]
        self.params = list(params)
        seen = dict.fromkeys(k for r in self.rows for k in r if not k.startswith("_"))
        fixed = {"run", "seed", *self.params, *TAIL}
        self.metrics = [k for k in seen if k not in fixed]
        self.columns = ["run", *self.params, "seed", *self.metrics, *TAIL]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict]:
        return iter(self.rows)

    def __getitem__(self, name: str) -> np.ndarray:
        """A column: floats (NaN where missing) when every value is a number, else objects."""
        if name not in self.columns:
            from controlkit.errors import UnknownNameError
            raise UnknownNameError("column", name, self.columns, "the sweep's table")
        values = [r.get(name) for r in self.rows]
        if all(v is None or (isinstance(v, (int, float)) and not isinstance(v, str)) for v in values):
            return np.array([math.nan if v is None else float(v) for v in values])
        return np.array(values, dtype=object)

    @property
    def failed(self) -> list[dict]:
        """The rows of runs that raised (their ``error`` says what)."""
        return [r for r in self.rows if r.get("error")]

    def to_csv(self, path: str | Path) -> Path:
        """Write the table as CSV (missing values empty); returns the path."""
        path = Path(path)
        with path.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self.columns, extrasaction="ignore")
            w.writeheader()
            for r in self.rows:
                w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in self.columns})
        return path

    def to_parquet(self, path: str | Path) -> Path | None:
        """Write the table as Parquet if pyarrow is importable; returns the path, or None."""
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            return None
        data = {}
        for name in self.columns:
            col = self[name]
            data[name] = col if col.dtype != object else [None if v is None else str(v) for v in col]
        pq.write_table(pa.table(data), str(path))
        return Path(path)

    @classmethod
    def from_csv(cls, path: str | Path, params: Sequence[str]) -> "Table":
        """Read a table written by :meth:`to_csv`."""
        with Path(path).open(newline="") as f:
            rows = [{k: _cell(v) for k, v in r.items()} for r in csv.DictReader(f)]
        for r in rows:
            r["error"] = r.get("error") or ""
        return cls(rows, params)

    def to_pandas(self):
        """The table as a pandas DataFrame (pandas must be installed)."""
        import pandas as pd
        return pd.DataFrame([{k: r.get(k) for k in self.columns} for r in self.rows], columns=self.columns)

    def __repr__(self) -> str:
        return f"Table({len(self)} runs, params {self.params}, {len(self.failed)} failed)"
