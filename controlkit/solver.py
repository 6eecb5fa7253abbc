"""Solving the per-step problem: direct when determinate, least squares with costs,
a QP (:mod:`controlkit.qp`, quadprog by default) when there are inequalities.

The motion equations ``M a + bias = S^T tau + Jc^T lam`` are always solvable
for ``a`` (M is positive definite), so they are eliminated first:
``a = P y + p0`` with ``y`` the torques and forces not directly assigned. The
remaining equalities, costs and inequalities are then posed on ``y`` alone.

- Equalities only, determinate: a unique ``y`` (redundant but consistent rows,
  such as a four-bar linkage's, are fine; the constraint forces they leave
  indeterminate are reported in ``Solution.indeterminate``).
- Inconsistent equalities: :class:`InconsistentEquationsError` naming the
  statements whose rows conflict: a residual above ``RESIDUAL_TOL (1 + |f|)``, except along a
  row combination the rank test dropped whose rows are only *nearly* dependent (relative
  departure ``theta <= NEAR_DEPENDENT``): there the least-squares solution is kept while the
  residual stays within ``theta (1 + |f|)`` (:mod:`controlkit.consistency`).
- Underdetermined: completed by the costs; whatever they leave free is fixed by
  the documented default — first the least sum of squared control torques,
  then the least sum of squared constraint forces (joints nobody controls are
  passive). With ``underdetermined="raise"`` an :class:`UnderdeterminedError`
  says how many unknowns are free.
- Inequalities: a QP (:func:`controlkit.qp.solve_qp`) on the null space of the equalities; infeasible sets
  raise :class:`SolverError` carrying the problem.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
from scipy.linalg import lapack

from .consistency import inconsistency, within_near_dependence
from .equations import Problem
from .errors import InconsistentEquationsError, QPError, SolverError, UnderdeterminedError
from .linalg import (
    RANK_TOL,
    flat_split,
    independent_rows,
    min_norm,
    min_norm_svd,
    no_flat_by_bound,
    no_flat_by_eigenvalues,
    norm,
    well_conditioned,
)
from .qp import QPWorkspace, solve_qp

RESIDUAL_TOL = 1e-8  # equality residual (relative to 1 + |b|) above this is a conflict


@dataclass
class Solution:
    """The solved unknowns: a (nv,), tau (ntau,), lam per constraint name, and how they were found."""

    x: np.ndarray
    a: np.ndarray
    tau: np.ndarray
    lam: dict[str, np.ndarray]
    method: str = "direct"
    free: int = 0
    indeterminate: list[str] = field(default_factory=list)
    #: acceleration directions (nv, k) the statements left to the default (least squared torques),
    #: not orthonormal; None when the statements determined the motion
    undetermined: np.ndarray | None = None
    #: the error a strict solve raises, when the equalities hold only in the least-squares sense along
    #: nearly dependent rows (:data:`NEAR_DEPENDENT`); None when they hold to ``RESIDUAL_TOL``
    near_dependent: InconsistentEquationsError | None = None


def require_consistent(sol: Solution) -> Solution:
    """sol, or its :attr:`Solution.near_dependent` error raised: for a caller that treats nearly
    dependent rows whose right-hand sides disagree as inconsistent (a contact layer choosing which
    support points to hold) rather than taking their least-squares solution (an integrator's stage)."""
    if sol.near_dependent is not None:
        raise sol.near_dependent
    return sol


@dataclass
class Reduction:
    """The motion equations solved for the accelerations: ``a = P y + p0``, with y the torques and
    forces not directly assigned.

    Attributes:
        P: (nv, ny) the accelerations per unit of each free unknown.
        p0: (nv,) the accelerations with every free unknown zero (assigned ones at their values).
        free: (nw,) bool over the torques and forces w = (tau, lam): which are free (in y).
        wF: (nw,) the assigned values (zero where free).
    """

    P: np.ndarray
    p0: np.ndarray
    free: np.ndarray
    wF: np.ndarray


def reduce_problem(p: Problem) -> Reduction:
    """Eliminate the accelerations a with the motion equations: a = P y + p0, where y (ny,) are the
    free torques and forces (N m, N); returns the maps as a :class:`Reduction`. Part of the seam a
    specialised solve (``controllers/servo_solve.py``) uses with :func:`stack_rows` and
    :func:`unpack_solution`."""
    L = p.layout
    nv, nx = L.nv, L.nx
    nw = nx - nv
    G = p.Jc if p.Jf is None else p.Jf
    msolve = p.mass_solve or _dense_mass_solve(p.M)
    nt = L.ntau
    if not p.fixed:  # nothing assigned (inverse dynamics): skip the selections
        # one solve for [P | p0] = M^-1 [S^T G^T | -bias]
        X = np.empty((nv, nw + 1), order="F")
        X[:, :nt] = p.S.T
        X[:, nt:nw] = G.T
        np.negative(p.bias, out=X[:, nw])
        X = msolve(X)
        free, wF = _nothing_assigned(nw)
        return Reduction(X[:, :nw], X[:, nw], free, wF)
    wF = np.zeros(nw)
    free = np.ones(nw, dtype=bool)
    fixed_cols = np.concatenate([c for _, c, _ in p.fixed])
    fixed_vals = np.concatenate([v for _, _, v in p.fixed])
    if len(np.unique(fixed_cols)) != len(fixed_cols):
        names = [n for n, _, _ in p.fixed]
        raise InconsistentEquationsError(
            f"t = {p.time:.6g} s: two direct assignments set the same unknown ({', '.join(names)})", names, p)
    wF[fixed_cols - nv] = fixed_vals
    free[fixed_cols - nv] = False
    B = np.hstack([p.S.T, G.T]) if len(G) else p.S.T
    ny = int(np.count_nonzero(free))
    X = np.empty((nv, ny + 1), order="F")
    X[:, :ny] = B[:, free]
    X[:, ny] = B.dot(wF) - p.bias
    X = msolve(X)
    return Reduction(X[:, :ny], X[:, ny], free, wF)


_UNASSIGNED: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _nothing_assigned(nw: int) -> tuple[np.ndarray, np.ndarray]:
    """``free`` (all True) and ``wF`` (zeros) of :func:`reduce_problem` for nw unknowns when nothing is
    assigned: shared read-only arrays (an inverse dynamics servo asks for them every tick)."""
    out = _UNASSIGNED.get(nw)
    if out is None:
        free, wF = np.ones(nw, dtype=bool), np.zeros(nw)
        free.flags.writeable = wF.flags.writeable = False
        out = _UNASSIGNED[nw] = (free, wF)
    return out


def _forward(p: Problem) -> Solution:
    """Nothing but the motion equations and assigned torques: M a = S^T tau - bias (unassigned torques 0)."""
    L = p.layout
    tau = np.zeros(L.ntau)
    for _, cols, vals in p.fixed:
        tau[cols - L.nv] = vals
    msolve = p.mass_solve or _dense_mass_solve(p.M)
    a = msolve(tau.dot(p.S) - p.bias)
    return Solution(np.concatenate([a, tau]), a, tau, {}, "direct")


def _constrained_forward(p: Problem) -> Solution | None:
    """Torques given, constraints only: the Delassus system J M^-1 J^T lam = c - J a_free by Cholesky.

    Returns None when the constraints are redundant (the general path then reports the
    indeterminate forces) or when a constraint force is assigned.
    """
    L = p.layout
    if p.Jf is not None:
        return None  # non-ideal constraint forces: the Delassus matrix is not symmetric
    tau = np.zeros(L.ntau)
    for _, cols, vals in p.fixed:
        if max(cols.tolist()) >= L.nv + L.ntau:  # (numpy's max of a few ints costs more)
            return None
        tau[cols - L.nv] = vals
    # the mechanism's M^-1 (build_problem always gives it); a hand-made problem's from its M
    Mi = p.mass_inverse() if p.mass_inverse is not None else (p.mass_solve or _dense_mass_solve(p.M))(np.eye(L.nv))
    return delassus_solve(p.Jc, p.eq_rows.b, p.S, p.bias, Mi, tau, L, p.factors)


def delassus_solve(J: np.ndarray, b: np.ndarray, S: np.ndarray, bias: np.ndarray, Mi: np.ndarray,
                   tau: np.ndarray, layout, factors: dict | None) -> Solution | None:
    """Torques given, ideal constraints ``J a = b``: the Delassus system by Cholesky, with ``M^-1``.

    Args:
        J: constraint rows (k, nv); b: their right-hand side (k,) (m/s^2, rad/s^2).
        S: actuation selection (ntau, nv); bias: ``h - f_ext`` (nv,) (N, N m); Mi: ``M^-1`` (nv, nv).
        tau: the torques (ntau,) (N m); layout: the unknowns' layout (the multipliers' slices).
        factors: where ``M^-1 J^T`` and the factor are kept with the rows, or None; matched by the
            identities of J and of ``M^-1`` (a new array at each state: a constraint may return
            the same Jacobian array at every state, a lock's constant row).
    ``A = J M^-1 J^T`` (the Delassus matrix), ``a = M^-1 g + M^-1 J^T lam`` with ``g = S^T tau -
    bias``; solved again with the same rows (a controller's new torques), only ``M^-1 g`` is new.
    Returns None when the rows are (nearly) dependent: the general path reports the indeterminate forces.
    """
    k, nv = J.shape
    if not k:  # (constraints with no rows, e.g. detached contacts: as :func:`_forward`)
        a = Mi.dot(tau.dot(S) - bias)
        return Solution(np.concatenate([a, tau]), a, tau, {}, "direct")
    memo = factors.get("delassus") if factors is not None else None
    if memo is not None and memo[0] is J and memo[3] is Mi:
        _, MJt, c, _ = memo
    else:
        MJt = Mi.dot(J.T)
        c, info = lapack.dpotrf(J.dot(MJt))
        dg = c.diagonal().tolist()  # a dozen pivots: Python's min/max beat numpy's reductions
        if info != 0 or min(dg) ** 2 <= RANK_TOL * max(dg) ** 2:
            c = None
        if factors is not None:
            factors["delassus"] = (J, MJt, c, Mi)
    if c is None:
        return None
    nt = len(tau)
    x = np.empty(nv + nt + k)
    a = x[:nv]
    np.dot(Mi, np.subtract(tau.dot(S), bias), out=a)  # M^-1 g: the acceleration without constraints
    lam, _ = lapack.dpotrs(c, b - J.dot(a))
    a += MJt.dot(lam)
    x[nv:nv + nt] = tau
    x[nv + nt:] = lam
    return Solution(x, a, tau, _multipliers(x, layout), "direct")


def _multipliers(x: np.ndarray, layout) -> dict[str, np.ndarray]:
    """Each constraint's multipliers as views of x (a loop: twice per step, no comprehension)."""
    lam = {}
    for name, s in layout.lam.items():
        lam[name] = x[s]
    return lam


def _dense_mass_solve(M):
    chol = sla.cho_factor(M, check_finite=False)
    return lambda b: sla.cho_solve(chol, b, check_finite=False)


def _reduce_rows(Aa, Aw, b, red: Reduction):
    """Rows ``Aa a + Aw w = b`` in y: ``Aa P + Aw[:, free]``, ``b - Aa p0 - Aw wF`` (None blocks are zero).

    The returned E may be ``Aw`` itself (shared): read it, do not write it.
    """
    P, p0, free, wF = red.P, red.p0, red.free, red.wF
    everything = len(free) == P.shape[1]  # every torque and force free (nothing assigned): no selection
    if Aa is None:
        if Aw is None:
            return np.zeros((len(b), P.shape[1])), b.copy()
        # rows on torques and forces only (limits, contact wrenches): no product with P
        return (Aw, b.copy()) if everything else (Aw[:, free], b - Aw.dot(wF))
    E, f = Aa.dot(P), b - Aa.dot(p0)
    if Aw is not None:
        if everything:
            E += Aw
        else:
            E += Aw[:, free]
            f -= Aw.dot(wF)
    return E, f


def stack_rows(rows, red: Reduction, ny: int) -> tuple[np.ndarray, np.ndarray]:
    """Stacked rows (:class:`~controlkit.equations.Rows`) written in y, weighted for costs:
    ``(E, f)`` with E (m, ny) and f (m,), meaning ``E y = f`` (or ``E y <= f`` for inequalities)."""
    if not len(rows):
        return np.zeros((0, ny)), np.zeros(0)
    E, f = _reduce_rows(rows.Aa, rows.Aw, rows.b, red)
    if rows.weight is not None:
        w = rows.weight
        E, f = w[:, None] * E, w * f
    return E, f


def solve(p: Problem, method: str = "auto") -> Solution:
    """Solve a problem built by :func:`controlkit.equations.build_problem`.

    Args:
        p: the problem.
        method: ``"auto"``; ``"qp"`` forces the QP solver even for equality-only problems
            (for checking one method against the other).
    """
    try:
        return _solve(p, method)
    except np.linalg.LinAlgError as exc:  # e.g. a diverged state: report it with the problem
        raise SolverError(f"t = {p.time:.6g} s: linear algebra failed ({exc}); the state may have diverged.\n{p}",
                          p, p.time) from exc


def _solve(p: Problem, method: str) -> Solution:
    L = p.layout
    eq_spans = p.eq_rows.spans
    if method == "auto" and not (p.cost_rows.spans or p.ineq_rows.spans):
        if not eq_spans:
            return _forward(p)
        if len(eq_spans) == 1 and eq_spans[0][1] == "constraint":
            sol = _constrained_forward(p)
            if sol is not None:
                return sol
    if p.plan and method == "auto":
        sol = kernel_solve(p)
        if sol is not None:
            return sol
    red = reduce_problem(p)
    free = red.free
    ny = red.P.shape[1]
    E, f = stack_rows(p.eq_rows, red, ny)
    y, r, U, N = min_norm(E, f) if E.shape[0] else (np.zeros(ny), 0, np.zeros((0, 0)), np.eye(ny))
    near = None
    if E.shape[0]:
        res = E.dot(y) - f
        nres, tol = norm(res), RESIDUAL_TOL * (1.0 + norm(f))
        if U is None and nres > tol:
            # full rank yet a residual (only a tall E can have one): redo it by the SVD, which
            # names the conflicting rows
            y, r, U, N = min_norm_svd(E, f)
            res = E @ y - f
            nres = norm(res)
        if nres > tol:
            error = inconsistency(p, E, f, U, r, nres)
            if not within_near_dependence(p, f, U, r, tol):
                raise error
            near = error
    solver = "direct"
    tau_rows = np.flatnonzero(free[: L.ntau]) if p.fixed else _all_rows(L.ntau)
    if p.ineq_rows.spans or method == "qp":
        if not p.default_cost:
            _complete(p, red, y, N, tau_rows)  # raises if the costs leave motion free
        y = _qp(p, red, y, N, E, f, method, tau_rows)
        sol = unpack_solution(p, red, y, np.zeros((ny, 0)), "qp")
        sol.near_dependent = near
        return sol
    undetermined = None
    if N.shape[1]:
        y, N, solver, undetermined = _complete(p, red, y, N, tau_rows)
    sol = unpack_solution(p, red, y, N, solver)
    sol.undetermined = undetermined
    sol.near_dependent = near
    return sol


_ROWS: dict[int, np.ndarray] = {}


def _all_rows(n: int) -> np.ndarray:
    """``arange(n)``, shared and read-only."""
    r = _ROWS.get(n)
    if r is None:
        r = _ROWS[n] = np.arange(n)
        r.flags.writeable = False
    return r


def _motion_free(P, N, tau_rows):
    """Columns of the null space N that change the motion (a) or the torques."""
    if N.shape[1] == 0:
        return 0
    move = np.vstack([P @ N, N[tau_rows]]) if len(tau_rows) else P @ N
    sv = np.linalg.svd(move, compute_uv=False) if move.size else np.zeros(0)
    return int(np.sum(sv > 1e-9 * max(1.0, np.abs(P).max(initial=0.0))))


def _complete(p, red: Reduction, y, N, tau_rows):
    """Fix the directions the equalities leave free: costs, then regularizations, then the default (or raise)."""
    P = red.P
    solver = "direct"
    for rows in (p.cost_rows, p.reg_rows):
        if rows is not None and rows.spans and N.shape[1]:
            C, d = stack_rows(rows, red, P.shape[1])
            z, r, _, K = min_norm(C.dot(N), d - C.dot(y))
            y, N = y + N.dot(z), N.dot(K)
            solver = "lstsq"
    nfree = 0 if p.default_cost else _motion_free(P, N, tau_rows)  # (an SVD: only when it can raise)
    if nfree:
        raise UnderdeterminedError(
            f"t = {p.time:.6g} s: {nfree} unknowns are left free by the equations and costs "
            f"(underdetermined = 'raise'); add equations, assignments or a cost", nfree, p)
    undetermined = None  # the motions the default is about to choose (none: only forces are left)
    if N.shape[1]:
        PN = P.dot(N)
        if np.abs(PN).max() > 1e-9 * max(1.0, float(np.abs(P).max())):
            undetermined = PN
    if N.shape[1] and len(tau_rows):
        # default, first stage: least squared control torques
        z, r, _, K = min_norm(N[tau_rows], -y[tau_rows])
        y, N = y + N.dot(z), N.dot(K)
    if N.shape[1]:
        # second stage: least squared constraint forces (y is min-norm only within N)
        y = y - N.dot(N.T.dot(y))
    return y, N, solver, undetermined


def _default_weights(ny, tau_rows):
    """The default cost on y, ``y^T diag(D) y``: D is 1 on torques and 1e-6 on forces."""
    D = np.full(ny, 1e-6)
    D[tau_rows] = 1.0
    return D


def _qp(p, red: Reduction, y0, N, E, f, method, tau_rows):
    """The QP (:func:`controlkit.qp.solve_qp`) on z with y = y0 + N z (or, for method='qp', on y
    with equality rows)."""
    ny = red.P.shape[1]
    G, g = stack_rows(p.ineq_rows, red, ny)
    C, d = stack_rows(p.cost_rows, red, ny)
    if method == "qp":
        # the whole problem in y: cost (user + default), independent equality rows
        H = C.T @ C if C.size else np.zeros((ny, ny))
        c = C.T @ d if C.size else np.zeros(ny)
        R, r = stack_rows(p.reg_rows, red, ny) if p.reg_rows is not None else (np.zeros((0, ny)), None)
        H, c = _with_default(H, c, lambda: (np.diag(_default_weights(ny, tau_rows)), np.zeros(ny)),
                             (lambda: (R, r)) if len(R) else None)
        rows = independent_rows(E)
        # (c is the cost's gradient with a minus sign: the QP's linear term is -c)
        return problem_qp(p, H, -c, E[rows], f[rows], G, g)
    if N.shape[1] == 0:
        if G.size and np.any(G @ y0 - g > 1e-9 * (1 + np.abs(g))):
            _raise_infeasible(p, G @ y0 - g)
        return y0
    # in z: user costs on top, the default |z|^2 only where the costs are flat (y0 is already optimal there)
    # (ndarray.dot on the servo's path: numpy's @ costs a microsecond more per small product)
    if C.size:
        CN = C.dot(N)
        H = CN.T.dot(CN)
        c = CN.T.dot(d - C.dot(y0))
    else:
        H, c = np.zeros((N.shape[1],) * 2), np.zeros(N.shape[1])

    def default():
        Dy = _default_weights(ny, tau_rows)
        return (N.T * Dy).dot(N), -N.T.dot(Dy * y0)  # N^T diag(D) N, without forming diag(D)

    def regularization():
        R, r = stack_rows(p.reg_rows, red, ny)
        return R.dot(N), r - R.dot(y0)

    has_reg = p.reg_rows is not None and bool(p.reg_rows.spans)
    H, c = _with_default(H, c, default, regularization if has_reg else None, p.factors)
    GN, slack = G.dot(N), g - G.dot(y0)  # the inequalities on z: GN z <= slack
    z = _inside(H, c, GN, slack)
    if z is None:
        z = problem_qp(p, H, -c, None, None, GN, slack)
    return y0 + N.dot(z)


def _inside(H, c, GN, slack):
    """The unconstrained minimum ``z = H^-1 c`` when it satisfies every inequality ``GN z <= slack``
    (then it is the QP's solution, as quadprog's first iterate), else None.

    In a walk most ticks have no inequality active (4 in 5 for the biped's servo): one Cholesky
    solve and one product then replace quadprog's call."""
    R, info = lapack.dpotrf(H)
    if info != 0:
        return None  # (quadprog reports a Hessian that is not positive definite)
    z, info = lapack.dpotrs(R, c)
    if info != 0 or False in (GN.dot(z) <= slack).tolist():
        return None
    return z


def _with_default(H, c, default, regularization=None, memo: dict | None = None):
    """Add the default cost (``default() -> (Hessian, linear term)``) only where the user cost H is flat.

    Its flat directions are the eigenvectors with eigenvalues at most ``RANK_TOL * max(1, w_max)``;
    when H provably has none (:func:`controlkit.linalg.no_flat_direction`), the eigenvectors (and the default) are skipped.
    The user's regularizations, when given as ``regularization() -> (R, r)`` (the Hessian ``R^T R``,
    the linear term ``R^T r``), take those directions first; the default takes what they leave flat.
    ``memo`` (a problem's ``factors``) remembers what the last H needed: a servo's H keeps its kind
    from tick to tick (flat directions with two feet down, ill-conditioned with a swing foot), and
    the cheaper proofs that would fail are skipped (every path gives the same answer).
    """
    n = len(H)
    if not n:
        return _nudged(H), c
    last = memo.get("flat") if memo is not None else None  # None, "eigenvalues" or "flat"
    if last != "flat":
        bound = last is None and no_flat_by_bound(H)
        if bound or no_flat_by_eigenvalues(H):
            if memo is not None:
                memo["flat"] = None if bound else "eigenvalues"
            return _nudged(H), c  # what the eigendecomposition gives when nothing is flat
    F, V, w = flat_split(H)
    if memo is not None:
        memo["flat"] = "flat" if F.shape[1] else "eigenvalues"
    if not F.shape[1]:
        return _nudged(H), c
    if regularization is not None:
        # the costs' own minimum off F, from the same eigendecomposition (H's pseudo-inverse)
        H, c, F = _regularize(H, c, F, regularization, V.dot(V.T.dot(c) / w), float(np.add.reduce(w)))
        if not F.shape[1]:
            H.flat[:: n + 1] += 1e-12  # (H is _regularize's new array)
            return H, c
    D, cD = default()
    H = H + F.dot(F.T.dot(D).dot(F)).dot(F.T) + 1e-12 * np.eye(n)
    return H, c + F.dot(F.T.dot(cD))


def _nudged(H):
    """``H + 1e-12 I`` (a new array)."""
    H = H.copy()
    H.flat[:: len(H) + 1] += 1e-12
    return H


def _regularize(H, c, F, regularization, z_costs, trace):
    """The regularizations (``regularization() -> (R, r)``: Hessian ``R^T R``, linear term ``R^T r``)
    on the directions F the costs (H, c; trace(H)) leave flat; returns new H and c, and what the
    regularizations leave flat.

    Lexicographic: they are minimized over F with the other directions where the costs put them
    (``z_costs``, their unconstrained minimum off F, exact unless an inequality moves it). Acting
    on F alone, their scale does not move the minimum: brought to the costs' scale, quadprog sees
    a well-conditioned Hessian whatever the user's weights.
    """
    R, r = regularization()
    RF = R.dot(F)
    HF = RF.T.dot(RF)
    scale = sum(HF.diagonal().tolist())  # trace (a few floats: ndarray.trace costs more)
    if not scale > 0.0:
        return H.copy(), c, F
    k = max(1.0, trace) / scale
    FH = F.dot(HF)
    FH *= k
    H = H + FH.dot(F.T)
    c = c + F.dot(RF.T.dot(k * (r - R.dot(z_costs))))
    if well_conditioned(HF, scale):
        return H, c, F[:, :0]  # nothing left flat (proved without the eigenvectors)
    w, V = np.linalg.eigh(HF)
    wl = w.tolist()
    return H, c, F @ V[:, : bisect.bisect_right(wl, RANK_TOL * wl[-1])]


def problem_qp(p: Problem, H, c, A_eq, b_eq, G, h, workspace: QPWorkspace | None = None) -> np.ndarray:
    """:func:`controlkit.qp.solve_qp`'s minimizer for problem ``p``'s QP (warm-started from
    ``workspace`` when given); its failure raised as a SolverError naming the time and the problem."""
    try:
        return solve_qp(H, c, A_eq, b_eq, G, h, workspace=workspace).x
    except QPError as exc:
        raise SolverError(f"t = {p.time:.6g} s: the QP has no solution ({exc.reason}).\n{p}", p, p.time) from exc


def _raise_infeasible(p, viol):
    raise SolverError(f"t = {p.time:.6g} s: the inequalities cannot hold (largest violation "
                      f"{viol.max():.3g}) and nothing is left free.\n{p}", p, p.time)


def unpack_solution(p: Problem, red: Reduction, y: np.ndarray, N: np.ndarray, method: str) -> Solution:
    """The :class:`Solution` for the free torques and forces y (ny,): accelerations from the
    reduction, assigned columns filled in; N (ny, k) spans what the statements leave free, method
    names the solve that found y."""
    L = p.layout
    free, wF = red.free, red.wF
    a = red.P.dot(y) + red.p0
    if p.fixed:
        w = wF.copy()
        w[free] = y
    else:
        w = y  # nothing assigned: y is w
    x = np.concatenate([a, w])
    tau = w[: L.ntau]
    lam = _multipliers(x, L)
    indet: list[str] = []
    if N.shape[1]:
        idx = np.flatnonzero(free)
        rows = np.flatnonzero(np.abs(N).max(axis=1) > 1e-8)
        lam_labels = p.lam_labels
        for k in idx[rows]:
            if k >= L.ntau:
                indet.append(lam_labels[k - L.ntau])
    return Solution(x, a, tau, lam, method, int(N.shape[1]), indet)



_PLAN: list = []


def kernel_solve(p: Problem) -> Solution | None:
    """The evaluation plan's compiled solve (:func:`controlkit.solve_plan.kernel_solve`; its module,
    which reads this one, loaded on first use)."""
    if not _PLAN:
        from .solve_plan import kernel_solve as fn
        _PLAN.append(fn)
    return _PLAN[0](p)
