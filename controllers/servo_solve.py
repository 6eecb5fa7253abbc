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

- the free directions F are those the accelerations do not see, the null space of ``P N`` (the
  accelerations per unit of z, conditioned like the model's mass matrix, not squared) by its SVD with
  the relative tolerance ``FREE_TOL``; when no more unknowns are left than accelerations the rows
  leave free (one foot planted) there are none and no decomposition is needed;
- the regularization acts on F only, brought to the costs' scale and aimed at the costs' own
  minimum off F, as :func:`controlkit.solver._regularize` does (the same lexicographic order: the
  costs first, the wrench regularization on what they leave free);
- the least-squares rows, the costs' ``A = C N`` over the regularization's ``k (R N F) F^T``
  (those whose squares are the reference's Hessian), are factored by one QR ``W = Q R``, and the QP
  is posed on ``s = R z``: its Hessian is the identity and its unconstrained minimum ``Q^T`` times
  the targets, the least-squares solution with the conditioning of the rows themselves (1e5), not
  of their squares. The inequalities become ``G N R^-1 s <= slack``.

A problem of another form (assignments, no inequalities, a regularization that leaves directions
free, rank-deficient cost rows) goes to :func:`controlkit.solver.solve` unchanged.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.linalg import lapack

from controlkit.equations import Problem
from controlkit.errors import QPError, SolverError
from controlkit.linalg import RANK_TOL, min_norm
from controlkit.qp import QPWorkspace, solve_qp
from controlkit.solver import Solution, _reduce, _stack, _unpack, solve

__all__ = ["servo_solve", "FREE_TOL", "COUNTS"]

#: a singular value of ``P N`` at most this times the largest marks a direction the accelerations do not
#: see (the biped's are 1e-14 relative against 8e-4 for the weakest that moves the robot)
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
    red = _reduce(p)
    P = red.P
    nv, ny = P.shape
    E, f = _stack(p.eq_rows, red, ny)
    y0, rank, _, N = min_norm(E, f)
    nz = N.shape[1]
    if not nz or np.abs(E.dot(y0) - f).max() > 1e-8 * (1.0 + np.abs(f).max()):
        return None  # (nothing free, or inconsistent rows: the reference path says which)
    PN = P.dot(N)
    C, d = _stack(p.cost_rows, red, ny)
    A, t = C.dot(N), d - C.dot(y0)
    if nz <= nv - rank:  # fewer unknowns left than accelerations the rows leave: nothing can be invisible
        K, F = None, N[:, :0]
        AK = A
    else:
        _, sv, Vt = np.linalg.svd(PN)
        r = int(np.count_nonzero(sv > FREE_TOL * sv[0]))
        K, F = Vt[:r].T, Vt[r:].T
        AK = A.dot(K)
    s1, R1 = _qr_solve(AK, t)
    if R1 is None:
        return None
    if F.shape[1]:
        zc = K.dot(lapack.dtrtrs(R1, s1)[0])  # the costs' own minimizer off F
        Rr, rr = _stack(p.reg_rows, red, ny)
        RN = Rr.dot(N)
        RF = RN.dot(F)
        scale = float(np.vdot(RF, RF))
        if not scale > 0.0:
            return None
        k = math.sqrt(max(1.0, float(np.vdot(A, A))) / scale)  # the regularization at the costs' scale
        # one QR of the costs' rows over the regularization's on F (what the costs' Hessian plus the
        # regularization's is the square of): the costs keep the little they see of F
        W = np.vstack((A, (k * RF).dot(F.T)))
        s, R = _qr_solve(W, np.concatenate((t, k * (rr - Rr.dot(y0) - RN.dot(zc)))))
        if R is None:
            return None  # the regularization leaves directions free: the reference path's default
        B = _tri_inv(R)
    else:
        B = _tri_inv(R1) if K is None else K.dot(_tri_inv(R1))
        s = s1
    G, g = _stack(p.ineq_rows, red, ny)
    GN = G.dot(N)
    Gs, slack = GN.dot(B), g - G.dot(y0)
    if False in (Gs.dot(s) <= slack).tolist():
        try:
            s = solve_qp(np.eye(len(s)), -s, None, None, Gs, slack, workspace=workspace).x
        except QPError as exc:
            raise SolverError(f"t = {p.time:.6g} s: the QP has no solution ({exc.reason}).\n{p}", p, p.time) from exc
    y = y0 + N.dot(B.dot(s))
    return _unpack(p, red, y, np.zeros((ny, 0)), "qp")


def _qr_solve(A: np.ndarray, b: np.ndarray):
    """``(Q^T b)[:n], R`` of the QR ``A = Q R`` (A (m, n), m >= n); R None when A's columns are dependent
    to ``RANK_TOL`` (by R's diagonal: a cheap test, enough for the blocks here, whose rank is structural)."""
    m, n = A.shape
    if m < n:
        return None, None
    qr, tau, _, info = lapack.dgeqrf(A)
    if info != 0:
        return None, None
    R = np.triu(qr[:n])
    dg = np.abs(R.diagonal())
    if not dg.min() > RANK_TOL * max(1.0, dg.max()):
        return None, None
    qtb, _, info = lapack.dormqr("L", "T", qr, tau, b.reshape(-1, 1), max(1, m))
    if info != 0:
        return None, None
    return qtb[:n, 0], R


def _tri_inv(R: np.ndarray) -> np.ndarray:
    Ri, info = lapack.dtrtri(R, lower=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"triangular factor singular (info {info})")
    return Ri
