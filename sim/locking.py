"""Joint locking with a momentum-consistent transition (seed 002, Mueller).

Locking a joint adds constraint rows ``J2 v = 0`` (a :class:`controlkit.constraints.JointLock`)
to the persistent ones ``J1 v = 0`` already active (earlier locks, loop closures). The
velocity must jump so that the new constraints hold, and the generalized momentum of
the motion the constraints still allow must not: the impulsive constraint forces only
act along the constrained directions. Two equivalent formulations of the paper:

- ``formulation="redundant"`` (its eq. 24, all coordinates): with J = [J1; J2],

      [ M  -J^T ] [ dv     ]   [ 0      ]
      [ J   0   ] [ Lambda ] = [ -J v-  ]            (M dv = J^T Lambda, N s)

- ``formulation="minimal"`` (its eq. 37, Voronets-style minimal coordinates): with F1 an
  orthogonal complement of J1 (J1 F1 = 0; for joint locks the selection of the unlocked
  joints' velocities), v = F1 s, Mbar = F1^T M F1,

      [ Mbar      -(J2 F1)^T ] [ ds      ]   [ 0           ]
      [ J2 F1      0         ] [ Lambda2 ] = [ -J2 F1 s-   ]

- ``formulation="projected"`` (its eq. 32, all coordinates, only the new rows): with the
  M-weighted null-space projector of the persistent rows ``N = I - M^-1 J1^T (J1 M^-1 J1^T)^-1 J1``,

      [ M       (J2 N)^T ] [ dv      ]   [ N^T U  ]
      [ J2 N    0        ] [ -Lambda2] = [ -J2 v- ]

  (an (n + m2) system; ``J1 dv = 0`` follows from ``J1 M^-1 N^T = 0``).

Every formulation takes the paper's impulsive generalized force ``U`` (N m s, (nv,)) of the
general switching map (its eq. 22): ``M dv = J^T Lambda + U`` — a discontinuous control or
brake force acting at the switch. With U = 0 (the default) the momentum of the still-free
motion is continuous; otherwise it jumps by exactly ``F+^T U``.

All three give the same v+; the momentum ``F+^T M v`` of the still-free motion (F+ the complement
after the event; for joint locks the rows of M v of the unlocked joints) is continuous and
the kinetic energy drops. ``method="naive"`` instead just zeroes the locked joint's velocity
(for comparison: the momentum of the unlocked joints jumps).

After the transition the joint stays locked by ``JointLock`` named ``lock.<joint>`` in
``mech.constraints`` until :func:`unlock_joint` removes it (no velocity jump on unlocking).
Each transition is logged in the recording (kind ``lock``/``unlock``) with velocities before
and after.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from controlkit.constraints import JointLock
from controlkit.errors import ControlkitError

METHODS = ("momentum", "naive")
FORMULATIONS = ("redundant", "minimal", "projected")


class LockError(ControlkitError):
    """A joint lock or unlock request is invalid (already locked, not locked, bad option)."""


@dataclass
class LockResult:
    """The transition of one lock: velocities (nv,) before/after, impulses (N s or N m s), energies (J)."""

    joint: str
    constraint: str
    method: str
    formulation: str
    v_before: np.ndarray
    v_after: np.ndarray
    impulse: np.ndarray
    kinetic_energy_before: float
    kinetic_energy_after: float
    momentum_before: np.ndarray
    momentum_after: np.ndarray
    free: np.ndarray


def lock_name(joint: str) -> str:
    """Name of the constraint that holds a locked joint."""
    return f"lock.{joint}"


def locked_joints(mech) -> list[str]:
    """Joints currently held by a lock constraint."""
    return [c.joint for c in mech.constraints.values() if isinstance(c, JointLock)]


def _stack(constraints, nv: int) -> np.ndarray:
    rows = [c.jacobian() for c in constraints]
    return np.vstack(rows) if rows else np.zeros((0, nv))


def complement(mech, constraints) -> np.ndarray:
    """An orthogonal complement F (nv, n - m) of the constraints' Jacobian at the mechanism's state.

    Joint locks only: the selection of the free velocity columns (exact); otherwise an
    orthonormal basis of the null space.
    """
    nv = mech.nv
    constraints = list(constraints)
    if all(isinstance(c, JointLock) for c in constraints):
        free = np.ones(nv, dtype=bool)
        for c in constraints:
            free[c.vs] = False
        return np.eye(nv)[:, free]
    J = _stack(constraints, nv)
    return sla.null_space(J, rcond=1e-10)


def _kkt(M: np.ndarray, J: np.ndarray, rhs: np.ndarray, U: np.ndarray | None = None,
         G: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Solve [[M, -G^T], [J, 0]] [dv; Lambda] = [U; rhs] (G = J unless given, U = 0 unless given)."""
    n, m = M.shape[0], J.shape[0]
    G = J if G is None else G
    K = np.block([[M, -G.T], [J, np.zeros((m, m))]])
    b = np.concatenate([np.zeros(n) if U is None else U, rhs])
    try:
        x = np.linalg.solve(K, b)
    except np.linalg.LinAlgError:  # redundant persistent constraints: least-norm impulses
        x = np.linalg.lstsq(K, b, rcond=None)[0]
    return x[:n], x[n:]


def projector(mech, persistent, M: np.ndarray) -> np.ndarray:
    """The M-weighted null-space projector ``N = I - M^-1 J1^T (J1 M^-1 J1^T)^-1 J1`` (nv, nv) of the
    persistent constraints' rows J1 (identity when there are none); ``J1 N = 0``."""
    nv = M.shape[0]
    J1 = _stack(persistent, nv)
    if not J1.shape[0]:
        return np.eye(nv)
    MiJt = np.linalg.solve(M, J1.T)
    A = J1 @ MiJt
    return np.eye(nv) - MiJt @ np.linalg.lstsq(A, J1, rcond=None)[0]


