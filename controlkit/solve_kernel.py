"""The compiled solve of the common inverse-dynamics problem (numba): equalities, costs, the default.

Between two events a control program's problem keeps its form: the motion equations eliminated
(``a = P w + p0``, ``w`` the torques and forces), equality rows (the constraints' and the control
equations'), cost rows, and the documented default (least squared torques, then least squared
forces) for what they leave free; nothing assigned, no inequalities, no regularizations.
:func:`lstsq_kernel` runs :func:`controlkit.solver.solve`'s path for that form in one compiled call,
stage by stage as the reference does it, with LAPACK called directly (SciPy's ``cython_lapack``):

- the equalities (wide, ``me <= nw``): Householder QR of ``E^T``, the minimum-norm solution and an
  orthonormal null-space basis, when the bound ``s_min >= 1 / |R^-1|_F`` proves full rank at
  ``RANK_TOL`` (the reference's :func:`controlkit.linalg.full_rank_qr`);
- each tall stage (costs on the null space, then the torques of the default): QR; the same bound,
  else the SVD of the small triangular factor, the reference's rank rule (singular values above
  ``RANK_TOL * max(1, s_max)``) and minimum-norm solution;
- the forces of the default: the minimum-norm point of what is left.

What the kernel does not decide alone it hands back (``ok`` False) and the reference solves the
problem: a rank the bound does not prove, a residual in the equalities (which the reference explains
by naming the statements), a stage of another shape. numba compiles the kernel on its first call (a
few seconds) and keeps it in ``__pycache__``; this module is imported only when the plan path first
needs it.
"""
from __future__ import annotations

import llvmlite.binding as llvm
import numba
import numpy as np
from numba.core import types
from numba.extending import get_cython_function_address


def _lapack(name: str, nargs: int):
    """LAPACK's ``name`` from SciPy's cython_lapack as an external symbol (by name: cached code links
    to it again in a new process)."""
    symbol = f"controlkit_{name}"
    llvm.add_symbol(symbol, get_cython_function_address("scipy.linalg.cython_lapack", name))
    return types.ExternalFunction(symbol, types.void(*([types.voidptr] * nargs)))


_dgeqrf = _lapack("dgeqrf", 8)    # m, n, a, lda, tau, work, lwork, info
_dormqr = _lapack("dormqr", 13)   # side, trans, m, n, k, a, lda, tau, c, ldc, work, lwork, info
_dtrtri = _lapack("dtrtri", 6)    # uplo, diag, n, a, lda, info
_dgesdd = _lapack("dgesdd", 14)   # jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, iwork, info
_dpotrf = _lapack("dpotrf", 5)    # uplo, n, a, lda, info
_dpotrs = _lapack("dpotrs", 8)    # uplo, n, nrhs, a, lda, b, ldb, info


# (every array whose address goes to LAPACK is used after the call, if only its size: numba frees an
# array after its last use, which would otherwise come before the call)
@numba.njit(cache=True)
def _qr(A):
    """Householder QR of the Fortran-ordered A (m, n) in place; returns tau, or an empty array on failure."""
    m, n = A.shape
    k = min(m, n)
    tau = np.zeros(max(k, 1))
    lwork = max(1, 64 * n)
    work = np.zeros(lwork)
    iv = np.array([m, n, m, lwork, 0], dtype=np.int32)
    p = iv.ctypes.data
    _dgeqrf(p, p + 4, A.ctypes.data, p + 8, tau.ctypes.data, work.ctypes.data, p + 12, p + 16)
    if iv[4] != 0 or work.size == 0 or A.size == 0:
        return np.empty(0)
    return tau


