"""Small 3-vector helpers for the hot path (numpy's general ``cross`` costs ~20 us a call)."""
from __future__ import annotations

import numpy as np


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b for two 3-vectors."""
    # unpacked as Python floats: numpy scalars' arithmetic costs several times more
    a0, a1, a2 = np.asarray(a).tolist()
    b0, b1, b2 = np.asarray(b).tolist()
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])
