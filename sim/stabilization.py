"""Constraint stabilization: Baumgarte right-hand sides and projections onto the constraint manifold.

Integrating ``J a + Jdot v = rhs`` lets the position error ``phi`` and velocity error
``J v`` of bilateral constraints (loop closures, welds, locks, contact hinges) drift.
Two remedies live here:

- :func:`baumgarte_rhs` — the feedback right-hand side ``-(kv J v + kp phi) - Jdot v`` so that
  the errors obey ``phi'' + kv phi' + kp phi = 0`` (a stable, by default critically
  damped, second-order decay);
- :func:`project_positions` / :func:`project_velocities` — after a step or an event,
  move q back onto ``phi(q) = 0`` and v onto ``J v = 0`` with the smallest correction
  in the mass metric (kinetic-energy norm), which is what momentum consistency asks for.

All functions read ``error()``, ``jacobian()`` and ``drift()`` of controlkit constraints
bound to one :class:`controlkit.mechanism.Mechanism`.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
from scipy.linalg import solve_triangular

from controlkit.errors import ControlkitError, SimulationError
from controlkit.singular import without_noise_rows

__all__ = [
    "StabilizationError",
    "ProjectionError",
    "DEFAULT_KP",
    "DEFAULT_KV",
    "stack_errors",
    "stack_jacobians",
    "stack_drifts",
    "baumgarte_rhs",
    "project_positions",
    "project_velocities",
    "project_state",
    "PROJECTION_COUNTS",
]

DEFAULT_KP = 100.0  # 1/s^2: natural frequency sqrt(kp) = 10 rad/s
DEFAULT_KV = 20.0   # 1/s: 2 sqrt(kp), critical damping (error time constant 0.1 s)


class StabilizationError(ControlkitError, ValueError):
    """Invalid stabilization arguments (gains, tolerances, unbound constraints, singular mass matrix)."""


class ProjectionError(SimulationError):
    """A position projection did not converge.

    Attributes: ``constraints`` (names), ``residual`` (max |phi|, m or rad),
    ``iterations`` (Gauss--Newton iterations done), ``time`` (s, when known).
    """

    def __init__(self, message: str, constraints: list[str], residual: float, iterations: int,
                 time: float | None = None):
        super().__init__(message, time=time)
        self.constraints = constraints
        self.residual = residual
        self.iterations = iterations


# ------------------------------------------------------------------------- stacking
def _as_list(constraints) -> list:
    if isinstance(constraints, dict):
        return list(constraints.values())
    return list(constraints)


def _check_bound(constraints: Sequence, mech=None):
    """The one mechanism the constraints are bound to (and that it is ``mech`` when given)."""
    for c in constraints:
        m = getattr(c, "mech", None)
        if m is None:
            raise StabilizationError(
                f"constraint {getattr(c, 'name', c)!r} is not bound to a mechanism; add it with mech.add_constraint() "
                "or call constraint.bind(mech) first")
        if mech is None:
            mech = m
        elif m is not mech:
            raise StabilizationError(
                f"constraint {c.name!r} is bound to mechanism {m.name!r}, not {mech.name!r}")
    return mech


def stack_errors(constraints: Iterable) -> np.ndarray:
    """Stacked position errors phi (k,) (m, rad) at the mechanism's current state."""
    cons = _as_list(constraints)
    if not cons:
        return np.zeros(0)
    return np.concatenate([np.asarray(c.error(), dtype=float).reshape(-1) for c in cons])


def stack_jacobians(constraints: Iterable, nv: int = 0) -> np.ndarray:
    """Stacked Jacobians J (k, nv) at the mechanism's current state (``nv`` only shapes the empty case)."""
    cons = _as_list(constraints)
    if not cons:
        return np.zeros((0, nv))
    # (reshaped: Pinocchio hands a one-dof mechanism's Jacobian rows over as a vector); rows of
    # rounding noise (a closure made redundant by a joint at its centre) are exact zeros, so the
    # relative rank thresholds below never take them for constraints
    nv = cons[0].mech.nv
    return without_noise_rows(np.vstack([np.asarray(c.jacobian(), dtype=float).reshape(-1, nv) for c in cons]))


def stack_drifts(constraints: Iterable) -> np.ndarray:
    """Stacked drift terms Jdot v (k,) (m/s^2, rad/s^2) at the mechanism's current state."""
    cons = _as_list(constraints)
    if not cons:
        return np.zeros(0)
    return np.concatenate([np.asarray(c.drift(), dtype=float).reshape(-1) for c in cons])