@numba.njit(cache=True)
def _apply_q(A, tau, C, transpose):
    """C <- Q C (or Q^T C) with Q from :func:`_qr`'s A (m, k reflectors); C Fortran-ordered (m, nc). False on failure."""
    m, nc = C.shape
    k = min(A.shape[0], A.shape[1])
    lwork = max(1, 64 * nc)
    work = np.zeros(lwork)
    iv = np.array([m, nc, k, A.shape[0], m, lwork, 0], dtype=np.int32)
    ch = np.array([76, 84 if transpose else 78], dtype=np.uint8)
    p, c = iv.ctypes.data, ch.ctypes.data
    _dormqr(c, c + 1, p, p + 4, p + 8, A.ctypes.data, p + 12, tau.ctypes.data, C.ctypes.data, p + 16,
            work.ctypes.data, p + 20, p + 24)
    return iv[6] == 0 and ch.size == 2 and work.size > 0 and tau.size > 0 and A.size > 0


@numba.njit(cache=True)
def _proved_inverse(A, k, E, rank_tol):
    """(proved, R^-1) for the triangular factor R (k, k) in the upper part of :func:`_qr`'s A: proved when
    ``s_min(E) >= 1 / |R^-1|_F`` clears the rank threshold ``2 RANK_TOL max(1, |E|_F)`` (the reference's
    :func:`controlkit.linalg.full_rank_qr`: then E has full rank for the SVD's rule too)."""
    Ri = np.zeros((k, k), dtype=np.float64).T  # (Fortran order)
    for j in range(k):
        for i in range(j + 1):
            Ri[i, j] = A[i, j]
    iv = np.array([k, k, 0], dtype=np.int32)
    ch = np.array([85, 78], dtype=np.uint8)
    p, c = iv.ctypes.data, ch.ctypes.data
    _dtrtri(c, c + 1, p, Ri.ctypes.data, p + 4, p + 8)
    if iv[2] != 0 or ch.size != 2:
        return False, Ri
    ri = np.sqrt(np.sum(Ri * Ri))
    ee = np.sqrt(np.sum(E * E))
    return 1.0 / ri > 2.0 * rank_tol * max(1.0, ee), Ri


@numba.njit(cache=True)
def _wide(E, f, rank_tol):
    """Minimum-norm solution of E y = f (E (m, n), m <= n) and E's null space (n, n - m) by the QR of E^T,
    when the bound proves full rank; ok False otherwise."""
    m, n = E.shape
    A = np.empty((m, n)).T  # E^T, Fortran order (a copy: the QR overwrites it)
    A[:, :] = E.T
    tau = _qr(A)
    if tau.shape[0] == 0:
        return False, np.zeros(n), np.zeros((n, 0))
    ok, Ri = _proved_inverse(A, m, E, rank_tol)
    if not ok:
        return False, np.zeros(n), np.zeros((n, 0))
    C = np.zeros((n - m + 1, n), dtype=np.float64).T  # (n, n - m + 1), Fortran order
    C[:m, 0] = Ri.T.dot(f)
    for i in range(n - m):
        C[m + i, 1 + i] = 1.0
    if not _apply_q(A, tau, C, False):
        return False, np.zeros(n), np.zeros((n, 0))
    return True, np.ascontiguousarray(C[:, 0]), np.ascontiguousarray(C[:, 1:])


