"""Point kinematics of the two bodies of a contact at the mechanism's state: placements,
velocities, drift accelerations and Jacobian rows of world points, shared by every hinge."""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from controlkit.vec3 import cross

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


# ------------------------------------------------------------ point kinematics
def _skew(v: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """S (3, 3) with ``r @ S = r x v`` for rows r (``sign * v``'s with ``sign``: -1 gives ``v x r``)."""
    x, y, z = v.tolist()  # (floats: numpy's scalars cost more to index and assemble)
    if sign < 0.0:
        x, y, z = -x, -y, -z
    return np.array([0.0, -z, y, z, 0.0, -x, -y, x, 0.0]).reshape(3, 3)  # (flat: a nested list costs more)


class _Body:
    """World placement, velocity, drift acceleration and Jacobian of a joint's body at a state.

    Point methods take world points ``x`` (k, 3) (m) and return one row per point. ``world``
    is True for the fixed world (joint 0), whose terms all vanish.
    """

    __slots__ = ("R", "t", "w", "vo", "alpha", "ao", "J", "JA", "world", "_W", "H", "V", "_Sw")

    def __init__(self, mech, joint: int, table: "BodyTable | None" = None):
        nv = mech.nv
        self.world = joint == 0
        self._W = self._Sw = None
        if self.world:
            # (H, V: the placement (4, 4) and velocity [linear; angular] the compiled rows read)
            self.H, self.V = np.eye(4), np.zeros(6)
            self.R, self.t = np.eye(3), np.zeros(3)
            self.w = self.vo = self.alpha = self.ao = np.zeros(3)
            self.J = np.zeros((6, nv))
            self.JA = np.zeros((6, nv + 1))
            return
        if table is not None:  # its arrays loaded already (BodyTable.load): views and copies of them
            H, V, JA = self.H, self.V, self.JA = table.H[joint], table.V[joint], table.JA[joint]
            self.R, self.t = H[:3, :3], H[:3, 3]
            A = JA[:, nv].copy()  # (copies: the getters' bits in contiguous arrays, as below)
            self.vo, self.w, self.ao, self.alpha = V[:3], V[3:], A[:3], A[3:]
            self.J = JA[:, :nv].copy()
            return
        m, d = mech.model, mech.data
        H = self.H = d.oMi[joint].homogeneous  # (a new array: R and t are views of it)
        self.R, self.t = H[:3, :3], H[:3, 3]
        # the joint origin's velocity and classical drift acceleration (kinematics() runs with
        # a = 0) in world axes: [linear; angular]
        V = self.V = pin.getVelocity(m, d, joint, LWA).vector
        A = pin.getClassicalAcceleration(m, d, joint, LWA).vector
        self.vo, self.w, self.ao, self.alpha = V[:3], V[3:], A[:3], A[3:]
        self.J = pin.getJointJacobian(m, d, joint, LWA)
        # [J | drift]: one product gives a point's Jacobian rows and the drift's rigid part
        self.JA = np.empty((6, nv + 1))
        self.JA[:, :nv] = self.J
        self.JA[:, nv] = A

    def spin(self) -> np.ndarray:
        """``W = w w^T - |w|^2 I`` (3, 3) (1/s^2): ``W r = w x (w x r)``, the centripetal acceleration."""
        W = self._W
        if W is None:
            w0, w1, w2 = self.w.tolist()
            ww = w0 * w0 + w1 * w1 + w2 * w2
            W = self._W = np.array([w0 * w0 - ww, w0 * w1, w0 * w2, w1 * w0, w1 * w1 - ww, w1 * w2,
                                    w2 * w0, w2 * w1, w2 * w2 - ww]).reshape(3, 3)
        return W

    def point(self, local: np.ndarray) -> np.ndarray:
        """World position (m) of local points (k, 3) or (3,)."""
        return local.dot(self.R.T) + self.t

    def spin_cross(self) -> np.ndarray:
        """S (3, 3) with ``r @ S = w x r`` (kept: every point velocity of the state takes it)."""
        S = self._Sw
        if S is None:
            S = self._Sw = _skew(self.w, -1.0)
        return S

    def velocity(self, x: np.ndarray) -> np.ndarray:
        return self.vo + (x - self.t).dot(self.spin_cross())

    def drift(self, x: np.ndarray) -> np.ndarray:
        r = x - self.t
        S = self.spin_cross()
        return self.ao + _crossk(self.alpha, r) + r.dot(S).dot(S)

    def directional_jacobian(self, x: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Rows ``d_i . J(x_i)`` (k, nv): the velocity of point x_i along d_i (both (k, 3))."""
        # d . (v + w x r) = d . v + w . (r x d)
        return d.dot(self.J[:3]) + _crossk(x - self.t, d).dot(self.J[3:])

    # the hot path of the contact rows: [J rows | drift] in one product
    def along(self, r: np.ndarray, k: np.ndarray) -> np.ndarray:
        """``[k . J(x_i) | k . a(x_i)]`` (m, nv + 1) for points at ``r`` (m, 3) from the body's
        origin along one direction k: Jacobian rows and drift accelerations (m/s^2)."""
        out = k.dot(self.JA[:3])[None, :] + r.dot(_skew(k)).dot(self.JA[3:])
        w = self.w
        out[:, -1] += r.dot(w) * w.dot(k) - r.dot(k) * w.dot(w)  # k . (w x (w x r))
        return out

    def at_point(self, r: np.ndarray, D: np.ndarray) -> np.ndarray:
        """``[d_i . J(x) | d_i . a(x)]`` (m, nv + 1) for one point at ``r`` (3,) along the
        directions D (m, 3)."""
        out = D.dot(self.JA[:3] - _skew(r).dot(self.JA[3:]))
        w = self.w
        out[:, -1] += r.dot(w) * D.dot(w) - D.dot(r) * w.dot(w)
        return out

    def velocity_along(self, r: np.ndarray, c: np.ndarray) -> np.ndarray:
        """``c . (v_o + w x r)`` for points at ``r`` (m, 3) or (3,) (m/s)."""
        return self.vo.dot(c) + r.dot(cross(c, self.w))


class BodyTable:
    """The bodies of one state as arrays by joint id, for the compiled rows of all hinges at once:
    placements ``H`` (nj, 4, 4), velocities ``V`` (nj, 6) [linear; angular] and ``[J | drift]``
    ``JA`` (nj, 6, nv + 1). Only the rows of the joints loaded (:meth:`load`) are set; the world's
    (joint 0) are the identity and zeros. Its :class:`_Body` objects (:meth:`body`) are built on
    first use: from the loaded rows, or from Pinocchio's getters with arrays of their own."""

    __slots__ = ("H", "V", "JA", "bodies", "_loaded")

    def __init__(self, njoints: int, nv: int, world: _Body):
        self.H = np.empty((njoints, 4, 4))
        self.H[0] = np.eye(4)
        self.V = np.zeros((njoints, 6))
        self.JA = np.zeros((njoints, 6, nv + 1))
        self.bodies = {0: world}
        self._loaded = {0}  # joints whose rows are set

    def body(self, mech, joint: int) -> _Body:
        """Joint ``joint``'s body at the table's state (built on first use)."""
        b = self.bodies.get(joint)
        if b is None:
            b = self.bodies[joint] = _Body(mech, joint, self if joint in self._loaded else None)
        return b

    def load(self, mech, joint: int) -> None:
        """Set joint ``joint``'s rows from Pinocchio's getters (the values :class:`_Body` reads),
        without building its :class:`_Body`: the compiled rows need only the arrays."""
        if joint in self._loaded:
            return
        b = self.bodies.get(joint)
        if b is not None:  # (built before: its arrays)
            self.H[joint], self.V[joint], self.JA[joint] = b.H, b.V, b.JA
            self._loaded.add(joint)
            return
        m, d = mech.model, mech.data
        nv = mech.nv
        self.H[joint] = d.oMi[joint].homogeneous
        self.V[joint] = pin.getVelocity(m, d, joint, LWA).vector
        JA = self.JA[joint]
        JA[:, :nv] = pin.getJointJacobian(m, d, joint, LWA)
        JA[:, nv] = pin.getClassicalAcceleration(m, d, joint, LWA).vector
        self._loaded.add(joint)


def body_table(mech) -> BodyTable:
    """The bodies at the mechanism's state, shared by every hinge until it changes."""
    # (the mechanism's declared cache entries: controlkit.mechanism.CACHE_ENTRIES)
    cache = mech.cache.get("contact_bodies")
    if cache is None or cache[0] != mech.state_version:
        mech.kinematics()
        world = mech.cache.get("contact_world_body")
        if world is None or world.J.shape[1] != mech.nv:
            world = mech.cache["contact_world_body"] = _Body(mech, 0)  # the world never moves: built once
        cache = mech.cache["contact_bodies"] = (mech.state_version, BodyTable(mech.model.njoints, mech.nv, world))
    return cache[1]


def _bodies(mech, joints: tuple[int, int]) -> tuple[_Body, _Body]:
    """The two joints' bodies at the mechanism's state, shared by every hinge until it changes."""
    table = body_table(mech)
    return table.body(mech, joints[0]), table.body(mech, joints[1])


def _sides(mech, joints: tuple[int, int], normal_b: np.ndarray, normal_a: np.ndarray | None):
    """Both sides of a contact at the mechanism's state, indexed by a point's owner: ``(A, B, n)``
    for points of A on B's surface, ``(B, A, m)`` for points of B on A's face; n and m are the
    surfaces' outward normals (world)."""
    A, B = _bodies(mech, joints)
    n = B.R.dot(normal_b)
    m = A.R.dot(normal_a) if normal_a is not None else -n
    return (A, B, n), (B, A, m)


def _crossk(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross products of (k, 3) / (3,) arrays without numpy.cross's overhead."""
    if a.ndim == 1:  # w x r_i = -(r_i x w)
        return b.dot(_skew(a, -1.0))
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[:, 0] = a[:, 1] * b[..., 2] - a[:, 2] * b[..., 1]
    out[:, 1] = a[:, 2] * b[..., 0] - a[:, 0] * b[..., 2]
    out[:, 2] = a[:, 0] * b[..., 1] - a[:, 1] * b[..., 0]
    return out