def _row_names(constraints: Sequence) -> list[str]:
    return [c.name for c in constraints]


# ------------------------------------------------------------------------ Baumgarte
def baumgarte_rhs(constraints: Iterable, kp: float = DEFAULT_KP, kv: float = DEFAULT_KV) -> np.ndarray:
    """Right-hand side of ``J a = -(kv J v + kp phi) - Jdot v`` (k,), at the mechanism's current state.

    Args:
        constraints: bound constraint objects (or a mechanism's ``constraints`` dict).
        kp: position gain (1/s^2), >= 0. Default 100 (natural frequency 10 rad/s).
        kv: velocity gain (1/s), >= 0. Default 20 = 2 sqrt(kp): critically damped error decay.

    With these rows the errors obey ``phi'' + kv phi' + kp phi = 0``.
    """
    kp, kv = float(kp), float(kv)
    if not (math.isfinite(kp) and math.isfinite(kv) and kp >= 0.0 and kv >= 0.0):
        raise StabilizationError(f"Baumgarte gains must be finite and >= 0: got kp={kp} 1/s^2, kv={kv} 1/s")
    cons = _as_list(constraints)
    if not cons:
        return np.zeros(0)
    mech = _check_bound(cons)
    v = mech.v
    rows = []
    for c in cons:
        phi = np.asarray(c.error(), dtype=float).reshape(-1)
        Jv = np.asarray(c.jacobian(), dtype=float).reshape(-1, mech.nv) @ v
        rows.append(-(kv * Jv + kp * phi) - np.asarray(c.drift(), dtype=float).reshape(-1))
    return np.concatenate(rows)


# ---------------------------------------------------------------------- projections
def _metric_factor(mech, metric: str) -> np.ndarray | None:
    """Lower Cholesky factor L of M (M = L L^T) at the mechanism's state, or None for the Euclidean metric."""
    if metric == "euclidean":
        return None
    if metric != "mass":
        raise StabilizationError(f"unknown projection metric {metric!r}; valid metrics: 'mass', 'euclidean'")
    M, _ = mech.dynamics()
    try:
        return np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        raise StabilizationError(
            f"mechanism {mech.name!r}: the mass matrix is not positive definite (massless bodies?); "
            "project with metric='euclidean' instead") from None


def _weighted_jacobian(J: np.ndarray, L: np.ndarray | None) -> np.ndarray:
    """A = J L^{-T} (or J): in z = L^T dq coordinates |z|^2 = dq^T M dq."""
    if L is None:
        return J
    return solve_triangular(L, J.T, lower=True, check_finite=False).T


def _range_basis(A: np.ndarray, rcond: float):
    """SVD pieces of A restricted to singular values above rcond * s_max: (U_r, s_r, V_r^T)."""
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    if s.size == 0 or s[0] == 0.0:
        return U[:, :0], s[:0], Vt[:0]
    r = s > rcond * s[0]
    return U[:, r], s[r], Vt[r]


def _from_z(z: np.ndarray, L: np.ndarray | None) -> np.ndarray:
    """dq = L^{-T} z (or z)."""
    if L is None:
        return z
    return solve_triangular(L.T, z, lower=False, check_finite=False)


def _check_args(tol: float, max_iter: int, rcond: float) -> None:
    if not (tol > 0.0 and math.isfinite(tol)):
        raise StabilizationError(f"projection tolerance must be a positive number (m, rad), got {tol}")
    if int(max_iter) != max_iter or max_iter < 1:
        raise StabilizationError(f"max_iter must be a positive integer, got {max_iter}")
    if not (0.0 < rcond < 1.0):
        raise StabilizationError(f"rcond (relative rank threshold) must be in (0, 1), got {rcond}")


