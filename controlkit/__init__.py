"""controlkit: control programming for robots and bipeds (see docs/architecture.md).

Per-step solves work on small matrices, where a multi-threaded BLAS only adds
synchronisation: on a 2-core machine OpenBLAS threads made the walking demo 5x slower.
Unless the user chose otherwise, BLAS runs on one thread (set before numpy loads).
"""
import os as _os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")
