"""A progress bar over simulated time for long runs (tqdm).

The bar appears only when it helps: standard output is a terminal, the caller did
not ask for quiet, and the run has already lasted ``delay`` seconds of wall time
(tqdm's ``delay``), so short runs, tests and piped output print nothing.
"""
from __future__ import annotations

import sys

from ._errors import ReportError

_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| t = {n:.3f} / {total:.3f} s [{elapsed}<{remaining}]"


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class Progress:
    """Progress of a run from 0 to ``total_sim_time`` seconds of simulated time.

    Args:
        total_sim_time: the run's end time (s, > 0).
        enabled: False for quiet runs; the bar also stays hidden when stdout is not a terminal.
        delay: wall seconds before the bar first appears.
        desc: the bar's label.
        file: where the bar is drawn (default ``sys.stderr``).
        start_time: simulated time at which the run starts (s).
    """

    def __init__(self, total_sim_time: float, enabled: bool = True, *, delay: float = 2.0,
                 desc: str = "simulating", file=None, start_time: float = 0.0):
        total = float(total_sim_time) - float(start_time)
        if not total > 0:
            raise ReportError(f"Progress: the run must end after it starts, got {start_time} .. {total_sim_time} s")
        self.total = total
        self.start_time = float(start_time)
        stream = sys.stderr if file is None else file
        self.active = bool(enabled) and _isatty(sys.stdout) and _isatty(stream)
        self._bar = None
        if self.active:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, delay=delay, file=stream, bar_format=_FORMAT,
                             leave=False)

    def update(self, t: float) -> None:
        """Advance to simulated time ``t`` (s); cheap enough to call every step."""
        bar = self._bar
        if bar is None:
            return
        n = min(max(float(t) - self.start_time, 0.0), self.total)
        if n > bar.n:
            bar.update(n - bar.n)

    def close(self) -> None:
        """Remove the bar (if it was ever shown)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
