"""Second-order analysis of redundant constraints: finding critical forms (thesis Fig. 4.11).

When the constraint Jacobian ``J`` (k, nv) loses rank, some combinations ``u`` of the
constraint rows (``u^T J = 0``) no longer restrict velocities at first order. Two cases:

- the redundancy is benign (a planar four-bar's pin hinges): ``u^T phi`` stays zero along
  every first-order admissible motion, so nothing more is needed; the verdict is cached
  per set of constraints and rank, since it is a property of the mechanism, not the instant;
- the configuration is a *critical form*: ``u^T phi`` grows quadratically along some
  first-order admissible motions ``n`` (``n^T H_u n != 0`` with ``H_u`` the Hessian of
  ``u^T phi``). Those motions violate the constraints at second order, so the mechanism
  is rigid along them, and the acceleration equations alone would let it move.

:func:`locked_directions` returns an orthonormal basis ``R`` (r, nv) of the motions the
second-order analysis rules out; the assembly adds ``R a = -kv R v`` for them. The
curvatures ``n^T H_u n`` come from the constraints' own drift terms evaluated at
``(q, n)`` (``phiddot = J a + Jdot v`` with a = 0 along q (+) s n) on a scratch copy of
the mechanism, so no second derivatives are coded by hand.
"""
from __future__ import annotations

import copy

import numpy as np

RANK_TOL = 1e-7  # relative singular value below which a constraint row combination is redundant
CURVATURE_TOL = 1e-6  # relative curvature above which a redundant combination locks a motion


def _scratch(mech):
    s = getattr(mech, "_scratch", None)
    if s is None:
        from .mechanism import Mechanism
        s = Mechanism(mech.model, name=f"{mech.name} (scratch)", actuated=mech.actuated_joints)
        mech._scratch = s
    return s


def _drifts(mech, cons, q, n) -> np.ndarray:
    s = _scratch(mech)
    s.set_state(q, n, check=False)
    out = []
    for c in cons:
        c2 = copy.copy(c)
        c2.mech = s
        out.append(c2.drift())
    return np.concatenate(out)


def locked_directions(mech, cons, J: np.ndarray) -> np.ndarray | None:
    """Basis (r, nv) of velocity directions locked at second order, or None if there are none."""
    U, sv, Vt = np.linalg.svd(J)
    smax = sv[0] if sv.size else 0.0
    if smax == 0.0:
        return None
    rank = int(np.sum(sv > RANK_TOL * smax))
    if rank == J.shape[0]:
        return None  # no redundant combination
    key = (tuple(getattr(c, "signature", c.name) for c in cons), rank)  # contact hinges change their rows
    benign = mech.__dict__.setdefault("_benign_redundancy", set())
    if key in benign:
        return None  # this set of constraints was found redundant but not critical before
    Uz = U[:, rank:]  # left null space: redundant combinations of rows
    N = Vt[rank:].T  # first-order admissible motions
    k = N.shape[1]
    if k == 0:
        return None
    q = mech._q
    d = [_drifts(mech, cons, q, N[:, i]) for i in range(k)]
    locked = []
    for j in range(Uz.shape[1]):
        u = Uz[:, j]
        Q = np.empty((k, k))
        for i in range(k):
            Q[i, i] = u @ d[i]
        for i in range(k):
            for m in range(i + 1, k):
                dij = _drifts(mech, cons, q, N[:, i] + N[:, m])
                Q[i, m] = Q[m, i] = 0.5 * (u @ dij - Q[i, i] - Q[m, m])
        w, V = np.linalg.eigh(Q)
        scale = max(1.0, np.abs(w).max(initial=0.0))
        big = np.abs(w) > CURVATURE_TOL * scale * max(1.0, smax)
        if big.any():
            locked.append(N @ V[:, big])
    if not locked:
        benign.add(key)
        return None
    L = np.hstack(locked)
    Ul, sl, _ = np.linalg.svd(L, full_matrices=False)
    return Ul[:, sl > 1e-9].T
