"""The mechanism's state as others read it: read-only views, a version that moves with the values,
and caches kept under declared keys only."""
import numpy as np
import pytest

from controlkit.mechanism import CACHE_ENTRIES
from models import pendulum


def test_state_views_are_read_only_and_show_the_state_set():
    mech = pendulum(2)
    mech.set_state(np.array([0.1, -0.2]), np.array([1.0, 2.0]))
    q, v = mech.q, mech.v
    with pytest.raises(ValueError):
        q[0] = 3.0
    with pytest.raises(ValueError):
        v[:] = 0.0
    assert q.tolist() == [0.1, -0.2] and v.tolist() == [1.0, 2.0]
    mech.set_state(np.array([0.3, 0.4]))
    assert mech.q.tolist() == [0.3, 0.4] and mech.v.tolist() == [0.0, 0.0]


def test_the_state_version_moves_when_the_values_change_and_only_then():
    mech = pendulum(1)
    q = np.array([0.5])
    mech.set_state(q, np.zeros(1))
    k = mech.state_version
    mech.set_state(np.array([0.5]), np.zeros(1))  # the same values in new arrays
    assert mech.state_version == k
    mech.set_state(np.array([0.6]), np.zeros(1))
    assert mech.state_version == k + 1
    mech.kernels_overwritten()
    assert mech.state_version == k + 2


def test_state_is_compares_the_arrays_the_state_was_set_from():
    mech = pendulum(1)
    q, v = np.array([0.5]), np.zeros(1)
    mech.set_state(q, v, check=False)
    assert mech.state_is(q, v)
    assert not mech.state_is(q.copy(), v)


def test_a_cache_entry_must_be_declared_by_the_mechanism():
    mech = pendulum(1)
    mech.cache["free_layout"] = "a layout"
    assert mech.cache.get("free_layout") == "a layout"
    assert mech.cache.setdefault("solver_factors", {}) == {}
    with pytest.raises(KeyError, match="undeclared entry 'my_cache'"):
        mech.cache["my_cache"] = 1
    with pytest.raises(KeyError, match="CACHE_ENTRIES"):
        mech.cache.setdefault("my_cache", {})
    assert all(isinstance(doc, str) and doc for doc in CACHE_ENTRIES.values())
