"""Initial positioning (thesis 2.3 and 7.2): from a rough configuration to an assembled one.

The thesis notes that typing every body's exact initial position is "clearly undesirable":
a user sketches a configuration and states where things must be (feet flat on the floor,
a tool at a pose, a joint at an angle); the system finds the nearby configuration that
satisfies every loop closure of the mechanism and every statement.

:func:`assemble` does this by Gauss–Newton projection on the constraint set
``r(q) = [closure errors; statement residuals] = 0``: each step is the minimum-norm
solution of ``J dq = -r`` (so the result stays near ``q_rough``: the first-order closest
point), taken on the configuration Lie group (``q (+) dq``), damped (Levenberg–Marquardt)
only when a full step does not reduce ``|r|``.

Statements are the control statements' own position-level equations, written with the same
quantities (:mod:`controlkit.quantities`) and expression algebra
(:mod:`controlkit.expressions`), each under a name::

    sole = FramePoint(mech, "foot_l")
    targets = {
        "left sole on the floor": np.array([[0, 0, 1.0]]) @ pos(sole) == 0.0,
        "left sole flat": np.eye(3)[:2] @ orientation_error(FrameOrientation(mech, "foot_l"), np.eye(3)) == 0,
        "knee": pos(JointAngle(mech, "knee_l")) == 0.4,
    }
    q = assemble(mech, q_rough, targets).q

A leaf may be a constant, ``pos(quantity)`` of any quantity with a position-level value and a
Jacobian (frame points, joint angles, the centre of mass) or ``orientation_error(orientation,
R)`` with a fixed target ``R`` (3, 3); sums, scalings and constant matrices (row selections)
combine them. Velocities, accelerations, torques, forces and functions of time have no place
in a placement and raise :class:`AssemblyError`.

When the statements cannot hold together (or with the mechanism's closures), the iteration
ends at a least-squares point where ``J^T r = 0`` with ``r != 0``: ``r`` then lies in the left
null space of ``J`` and its nonzero rows are exactly the statements that fight each other.
:class:`AssemblyError` names them (``conflicting``), largest residual first.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import pinocchio as pin

from .errors import ControlkitError
from .expressions import Const, Level, OrientationError, Scaled, Sum

__all__ = ["assemble", "Assembly", "AssemblyError", "linearize"]


class AssemblyError(ControlkitError):
    """Initial positioning failed: the statements (or the loop closures) cannot all hold.

    ``conflicting`` lists the names of the statements and closures left unsatisfied at the
    least-squares point, largest residual first; ``residuals`` maps every name to its
    residual norm there (m, rad).
    """

    def __init__(self, message: str, conflicting: list[str], residuals: dict[str, float]):
        super().__init__(message)
        self.conflicting = conflicting
        self.residuals = residuals


@dataclass
class Assembly:
    """The assembled configuration and how it was reached.

    ``q`` (nq,): the configuration; ``residuals``: residual norm per statement and closure
    (m, rad); ``iterations``: Gauss–Newton steps taken; ``distance``: ``|q (-) q_rough|``
    (the tangent-space distance moved, rad and m mixed as in v).
    """

    q: np.ndarray
    residuals: dict[str, float] = field(default_factory=dict)
    iterations: int = 0
    distance: float = 0.0


def linearize(expr, mech) -> tuple[np.ndarray, np.ndarray]:
    """Value (k,) and configuration Jacobian (k, nv) of a position-level expression at mech's state.

    The Jacobian is with respect to the tangent displacement ``dq`` in ``q (+) dq`` (the same
    velocity coordinates as v).
    """
    nv = mech.nv
    if isinstance(expr, Const):
        v = expr.value.reshape(-1)
        return v, np.zeros((v.size, nv))
    if isinstance(expr, Sum):
        (vx, Jx), (vy, Jy) = linearize(expr.x, mech), linearize(expr.y, mech)
        if vx.size == 1 and vy.size > 1:
            vx, Jx = np.broadcast_to(vx, vy.shape), np.broadcast_to(Jx, Jy.shape)
        if vy.size == 1 and vx.size > 1:
            vy, Jy = np.broadcast_to(vy, vx.shape), np.broadcast_to(Jy, Jx.shape)
        return vx + vy, Jx + Jy
    if isinstance(expr, Scaled):
        v, J = linearize(expr.x, mech)
        s = expr.s
        if np.ndim(s) == 2:
            return s @ v, s @ J
        s = np.asarray(s, dtype=float)
        return s * v, (s.reshape(-1, 1) if s.ndim else s) * J
    if isinstance(expr, OrientationError):
        T = expr.target
        if callable(T) or not isinstance(T, np.ndarray):
            raise AssemblyError(f"orientation_error({expr.quantity.name}) in a placement needs a fixed target"
                                " rotation (3, 3), not a function of time or an expression", [], {})
        Rr = expr.quantity.position(mech) @ T.T
        Jw = expr.quantity.jacobian(mech)
        # world angular perturbation exp(d) R' = R' exp(R'^T d): the right Jacobian of log3
        return pin.log3(Rr), pin.Jlog3(Rr) @ Rr.T @ Jw
    if isinstance(expr, Level):
        if expr.level != 0:
            raise AssemblyError(f"{expr.describe()} is a {Level.names[expr.level]}-level quantity; a placement"
                                " statement holds positions only (pos(...), orientation_error(...))", [], {})
        q = expr.quantity
        v = np.asarray(q.position(mech), dtype=float)
        if v.ndim != 1:
            raise AssemblyError(f"pos({q.name}) is not a vector (an orientation?); place orientations with"
                                " orientation_error(quantity, R) == 0", [], {})
        J = np.asarray(q.jacobian(mech), dtype=float).reshape(v.size, nv)
        return v.copy(), J
    raise AssemblyError(f"{type(expr).__name__} ({expr.describe()}) cannot be part of a placement statement: use"
                        " constants, pos(quantity) and orientation_error(quantity, R) with + - * and @", [], {})


def _statements(targets) -> list[tuple[str, object]]:
    if targets is None:
        return []
    items = targets.items() if isinstance(targets, Mapping) else targets
    out = []
    for name, eq in items:
        res = getattr(eq, "residual", None)
        if res is None:
            raise AssemblyError(f"placement statement {name!r} must be an equation (lhs == rhs), got"
                                f" {type(eq).__name__}", [], {})
        out.append((str(name), res))
    return out


def _residual(mech, q, closures, statements):
    """Stacked residual r, Jacobian J and each row's owner name at q."""
    mech.set_state(q)
    vals, jacs, owners = [], [], []
    for c in closures:
        e, J = np.asarray(c.error(), dtype=float), np.asarray(c.jacobian(), dtype=float)
        vals.append(e)
        jacs.append(J.reshape(e.size, mech.nv))
        owners += [f"closure {c.name}"] * e.size
    for name, expr in statements:
        e, J = linearize(expr, mech)
        vals.append(e)
        jacs.append(J)
        owners += [name] * e.size
    if not vals:
        return np.zeros(0), np.zeros((0, mech.nv)), []
    return np.concatenate(vals), np.vstack(jacs), owners


