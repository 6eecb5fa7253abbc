"""Quantities: named handles on what can be measured or controlled in a mechanism.

Each quantity follows one small protocol (the "task element"): at the
mechanism's current state it gives its ``position`` (value), ``velocity``, its
``jacobian`` J (k, nv) and ``drift`` Jdot v (k,), so that its acceleration is
``J a + Jdot v``, affine in the step's unknowns. The same quantity can then be
placed in a control equation, a direct assignment, a cost or an inequality.

Unknown-valued quantities (:class:`ControlTorque`, :class:`ControlTorques`,
:class:`ConstraintForce`, :class:`JointAcceleration`, :class:`JointAccelerations`) select
columns of the unknown vector directly and read their value from the last solve.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from .errors import ControlkitError, ModelError
from .expressions import JACOBIAN, LIN, Expr, Lin, acc, pos, vel
from .vec3 import cross

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


class Quantity:
    """Base class; subclasses set ``name``, ``size`` and implement the protocol."""

    name: str = "quantity"
    size: int = 0
    unit: str = ""

    def position(self, mech) -> np.ndarray:
        raise ControlkitError(f"quantity {self.name!r} has no position-level value")

    def velocity(self, mech) -> np.ndarray:
        return self.jacobian(mech).dot(mech.v)

    def jacobian(self, mech) -> np.ndarray:
        raise ControlkitError(f"quantity {self.name!r} has no Jacobian")

    def drift(self, mech) -> np.ndarray:
        raise ControlkitError(f"quantity {self.name!r} has no drift term")

    def acceleration(self, ctx) -> Lin:
        """``J a + Jdot v`` as an affine function of x = [a | tau | lam] (only its ``a`` block)."""
        L = ctx.layout
        J = self.jacobian(ctx.mech)
        if J.shape != (self.size, L.nv):  # e.g. a size-1 quantity's Jacobian given as (nv,)
            J = np.broadcast_to(J, (self.size, L.nv))
        return Lin(b=self.drift(ctx.mech).copy(), a=J, nv=L.nv, nw=L.nx - L.nv)

    def acceleration_form(self, ctx) -> tuple | None:
        """How ``acc(self)`` compiles (:func:`controlkit.expressions.compile_affine`): from
        ``jacobian`` and ``drift``, unless a subclass computes its acceleration otherwise (None)."""
        return (JACOBIAN, self) if type(self).acceleration is Quantity.acceleration else None

    # sugar: q.pos, q.vel, q.acc
    @property
    def pos(self):
        return pos(self)

    @property
    def vel(self):
        return vel(self)

    @property
    def acc(self):
        return acc(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class FramePoint(Quantity):
    """World position (m) of a point fixed on a frame (a body or feature).

    Args:
        mech: the mechanism.
        frame: frame, body or feature name.
        offset: point in the frame's coordinates (3,), m.
    """

    size, unit = 3, "m"

    def __init__(self, mech, frame: str, offset=None):
        self.frame, self.mechanism = frame, mech
        self.fid = mech.frame_id(frame)
        self.offset = np.zeros(3) if offset is None else np.asarray(offset, dtype=float).reshape(3)
        # (a program may ask for a point at every step: no numpy reduction for the common no offset)
        self._has_offset = offset is not None and bool(self.offset.any())
        self.name = f"{frame}+{self.offset.tolist()}" if self._has_offset else frame

    def _r(self, mech):
        return mech.kinematics().oMf[self.fid].rotation.dot(self.offset)

    def position(self, mech=None):
        """The point's world position (3,), m, at ``mech``'s state (default: the mechanism it was made for)."""
        M = (self.mechanism if mech is None else mech).kinematics().oMf[self.fid]
        return M.translation + (M.rotation.dot(self.offset) if self._has_offset else 0.0)

    # (at every evaluation: without an offset, Pinocchio's getters are called directly, as the
    # mechanism's frame_* methods call them; a point's linear parts come as new arrays)
    def jacobian(self, mech):
        if not self._has_offset:
            J = pin.getFrameJacobian(mech.model, mech.kinematics(), self.fid, LWA)
            return J[:3] if J.ndim == 2 else J.reshape(6, 1)[:3]  # (a one-dof model's comes as a vector)
        J = mech.frame_jacobian(self.fid)
        return J[:3] - pin.skew(self._r(mech)).dot(J[3:])

    def velocity(self, mech):
        if not self._has_offset:
            return pin.getFrameVelocity(mech.model, mech.kinematics(), self.fid, LWA).linear
        nu = mech.frame_velocity(self.fid)
        return nu.linear + cross(nu.angular, self._r(mech))

    def drift(self, mech):
        if not self._has_offset:
            return pin.getFrameClassicalAcceleration(mech.model, mech.kinematics(), self.fid, LWA).linear
        d = mech.frame_drift(self.fid)
        w = mech.frame_velocity(self.fid).angular
        r = self._r(mech)
        return d[:3] + cross(d[3:], r) + cross(w, cross(w, r))


class FrameOrientation(Quantity):
    """Orientation of a frame: value a rotation matrix (3, 3); velocity the angular velocity (rad/s, world axes)."""

    size, unit = 3, "rad"

    def __init__(self, mech, frame: str):
        self.frame, self.fid, self.name = frame, mech.frame_id(frame), f"{frame}.orientation"

    def position(self, mech):
        return mech.kinematics().oMf[self.fid].rotation.copy()

    def jacobian(self, mech):
        return mech.frame_jacobian(self.fid)[3:]

    def velocity(self, mech):
        return pin.getFrameVelocity(mech.model, mech.kinematics(), self.fid, LWA).angular

    def drift(self, mech):
        return pin.getFrameClassicalAcceleration(mech.model, mech.kinematics(), self.fid, LWA).angular


class JointAngle(Quantity):
    """Angle (rad) or displacement (m) of a one-degree-of-freedom joint."""

    size = 1

    def __init__(self, mech, joint: str):
        self.joint, self.name = joint, joint
        jid = mech.joint_id(joint)
        jm = mech.model.joints[jid]
        if jm.nv != 1:
            raise ModelError(f"joint {joint!r} has {jm.nv} degrees of freedom; JointAngle needs one "
                             f"(use FrameOrientation for spherical joints)")
        self.iq, self.iv, self.nq = jm.idx_q, jm.idx_v, jm.nq
        self.unit = "m" if "Prismatic" in jm.shortname() else "rad"
        self._J = np.zeros((1, mech.nv))
        self._J[0, self.iv] = 1.0

    def position(self, mech):
        if self.nq == 2:  # unbounded revolute stores (cos, sin)
            c, s = mech.q[self.iq:self.iq + 2]
            return np.array([np.arctan2(s, c)])
        return mech.q[self.iq:self.iq + 1].copy()

    def velocity(self, mech):
        return mech.v[self.iv:self.iv + 1].copy()

    def jacobian(self, mech):
        return self._J

    def drift(self, mech):
        return np.zeros(1)

    def acceleration_form(self, ctx) -> tuple | None:
        """A joint's acceleration is a constant selection of the unknowns (J constant, no drift): it
        compiles into the constant rows, with nothing to evaluate per state."""
        if type(self).acceleration is not Quantity.acceleration or type(self).jacobian is not JointAngle.jacobian \
                or type(self).drift is not JointAngle.drift:
            return super().acceleration_form(ctx)
        return (LIN, self.acceleration(ctx))


class CachedQuantity(Quantity):
    """A quantity whose value, rate, Jacobian and drift are computed together once per state.

    Subclasses implement ``_evaluate(mech) -> (value, velocity, J, drift)``.
    """

    _version = -1

    def _evaluate(self, mech):
        raise NotImplementedError

    def _update(self, mech):
        if self._version != mech.state_version:
            self._c, self._cv, self._J, self._drift = self._evaluate(mech)
            self._version = mech.state_version

    def position(self, mech):
        self._update(mech)
        return self._c

    def velocity(self, mech):
        self._update(mech)
        return self._cv

    def jacobian(self, mech):
        self._update(mech)
        return self._J

    def drift(self, mech):
        self._update(mech)
        return self._drift


class CenterOfMass(CachedQuantity):
    """Centre of mass (m, world) of the whole mechanism."""

    size, unit, name = 3, "m", "com"

    def __init__(self, mech):
        self._version = -1

    def _evaluate(self, mech):
        d = mech.kinematics()  # reuse the cached forward kinematics (with a = 0)
        c = pin.centerOfMass(mech.model, d, pin.KinematicLevel.ACCELERATION, False).copy()
        J = pin.jacobianCenterOfMass(mech.model, d, False).copy()
        return c, d.vcom[0].copy(), J, d.acom[0].copy()


def _selection(cols: np.ndarray, layout) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The 0/1 rows selecting columns ``cols`` of x, split into their a and w blocks (None if zero).

    Read-only: the blocks are shared by every evaluation with this layout.
    """
    nv, nw = layout.nv, layout.nx - layout.nv
    k = len(cols)
    rows = np.arange(k)
    blocks = []
    for lo, width, in_block in ((0, nv, cols < nv), (nv, nw, cols >= nv)):
        if not in_block.any():
            blocks.append(None)
            continue
        B = np.zeros((k, width))
        B[rows[in_block], cols[in_block] - lo] = 1.0
        B.setflags(write=False)
        blocks.append(B)
    return blocks[0], blocks[1]


