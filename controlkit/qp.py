"""One interface to the convex quadratic programs controlkit solves.

:func:`solve_qp` minimizes ``1/2 x^T H x + c^T x`` subject to ``A_eq x = b_eq`` and
``G x <= h`` — one sign convention for every caller, whatever the solver underneath
(quadprog by default, chosen by name). Its multipliers follow the Lagrangian

    ``L(x, y, z) = 1/2 x^T H x + c^T x + y^T (A_eq x - b_eq) + z^T (G x - h)``,  ``z >= 0``,

so at the solution ``H x + c + A_eq^T y + G^T z = 0`` (stationarity) and ``z_i (G x - h)_i = 0``.
A problem the solver cannot solve (inconsistent constraints, a Hessian that is not positive
definite) raises :class:`~controlkit.errors.QPError` carrying the problem and the reason.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import quadprog

from .errors import ArgumentError, QPError

__all__ = ["QPResult", "solve_qp", "SOLVERS"]


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


#: the solvers :func:`solve_qp` can call, by name
SOLVERS: dict[str, Callable[..., QPResult]] = {"quadprog": _quadprog}


def solve_qp(H: np.ndarray, c: np.ndarray, A_eq: np.ndarray | None = None, b_eq: np.ndarray | None = None,
             G: np.ndarray | None = None, h: np.ndarray | None = None, *, solver: str = "quadprog") -> QPResult:
    """Minimize ``1/2 x^T H x + c^T x`` subject to ``A_eq x = b_eq`` and ``G x <= h``.

    Args:
        H: the Hessian (n, n), symmetric positive definite (quadprog reads its upper triangle
            and factors it: a semi-definite H needs a small multiple of the identity added).
        c: the linear term (n,).
        A_eq, b_eq: equality rows (m_eq, n) and right-hand side (m_eq,), or None for none;
            the rows must be linearly independent.
        G, h: inequality rows (m_in, n) and bounds (m_in,), or None for none.
        solver: the solver's name, a key of :data:`SOLVERS`.
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
    return run(H, c, A_eq, b_eq, G, h)


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
