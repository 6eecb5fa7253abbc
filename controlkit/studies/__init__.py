"""Studies: many runs of the simulator compared in one table (the application layer).

Beside the command line, this package may import ``sim``, ``robots`` and ``controllers``;
the core (the rest of ``controlkit``) does not import it.

- :mod:`controlkit.studies.compare`: one task under inverse dynamics, computed torque and joint PD;
- :mod:`controlkit.studies.sweep`: parameter sweeps and Monte Carlo studies on Dask
  (:func:`sweep`, :func:`report`), with :mod:`~controlkit.studies.specs` (what is varied),
  :mod:`~controlkit.studies.runs` (one run on a worker), :mod:`~controlkit.studies.table`
  (the results) and :mod:`~controlkit.studies.maps` (robustness maps).
"""
from .sweep import report, sweep
from .table import Table

__all__ = ["Table", "report", "sweep"]
