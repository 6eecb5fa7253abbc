"""Bilateral constraints (the thesis' hinges that are not tree joints).

A constraint knows, at the mechanism's current state, its position error
``phi`` (k,), its Jacobian ``J`` (k, nv) and its drift ``Jdot v`` (k,), so that
its acceleration equation is ``J a + Jdot v = -(kv * J v + kp * phi)``
(Baumgarte). Its force ``lam`` (k,) enters the motion equations as ``J^T lam``.

Kinds:
- :class:`PointConstraint` — two points coincide (ball-and-socket loop closure,
  or a point held at a fixed world position when ``frame_b`` is None);
- :class:`HingeConstraint` — a pin hinge loop closure: points coincide and the
  ``z`` axes stay parallel (5 rows);
- :class:`WeldConstraint` — two frames keep their relative placement (6 rows),
  e.g. a foot welded to the ground ("magnetic shoes");
- :class:`JointLock` — a joint's velocity is held at zero (its angle frozen).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from .errors import ModelError
from .vec3 import cross

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


class Constraint:
    """Base class: a named set of k bilateral rows on the mechanism's accelerations.

    Subclasses implement ``error``, ``jacobian`` and ``drift`` (and ``force_jacobian`` and
    ``row_labels`` when they differ from the defaults); ``terms`` is an optional fast path
    giving all three at once.
    """

    size: int = 0
    kind: str = "constraint"
    # methods whose redefinition in a subclass makes an inherited fast ``terms`` stale
    _ROW_METHODS = ("error", "jacobian", "drift", "_placements", "_jac", "_vel", "_drift6", "_axes")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # a subclass that redefines how its rows are computed, but not terms(), must not
        # inherit a parent's fused terms(): it falls back to calling its own methods
        if "terms" not in cls.__dict__ and any(m in cls.__dict__ for m in Constraint._ROW_METHODS):
            cls.terms = Constraint.terms

    def __init__(self, name: str):
        if not name:
            raise ModelError("a constraint needs a non-empty name")
        self.name = name
        self.mech = None

    def bind(self, mech) -> None:
        """Resolve frame and joint names against a mechanism."""
        self.mech = mech

    def error(self) -> np.ndarray:
        """Position-level error phi (k,) at the mechanism's state (m or rad)."""
        raise NotImplementedError

    def jacobian(self) -> np.ndarray:
        """Jacobian J (k, nv) with phidot = J v."""
        raise NotImplementedError

    def drift(self) -> np.ndarray:
        """The ``Jdot v`` term (k,) so that phiddot = J a + Jdot v."""
        raise NotImplementedError

    def terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(error(), jacobian(), drift())`` at the mechanism's state, in one call.

        The assembly calls this once per constraint and evaluation; built-in constraints
        override it to share their kinematics look-ups between the three. Return new arrays
        whenever the rows change: at an unchanged state, a constraint that returns the very
        arrays of the last call is taken to have the same rows (the stacked rows and the
        solver's factors are kept).
        """
        return self.error(), self.jacobian(), self.drift()

    def force_jacobian(self) -> np.ndarray:
        """G (k, nv): the constraint's force enters the motion equations as ``G^T lam``.

        Equal to ``jacobian()`` for ideal (workless) constraints; a sliding friction contact
        overrides it (its force ``lam_n (n - mu_k u)`` is not along its normal row).
        """
        return self.jacobian()

    #: whether its force acts along its rows right now (``force_jacobian() == jacobian()``); a
    #: subclass overriding ``force_jacobian`` says when it does (a contact unless it slides)
    ideal = True

    #: whether the critical-form analysis examines this constraint's redundancy (a unilateral
    #: contact's redundant points are resolved by its support set instead)
    second_order = True

    def force_inequalities(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Inequalities ``C lam <= d`` on this constraint's own forces, or None (bilateral).

        Returns C (r, k) and d (r,) (N). A contact held under inverse dynamic control uses them
        for ``lam_n >= 0`` and its friction pyramid, so the solve picks compressive forces.
        """
        return None

    def describe(self) -> str:
        """One line naming what the constraint holds."""
        return f"{self.kind} {self.name}"

    def row_labels(self) -> list[str]:
        """A label per row, for printouts."""
        return [f"{self.name}[{i}]" for i in range(self.size)]


def static_labels(c: Constraint) -> bool:
    """Whether a constraint's row labels depend on its name and size only (so may be cached)."""
    return type(c).row_labels in _STATIC_LABELS


class _TwoFrames(Constraint):
    def __init__(self, name: str, frame_a: str, frame_b: str | None = None, target: pin.SE3 | None = None):
        super().__init__(name)
        if frame_a == frame_b:
            raise ModelError(f"constraint {name!r} joins frame {frame_a!r} to itself")
        self.frame_a, self.frame_b = frame_a, frame_b
        self.target = target

    def bind(self, mech) -> None:
        super().bind(mech)
        self.fa = mech.frame_id(self.frame_a)
        self.fb = mech.frame_id(self.frame_b) if self.frame_b is not None else None
        if self.fb is None and self.target is None:
            mech.kinematics()
            self.target = mech.data.oMf[self.fa].copy()
        if self.fb is not None and mech.model.frames[self.fa].parentJoint == mech.model.frames[self.fb].parentJoint:
            raise ModelError(
                f"constraint {self.name!r} joins {self.frame_a!r} and {self.frame_b!r}, which are on the same body"
            )

    def _placements(self):
        d = self.mech.kinematics()
        Ma = d.oMf[self.fa]
        Mb = d.oMf[self.fb] if self.fb is not None else self.target
        return Ma, Mb

    def _jac(self):
        Ja = self.mech.frame_jacobian(self.fa)
        if self.fb is None:
            return Ja
        return Ja - self.mech.frame_jacobian(self.fb)

    def _vel(self):
        va = self.mech.frame_velocity(self.fa).vector
        if self.fb is None:
            return va, np.zeros(6)
        return va, self.mech.frame_velocity(self.fb).vector

    def _drift6(self):
        da = self.mech.frame_drift(self.fa)
        if self.fb is None:
            return da
        return da - self.mech.frame_drift(self.fb)

    def _fast(self):
        """(data, a's placement, b's placement or target, J, drift6) with one kinematics check.

        Calls Pinocchio directly (the same kernels as ``_jac``/``_drift6``): at a few
        microseconds per constraint, the method calls in between are most of the cost.
        """
        mech = self.mech
        d = mech.kinematics()
        m = mech.model
        fa, fb = self.fa, self.fb
        J = pin.getFrameJacobian(m, d, fa, LWA)
        if J.ndim == 1:  # a one-dof mechanism's Jacobian comes as a vector: rows (6, 1)
            J = J.reshape(6, 1)
        dr = pin.getFrameClassicalAcceleration(m, d, fa, LWA).vector
        if fb is None:
            return d, d.oMf[fa], self.target, J, dr
        J -= pin.getFrameJacobian(m, d, fb, LWA).reshape(J.shape)
        dr -= pin.getFrameClassicalAcceleration(m, d, fb, LWA).vector
        return d, d.oMf[fa], d.oMf[fb], J, dr

    def describe(self) -> str:
        other = self.frame_b if self.frame_b is not None else "world"
        return f"{self.kind} {self.name}: {self.frame_a} <-> {other}"


class PointConstraint(_TwoFrames):
    """The origins of two frames coincide (3 rows); ``frame_b=None`` fixes frame_a's origin in the world."""

    size = 3
    kind = "point"

    def error(self):
        Ma, Mb = self._placements()
        return Ma.translation - Mb.translation

    def jacobian(self):
        return self._jac()[:3]

    def drift(self):
        return self._drift6()[:3]

    def terms(self):
        _, Ma, Mb, J, dr = self._fast()
        return Ma.translation - Mb.translation, J[:3], dr[:3]


class WeldConstraint(_TwoFrames):
    """Two frames keep their placement (6 rows: 3 translation, 3 rotation in world axes)."""

    size = 6
    kind = "weld"

    def error(self):
        Ma, Mb = self._placements()
        return np.concatenate([Ma.translation - Mb.translation, pin.log3(Ma.rotation.dot(Mb.rotation.T))])

    def jacobian(self):
        return self._jac()

    def drift(self):
        return self._drift6()

    def terms(self):
        _, Ma, Mb, J, dr = self._fast()
        e = np.empty(6)
        e[:3] = Ma.translation - Mb.translation
        e[3:] = pin.log3(Ma.rotation.dot(Mb.rotation.T))
        return e, J, dr


class HingeConstraint(_TwoFrames):
    """Pin-hinge loop closure: origins coincide and the frames' z axes stay parallel (5 rows)."""

    size = 5
    kind = "pin"

    def _axes(self):
        Ma, Mb = self._placements()
        Ra, Rb = Ma.rotation, Mb.rotation
        # rows n_i^T (w_a - w_b) with n_i = e_i(a) x z(b) are the exact derivatives of e_i(a) . z(b)
        return Ra[:, 0], Ra[:, 1], Rb[:, 2]

    def error(self):
        Ma, Mb = self._placements()
        xa, ya, zb = self._axes()
        return np.concatenate([Ma.translation - Mb.translation, [xa.dot(zb), ya.dot(zb)]])

    def jacobian(self):
        J = self._jac()
        xa, ya, zb = self._axes()
        n = np.vstack([cross(xa, zb), cross(ya, zb)])
        return np.vstack([J[:3], n.dot(J[3:])])

    def drift(self):
        xa, ya, zb = self._axes()
        va, vb = self._vel()
        wa, wb = va[3:], vb[3:]
        d6 = self._drift6()
        rows = []
        for ea in (xa, ya):
            n = cross(ea, zb)
            ndot = cross(cross(wa, ea), zb) + cross(ea, cross(wb, zb))
            rows.append(n.dot(d6[3:]) + ndot.dot(wa - wb))
        return np.concatenate([d6[:3], rows])

    def terms(self):
        d, Ma, Mb, J6, d6 = self._fast()
        Ra, Rb = Ma.rotation, Mb.rotation
        xa, ya, zb = Ra[:, 0], Ra[:, 1], Rb[:, 2]
        e = np.empty(5)
        e[:3] = Ma.translation - Mb.translation
        e[3], e[4] = xa.dot(zb), ya.dot(zb)
        nx, ny = cross(xa, zb), cross(ya, zb)
        n = np.empty((2, 3))
        n[0], n[1] = nx, ny
        J = np.empty((5, J6.shape[1]))
        J[:3] = J6[:3]
        J[3:] = n.dot(J6[3:])
        wa = self.mech.frame_velocity(self.fa).angular
        wb = self.mech.frame_velocity(self.fb).angular if self.fb is not None else np.zeros(3)
        dr = np.empty(5)
        dr[:3] = d6[:3]
        for i, (ea, n) in enumerate(((xa, nx), (ya, ny))):
            ndot = cross(cross(wa, ea), zb) + cross(ea, cross(wb, zb))
            dr[3 + i] = n.dot(d6[3:]) + ndot.dot(wa - wb)
        return e, J, dr

    def row_labels(self):
        return [f"{self.name}.{s}" for s in ("x", "y", "z", "axis_x", "axis_y")]


class JointLock(Constraint):
    """A joint held still: its velocity rows are zero (its angle frozen where it was locked)."""

    kind = "lock"

    def __init__(self, name: str, joint: str):
        super().__init__(name)
        self.joint = joint

    def bind(self, mech) -> None:
        super().bind(mech)
        self.vs = mech.joint_v_slice(self.joint)
        self.qs = mech.joint_q_slice(self.joint)
        self.size = self.vs.stop - self.vs.start
        self.q_locked = mech.q[self.qs].copy()
        self._J = np.zeros((self.size, mech.nv))
        self._J[:, self.vs] = np.eye(self.size)
        self._zero = np.zeros(self.size)
        self._zero.setflags(write=False)  # (the drift: shared by every evaluation)

    def error(self):
        q = self.mech.q[self.qs]
        if q.size == self.size:
            return q - self.q_locked
        return np.zeros(self.size)  # multi-dof Lie-group joint: velocity-level lock only

    def terms(self):
        # (at every evaluation while a toe is held: one call; the Jacobian and the zero drift are constant)
        return self.error(), self._J, self._zero

    def jacobian(self):
        return self._J

    def drift(self):
        return np.zeros(self.size)

    def describe(self) -> str:
        return f"lock {self.name}: joint {self.joint}"


_STATIC_LABELS = {Constraint.row_labels, HingeConstraint.row_labels}