def transition(mech, v: np.ndarray, persistent, new, method: str = "momentum",
               formulation: str = "redundant", U: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Post-activation velocity v+ (nv,) and impulses for new constraints at the mechanism's q.

    Args:
        mech: the mechanism; its state's configuration is the switching configuration.
        v: velocity just before the switch (nv,).
        persistent: constraints active before (and after) the switch (bound to mech).
        new: constraints activated now (bound to mech).
        method: ``"momentum"`` (consistent) or ``"naive"`` (zero the new constraints' velocity
            by the least-squares correction, no momentum balance).
        formulation: ``"redundant"`` (eq. 24), ``"projected"`` (eq. 32) or ``"minimal"`` (eq. 37);
            momentum method only.
        U: impulsive generalized force at the switch (nv,), N m s or N s; default zero.
    Returns:
        (v+, impulses): impulses on [persistent; new] rows (redundant), on the new rows
        (projected, minimal), or an empty array (naive).
    """
    M, _ = mech.dynamics()
    M = np.array(M)
    nv = mech.nv
    J2 = _stack(new, nv)
    U = None if U is None else np.asarray(U, dtype=float).reshape(nv)
    if method == "naive":
        vp = v.copy() if U is None else v + np.linalg.solve(M, U)
        if all(isinstance(c, JointLock) for c in new):
            for c in new:
                vp[c.vs] = 0.0
        else:
            vp = vp - np.linalg.pinv(J2) @ (J2 @ vp)
        return vp, np.zeros(0)
    if formulation == "redundant":
        J = np.vstack([_stack(persistent, nv), J2])
        dv, lam = _kkt(M, J, -J @ v, U)
        return v + dv, lam
    if formulation == "projected":
        N = projector(mech, persistent, M)
        B = J2 @ N
        dv, lam = _kkt(M, B, -J2 @ v, None if U is None else N.T @ U)
        return v + dv, lam
    F1 = complement(mech, persistent)
    s = np.linalg.lstsq(F1, v, rcond=None)[0] if F1.shape[1] else np.zeros(0)
    B = J2 @ F1
    ds, lam = _kkt(F1.T @ M @ F1, B, -B @ s, None if U is None else F1.T @ U)
    return F1 @ (s + ds), lam


def lock_joint(sim, joint: str, method: str = "momentum", formulation: str = "redundant",
               name: str | None = None, U: np.ndarray | None = None) -> LockResult:
    """Lock a joint now: velocity transition, then a ``JointLock`` constraint keeps it still.

    Args:
        sim: the simulator (its current state is the switching state).
        joint: joint name.
        method: ``"momentum"`` (momentum-consistent, default) or ``"naive"`` (zero its velocity).
        formulation: ``"redundant"`` (eq. 24), ``"projected"`` (eq. 32) or ``"minimal"`` (eq. 37).
        name: constraint name (default ``lock.<joint>``).
        U: impulsive generalized force acting at the switch (nv,), N m s; default zero.
    """
    if method not in METHODS:
        raise LockError(f"lock_joint({joint!r}): method must be one of {', '.join(METHODS)}, got {method!r}")
    if formulation not in FORMULATIONS:
        raise LockError(f"lock_joint({joint!r}): formulation must be one of {', '.join(FORMULATIONS)}, "
                        f"got {formulation!r}")
    mech = sim.mech
    cname = name or lock_name(joint)
    mech.joint_id(joint)  # UnknownNameError for a bad joint name
    if cname in mech.constraints or joint in locked_joints(mech):
        raise LockError(f"t = {sim.t:.9g} s: joint {joint!r} of {mech.name!r} is already locked "
                        f"(locked joints: {', '.join(locked_joints(mech))})")
    v0 = np.array(sim.v, dtype=float)
    mech.set_state(sim.q, v0)
    M, _ = mech.dynamics()
    M = M.copy()
    persistent = list(mech.constraints.values())
    lock = JointLock(cname, joint)
    lock.bind(mech)
    v1, lam = transition(mech, v0, persistent, [lock], method, formulation, U)
    mech.add_constraint(lock)
    free = complement(mech, list(mech.constraints.values()))
    res = LockResult(joint, cname, method, formulation, v0, v1, lam, 0.5 * float(v0 @ M @ v0),
                     0.5 * float(v1 @ M @ v1), free.T @ M @ v0, free.T @ M @ v1, free)
    sim.log("lock", f"lock joint {joint} ({method}" + (f", {formulation})" if method == "momentum" else ")"),
            joint=joint, constraint=cname, method=method, formulation=formulation,
            v_before=v0.tolist(), v_after=v1.tolist(), impulse=lam.tolist(),
            kinetic_energy_before=res.kinetic_energy_before, kinetic_energy_after=res.kinetic_energy_after,
            momentum_before=res.momentum_before.tolist(), momentum_after=res.momentum_after.tolist())
    sim.set_state(v=v1)
    sim.lock_results.append(res)
    return res


def unlock_joint(sim, joint: str) -> None:
    """Release a joint locked by :func:`lock_joint` (velocities are continuous at release)."""
    mech = sim.mech
    names = [n for n, c in mech.constraints.items() if isinstance(c, JointLock) and c.joint == joint]
    if not names:
        raise LockError(f"t = {sim.t:.9g} s: joint {joint!r} of {mech.name!r} is not locked "
                        f"(locked joints: {', '.join(locked_joints(mech)) or 'none'})")
    for n in names:
        mech.remove_constraint(n)
    sim.log("unlock", f"unlock joint {joint}", joint=joint, constraint=names[0], v=np.asarray(sim.v).tolist())
    sim.set_state()
