"""When the solver's equality rows count as consistent: the residual the rank test leaves along the row
combinations it dropped, against :data:`controlkit.solver.RESIDUAL_TOL` and, for nearly dependent rows,
their departure from dependence (:data:`NEAR_DEPENDENT`); the error naming the conflicting statements.
"""
from __future__ import annotations

import numpy as np

from .errors import InconsistentEquationsError
from .linalg import norm
from .problem import Problem

#: dimensionless: a row combination u the rank test dropped is *nearly dependent* when its rows'
#: departure from dependence, theta = |u^T A| / |A|_2 (A the rows on the unknowns (a, tau, lam)), is at
#: most this; its right-hand sides may then disagree by up to theta (1 + |f|) (least squares). Above it,
#: the rows are independent and the drop comes from the forces' side (sliding friction making the
#: contact matrix singular): only RESIDUAL_TOL applies.
NEAR_DEPENDENT = 1e-3


def _conflicts(E, f, owners, U, r) -> list[str]:
    """The statements owning the rows that take part in the residual along the dropped combinations."""
    U0 = U[:, r:]
    u = U0 @ (U0.T @ f)
    big = np.abs(u) > 1e-6 * np.abs(u).max()
    return list(dict.fromkeys(o for o, flag in zip(owners, big) if flag))


def within_near_dependence(p: Problem, f: np.ndarray, U: np.ndarray, r: int, tol: float) -> bool:
    """Whether the residual of the least-squares solution is explained by nearly dependent rows.

    The rank test runs on the reduced rows E (in the free torques and forces y: ``Aa M^-1 G^T +
    Aw``), whose conditioning is the square of the rows' own when they act through the mass
    matrix: constraint rows at a relative angle theta ~ 1e-5 from dependence (the four line contacts
    of a toppled brick stack, nearly parallel) give E a singular value ~ theta^2 of its largest,
    below the rank threshold. Their right-hand sides (velocity-product terms of the tilted rows)
    then differ by about theta of their size: solved exactly, the dropped combination would take
    forces ~ residual / (theta^2 |E|) (1e5 N for a few-kilogram stack) for a constraint
    acceleration of 1e-4 m/s^2. So along each dropped combination u (a left singular vector of
    E), the residual ``|u^T f|`` may reach ``tol + theta (1 + |f|)`` when ``theta = |u^T A| / |A|_2
    <= NEAR_DEPENDENT``; exactly dependent rows (theta at rounding, two statements on one
    unknown, a closure at a singular configuration) keep ``tol``.

    Args:
        p: the problem; f: (m,) the reduced right-hand side; U: (m, m) E's left singular vectors;
        r: E's rank; tol: the residual tolerance ``RESIDUAL_TOL (1 + |f|)``.
    """
    rows = p.eq_rows
    blocks = [B for B in (rows.Aa, rows.Aw) if B is not None]
    U0 = U[:, r:]
    if not blocks or not U0.shape[1]:
        return False
    A = np.hstack(blocks) if len(blocks) > 1 else blocks[0]
    scale = float(np.linalg.norm(A, 2))
    if not scale > 0.0:
        return False
    theta = np.linalg.norm(U0.T.dot(A), axis=1) / scale
    allowed = tol + np.where(theta <= NEAR_DEPENDENT, theta, 0.0) * (1.0 + norm(f))
    return bool(np.all(np.abs(U0.T.dot(f)) <= allowed))


def inconsistency(p: Problem, E, f, U, r, nres) -> InconsistentEquationsError:
    """The error naming the statements whose rows conflict (residual nres of the reduced rows E y = f)."""
    names = _conflicts(E, f, p.eq_rows.owners(), U, r)
    hint = ""
    if names == ["constraints"] and nres <= 1e-4 * (1.0 + norm(f)):
        hint = ("; only the constraints' own rows disagree, and slightly: dependent or nearly dependent "
                "rows whose right-hand sides differ (a closure at a singular configuration, or contact "
                "points of several pairs holding the same motion, e.g. parallel line contacts in a loop)")
    return InconsistentEquationsError(
        f"t = {p.time:.6g} s: the equations are inconsistent (residual {nres:.3g}); "
        f"conflicting: {', '.join(names)}{hint}", names, p)
