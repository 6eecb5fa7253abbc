"""The whole-body servo's QP, solved in coordinates where its Hessian is the identity.

The servo's problem (:mod:`controllers.whole_body`, :mod:`controllers.walking_fd`) has one form at
every tick: unknowns y = (torques, planted feet's wrenches) once the motion equations are solved for
the accelerations (``a = P y + p0``), the planted feet's rows as equalities (``y = y0 + N z``), costs
on the accelerations, a regularization on the wrenches, and inequalities (torque limits, each foot's
friction pyramid and centre-of-pressure box). :func:`controlkit.solver.solve` solves it through the
costs' Hessian ``H = (C N)^T (C N)``, which squares the conditioning of ``C N`` (1e5 with a swing
foot: H's condition number reaches 1e10), and decides which directions the costs leave free
(the internal wrench between two planted feet) on H's eigenvalues, near their threshold with one foot
planted: the torques then move by 4e-7 relative when a row moves by 1e-15.

:func:`servo_solve` poses the same QP on the same rows, but

- the free directions F are those the accelerations do not see: the torques and forces y with
  ``S^T tau + G^T lam = 0``, the null space of the motion equations' own map (selections and
  Jacobian entries, exact; no mass matrix, no eigenvalues), by one QR (:func:`_free_split`); with no
  more torques and forces than accelerations (one foot planted) there are none and nothing is
  decomposed;
- the regularization acts on F only, brought to the costs' scale and aimed at the costs' own
  minimum off F, as :func:`controlkit.solver._regularize` does (the same lexicographic order: the
  costs first, the wrench regularization on what they leave free);
- the least-squares rows, the costs' ``A = C N`` over the regularization's ``k (R N F) F^T``
  (those whose squares are the reference's Hessian), are factored by one QR ``W = Q R``, and the QP
  is posed on ``s = R z``: its Hessian is the identity and its unconstrained minimum ``Q^T`` times
  the targets, the least-squares solution with the conditioning of the rows themselves (1e5), not
  of their squares. The inequalities become ``G N R^-1 s <= slack``.

With one or two feet planted the torques then move by at most 1e-11 relative when the rows move by 1e-15
(``bench/servo_sensitivity.py``), against 4e-7 and 1e-9 by the reference path.

A problem of another form (assignments, no inequalities, a regularization that leaves directions
free, rank-deficient cost rows) goes to :func:`controlkit.solver.solve` unchanged.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.linalg import lapack

from controlkit.equations import Problem
from controlkit.linalg import RANK_TOL, min_norm
from controlkit.qp import QPWorkspace
from controlkit.solver import Solution, problem_qp, reduce_problem, solve, stack_rows, unpack_solution

__all__ = ["servo_solve", "FREE_TOL", "COUNTS"]

#: the motion equations' map ``[S^T, G^T]`` counts as of full row rank when its QR's diagonal is above this
#: relative to its largest (else the problem is not the servo's form)
FREE_TOL = 1e-10
#: how the servo's problems were solved: ``"servo"`` by :func:`servo_solve`'s own path, ``"generic"``
#: handed to :func:`controlkit.solver.solve` (a problem of another form)
COUNTS = {"servo": 0, "generic": 0}


def servo_solve(p: Problem, workspace: QPWorkspace | None = None) -> Solution:
    """Solve a servo's problem ``p`` (:func:`controlkit.equations.build_problem`) as described in the
    module docstring; its QP warm-started from ``workspace`` when given. Returns the Solution
    (method ``"qp"``); a problem of another form is solved by :func:`controlkit.solver.solve`."""
    sol = _servo(p, workspace) if _servo_form(p) else None
    if sol is None:
        COUNTS["generic"] += 1
        return solve(p)
    COUNTS["servo"] += 1
    return sol


def _servo_form(p: Problem) -> bool:
    return bool(p.ineq_rows.spans and p.cost_rows.spans and p.eq_rows.spans and not p.fixed and p.default_cost
                and p.reg_rows is not None and p.reg_rows.spans)


def _servo(p: Problem, workspace):
    red = reduce_problem(p)
    P = red.P
    nv, ny = P.shape
    E, f = stack_rows(p.eq_rows, red, ny)
    y0, _, _, N = min_norm(E, f)
    nz = N.shape[1]
    if not nz or np.abs(E.dot(y0) - f).max() > 1e-8 * (1.0 + np.abs(f).max()):
        return None  # (nothing free, or inconsistent rows: the reference path says which)
    C, d = stack_rows(p.cost_rows, red, ny)
    A, t = C.dot(N), d - C.dot(y0)
    if ny > nv:  # more torques and forces than accelerations: some move nothing (internal wrenches)
        F = _free_directions(p, N, nv)
        if F is None:
            return None
        Rr, rr = stack_rows(p.reg_rows, red, ny)
        RN = Rr.dot(N)
        RF = RN.dot(F)
        scale = float(np.vdot(RF, RF))
        if not scale > 0.0:
            return None
        k = math.sqrt(max(1.0, float(np.vdot(A, A))) / scale)  # the regularization at the costs' scale
        # one QR of the costs' rows over the regularization's on F (what the costs' Hessian plus the
        # regularization's is the square of): the costs keep the little they see of F
        W = np.vstack((A, (k * RF).dot(F.T)))
        m = len(A)
        fac = _qr(W)
        if fac is None:
            return None  # the regularization leaves directions free: the reference path's default
        R = fac[0][:nz]
        T = np.zeros((len(W), 2), order="F")
        T[:m, 0] = t  # the costs alone: their own minimizer off F (the rows on F hold it at F^T z = 0)
        T[m:, 1] = k * (rr - Rr.dot(y0))
        QT = _qt(fac, T)
        zc = lapack.dtrtrs(R, QT[:, 0])[0]
        # the regularization's rows aimed at k (r - R N zc): what it costs with the costs at their minimum
        T[:m, 0] = 0.0
        T[m:, 0] = -k * RN.dot(zc)
        s = QT.sum(axis=1) + _qt(fac, T[:, :1])[:, 0]
    else:
        fac = _qr(A)
        if fac is None:
            return None
        R = fac[0][:nz]
        s = _qt(fac, t.reshape(-1, 1))[:, 0]
    G, g = stack_rows(p.ineq_rows, red, ny)
    Gs, info = lapack.dtrtrs(R, G.dot(N).T, trans=1)  # (G N R^-1)^T = R^-T (G N)^T; R's upper triangle only
    if info != 0:
        return None
    Gs, slack = Gs.T, g - G.dot(y0)
    if False in (Gs.dot(s) <= slack).tolist():
        s = problem_qp(p, np.eye(len(s)), -s, None, None, Gs, slack, workspace=workspace)
    z, info = lapack.dtrtrs(R, s)
    if info != 0:
        return None
    y = y0 + N.dot(z)
    return unpack_solution(p, red, y, np.zeros((ny, 0)), "qp")


def _free_directions(p: Problem, N: np.ndarray, nv: int) -> np.ndarray | None:
    """An orthonormal basis F (nz, ny - nv) of the z directions (``y = y0 + N z``) the accelerations do not
    see; None when the structure is not the servo's.

    ``a = M^-1 B y + ...`` with ``B = [S^T, G^T]`` (nv, ny), the motion equations' map of the torques and
    forces: y moves nothing exactly when ``B y = 0``, read off B itself (exact selections and Jacobian
    entries, no mass matrix): with B of full row rank, the last ``ny - nv`` columns of the Q of
    ``B^T = Q R``. Those directions satisfy the equality rows when the rows are on the accelerations only
    (the planted feet's and held joints'), so ``N^T`` maps them to z."""
    if p.eq_rows.Aw is not None:
        return None
    G = p.Jc if p.Jf is None else p.Jf
    Bt = np.vstack((p.S, G)) if len(G) else p.S  # (ny, nv)
    ny = len(Bt)
    qr, tau, _, info = lapack.dgeqrf(Bt)
    if info != 0:
        return None
    dg = np.abs(qr.diagonal())
    if not dg.min() > FREE_TOL * dg.max():
        return None  # B is not of full row rank: not the servo's structure
    Q2, _, info = lapack.dormqr("L", "N", qr, tau, _tail(ny, ny - nv), max(1, ny - nv))  # Q [0; I]
    if info != 0:
        return None
    return N.T.dot(Q2)  # (orthonormal: the directions lie in N's span)


_TAILS: dict[tuple[int, int], np.ndarray] = {}


def _tail(n: int, k: int) -> np.ndarray:
    """``[0; I]`` (n, k), Fortran order, a fresh copy (LAPACK's dormqr overwrites it)."""
    T = _TAILS.get((n, k))
    if T is None:
        T = _TAILS[(n, k)] = np.asfortranarray(np.eye(n, k, -(n - k)))
    return T.copy(order="F")


def _qr(A: np.ndarray):
    """LAPACK's Householder QR of A (m, n), m >= n, as ``(qr, tau)`` (R in ``qr[:n]``'s upper triangle,
    the reflectors below: read R with triangular kernels, ``lower=0``); None when A's columns are
    dependent to ``RANK_TOL`` (by R's diagonal: a cheap test, enough here, where the rank is structural)."""
    m, n = A.shape
    if m < n:
        return None
    qr, tau, _, info = lapack.dgeqrf(A)
    if info != 0:
        return None
    dg = np.abs(qr.diagonal())
    if not dg.min() > RANK_TOL * max(1.0, dg.max()):
        return None
    return qr, tau


def _qt(fac, B: np.ndarray) -> np.ndarray:
    """``(Q^T B)[:n]`` (n, k) for the QR ``fac`` of an (m, n) matrix and B (m, k)."""
    qr, tau = fac
    out, _, info = lapack.dormqr("L", "T", qr, tau, B, max(1, B.shape[1]))
    if info != 0:
        raise np.linalg.LinAlgError(f"dormqr failed (info {info})")
    return out[: qr.shape[1]]