@numba.njit(cache=True)
def _tall(E, f, rank_tol):
    """Minimum-norm least-squares solution of E y = f (E (m, n), m >= n >= 1) and E's null space, by the
    QR of E: R^-1 when the bound proves full rank, else the SVD of R (the reference's rank rule); ok False
    on a LAPACK failure."""
    m, n = E.shape
    if n == 1:
        ss = 0.0
        ef = 0.0
        for i in range(m):
            ss += E[i, 0] * E[i, 0]
            ef += E[i, 0] * f[i]
        if np.sqrt(ss) > rank_tol:
            return True, np.array([ef / ss]), np.zeros((1, 0))
        return True, np.zeros(1), np.ones((1, 1))
    A = np.empty((n, m)).T  # E, Fortran order (a copy: the QR overwrites it)
    A[:, :] = E
    tau = _qr(A)
    if tau.shape[0] == 0:
        return False, np.zeros(n), np.zeros((n, 0))
    cq = np.zeros((1, m), dtype=np.float64).T
    cq[:, 0] = f
    if not _apply_q(A, tau, cq, True):
        return False, np.zeros(n), np.zeros((n, 0))
    proved, Ri = _proved_inverse(A, n, E, rank_tol)
    if proved:  # full rank: the unique least-squares solution, no null space (no SVD needed)
        return True, Ri.dot(cq[:n, 0]), np.zeros((n, 0))
    R = np.zeros((n, n), dtype=np.float64).T
    for j in range(n):
        for i in range(j + 1):
            R[i, j] = A[i, j]
    s = np.empty(n)
    U = np.empty((n, n), dtype=np.float64).T
    Vt = np.empty((n, n), dtype=np.float64).T
    lwork = 4 * n * n + 8 * n + 64 * n + 64
    work = np.empty(lwork)
    iwork = np.empty(8 * n, dtype=np.int32)
    iv = np.array([n, n, n, n, n, lwork, 0], dtype=np.int32)
    ch = np.array([65], dtype=np.uint8)
    p = iv.ctypes.data
    _dgesdd(ch.ctypes.data, p, p + 4, R.ctypes.data, p + 8, s.ctypes.data, U.ctypes.data, p + 12,
            Vt.ctypes.data, p + 16, work.ctypes.data, p + 20, iwork.ctypes.data, p + 24)
    if iv[6] != 0 or ch.size != 1 or work.size == 0 or iwork.size == 0 or R.size == 0:
        return False, np.zeros(n), np.zeros((n, 0))
    thr = rank_tol * max(1.0, s[0])
    r = 0
    for i in range(n):
        if s[i] > thr:
            r += 1
    g = np.zeros(r)
    for i in range(r):
        g[i] = U[:, i].dot(cq[:n, 0]) / s[i]
    y = np.zeros(n)
    for i in range(r):
        y += g[i] * Vt[i]
    return True, y, np.ascontiguousarray(Vt[r:].T)


@numba.njit(cache=True)
def lstsq_kernel(Mi, S, G, bias, Ea, Ew, eb, Ca, Cw, cw, cb, rank_tol, residual_tol):
    """The solve (see the module docstring); C-ordered float arrays. Shapes: Mi (nv, nv) = M^-1,
    S (ntau, nv), G (k, nv) the force Jacobian, bias (nv,) = h - f_ext; equalities Ea (me, nv),
    Ew (me, nw), eb (me,); costs Ca (mc, nv), Cw (mc, nw), weights cw (mc,), cb (mc,).

    Returns (ok, x = [a | tau | lam] (nv + nw,), the null space left (nw, free), ``P N`` before the
    default (nv, n0), max |P|, whether the costs chose a direction).

    One function on purpose: it is the single compiled call per evaluation, and its stages share
    work arrays that a split would pass through numba's call boundary."""
    nv = Mi.shape[0]
    nt = S.shape[0]
    nw = nt + G.shape[0]
    fail = (False, np.zeros(nv + nw), np.zeros((nw, 0)), np.zeros((nv, 0)), 0.0, False)
    B = np.empty((nv, nw + 1))
    B[:, :nt] = S.T
    B[:, nt:nw] = G.T
    B[:, nw] = -bias
    X = Mi.dot(B)
    P = np.ascontiguousarray(X[:, :nw])
    p0 = np.ascontiguousarray(X[:, nw])
    y = np.zeros(nw)
    N = np.eye(nw)
    if Ea.shape[0]:
        if Ea.shape[0] > nw:
            return fail
        E = Ea.dot(P) + Ew
        f = eb - Ea.dot(p0)
        ok, y, N = _wide(E, f, rank_tol)
        if not ok:
            return fail
        res = E.dot(y) - f
        if np.sqrt(res.dot(res)) > residual_tol * (1.0 + np.sqrt(f.dot(f))):
            return fail
    used_costs = False
    if Ca.shape[0] and N.shape[1]:
        # the cost rows on the null space left, (Ca P + Cw) N, and their residual at y, without forming
        # Ca P (mc x nw): through P N (nv x free) and the accelerations P y + p0
        CN = Ca.dot(np.ascontiguousarray(P.dot(N))) + Cw.dot(N)
        d = cb - Ca.dot(P.dot(y) + p0) - Cw.dot(y)
        for i in range(CN.shape[0]):
            CN[i] *= cw[i]
            d[i] *= cw[i]
        if CN.shape[0] < CN.shape[1]:
            return fail
        ok, z, K = _tall(CN, d, rank_tol)
        if not ok:
            return fail
        y = y + N.dot(z)
        N = N.dot(K)
        used_costs = True
    PN = P.dot(N)
    if N.shape[1] and nt:
        Nt = np.ascontiguousarray(N[:nt])
        if Nt.shape[0] < Nt.shape[1]:
            return fail
        ok, z, K = _tall(Nt, -y[:nt], rank_tol)
        if not ok:
            return fail
        y = y + N.dot(z)
        N = N.dot(K)
    if N.shape[1]:
        y = y - N.dot(N.T.dot(y))
    x = np.empty(nv + nw)
    x[:nv] = P.dot(y) + p0
    x[nv:] = y
    return True, x, N, PN, np.abs(P).max(), used_costs


