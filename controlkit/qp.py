"""One interface to the convex quadratic programs controlkit solves.

:func:`solve_qp` minimizes ``1/2 x^T H x + c^T x`` subject to ``A_eq x = b_eq`` and
``G x <= h`` — one sign convention for every caller, whatever the solver underneath
(quadprog by default, chosen by name). Its multipliers follow the Lagrangian

    ``L(x, y, z) = 1/2 x^T H x + c^T x + y^T (A_eq x - b_eq) + z^T (G x - h)``,  ``z >= 0``,

so at the solution ``H x + c + A_eq^T y + G^T z = 0`` (stationarity) and ``z_i (G x - h)_i = 0``.
A problem the solver cannot solve (inconsistent constraints, a Hessian that is not positive
definite) raises :class:`~controlkit.errors.QPError` carrying the problem and the reason.

A :class:`QPWorkspace` warm-starts the active set across the solves of one plan (a servo's QP
from tick to tick, whose rows keep their meaning): it first solves the equality-constrained
problem with the rows that were active at the last solve of the same structure and returns that
when it satisfies every KKT condition to the workspace's tolerance, else it calls the solver.
Pass it as ``solve_qp(..., workspace=ws)``, or hold ``with warm_start(ws):`` around code that
calls :func:`solve_qp` deep inside (``controlkit.dynamics.evaluate``).
"""
from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import quadprog
from scipy.linalg import lapack

from .errors import ArgumentError, QPError

__all__ = ["QPResult", "QPWorkspace", "solve_qp", "warm_start", "SOLVERS"]


@dataclass
class QPResult:
    """A solved QP.

    Attributes:
        x: the minimizer (n,).
        eq_multipliers: ``y`` (m_eq,), the equality rows' multipliers in the module's convention
            (``H x + c + A_eq^T y + G^T z = 0``).
        ineq_multipliers: ``z`` (m_in,) >= 0, the inequality rows' multipliers (zero when a row is inactive).
        active: indices (into the inequality rows) of the rows the solver held active at the solution.
        objective: ``1/2 x^T H x + c^T x`` at x.
        iterations: the solver's count of iterations (its own unit; quadprog's active-set changes).
    """

    x: np.ndarray
    eq_multipliers: np.ndarray
    ineq_multipliers: np.ndarray
    active: np.ndarray
    objective: float
    iterations: int = 0


def _quadprog(H, c, A_eq, b_eq, G, h) -> QPResult:
    """quadprog's dual active-set method: it minimizes ``1/2 x^T H x - a^T x`` with ``C^T x >= b``,
    the first ``meq`` columns of C as equalities; the rows are brought to that form here."""
    meq = len(b_eq)
    if meq or len(h):
        C = np.vstack([A_eq, -G]).T if meq else -G.T
        b = np.concatenate([b_eq, -h]) if meq else -h
    else:
        C = b = None  # (quadprog indexes past an empty (n, 0) C)
    try:
        x, f, _, iters, lagrangian, iact = quadprog.solve_qp(H, -c, C, b, meq)
    except ValueError as exc:
        raise QPError(_reason(str(exc)), H, c, A_eq, b_eq, G, h) from exc
    lagrangian = np.asarray(lagrangian, dtype=float)[:meq + len(h)]  # (one zero when there are no rows)
    active = np.asarray(iact, dtype=int)
    active = np.sort(active[active > meq] - meq - 1)  # 1-based, equalities first
    return QPResult(x, -lagrangian[:meq], lagrangian[meq:], active, float(f), int(iters[0]))


def _reason(message: str) -> str:
    """quadprog's message, said in the module's terms."""
    if "inconsistent" in message:
        return "the constraints cannot all hold (quadprog: " + message + ")"
    if "positive definite" in message:
        return "H is not positive definite (quadprog: " + message + "); add a small multiple of the identity"
    return "quadprog failed: " + message


