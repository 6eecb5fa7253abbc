"""Rank-revealing linear algebra for the per-step solve: minimum-norm least squares with a null
space basis, and proofs that a symmetric matrix has no flat direction.

Every rank decision uses one relative threshold, :data:`RANK_TOL`. The cheap paths (a Householder
QR, a Cholesky factor) are taken only when they provably give what the SVD or the
eigendecomposition would: bounds on the extreme singular values or eigenvalues decide, with a
margin for rounding; otherwise the full decomposition runs. LAPACK is called through scipy's
low-level wrappers: at these sizes (a dozen to a few dozen unknowns, every step) numpy's and
scipy's high-level wrappers cost more than the kernels.
"""
from __future__ import annotations

import bisect
import math

import numpy as np
import scipy.linalg as sla
from scipy.linalg import lapack

RANK_TOL = 1e-10  # singular values below RANK_TOL * largest count as zero


def norm(x: np.ndarray) -> float:
    """Euclidean norm of a vector (np.linalg.norm's generality costs more than the sum here)."""
    return math.sqrt(float(np.vdot(x, x)))


def min_norm(E, f):
    """Minimum-norm least-squares solution, rank, left basis, null space basis.

    The left basis is None when a QR factorization proved E of full rank (the common case,
    several times cheaper than the SVD); a caller that needs it then calls :func:`min_norm_svd`.
    """
    out = full_rank_qr(E, f)
    return out if out is not None else min_norm_svd(E, f, left=False)


def min_norm_svd(E, f, left: bool = True):
    """:func:`min_norm` by the SVD, whatever E's rank.

    ``left=False``: the left basis is not needed (returned as None), so a tall E's SVD computes
    only its first n left singular vectors (a 56 x 6 cost block's U is 56 x 6, not 56 x 56).
    """
    m, n = E.shape
    U, s, Vt = np.linalg.svd(E, full_matrices=left or m <= n)  # a wide E needs all of V for its null space
    r = int(np.sum(s > RANK_TOL * max(1.0, s[0] if s.size else 0.0)))
    y = Vt[:r].T @ ((U[:, :r].T @ f) / s[:r])
    return y, r, (U if left else None), Vt[r:].T


_UPPER: dict[int, np.ndarray] = {}


def _upper(k: int) -> np.ndarray:
    """The (k, k) upper-triangular mask of ones (cached)."""
    m = _UPPER.get(k)
    if m is None:
        m = _UPPER[k] = np.triu(np.ones((k, k)))
        m.flags.writeable = False  # shared: nobody may write into it
    return m


_NULL_RHS: dict[tuple[int, int], np.ndarray] = {}


def _null_rhs(n: int, m: int) -> np.ndarray:
    """A new (n, n - m + 1) Fortran-ordered array: zeros, with the identity in rows m: and columns 1:."""
    C = _NULL_RHS.get((n, m))
    if C is None:
        C = _NULL_RHS[(n, m)] = np.zeros((n, n - m + 1), order="F")
        C[m:, 1:] = np.eye(n - m)
    return C.copy(order="F")


def full_rank_qr(E, f):
    """:func:`min_norm` by a Householder QR when E provably has full rank, else None.

    The SVD would count every singular value above ``RANK_TOL * max(1, s_max)``. With
    ``E^T = Q R`` (wide E) or ``E = Q R`` (tall E), ``s_min >= 1 / |R^-1|_F`` and
    ``s_max <= |R|_F``; when the first bound clears the threshold (with a margin of 2 for
    rounding) the SVD's rank is the full rank, and the minimum-norm solution and an
    orthonormal null space basis come from the QR factors. Everything downstream depends on
    the null space only through the subspace it spans, so results agree to rounding.
    """
    m, n = E.shape
    if m == 0 or n == 0:
        return None
    wide = m <= n
    k = m if wide else n
    qr, tau, _, info = lapack.dgeqrf(E.T if wide else E)
    if info != 0:
        return None
    Ri, info = lapack.dtrtri(qr[:k] * _upper(k))  # (np.triu costs more than the inverse)
    if info != 0:
        return None
    ri, ee = Ri.ravel(order="K"), E.ravel(order="K")
    smin_lb = 1.0 / math.sqrt(float(ri.dot(ri)))
    if not smin_lb > 2.0 * RANK_TOL * max(1.0, math.sqrt(float(ee.dot(ee)))):  # |R|_F = |E|_F
        return None
    if wide:
        # y = Q1 R^-T f is the minimum-norm solution; Q's other columns span the null space:
        # both at once as Q [[R^-T f, 0], [0, I]] (the reflectors applied to n - m + 1 columns,
        # without forming Q)
        C = _null_rhs(n, m)
        C[:m, 0] = Ri.T.dot(f)
        QC, _, info = lapack.dormqr("L", "N", qr, tau, C, n - m + 1, 1)
        if info != 0:
            return None
        return QC[:, 0], m, None, QC[:, 1:]
    # tall: the unique least-squares solution y = R^-1 Q1^T f; no null space
    cq, _, info = lapack.dormqr("L", "T", qr, tau, f[:, None], lwork=max(1, n))
    if info != 0:
        return None
    y = Ri.dot(cq[:n, 0])
    return y, n, None, np.zeros((n, 0))


