"""The support-set problem as pure functions on matrices: the LCP on the normal forces (a QP,
refined by pivoting), compressive forces on a basic subset, the support margin, and the
choice of a well-spread basis of points."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy.optimize import nnls

from controlkit.errors import ControlkitError, QPError
from controlkit.qp import solve_qp

#: dimensionless: a force, separation or residual within this fraction of the problem's largest
#: (force, separating acceleration, generalized force) is zero: round-off
FORCE_RTOL = 1e-9
#: the smallest scale (N, m/s^2) FORCE_RTOL is taken of, when the problem's largest is zero
FORCE_FLOOR = 1e-12
#: dimensionless: the support QP's regularization, a fraction of the contact matrix's largest
#: diagonal entry added to its diagonal (least-squares forces among equivalent ones)
QP_REG = 1e-9
#: dimensionless: singular values of a support subproblem below this fraction of the largest are
#: dropped (redundant points share their load by least squares)
LSTSQ_RCOND = 1e-10
#: dimensionless: the support-margin LP's regularization (its QP form's Hessian, on forces of order one)
LP_REG = 1e-8


def _spread_order(X: np.ndarray, idx: Sequence[int]) -> list[int]:
    """Indices ``idx`` of points X (k, 3), widest first: the farthest from their centroid, the
    farthest from it, the farthest from their line, then the rest (a well-conditioned basis)."""
    idx = list(idx)
    if len(idx) <= 1:
        return idx
    P = X[idx]
    first = int(np.argmax(np.linalg.norm(P - P.mean(axis=0), axis=1)))
    second = int(np.argmax(np.linalg.norm(P - P[first], axis=1)))
    e = P[second] - P[first]
    third = int(np.argmax(np.linalg.norm(np.cross(P - P[first], e), axis=1)))
    order = list(dict.fromkeys([first, second, third] + list(range(len(idx)))))
    return [idx[i] for i in order]


def _affine_fit(Xb: np.ndarray, Xd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The homogeneous points A (4, k) of Xb (k, 3), B (4, d) of Xd (d, 3), and the least-squares c
    (k, d) of ``A c = B``."""
    A = np.vstack([Xb.T, np.ones(len(Xb))])
    B = np.vstack([Xd.T, np.ones(len(Xd))])
    return A, B, np.linalg.lstsq(A, B, rcond=None)[0]


def _affine_residual(Xb: np.ndarray, Xd: np.ndarray) -> np.ndarray:
    """Distance (m) of each point of Xd (d, 3) from the affine hull of the points Xb (k, 3)."""
    if not len(Xb):
        return np.full(len(Xd), np.inf)
    A, B, c = _affine_fit(Xb, Xd)
    return np.linalg.norm(A @ c - B, axis=0)


def affine_coordinates(Xb: np.ndarray, Xd: np.ndarray) -> np.ndarray:
    """Affine coordinates (d, k) of the points Xd (d, 3) in the points Xb (k, 3) (m; each row sums to
    1; least squares where Xb's points are affinely dependent)."""
    return _affine_fit(Xb, Xd)[2].T


# ----------------------------------------------------------- support-set LCP
def _support_qp(A: np.ndarray, s0: np.ndarray, normal: np.ndarray, t: float) -> np.ndarray:
    """``min 1/2 lam^T (A_sym + eps I) lam + s0^T lam`` with ``lam >= 0`` on the normal rows.

    The mixed LCP's solution when A is symmetric (forward dynamics); the least-squares forces
    among equivalent ones when points are redundant."""
    k = len(s0)
    H = 0.5 * (A + A.T)
    scale = max(float(np.max(np.abs(np.diag(H)))), FORCE_FLOOR)
    # A is positive semi-definite up to round-off (and for sliding friction only nearly so)
    shift = max(0.0, -float(np.linalg.eigvalsh(H)[0])) + QP_REG * scale
    H = H + shift * np.eye(k)
    try:  # lam >= 0 on the normal rows
        lam = solve_qp(H, s0, G=-np.eye(k)[normal], h=np.zeros(int(np.count_nonzero(normal)))).x
    except QPError as exc:
        raise ControlkitError(f"t = {t:.9g} s: the contact support problem could not be solved ({exc})") from exc
    return np.where(normal, np.maximum(lam, 0.0), lam)


