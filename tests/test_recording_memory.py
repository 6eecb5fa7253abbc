"""A recording holds its samples in at most twice the memory of their data (8 bytes per number)."""
import tracemalloc

import numpy as np

from controlkit.recording import Recording


def test_a_long_recording_takes_at_most_twice_its_datas_memory():
    nq = nv = ntau = 6
    n = 20000
    data = n * 8 * (1 + nq + nv + ntau + 3)  # t, q, v, tau and a 3-vector quantity
    q, tool = np.linspace(0, 1, nq), np.ones(3)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        rec = Recording(nq, nv, ntau)
        for k in range(n):
            rec.append(k * 1e-3, q, q, q, {"tool": tool})
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert len(rec) == n and rec.quantity("tool").shape == (n, 3)
    assert held <= 2 * data, (held, data)
    assert rec.nbytes() <= 1.5 * data + 256 * 8 * 22  # (the growth policy: half again when full)


def test_a_quantity_recorded_late_reads_nan_before_its_first_sample():
    rec = Recording(1, 1, 0)
    rec.append(0.0, [0.0], [0.0])
    rec.append(0.1, [1.0], [0.0], None, {"x": [2.0, 3.0]})
    rec.append(0.2, [2.0], [0.0])
    x = rec.quantity("x")
    assert np.isnan(x[0]).all() and x[1].tolist() == [2.0, 3.0] and np.isnan(x[2]).all()