@numba.njit(cache=True)
def delassus_kernel(Mi, J, r, rcond, cond_max):
    """``M^-1 J^T (J M^-1 J^T)^-1 r`` (nv,) by the Cholesky factor U of the Delassus matrix ``D = J M^-1 J^T``
    (Mi (nv, nv) = M^-1, J (k, nv), r (k,)), for :func:`sim.stabilization.project_state`; ok False when the
    bound ``|U|_F`` over ``1 / |U^-1|_F`` (D's singular values are those of ``J L^-T`` squared) does not
    prove the weighted Jacobian of full rank at ``rcond`` and conditioned below ``cond_max``, or LAPACK fails.

    One call for what the Python path does in eight (products, ``dpotrf``, ``dtrtri``, the bound, ``dpotrs``)."""
    k = J.shape[0]
    nv = J.shape[1]
    MJt = Mi.dot(np.ascontiguousarray(J.T))  # (nv, k)
    D = J.dot(MJt)
    U = np.empty((k, k), dtype=np.float64).T  # (Fortran order)
    U[:, :] = D
    Ui = np.zeros((k, k), dtype=np.float64).T
    iv = np.array([k, k, 1, 0, 0], dtype=np.int32)
    ch = np.array([85, 78], dtype=np.uint8)  # 'U', 'N'
    p, c = iv.ctypes.data, ch.ctypes.data
    _dpotrf(c, p, U.ctypes.data, p + 4, p + 12)
    if iv[3] != 0:
        return False, np.zeros(nv)
    uu = 0.0
    for j in range(k):
        for i in range(j + 1):
            Ui[i, j] = U[i, j]
            uu += U[i, j] * U[i, j]
    _dtrtri(c, c + 1, p, Ui.ctypes.data, p + 4, p + 16)
    if iv[4] != 0:
        return False, np.zeros(nv)
    ii = 0.0
    for j in range(k):
        for i in range(j + 1):
            ii += Ui[i, j] * Ui[i, j]
    s_max_ub, s_min_lb = np.sqrt(uu), 1.0 / np.sqrt(ii)
    if not (s_min_lb > 2.0 * rcond * s_max_ub and s_max_ub <= cond_max * s_min_lb):
        return False, np.zeros(nv)
    y = r.copy()
    _dpotrs(c, p, p + 8, U.ctypes.data, p + 4, y.ctypes.data, p + 4, p + 12)
    if iv[3] != 0 or ch.size != 2 or Ui.size == 0:
        return False, np.zeros(nv)
    return True, MJt.dot(y)