def project_positions(mech, constraints: Iterable, q: np.ndarray, tol: float = 1e-12, max_iter: int = 20, *,
                      metric: str = "mass", rcond: float = 1e-10, time: float | None = None) -> np.ndarray:
    """Project a configuration onto ``phi(q) = 0`` by Gauss--Newton; returns the projected q (nq,).

    Each iteration applies the minimum-norm correction in the mass metric (default)

        dq = -M^{-1} J^T (J M^{-1} J^T)^+ phi,     q <- q (+) dq   (pin.integrate),

    i.e. the smallest dq^T M dq displacement that zeroes the linearized error; with
    ``metric="euclidean"`` it is ``dq = -J^+ phi``. The pseudo-inverse drops singular
    values below ``rcond * s_max``, so redundant constraints are fine.

    Args:
        mech: the Mechanism the constraints are bound to (its state is restored on return).
        constraints: the constraints to satisfy (objects or a name -> constraint dict).
        q: start configuration (nq,).
        tol: convergence threshold on max |phi_i| (m or rad).
        max_iter: Gauss--Newton iteration limit.
        time: simulation time (s), quoted in the error message.

    Raises:
        ProjectionError: max |phi| is still above tol after max_iter iterations (names the
            constraints and the residual of each) — e.g. contradictory or unreachable constraints.
    """
    _check_args(tol, max_iter, rcond)
    cons = _as_list(constraints)
    q = mech.check_q(q, "project_positions q").copy()
    if not cons:
        return q
    _check_bound(cons, mech)
    saved_q, saved_v = mech.q, mech.v
    zeros = np.zeros(mech.nv)
    residual = math.inf
    try:
        for it in range(int(max_iter) + 1):
            mech.set_state(q, zeros, check=False)
            phi = stack_errors(cons)
            residual = float(np.max(np.abs(phi))) if phi.size else 0.0
            if residual <= tol:
                return q
            if it == max_iter or not math.isfinite(residual):
                break
            L = _metric_factor(mech, metric)
            Ur, sr, Vr = _range_basis(_weighted_jacobian(stack_jacobians(cons, mech.nv), L), rcond)
            dq = _from_z(Vr.T @ ((Ur.T @ -phi) / sr), L)
            q = mech.integrate(q, dq)
        details = ", ".join(f"{c.name!r} max|phi| = {float(np.max(np.abs(c.error()))):.3g}" for c in cons)
    finally:
        mech.set_state(saved_q, saved_v, check=False)
    where = f" at t = {time:.9g} s" if time is not None else ""
    raise ProjectionError(
        f"position projection of mechanism {mech.name!r}{where} did not converge: max |phi| = {residual:.3g} "
        f"> tol {tol:.3g} after {max_iter} iterations ({details}). The constraints may contradict each "
        "other or be out of reach; check their targets, or raise max_iter/tol.",
        _row_names(cons), residual, int(max_iter), time)


def project_velocities(mech, constraints: Iterable, q: np.ndarray, v: np.ndarray, *, metric: str = "mass",
                       rcond: float = 1e-10) -> np.ndarray:
    """Momentum-consistent projection of v onto ``J(q) v = 0``; returns the projected v (nv,).

        v+ = v - M^{-1} J^T (J M^{-1} J^T)^+ J v

    is the admissible velocity closest to v in kinetic energy: it minimizes
    ``(v+ - v)^T M (v+ - v)`` subject to ``J v+ = 0``, equivalently it is the result of an
    impulsive constraint force ``J^T lambda`` (so the momentum along the free directions
    is unchanged). Redundant rows are handled by the rank-thresholded pseudo-inverse;
    ``metric="euclidean"`` gives the plain orthogonal projection ``v - J^+ J v``.
    The mechanism's state is restored on return.
    """
    if not (0.0 < rcond < 1.0):
        raise StabilizationError(f"rcond (relative rank threshold) must be in (0, 1), got {rcond}")
    cons = _as_list(constraints)
    q = mech.check_q(q, "project_velocities q")
    v = mech.check_v(v, "project_velocities v").copy()
    if not cons:
        return v
    _check_bound(cons, mech)
    saved_q, saved_v = mech.q, mech.v
    try:
        mech.set_state(q, v, check=False)
        L = _metric_factor(mech, metric)
        _, _, Vr = _range_basis(_weighted_jacobian(stack_jacobians(cons, mech.nv), L), rcond)
        z = v if L is None else L.T @ v
        z = z - Vr.T @ (Vr @ z)
        return _from_z(z, L)
    finally:
        mech.set_state(saved_q, saved_v, check=False)


# ------------------------------------------------------------ the fast path (plan)
#: how many projections (position and velocity together) took the Delassus path and how many fell back
#: to :func:`project_positions` / :func:`project_velocities`
PROJECTION_COUNTS = {"delassus": 0, "reference": 0}

#: the Delassus path is taken only when a bound proves J's condition number in the mass metric below this:
#: its normal equations lose cond^2 * eps, rounding of a correction that is itself small (|phi|, |J v|)
DELASSUS_COND_MAX = 1e6


_DELASSUS: list = []


