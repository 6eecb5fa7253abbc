"""controlkit: control programming for robots and bipeds (see docs/architecture.md).

Per-step solves work on small matrices, where a multi-threaded BLAS only adds
synchronisation: on a 2-core machine OpenBLAS threads made the walking demo 5x slower.
Unless the user chose otherwise, BLAS runs on one thread (set before numpy loads).
"""
import os as _os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")


def __getattr__(name: str):
    # controlkit.sweep is the studies layer's (it imports sim when it runs): loaded on first use
    if name == "sweep":
        from .studies.sweep import sweep
        return sweep
    raise AttributeError(f"module 'controlkit' has no attribute {name!r}")
