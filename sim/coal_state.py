"""Coal's process-wide state, set once when controlkit's collision code is imported.

Coal (3.0.x) computes a box's support point with a factor kept in a function-local ``static``
(``getShapeSupport(const Box*, ...)`` in coal's ``support_functions.cpp``, coal issue 894): it is
``1 + 1e-10`` when the first direction the process ever asks about has a zero component, else
``1``, and the box's negative half-sides are scaled by it for the rest of the process. One such
static exists per support variant (with and without the swept sphere: the first serves GJK/EPA
and contact patches, the second the half-space and plane distances). So every box distance,
normal and witness point read afterwards depended on which query came first in the process: two
stacked boxes read -5e-12 m and an EPA normal 4.6e-5 rad off when an axis-aligned box came first,
0 and exact when a tilted one did, and a chaotic scene's events depended on what ran before it in
the same interpreter (a pytest worker, a Dask worker, a notebook).

:func:`fix_box_support` asks coal about two tilted boxes and a tilted box over a half-space
before anything else does, so both statics are ``1`` (the exact box) in every process. It
is called on import of :mod:`sim.collision`; a program that queries coal about boxes before
importing controlkit's simulator sets the statics itself (:func:`box_support_is_exact` tells).
"""
from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin

#: a rotation with no zero entry (so no direction it maps from an axis has a zero component)
_TILT = pin.rpy.rpyToMatrix(0.7, 0.5, 0.3)


def _box_distance(tf_a: coal.Transform3s, tf_b: coal.Transform3s, b=None, guess=None) -> float:
    req = coal.DistanceRequest()
    req.enable_signed_distance = True
    if guess is not None:  # (GJK's first direction, in the first shape's frame)
        req.gjk_initial_guess = coal.GJKInitialGuess.CachedGuess
        req.cached_gjk_guess = guess
    res = coal.DistanceResult()
    return coal.distance(coal.Box(0.1, 0.1, 0.1), tf_a, coal.Box(0.1, 0.1, 0.1) if b is None else b, tf_b, req, res)


def fix_box_support() -> None:
    """Make coal's box support factor the exact one (1) in this process (see the module's
    docstring); harmless when it is already set: it only runs two distance queries."""
    tilted = coal.Transform3s(_TILT, np.array([0.01, 0.02, 0.3]))
    # GJK: the support without the swept sphere; its first direction is its initial guess (in the
    # first box's frame: the default guess (1, 0, 0) would set the factor 1 + 1e-10)
    _box_distance(tilted, coal.Transform3s(_TILT.T, np.zeros(3)), guess=_TILT[:, 0].copy())
    _box_distance(tilted, coal.Transform3s(), coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0))  # with it


def box_support_is_exact() -> bool:
    """Whether coal's box support factor is 1 in this process: two axis-aligned 0.1 m boxes
    0.06 m apart read 0.06 m to round-off (with the factor 1 + 1e-10: 5e-12 m less), and one
    resting on a half-space reads exactly 0."""
    apart = _box_distance(coal.Transform3s(np.eye(3), np.array([0.0, 0.0, 0.16])), coal.Transform3s())
    rest = _box_distance(coal.Transform3s(np.eye(3), np.array([0.0, 0.0, 0.05])), coal.Transform3s(),
                         coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0))
    return abs(apart - 0.06) < 1e-14 and rest == 0.0


fix_box_support()