def _by_owner(r: np.ndarray, owners: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, x in zip(owners, r):
        out[name] = float(np.hypot(out.get(name, 0.0), x))
    return out


def _min_norm_step(J: np.ndarray, r: np.ndarray, mu: float) -> np.ndarray:
    """dq minimizing |J dq + r|^2 + mu |dq|^2, minimum norm when mu = 0 (SVD: redundant rows welcome)."""
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    if s.size == 0:
        return np.zeros(J.shape[1])
    keep = s > s[0] * 1e-12 if mu == 0.0 else s > 0
    filt = np.where(keep, s / (s**2 + mu), 0.0)
    return -Vt.T @ (filt * (U.T @ r))


def assemble(mech, q_rough, targets=None, *, tol: float = 1e-12, max_iter: int = 100,
             closures: bool = True) -> Assembly:
    """The configuration near ``q_rough`` satisfying every loop closure and placement statement.

    Args:
        mech: the mechanism; its active constraints (``mech.constraints``: loop closures,
            welds, locks) are the closures. Its state is left as it was.
        q_rough: the rough configuration (nq,) to start from.
        targets: named placement statements, ``{name: lhs == rhs}`` (or a sequence of
            ``(name, equation)``) at position level (see the module docstring).
        tol: convergence on the largest residual component (m, rad).
        max_iter: Gauss–Newton steps before giving up.
        closures: include the mechanism's constraints (False: the statements alone).
    Returns:
        :class:`Assembly` with ``q`` (nq,).
    Raises:
        AssemblyError: the statements cannot hold together; ``conflicting`` names them.
    """
    q = mech.check_q(q_rough, "assemble: q_rough").copy()
    q0 = q.copy()
    stmts = _statements(targets)
    cons = list(mech.constraints.values()) if closures else []
    saved = (mech.q, mech.v)
    try:
        r, J, owners = _residual(mech, q, cons, stmts)
        mu, it = 0.0, 0
        while r.size and np.max(np.abs(r)) > tol and it < max_iter:
            it += 1
            f = r @ r
            g = J.T @ r
            if np.linalg.norm(g) <= 1e-14 * max(1.0, np.sqrt(f)) * max(1.0, np.linalg.norm(J)):
                break  # a least-squares point with r != 0: the statements conflict
            for _ in range(40):
                qn = mech.integrate(q, _min_norm_step(J, r, mu))
                rn, Jn, _ = _residual(mech, qn, cons, stmts)
                if rn @ rn < f:
                    break
                mu = max(mu * 10.0, 1e-10 * max(1.0, float(np.max(J * J))))
            else:
                break  # no step reduces |r|: a local least-squares point
            q, r, J = qn, rn, Jn
            mu = mu / 100.0 if mu > 1e-14 else 0.0
        res = _by_owner(r, owners)
        if r.size and np.max(np.abs(r)) > max(tol, 1e-9):
            worst = sorted((n for n, x in res.items() if x > max(tol, 1e-9)), key=lambda n: -res[n])
            raise AssemblyError(
                f"assemble {mech.name!r}: the placement cannot hold; conflicting: "
                + ", ".join(f"{n!r} (residual {res[n]:.3g})" for n in worst)
                + f" after {it} Gauss-Newton steps. Relax or remove one of them, or start nearer a solution",
                worst, res)
        return Assembly(q, res, it, float(np.linalg.norm(mech.difference(q0, q))))
    finally:
        mech.set_state(*saved)