def _daqp(H, c, A_eq, b_eq, G, h, held: np.ndarray | None = None) -> QPResult:
    """DAQP's dual active-set method (``pip install 'controlkit[daqp]'``): rows ``lower <= A x <= upper``,
    equalities flagged; ``held`` (inequality rows) start active, DAQP's own warm start. Its
    multipliers already follow the module's convention (``H x + c + A^T lam = 0``)."""
    try:
        import daqp
    except ImportError as exc:
        raise QPError("solver 'daqp' is not installed; install it with pip install 'controlkit[daqp]' "
                      f"(daqp>={DAQP_MIN}) or use solver='quadprog'", H, c, A_eq, b_eq, G, h) from exc
    meq, m = len(b_eq), len(h)
    A = np.concatenate((A_eq, G)) if meq else G
    upper = np.concatenate((b_eq, h)) if meq else h
    lower = np.concatenate((b_eq, np.full(m, -np.inf))) if meq else np.full(m, -np.inf)
    sense = np.zeros(meq + m, dtype=np.int32)
    sense[:meq] = 5  # (DAQP's flag: an equality)
    if held is not None and len(held):
        sense[meq + held] = 1  # (DAQP's flag: start active)
    # DAQP's default primal tolerance (1e-6) leaves rows of the simulator's contact QPs (condition
    # numbers to 1e9) violated by 1e-6 and the minimizer 1e-5 away from quadprog's; at 1e-10 the two
    # agree to 3e-9, as close as quadprog's own answer is to its active set's KKT solution there
    x, f, flag, info = daqp.solve(H, c, A, upper, lower, sense, primal_tol=DAQP_PRIMAL_TOL)
    if flag < 1:
        raise QPError(_DAQP_FLAGS.get(flag, f"daqp failed (exit flag {flag})"), H, c, A_eq, b_eq, G, h)
    lam = np.asarray(info["lam"], dtype=float)
    z = lam[meq:]
    return QPResult(np.asarray(x, dtype=float), lam[:meq], z, np.flatnonzero(z), float(f), int(info["iterations"]))


DAQP_MIN = "0.11"  # the version tested (pyproject's daqp extra pins it)
DAQP_PRIMAL_TOL = 1e-10  # largest violation DAQP may leave on a row (the rows' units)
_DAQP_FLAGS = {-1: "the constraints cannot all hold (daqp: infeasible)",
               -5: "H is not positive definite (daqp: nonconvex problem); add a small multiple of the identity",
               -2: "daqp cycled (degenerate active sets)", -4: "daqp reached its iteration limit"}

#: the solvers :func:`solve_qp` can call, by name; ``daqp`` is an optional extra, imported when chosen
SOLVERS: dict[str, Callable[..., QPResult]] = {"quadprog": _quadprog, "daqp": _daqp}
#: solvers that take the rows to start active themselves (``held=``) instead of the workspace's KKT check
_NATIVE_WARM = frozenset({"daqp"})