def _delassus(mech, J: np.ndarray, r: np.ndarray, rcond: float) -> np.ndarray | None:
    """``M^-1 J^T (J M^-1 J^T)^-1 r`` at the mechanism's state by the Cholesky factor of the Delassus matrix,
    in one compiled call (:func:`controlkit.solve_kernel.delassus_kernel`, loaded on first use); None when no
    bound proves the weighted Jacobian of full row rank at ``rcond`` (what the SVD of the reference would
    keep) and conditioned below :data:`DELASSUS_COND_MAX`."""
    if not _DELASSUS:
        from controlkit.solve_kernel import delassus_kernel
        _DELASSUS.append(delassus_kernel)
    ok, x = _DELASSUS[0](np.ascontiguousarray(mech.mass_inverse(), dtype=float), np.ascontiguousarray(J, dtype=float),
                         np.ascontiguousarray(r, dtype=float), rcond, DELASSUS_COND_MAX)
    return x if ok else None


def _rows(cons: list, nv: int) -> tuple[np.ndarray, np.ndarray]:
    """(phi (k,), J (k, nv)) at the mechanism's state, from each constraint's ``terms()`` (one call for
    both); J's rows of rounding noise are exact zeros, as :func:`stack_jacobians` makes them."""
    if len(cons) == 1:
        phi, J, _ = cons[0].terms()
        return np.asarray(phi, dtype=float).reshape(-1), without_noise_rows(np.asarray(J, dtype=float).reshape(-1, nv))
    phis, Js = [], []
    for c in cons:  # (every step: a loop, no comprehension objects)
        phi, J, _ = c.terms()
        phis.append(np.asarray(phi, dtype=float).reshape(-1))
        Js.append(np.asarray(J, dtype=float).reshape(-1, nv))
    return np.concatenate(phis), without_noise_rows(np.vstack(Js))


def _project_delassus(mech, cons: list, q: np.ndarray, v: np.ndarray, tol: float, max_iter: int, rcond: float):
    """:func:`project_state`'s Delassus path; None when the reference path must decide (or raise)."""
    zeros = np.zeros(mech.nv)
    for it in range(int(max_iter) + 1):
        mech.set_state(q, zeros, check=False)
        phi, J = _rows(cons, mech.nv)
        residual = float(np.abs(phi).max()) if phi.size else 0.0
        if residual <= tol:
            break
        if it == max_iter or not math.isfinite(residual):
            return None
        dq = _delassus(mech, J, phi, rcond)
        if dq is None:
            return None
        q = mech.integrate(q, -dq)
    # the velocities at the final q (J and M^-1 depend on q only: the state (q, 0) serves)
    dv = _delassus(mech, J, J.dot(v), rcond)
    if dv is None:
        return None
    return q, v - dv


def project_state(mech, constraints: Iterable, q: np.ndarray, v: np.ndarray, *, tol: float = 1e-12,
                  max_iter: int = 20, rcond: float = 1e-10, time: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`project_positions` then :func:`project_velocities` (mass metric), returns (q (nq,), v (nv,)).

    When a bound proves the constraints' Jacobian of full row rank and well conditioned in the mass
    metric (the common case: welds, independent closures), both projections use the Cholesky factor
    of the Delassus matrix ``J M^-1 J^T`` with Pinocchio's ``M^-1``, in place of the SVD of ``J L^-T``
    (the same minimum-norm corrections up to rounding), and the velocity projection reuses the
    kinematics of the last position iterate. Otherwise (redundant rows, a failed convergence, which
    then raises) the two reference functions run. The mechanism's state is restored on return;
    :data:`PROJECTION_COUNTS` counts the paths taken.
    """
    _check_args(tol, max_iter, rcond)
    cons = _as_list(constraints)
    if not cons:
        return np.array(q, dtype=float), np.array(v, dtype=float)
    _check_bound(cons, mech)
    saved_q, saved_v = mech.q, mech.v
    try:
        out = _project_delassus(mech, cons, np.array(q, dtype=float), np.array(v, dtype=float), tol, max_iter, rcond)
    finally:
        mech.set_state(saved_q, saved_v, check=False)
    if out is not None:
        PROJECTION_COUNTS["delassus"] += 1
        return out
    PROJECTION_COUNTS["reference"] += 1
    q = project_positions(mech, cons, q, tol, max_iter, rcond=rcond, time=time)
    return q, project_velocities(mech, cons, q, v, rcond=rcond)