def _pivot_lcp(A: np.ndarray, s0: np.ndarray, normal: np.ndarray, lam: np.ndarray,
               max_iter: int = 50) -> tuple[np.ndarray, bool]:
    """Active-set pivoting on the true (possibly unsymmetric, e.g. sliding friction) A from the QP's
    support: drop the most tensile support point, add the most penetrating free point, until
    ``lam >= 0, s = s0 + A lam >= 0`` hold with ``lam_i s_i = 0`` on the normal rows (the other rows
    always held; least-squares forces on redundant sets). Returns the forces and whether the pivoting
    converged; when it does not (it cycles), the QP's forces ``lam`` themselves."""
    k = len(s0)
    tol_s = FORCE_RTOL * max(float(np.max(np.abs(s0))), FORCE_FLOOR)
    S = ~normal | (lam > FORCE_RTOL * max(float(lam[normal].max(initial=0.0)), FORCE_FLOOR))
    for _ in range(max_iter):
        lamS = np.zeros(k)
        idx = np.flatnonzero(S)
        if idx.size:
            lamS[idx] = np.linalg.lstsq(A[np.ix_(idx, idx)], -s0[idx], rcond=LSTSQ_RCOND)[0]
        s = s0 + A @ lamS
        neg = np.where(S & normal, lamS, np.inf)
        pen = np.where(~S & normal, s, np.inf)
        tol_l = FORCE_RTOL * max(float(np.abs(lamS).max(initial=0.0)), FORCE_FLOOR)
        if neg.min() < -tol_l:
            S[int(np.argmin(neg))] = False
        elif pen.min() < -tol_s:
            S[int(np.argmin(pen))] = True
        else:
            return np.where(normal, np.maximum(lamS, 0.0), lamS), True
    return lam, False  # no convergence: keep the QP's forces


def lcp_violation(A: np.ndarray, s0: np.ndarray, normal: np.ndarray, lam: np.ndarray) -> float:
    """How far forces ``lam`` (k,) (N) are from solving the support LCP (``s = s0 + A lam``, the ``normal``
    rows complementary, the others held), dimensionless: the largest of the tensile normal forces
    (relative to the largest force, at least 1 N), the normal rows' penetrating and the held rows'
    nonzero accelerations (relative to |s0|'s largest), and the complementarity products (both scales)."""
    s = s0 + A.dot(lam)
    fs = max(float(np.abs(lam).max(initial=0.0)), 1.0)
    ss = max(float(np.abs(s0).max(initial=0.0)), FORCE_FLOOR)
    n, f = s[normal], s[~normal]
    return max(float(np.max(-lam[normal], initial=0.0)) / fs, float(np.max(-n, initial=0.0)) / ss,
               float(np.max(np.abs(f), initial=0.0)) / ss, float(np.max(np.abs(lam[normal] * n), initial=0.0)) / (fs * ss))


def _basic_forces(rows: np.ndarray, others: np.ndarray, lam: np.ndarray) -> np.ndarray | None:
    """Compressive forces on a basic subset of points with the same generalized force as ``lam``.

    Args:
        rows: the candidate points' normal rows (k, nv).
        others: rows whose forces are free (constraints, sticking rows) (m, nv), m may be 0.
        lam: compressive normal forces (k,) (N).
    Returns forces (k,) >= 0, nonzero on points with independent rows (Caratheodory: a nonneg
    combination of k vectors is one of at most rank-many of them), or None when NNLS leaves a
    residual (then no such subset was found)."""
    if not len(rows):
        return np.zeros(0)  # (scipy's nnls crashes on an empty matrix)
    A = rows.T
    if len(others):
        Q = np.linalg.qr(others.T)[0]
        A = A - Q @ (Q.T @ A)  # modulo the free forces' span
    b = A @ lam
    # scipy's NNLS, not controlkit.qp.solve_qp: the nonnegative least-squares minimizer is not unique
    # when the rows are dependent (rank < k, the usual case here), and NNLS's active-set method
    # returns a basic one (at most rank-many nonzero forces), which is what is asked for; the QP
    # form ``min 1/2 x^T A^T A x - b^T A x, x >= 0`` needs a regularized Hessian (quadprog refused
    # A^T A in 88 of 149 calls of the bench scenes and a 6 s walk) and then returns forces spread
    # over all the points, up to 37% apart from NNLS's (relative to the largest force)
    x, res = nnls(A, b)
    return x if res <= FORCE_RTOL * max(float(np.linalg.norm(b)), FORCE_FLOOR) else None


