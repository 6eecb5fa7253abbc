"""The evaluation plan's solves (``EquationSet.evaluation == "plan"``, the default), beside
:mod:`controlkit.solver`'s reference path, which they must agree with (tests/test_evaluation_plan.py).

- :func:`kernel_solve`: a problem of the common inverse-dynamics form (equalities, costs, the default;
  nothing assigned, no inequalities or regularizations) in one compiled call
  (:func:`controlkit.solve_kernel.lstsq_kernel`);
- :func:`min_norm_stage`: a tall least-squares stage of the reference's code by QR and the SVD of the
  small triangular factor (:func:`_tall_min_norm`).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.linalg import lapack

from .linalg import RANK_TOL, _upper, min_norm, min_norm_svd
from .problem import Problem
from .solver import RESIDUAL_TOL, Solution, _multipliers

#: how often the plan path solved a whole problem in the compiled kernel (``kernel``), how often the
#: kernel handed a problem back to the reference (``kernel_declined``), and how often a tall
#: least-squares stage of the reference's code went through the SVD of its QR factor (``tall_qr_svd``)
PLAN_COUNTS = {"kernel": 0, "kernel_declined": 0, "tall_qr_svd": 0}


def _arg(A: np.ndarray | None, m: int, n: int | None = None) -> np.ndarray:
    """A as the kernel takes it: a writable C-ordered float array ((m, n), or (m,) when n is None; zeros
    for None). One array type for every argument, so numba compiles the kernel once."""
    if A is None:
        return np.zeros((m, n) if n is not None else m)
    if A.flags.c_contiguous and A.flags.writeable and A.dtype == np.float64:
        return A
    return np.array(A, dtype=np.float64, order="C")


_KERNEL: list = []


def _load_kernel():
    """:func:`controlkit.solve_kernel.lstsq_kernel` (numba: imported, and compiled or loaded, on first use)."""
    from .solve_kernel import lstsq_kernel
    _KERNEL.append(lstsq_kernel)
    return lstsq_kernel


def kernel_solve(p: Problem) -> Solution | None:
    """The plan's compiled solve (:func:`controlkit.solve_kernel.lstsq_kernel`) of a problem of its form
    (equalities, costs, the default; nothing assigned, no inequalities or regularizations); None when the
    problem has another form or the kernel hands it back (the reference path then solves it)."""
    if p.ineq_rows.spans or p.fixed or not p.default_cost or p.mass_inverse is None or \
            (p.reg_rows is not None and p.reg_rows.spans):
        return None
    kernel = _KERNEL[0] if _KERNEL else _load_kernel()
    L = p.layout
    nv, nw, nt = L.nv, L.nx - L.nv, L.ntau
    er, cr = p.eq_rows, p.cost_rows
    me, mc = len(er), len(cr)
    G = p.Jc if p.Jf is None else p.Jf
    ok, x, N, PN, pmax, used_costs = kernel(
        _arg(p.mass_inverse(), nv, nv), _arg(p.S, nt, nv), _arg(G, len(G), nv), _arg(p.bias, nv),
        _arg(er.Aa, me, nv), _arg(er.Aw, me, nw), _arg(er.b, me), _arg(cr.Aa, mc, nv), _arg(cr.Aw, mc, nw),
        _arg(cr.weight, mc), _arg(cr.b, mc), RANK_TOL, RESIDUAL_TOL)
    if not ok:
        PLAN_COUNTS["kernel_declined"] += 1
        return None
    PLAN_COUNTS["kernel"] += 1
    indet: list[str] = []
    if N.shape[1]:
        for k in np.flatnonzero(np.abs(N).max(axis=1) > 1e-8).tolist():
            if k >= nt:
                indet.append(p.lam_labels[k - nt])
    sol = Solution(x, x[:nv], x[nv:nv + nt], _multipliers(x, L), "lstsq" if used_costs else "direct",
                   int(N.shape[1]), indet)
    if PN.shape[1] and np.abs(PN).max() > 1e-9 * max(1.0, pmax):
        sol.undetermined = PN
    return sol


def min_norm_stage(p: Problem, stage: str, E: np.ndarray, f: np.ndarray):
    """:func:`controlkit.linalg.min_norm` of one least-squares stage of the solve (``stage`` names it).

    With ``p.plan`` (``EquationSet.evaluation == "plan"``) a tall stage (more rows than unknowns: a cost
    on the few directions the equalities leave free, 56 x 3 for the walking biped) goes through
    :func:`_tall_min_norm`, whatever its rank; the reference tries a QR rank proof and, when it fails
    (the biped's body-acceleration cost is rank deficient at every evaluation of a stance), the SVD of E.
    """
    m, n = E.shape
    if not p.plan or m < n or n == 0:
        return min_norm(E, f)
    PLAN_COUNTS["tall_qr_svd"] += 1
    return _tall_min_norm(E, f)


def _tall_min_norm(E: np.ndarray, f: np.ndarray):
    """:func:`controlkit.linalg.min_norm_svd` (``left=False``) of a tall E (m >= n) from ``E = Q R``
    and the SVD of the small R (n, n): E's singular values and right vectors are R's, and the
    minimum-norm solution is ``V_r S_r^-1 U_r^T Q^T f``; the same rank rule (``RANK_TOL``). A single
    column is its own singular vector. The null space basis spans the reference's (its signs may differ)."""
    m, n = E.shape
    if n == 1:
        e = E[:, 0]
        ss = float(e.dot(e))
        if math.sqrt(ss) > RANK_TOL:  # (s_max = |e|: the threshold is RANK_TOL * max(1, |e|))
            return np.array([float(e.dot(f)) / ss]), 1, None, _NO_COLUMN
        return np.zeros(1), 0, None, _ONE
    qr, tau, _, info = lapack.dgeqrf(E)
    if info != 0:
        return min_norm_svd(E, f, left=False)
    cq, _, info = lapack.dormqr("L", "T", qr, tau, f[:, None], lwork=max(1, n))
    u, s, vt, info2 = lapack.dgesdd(qr[:n] * _upper(n))
    if info != 0 or info2 != 0:
        return min_norm_svd(E, f, left=False)
    sl = s.tolist()
    thr, r = RANK_TOL * max(1.0, sl[0]), 0
    for x in sl:  # (descending)
        if not x > thr:
            break
        r += 1
    y = vt[:r].T.dot(u[:, :r].T.dot(cq[:n, 0]) / s[:r])
    return y, r, None, vt[r:].T


_NO_COLUMN, _ONE = np.zeros((1, 0)), np.ones((1, 1))
_NO_COLUMN.flags.writeable = _ONE.flags.writeable = False
