"""Second-order analysis of redundant constraints: finding critical forms (thesis Fig. 4.11).

When the constraint Jacobian ``J`` (k, nv) loses rank, some combinations ``u`` of the
constraint rows (``u^T J = 0``) no longer restrict velocities at first order. The cases:

- none at all, the common case: an SVD proves J of full row rank once per set of
  constraints, and later evaluations only check (Weyl's inequality) that J has not moved
  far enough from that reference to lose rank;
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
import math

import numpy as np

RANK_TOL = 1e-7  # relative singular value below which a constraint row combination is redundant
CURVATURE_TOL = 1e-6  # relative curvature above which a redundant combination locks a motion
#: a constraint row (m or rad per unit of v) with every entry at most this is rounding noise of a
#: row that is zero (a closure at an existing joint's centre: J_a - J_b of two equal Jacobians)
NOISE_ROW = 1e-10


def without_noise_rows(J: np.ndarray) -> np.ndarray:
    """J (k, nv) with its rounding-noise rows (every entry <= :data:`NOISE_ROW`) set to exact zeros.

    Relative rank tests cannot tell such rows from real ones when every row is noise (the rows of
    a closure made redundant by a joint at its centre): scaled by their own largest singular
    value they look independent, and a solve through them applies forces of any size. Exact
    zeros make every later rank test see them for what they are. Returns J itself when no row
    is noise, else a copy."""
    if not J.size:
        return J
    big = np.abs(J).max(axis=1)
    if big.min() > NOISE_ROW:
        return J
    J = J.copy()
    J[big <= NOISE_ROW] = 0.0
    return J


def _scratch(mech):
    s = mech.cache.get("scratch")
    if s is None:
        from .mechanism import Mechanism
        s = Mechanism(mech.model, name=f"{mech.name} (scratch)", actuated=mech.actuated_joints)
        mech.cache["scratch"] = s
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


def _still_full_rank(ref, J: np.ndarray) -> bool:
    """Whether J provably keeps full row rank (in the sense of RANK_TOL) near a reference.

    ``ref = (J0, smin0, smax0)`` from an SVD that found J0 of full row rank. By Weyl's
    inequality every singular value moves by at most ``|J - J0|_2 <= |J - J0|_F = e``, so
    ``smin0 - e > RANK_TOL (smax0 + e)`` proves what the SVD of J would find (with a margin
    of 2 for rounding), at the price of one subtraction instead of an SVD.
    """
    J0, smin0, smax0 = ref
    if J0.shape != J.shape:
        return False
    dJ = J - J0
    e = math.sqrt(float(np.vdot(dJ, dJ)))
    return smin0 - e > 2.0 * RANK_TOL * (smax0 + e)


def locked_directions(mech, cons, J: np.ndarray, memo: dict | None = None) -> np.ndarray | None:
    """Basis (r, nv) of velocity directions locked at second order, or None if there are none.

    Args:
        mech: the mechanism at its state; cons: its active constraints; J: their stacked Jacobian.
        memo: where to keep the last full-rank reference for these constraints (the caller's
            per-constraint-set cache); default a cache on the mechanism keyed by the
            constraints' signatures.
    """
    sig = None
    if memo is not None:
        mkey = "full rank"  # the caller's cache is per constraint set already
    else:
        sig = tuple(getattr(c, "signature", c.name) for c in cons)
        memo, mkey = mech.cache.setdefault("full_rank_refs", {}), sig
        if len(memo) > 256:  # contact signatures come and go: keep the cache bounded
            memo.clear()
    ref = memo.get(mkey)
    if ref is not None and _still_full_rank(ref, J):
        return None  # no redundant combination, proven without an SVD
    # singular values alone first: most calls end with full rank or a known benign redundancy
    sv = np.linalg.svd(J, compute_uv=False)
    smax = sv[0] if sv.size else 0.0
    if smax == 0.0:
        return None
    rank = int(np.sum(sv > RANK_TOL * smax))
    if rank == J.shape[0]:
        memo[mkey] = (J.copy(), float(sv[-1]), float(smax))
        return None  # no redundant combination
    if sig is None:
        sig = tuple(getattr(c, "signature", c.name) for c in cons)  # contact hinges change their rows
    benign = mech.cache.setdefault("benign_redundancy", set())
    if (sig, rank) in benign:
        return None  # this set of constraints was found redundant but not critical before
    U, sv, Vt = np.linalg.svd(J)
    smax = sv[0]
    rank = int(np.sum(sv > RANK_TOL * smax))
    key = (sig, rank)
    if rank == J.shape[0] or key in benign:
        return None
    Uz = U[:, rank:]  # left null space: redundant combinations of rows
    N = Vt[rank:].T  # first-order admissible motions
    if N.shape[1] == 0:
        return None
    locked = _second_order_locked(mech, cons, Uz, N, smax)
    if locked is None:
        benign.add(key)
    return locked


def _second_order_locked(mech, cons, Uz: np.ndarray, N: np.ndarray, smax: float) -> np.ndarray | None:
    """Directions of ``N`` (nv, k) along which a redundant row combination of ``Uz`` curves.

    For each left-null combination u, the quadratic form Q_im = u . (second-order drift
    along N_i, N_m) is built by polarization of the drifts; its eigenvectors with a
    curvature above CURVATURE_TOL (relative to the rows' scale ``smax``) are locked.
    Returns an orthonormal basis (r, nv) of those directions, or None if there are none.
    """
    k = N.shape[1]
    q = mech.q
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
        return None
    L = np.hstack(locked)
    Ul, sl, _ = np.linalg.svd(L, full_matrices=False)
    return Ul[:, sl > 1e-9].T