class _Unknown(Quantity, Expr):
    """A quantity that is a block of the unknown vector itself; usable directly in expressions
    (``tau <= 50``, ``cost(tau)``) as well as through ``acc(...)``."""

    def evaluate(self, ctx):
        return self.acceleration(ctx)

    def describe(self) -> str:
        return self.name

    def acceleration_form(self, ctx) -> tuple | None:
        """A block of the unknowns compiles to a constant selection (it depends on the layout only)."""
        return (LIN, self.acceleration(ctx)) if type(self).acceleration is _Unknown.acceleration else None

    def _leaf(self, ctx):
        leaf = self.acceleration_form(ctx) if type(self).evaluate is _Unknown.evaluate else None
        return super()._leaf(ctx) if leaf is None else leaf

    def _cols(self, layout) -> np.ndarray:
        raise NotImplementedError

    def acceleration(self, ctx) -> Lin:
        L = ctx.layout
        sel = self.__dict__.get("_selection")
        if sel is None or sel[0] is not L:  # the selection depends on the layout only
            cols = self._cols(L)
            sel = self._selection = (L, *_selection(cols, L), len(cols))
        return Lin(b=np.zeros(sel[3]), a=sel[1], w=sel[2], nv=L.nv, nw=L.nx - L.nv)

    def columns(self, layout) -> np.ndarray:
        """Indices of the unknown vector this quantity occupies."""
        return self._cols(layout)