def well_conditioned(H, trace: float) -> bool:
    """Whether the symmetric H (trace given) provably has every eigenvalue above ``RANK_TOL * w_max``
    (False: maybe not), by :func:`least_eigenvalue_bound` and ``w_max <= trace``."""
    if len(H) == 1:
        return trace > 0.0  # (its one eigenvalue is its trace)
    bound = least_eigenvalue_bound(H)
    return bound is not None and bound > 2.0 * RANK_TOL * trace


def least_eigenvalue_bound(H) -> float | None:
    """A lower bound of the symmetric H's least eigenvalue: ``1 / |R^-1|_F^2`` with ``H = R^T R``
    (two triangular kernels); 0 when R cannot be inverted, None when the Cholesky factor fails
    (H numerically singular or indefinite). The factor 2 its callers ask more covers rounding."""
    R, info = lapack.dpotrf(H, lower=0, clean=1)
    if info != 0:
        return None
    Ri, info = lapack.dtrtri(R, lower=0)
    if info != 0:
        return 0.0
    ri = Ri.ravel(order="K")
    return 1.0 / float(ri.dot(ri))


def flat_directions(H) -> np.ndarray:
    """Orthonormal eigenvectors (n, k) of the symmetric H with eigenvalues ``<= RANK_TOL * max(1, w_max)``."""
    return flat_split(H)[0]


def flat_split(H):
    """H's eigendecomposition split at ``RANK_TOL * max(1, w_max)``: the flat directions F (n, k),
    the others V (n, n - k) and their eigenvalues w (n - k,).

    LAPACK's dsyevd on the lower triangle, the routine numpy's ``eigh`` calls (the same results,
    bit for bit, with scipy's and numpy's bundled OpenBLAS here) without its wrapper's Python
    overhead: the walking servo decomposes at 4 ticks in 5. When H's flat eigenvalues sit close
    to the next ones, their subspace is only defined to that gap, and another LAPACK build's
    eigenvectors move the solution by that much.
    """
    w, V, info = lapack.dsyevd(H, lower=1)  # ascending: the flat ones first
    if info != 0:
        raise np.linalg.LinAlgError(f"dsyevd did not converge (info {info})")
    wl = w.tolist()  # (bisect on floats: numpy's searchsorted costs more on 16 numbers)
    k = bisect.bisect_right(wl, RANK_TOL * max(1.0, wl[-1])) if wl else 0
    return V[:, :k], V[:, k:], w[k:]


def no_flat_direction(H) -> bool:
    """Whether the symmetric H has every eigenvalue above ``RANK_TOL * max(1, w_max)`` (False: maybe not).

    With ``H = R^T R`` (Cholesky), ``w_min >= 1 / |R^-1|_F^2`` and ``w_max <= trace(H)``: a proof at
    the price of two triangular kernels (a margin of 2 covers rounding). When the bounds are too loose
    (a cost Hessian conditioned near 1 / RANK_TOL, as the walking servo's with a swing foot), H's
    eigenvalues alone decide, with a margin of 1e-6 for their rounding (computing no eigenvectors
    costs a third of the decomposition). A failed Cholesky factor means H is numerically singular.
    """
    return no_flat_by_bound(H) or no_flat_by_eigenvalues(H)


def no_flat_by_bound(H) -> bool:
    """:func:`no_flat_direction`'s proof by the Cholesky bound alone (False: not proved)."""
    bound = least_eigenvalue_bound(H)
    return bound is not None and bound > 2.0 * RANK_TOL * max(1.0, sum(H.diagonal().tolist()))


def no_flat_by_eigenvalues(H) -> bool:
    """:func:`no_flat_direction`'s proof by H's eigenvalues (LAPACK's dsyevr without vectors:
    the cheapest of its symmetric eigenvalue drivers at these sizes)."""
    w, _, _, _, info = lapack.dsyevr(H, compute_v=0)
    return info == 0 and w[0] > (1.0 + 1e-6) * RANK_TOL * max(1.0, w[-1])


def independent_rows(E: np.ndarray) -> np.ndarray:
    """Sorted indices of a maximal set of linearly independent rows of E (m, n), by a column-pivoted QR of E^T."""
    if E.shape[0] == 0:
        return np.zeros(0, dtype=int)
    _, R, piv = sla.qr(E.T, pivoting=True, mode="economic")
    dg = np.abs(np.diag(R))
    r = int(np.sum(dg > RANK_TOL * max(1.0, dg[0])))
    return np.sort(piv[:r])