def _top_of_lines(lines, default: float) -> float:
    """``max_s min_i (a_i s + b_i)`` of lines ``(a_i, b_i)``, or ``default`` when unbounded.

    The 1-D LP's dual: the least of the flat lines' heights and of the heights where a rising line
    meets a falling one (a dual vertex has one or two nonzero weights). A handful of lines: plain
    floats beat numpy's per-call cost."""
    best = math.inf
    up, down = [], []
    for a, b in lines:
        if a > 0.0:
            up.append((a, b))
        elif a < 0.0:
            down.append((a, b))
        elif b < best:
            best = b
    for a, b in up:
        for c, e in down:
            x = (a * e - c * b) / (a - c)
            if x < best:
                best = x
    return best if best < math.inf else default


def least_squares_spread(C: np.ndarray) -> np.ndarray:
    """W (k + d, k): the least-squares distribution ``W fn`` of k held normal forces fn over the held
    points and d dependent ones, with the same generalized force: ``min |fn - C^T mu|^2 + |mu|^2`` over
    the dependent forces mu, C (d, k) the dependent points' coefficients in the held rows."""
    M = np.linalg.solve(np.eye(len(C)) + C.dot(C.T), C)  # (d, k)
    return np.vstack([np.eye(C.shape[1]) - C.T.dot(M), M])


def _support_margin(fn: np.ndarray, C: np.ndarray) -> float:
    """``max t`` over redistributions: dependent forces ``mu >= t`` and held forces ``fn - C^T mu >= t``.

    Args:
        fn: the held points' normal forces (k,) (N).
        C: affine coordinates (d, k) of the d dependent points in the held ones.
    The same generalized force for every ``mu``: a dependent point's row is ``C[i]`` of the held rows.
    """
    if len(C) == 1:
        f = fn.tolist()
        lines = [(1.0, 0.0)]  # the dependent force's own line, then the held ones' (a loop: no comprehension)
        for c, x in zip(C[0].tolist(), f):
            lines.append((-c, x))
        return _top_of_lines(lines, min(f, default=math.inf))
    return support_distribution(fn, C)[0]


def support_distribution(fn: np.ndarray, C: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """The LP of :func:`_support_margin` in full: ``(t, held, mu)``, the margin t (N), the held points'
    forces ``fn - C^T mu`` (k,) and the dependent points' ``mu`` (d,) (N) of a distribution that
    attains it (fn's own smallest force and mu = 0 if the LP fails)."""
    k, d = len(fn), len(C)
    # a small LP as a regularized QP in (mu, t), scaled to forces of order one
    scale = max(float(np.abs(fn).max(initial=0.0)), FORCE_FLOOR)
    n = d + 1
    G = LP_REG * np.eye(n)
    a = np.zeros(n)
    a[-1] = 1.0
    rows = np.zeros((n, d + k))
    rows[:d, :d] = np.eye(d)
    rows[:d, d:] = -C
    rows[d, :] = -1.0
    b = np.concatenate([np.zeros(d), -fn / scale])
    try:  # (rows^T x >= b written as -rows^T x <= -b)
        x = solve_qp(G, -a, G=-rows.T, h=-b).x
    except QPError:
        return float(fn.min(initial=np.inf)), fn.copy(), np.zeros(d)
    mu = x[:d] * scale
    return float(x[-1] * scale), fn - C.T.dot(mu), mu