class ControlTorque(_Unknown):
    """Control torque (N m) or force (N) of an actuated joint; its value is read after a solve."""

    def __init__(self, mech, joint: str):
        self.joint, self.name = joint, f"tau.{joint}"
        self.tcols = mech.tau_columns(joint)
        self.size = len(self.tcols)
        jm = mech.model.joints[mech.joint_id(joint)]
        self.unit = "N" if "Prismatic" in jm.shortname() else "N m"

    def _cols(self, layout):
        return layout.tau.start + self.tcols

    def tau_columns_of(self, mech) -> np.ndarray:
        """Indices into the torque vector (ntau,) this quantity assigns."""
        return self.tcols

    def position(self, mech):
        return mech.solution.tau[self.tcols].copy()


class ConstraintForce(_Unknown):
    """Force (N, N m) of an active constraint (loop closure, weld, contact hinge); read after a solve."""

    unit = "N"

    def __init__(self, mech, constraint: str):
        if constraint not in mech.constraints:
            from .errors import UnknownNameError
            raise UnknownNameError("constraint", constraint, mech.constraints, f"mechanism {mech.name!r}")
        self.constraint, self.name = constraint, f"lam.{constraint}"
        self.size = mech.constraints[constraint].size

    def _cols(self, layout):
        s = layout.lam[self.constraint]
        return np.arange(s.start, s.stop)

    def position(self, mech):
        return mech.solution.lam[self.constraint].copy()


class JointAcceleration(_Unknown):
    """Acceleration (rad/s^2 or m/s^2) of a joint's degrees of freedom."""

    def __init__(self, mech, joint: str):
        self.joint, self.name = joint, f"a.{joint}"
        self.vs = mech.joint_v_slice(joint)
        self.size = self.vs.stop - self.vs.start

    def _cols(self, layout):
        return np.arange(layout.a.start + self.vs.start, layout.a.start + self.vs.stop)

    def position(self, mech):
        return mech.solution.a[self.vs].copy()


class JointAccelerations(_Unknown):
    """Accelerations (rad/s^2 or m/s^2) of several joints' degrees of freedom, stacked (size,).

    One quantity for what would be one :class:`JointAcceleration` per joint: a posture cost on
    sixteen joints written as ``JointAccelerations(mech, joints) - TimeFunction(f)`` (f giving the
    (size,) target accelerations) is one block of rows and one function call per evaluation,
    instead of sixteen of each; its rows are those of the per-joint costs stacked in ``joints``'
    order, so the solution is the same.

    Args:
        mech: the mechanism.
        joints: joint names (default: every joint but free-flyers, in the model's order).

    ``v_index`` (size,): the positions of these degrees of freedom in v (and a), to pick a target
    out of a whole-body vector: ``a_des[q.v_index]``.
    """

    unit = "rad/s^2"

    def __init__(self, mech, joints=None):
        model = mech.model
        if joints is None:
            joints = [n for n in list(model.names)[1:]
                      if model.joints[model.getJointId(n)].shortname() != "JointModelFreeFlyer"]
        self.joints = list(joints)
        if not self.joints:
            raise ControlkitError("JointAccelerations needs at least one joint")
        slices = [mech.joint_v_slice(j) for j in self.joints]
        self.v_index = np.concatenate([np.arange(s.start, s.stop) for s in slices])
        self.v_index.setflags(write=False)
        self.size = len(self.v_index)
        self.name = "a(" + ", ".join(self.joints) + ")"

    def _cols(self, layout):
        return layout.a.start + self.v_index

    def position(self, mech):
        return mech.solution.a[self.v_index]


class ControlTorques(_Unknown):
    """All control torques at once (ntau,), N m / N, in the mechanism's actuated order."""

    name, unit = "tau", "N m"

    def __init__(self, mech):
        self.size = mech.ntau

    def _cols(self, layout):
        return np.arange(layout.tau.start, layout.tau.stop)

    def tau_columns_of(self, mech) -> np.ndarray:
        """Indices into the torque vector (ntau,) this quantity assigns: all of them (read-only)."""
        cols = self.__dict__.get("_all")
        if cols is None or len(cols) != mech.ntau:  # (a servo asks at every tick)
            cols = self._all = np.arange(mech.ntau)
            cols.setflags(write=False)
        return cols

    def position(self, mech):
        return mech.solution.tau.copy()
