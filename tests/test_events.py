"""Event isolation (sim/events.py): where a guard crossing in a step is placed, and at what cost."""
import math

import numpy as np
import pytest

from sim.events import EventSource, isolate


class _Step:
    """A step of length h from t0 whose dense output is the fraction itself (q = theta)."""

    def __init__(self, t0=2.0, h=1e-3):
        self.t0, self.h = t0, h

    def dense(self, theta):
        return np.array([theta]), np.zeros(1)


class _Source(EventSource):
    tolerance = 1e-9

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def guards(self, sim, t, q, v):
        self.calls += 1
        return np.atleast_1d(self.fn(q[0]))


def _isolate(fn):
    src, step = _Source(fn), _Step()
    g0, g1 = src.guards(None, 0, np.zeros(1), None), src.guards(None, 0, np.ones(1), None)
    src.calls = 0
    theta = isolate(src, None, step, g0, (g0 > 0) & (g1 <= 0), g1)
    return theta, src.calls, step


@pytest.mark.parametrize("fn, root", [
    (lambda x: 0.3 - x, 0.3),                                  # linear
    (lambda x: math.cos(3.0 * x) - 0.2, math.acos(0.2) / 3.0),  # curved
    (lambda x: (0.7 - x) ** 3, 0.7),                           # flat at its root
])
def test_a_crossing_is_isolated_to_the_tolerance_in_far_fewer_trials_than_bisection(fn, root):
    theta, calls, step = _isolate(fn)
    tol = _Source.tolerance / step.h
    assert fn(theta) <= 0.0 and root <= theta <= root + tol  # the upper end: the guard has crossed
    bisection = math.ceil(math.log2(1.0 / tol))  # 20 trials at 1 ns in 1 ms
    if root == 0.7:  # a triple root (no transversal crossing): regula falsi is only linear there
        assert calls <= 2.5 * bisection
    else:  # a guard crossing with a nonzero rate, as a distance or a force does
        assert calls <= 8


def test_the_earliest_of_several_crossing_guards_is_found():
    theta, _, step = _isolate(lambda x: np.array([0.8 - x, 0.45 - x, 0.6 - x]))
    assert 0.45 <= theta <= 0.45 + _Source.tolerance / step.h


def test_a_guard_that_jumps_is_still_bracketed_to_the_tolerance():
    theta, calls, step = _isolate(lambda x: 1.0 if x < 0.123456 else -1.0)  # a program's until()
    assert 0.123456 <= theta <= 0.123456 + _Source.tolerance / step.h
    assert calls <= 2 * math.ceil(math.log2(step.h / _Source.tolerance))