def solve_qp(H: np.ndarray, c: np.ndarray, A_eq: np.ndarray | None = None, b_eq: np.ndarray | None = None,
             G: np.ndarray | None = None, h: np.ndarray | None = None, *, solver: str = "quadprog",
             workspace: QPWorkspace | None = None) -> QPResult:
    """Minimize ``1/2 x^T H x + c^T x`` subject to ``A_eq x = b_eq`` and ``G x <= h``.

    Args:
        H: the Hessian (n, n), symmetric positive definite (quadprog reads its upper triangle
            and factors it: a semi-definite H needs a small multiple of the identity added).
        c: the linear term (n,).
        A_eq, b_eq: equality rows (m_eq, n) and right-hand side (m_eq,), or None for none;
            the rows must be linearly independent.
        G, h: inequality rows (m_in, n) and bounds (m_in,), or None for none.
        solver: the solver's name, a key of :data:`SOLVERS`.
        workspace: a :class:`QPWorkspace` to warm-start from (and to update); by default the one
            of the innermost enclosing :func:`warm_start` block, if any, else none (a cold solve).
    Returns:
        a :class:`QPResult` (minimizer, multipliers in the module's sign convention, active rows).
    Raises:
        QPError: the problem has no solution (infeasible constraints, H not positive definite),
            carrying H, c, A_eq, b_eq, G, h.
        ArgumentError: an unknown solver name or inconsistent shapes.
    """
    run = SOLVERS.get(solver)
    if run is None:
        raise ArgumentError(f"solve_qp: unknown solver {solver!r}; available: {', '.join(sorted(SOLVERS))}")
    c = np.asarray(c, dtype=float)
    n = len(c)
    H = np.asarray(H, dtype=float)
    A_eq, b_eq = _rows(A_eq, b_eq, n, "A_eq", "b_eq")
    G, h = _rows(G, h, n, "G", "h")
    if H.shape != (n, n):
        raise ArgumentError(f"solve_qp: H has shape {H.shape}, expected ({n}, {n}) for c of size {n}")
    if workspace is None:
        workspace = _ACTIVE.get()
    if workspace is None:
        return run(H, c, A_eq, b_eq, G, h)
    return workspace._solve(solver, H, c, A_eq, b_eq, G, h)


def _rows(A, b, n: int, an: str, bn: str) -> tuple[np.ndarray, np.ndarray]:
    """Rows (m, n) and right-hand side (m,) as float arrays; empty ones for None."""
    if A is None and b is None:
        return np.zeros((0, n)), np.zeros(0)
    if A is None or b is None:
        raise ArgumentError(f"solve_qp: {an} and {bn} are given together (one of them is None)")
    A, b = np.asarray(A, dtype=float), np.asarray(b, dtype=float).reshape(-1)
    if A.ndim != 2 or A.shape != (len(b), n):
        raise ArgumentError(f"solve_qp: {an} has shape {A.shape}, expected ({len(b)}, {n}) for {bn} of size {len(b)}")
    return A, b


class QPWorkspace:
    """The active set of the last solve, per problem structure, to warm-start the next solve.

    A structure is the triple (unknowns, equality rows, inequality rows); a plan's QP keeps it from
    one evaluation to the next, and its rows keep their meaning, so the rows active at the last
    solve are a good guess. :meth:`solve` (or :func:`solve_qp` with ``workspace=``) then solves the
    equality-constrained problem with those rows held as equalities (the KKT system by the range
    space: a Cholesky of H, one of ``A H^-1 A^T``) and accepts its ``x`` when

    - every inequality holds: ``(G x - h)_i <= tol (1 + |h_i|)``, and
    - every held row's multiplier is compressive: ``z_i >= -tol (1 + max |z|)``;

    those are the KKT conditions of the QP (stationarity and the held rows hold by construction),
    so ``x`` is its unique minimizer up to the tolerance. Otherwise (a row should join or leave,
    H or the held rows singular, no guess yet) the solver solves the problem cold and its active
    set is kept for the next solve. Results agree with the cold solve to ``~tol`` relative.

    A solver that warm-starts itself (``daqp``) is handed the remembered rows as its starting
    active set instead, and always answers.

    Args:
        tol: the KKT tolerance above (relative).
    Attributes:
        warm: solves answered by the guessed active set (daqp: started from one); cold: solves
            passed to the solver without one.
    """

    def __init__(self, tol: float = 1e-11):
        self.tol = float(tol)
        self.warm = 0
        self.cold = 0
        self._last: dict[tuple[int, int, int], np.ndarray] = {}

    def solve(self, H: np.ndarray, c: np.ndarray, A_eq: np.ndarray | None = None, b_eq: np.ndarray | None = None,
              G: np.ndarray | None = None, h: np.ndarray | None = None, *, solver: str = "quadprog") -> QPResult:
        """:func:`solve_qp` warm-started from (and updating) this workspace; same arguments."""
        return solve_qp(H, c, A_eq, b_eq, G, h, solver=solver, workspace=self)

    def reset(self) -> None:
        """Forget every remembered active set (the next solves are cold)."""
        self._last.clear()

    def _solve(self, solver: str, H, c, A_eq, b_eq, G, h) -> QPResult:
        key = (len(c), len(b_eq), len(h))
        held = self._last.get(key)
        if solver in _NATIVE_WARM:
            self.warm += held is not None
            self.cold += held is None
            res = SOLVERS[solver](H, c, A_eq, b_eq, G, h, held=held)
            self._remember(key, res.active)
            return res
        if held is not None:
            res = _held_rows_solve(H, c, A_eq, b_eq, G, h, held, self.tol)
            if res is not None:
                self.warm += 1
                return res
        self.cold += 1
        res = SOLVERS[solver](H, c, A_eq, b_eq, G, h)
        self._remember(key, res.active)
        return res

    def _remember(self, key: tuple[int, int, int], active: np.ndarray) -> None:
        if len(self._last) >= 16 and key not in self._last:
            self._last.clear()  # (a few structures per plan: more means the plans changed)
        self._last[key] = active


_ACTIVE: contextvars.ContextVar[QPWorkspace | None] = contextvars.ContextVar("controlkit_qp_workspace", default=None)


@contextlib.contextmanager
def warm_start(workspace: QPWorkspace) -> Iterator[QPWorkspace]:
    """Within the block, :func:`solve_qp` calls without their own ``workspace`` use ``workspace``.

    For a QP solved deep inside another call (a servo's ``evaluate``), whose caller cannot pass
    the workspace along. Blocks nest (the innermost wins); the setting is per thread and task."""
    token = _ACTIVE.set(workspace)
    try:
        yield workspace
    finally:
        _ACTIVE.reset(token)


def _held_rows_solve(H, c, A_eq, b_eq, G, h, held: np.ndarray, tol: float) -> QPResult | None:
    """The minimizer with the equalities and the inequality rows ``held`` as equalities, when it
    satisfies the QP's KKT conditions to ``tol`` (see :class:`QPWorkspace`); else None.

    (Few numpy calls, each about a microsecond: at a servo's size, 14 unknowns and 55 rows,
    quadprog's whole solve takes 20 us. A NaN fails every test written as ``not (a <= b)``.)"""
    meq = len(b_eq)
    R, info = lapack.dpotrf(H)  # H = R^T R (upper)
    if info != 0:
        return None
    Hc, info = lapack.dpotrs(R, c)
    if len(held) or meq:
        A = np.concatenate((A_eq, G[held])) if meq else G.take(held, 0)  # (take: a microsecond less)
        b = np.concatenate((b_eq, h[held])) if meq else h.take(held)
        # x = -H^-1 (c + A^T lam) with A x = b: (A H^-1 A^T) lam = -b - A H^-1 c
        HA, info = lapack.dpotrs(R, A.T)
        _, lam, info = lapack.dposv(A.dot(HA), -b - A.dot(Hc))
        if info != 0:
            return None  # the held rows are dependent
        x = -(Hc + HA.dot(lam))
        z = lam[meq:]
        zl = z.tolist()  # (a few floats: Python's min and max cost less than numpy's reductions)
        if zl and not min(zl) >= -tol * (1.0 + max(map(abs, zl))):
            return None
        objective = 0.5 * (c.dot(x) - b.dot(lam))  # (1/2 x^T H x + c^T x with H x = -c - A^T lam, A x = b)
    else:
        x, lam, z = -Hc, b_eq, b_eq
        objective = 0.5 * c.dot(x)
    if len(h):
        viol = G.dot(x)
        viol -= h
        viol -= tol * abs(h)
        if not max(viol.tolist()) <= tol:
            return None
    if not math.isfinite(objective):  # (a non-finite x: Python's max may step over a NaN)
        return None
    ineq = np.zeros(len(h))
    ineq[held] = z
    return QPResult(x, lam[:meq], ineq, held, float(objective), 0)
