"""Continuous contact and Coulomb friction: the thesis' temporary hinges (sections 5.3, 5.4).

Contacts that last are modelled as **contact hinges**, bilateral constraints that an
event handler adds, changes and removes as the contact relationship changes:

- A hinge joins body A (a box or a sphere) to body B (a half-space, the world, or a box
  whose face is the contact surface). Its **support points** are material points of A,
  taken from coal's contact patch (the vertices of the contact polygon: a face on a plane
  gives four corners, an edge two points, a vertex one; a sphere one point). Each point
  has a normal row ``n . (v_A(x) - v_B(x)) = 0`` with ``n`` B's outward surface normal
  (fixed in B, from B towards A); its multiplier is the normal force (N, > 0 pressing).
- **Sticking** hinges add two tangential rows at an anchor (the support points' centroid
  at stick onset, fixed in A and B) and, for edge and face contacts, a torsion row about
  ``n``; their multipliers are the friction force (N) and torque (N m). Coulomb's static
  law ``|f_t| <= mu_s f_n`` is checked on the pair's totals.
- **Sliding** hinges have normal rows only and carry kinetic friction: each normal force
  acts along ``n - mu_k u`` (u the unit sliding direction of A relative to B), through
  :meth:`ContactHinge.force_jacobian`.

The **support set** is found at every contact event by a QP on the normal forces, never by
enumerating subsets: with the candidate points' normal rows removed, the separating
accelerations ``s = s0 + A lam`` (``s0`` at zero normal force, one column per unit force,
each from a full solve of the control statements, so hinges, control equations and
inverse dynamic control are all included) give the LCP ``lam >= 0, s >= 0, lam . s = 0``,
solved as ``min 1/2 lam^T (A_sym + eps I) lam + s0^T lam, lam >= 0`` by `controlkit.qp.solve_qp` (exact
for forward dynamics, where A is the symmetric Delassus matrix). The small regularization
picks the least-squares forces among equivalent ones, so redundant points (four corners of
a box on a table) share the load instead of breaking the solve.

:class:`ContactSource` is the event source (velocity kind) that watches, for every
pair of the collision world:

- pairs without a hinge: the signed distance (an impact, or a new contact when it comes
  to rest within ``rest_velocity``);
- support points: the normal force (tensile -> the point leaves the support);
- sticking pairs: ``mu_s f_n - |f_t|`` (slip onset); sliding pairs: the sliding velocity
  along its direction at slip onset (it stops: stick again, or slide the other way);
- the other vertices of A: their gap to B's surface plus ``penetration_tolerance``
  (a vertex comes down: an impact, the contact region grows);
- support points on a finite box B: their margin inside B's face (the body slides off);
- hinged pairs: their signed distance, as a safety net for crossings no vertex shows (an edge
  of B cutting into A's face): it fires when the penetration that the support points do not show
  (theirs is their rows' error, corrected by the stabilization) grows by ``penetration_tolerance``.

A support point where an edge of one face crosses an edge of the other belongs to neither body
once the edges slide along each other; :meth:`ContactSource.follow_crossings` (run after every
step) moves it to the current crossing. An edge crossing the other's edge at an angle (not both
in the contact plane) has the edges' own row instead (:func:`_edge_rows`: their distance along
``e_A x e_B``), watched for the crossing leaving either edge.

Under inverse dynamic control a hinge on an actuated body (a robot's foot) is **controlled**:
it keeps every candidate point and hands the solve ``lam_n >= 0`` and a friction pyramid as
inequalities on its forces (:meth:`ContactHinge.force_inequalities`), so torques and
compressive contact forces are chosen together; its force and slip guards are not needed.

Every change is logged: ``contact_made``, ``contact_changed`` (region face/edge/vertex,
support points), ``contact_broken``, ``slip``, ``stick``, ``impact``.
"""
from __future__ import annotations

import itertools
import math
import operator
import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import coal
import numpy as np
import pinocchio as pin
from scipy.optimize import nnls

from controlkit.constraints import Constraint
from controlkit.dynamics import evaluate
from controlkit.equations import build_problem
from controlkit.errors import ControlkitError, InconsistentEquationsError, ModelError, QPError
from controlkit.qp import solve_qp
from controlkit.vec3 import cross

from .collision import CollisionWorld, PairFilter
from .events import VELOCITY, EventSource
from .impact import LAWS, ImpactError, RestitutionTable, resolve_impact
from .stabilization import project_velocities

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


# ------------------------------------------------------------------ friction
class FrictionTable:
    """Static and kinetic Coulomb coefficients (dimensionless) per pair of materials.

    Args:
        default: ``(mu_static, mu_kinetic)`` for pairs not in the table.
        pairs: ``{(material_a, material_b): (mu_static, mu_kinetic)}`` (order-free).
        materials: geometry name -> material name (usually ``mech.materials``).
    """

    def __init__(self, default=(0.5, 0.4), pairs: Mapping | None = None, materials: Mapping[str, str] | None = None):
        self.default = _check_mu(default, "default")
        self.pairs = {frozenset(k): _check_mu(m, f"{k}") for k, m in (pairs or {}).items()}
        self.materials = dict(materials or {})

    def __call__(self, geom_a: str, geom_b: str) -> tuple[float, float]:
        key = frozenset((self.materials.get(geom_a, geom_a), self.materials.get(geom_b, geom_b)))
        return self.pairs.get(key, self.default)

    @classmethod
    def make(cls, spec, materials: Mapping[str, str] | None = None) -> "FrictionTable":
        """From ``(mu_s, mu_k)``, one mu for both, 0 (frictionless), a dict with an optional
        ``"default"`` entry, or a table."""
        if isinstance(spec, FrictionTable):
            if materials and not spec.materials:
                spec.materials = dict(materials)
            return spec
        if spec is None:
            return cls(materials=materials)
        if isinstance(spec, Mapping):
            spec = dict(spec)
            default = spec.pop("default", (0.5, 0.4))
            return cls(default, spec, materials)
        return cls(spec, materials=materials)


def _check_mu(m, what: str) -> tuple[float, float]:
    try:
        if isinstance(m, (str, bytes)):
            raise TypeError
        ms, mk = (float(m), float(m)) if np.isscalar(m) else (float(m[0]), float(m[1]))
    except (TypeError, ValueError, IndexError):
        raise ControlkitError(f"friction {what}: expected a number mu or a pair (mu_static, mu_kinetic), "
                              f"got {m!r}") from None
    if not (np.isfinite(ms) and np.isfinite(mk)) or ms < 0 or mk < 0 or mk > ms + 1e-12:
        raise ControlkitError(f"friction {what}: need finite 0 <= mu_kinetic <= mu_static, got ({ms}, {mk})")
    return ms, mk


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

    __slots__ = ("R", "t", "w", "vo", "alpha", "ao", "J", "JA", "world", "_W")

    def __init__(self, mech, joint: int):
        nv = mech.nv
        self.world = joint == 0
        self._W = None
        if self.world:
            self.R, self.t = np.eye(3), np.zeros(3)
            self.w = self.vo = self.alpha = self.ao = np.zeros(3)
            self.J = np.zeros((6, nv))
            self.JA = np.zeros((6, nv + 1))
            return
        m, d = mech.model, mech.data
        H = d.oMi[joint].homogeneous  # (a new array: R and t are views of it)
        self.R, self.t = H[:3, :3], H[:3, 3]
        # the joint origin's velocity and classical drift acceleration (kinematics() runs with
        # a = 0) in world axes: [linear; angular]
        V = pin.getVelocity(m, d, joint, LWA).vector
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

    def velocity(self, x: np.ndarray) -> np.ndarray:
        return self.vo + _crossk(self.w, x - self.t)

    def drift(self, x: np.ndarray) -> np.ndarray:
        r = x - self.t
        return self.ao + _crossk(self.alpha, r) + _crossk(self.w, _crossk(self.w, r))

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


def _bodies(mech, joints: tuple[int, int]) -> tuple[_Body, _Body]:
    """The two joints' bodies at the mechanism's state, shared by every hinge until it changes."""
    cache = mech.__dict__.get("_contact_bodies")
    if cache is None or cache[0] != mech._version:
        mech.kinematics()
        world = mech.__dict__.get("_contact_world_body")
        if world is None or world.J.shape[1] != mech.nv:
            world = mech._contact_world_body = _Body(mech, 0)  # the world never moves: built once
        cache = mech._contact_bodies = (mech._version, {0: world})
    table = cache[1]
    out = []
    for j in joints:
        b = table.get(j)
        if b is None:
            b = table[j] = _Body(mech, j)
        out.append(b)
    return out[0], out[1]


def _sides(mech, joints: tuple[int, int], normal_b: np.ndarray, normal_a: np.ndarray | None):
    """Both sides of a contact at the mechanism's state, indexed by a point's owner: ``(A, B, n)``
    for points of A on B's surface, ``(B, A, m)`` for points of B on A's face; n and m are the
    surfaces' outward normals (world)."""
    A, B = _bodies(mech, joints)
    n = B.R.dot(normal_b)
    m = A.R.dot(normal_a) if normal_a is not None else -n
    return (A, B, n), (B, A, m)


def _gap_rows(P: _Body, Q: _Body, k: np.ndarray, la: np.ndarray, lo: np.ndarray, rad: np.ndarray,
              u: np.ndarray | None, mu_k: float, own: bool = True):
    """Rows of material points of P resting on Q's surface (outward normal k, fixed in Q).

    Args:
        la: the points in P's joint frame (m, 3); lo: the surface points under them in Q's (m, 3);
        rad: sphere radii (m,) (0 for polyhedra); u: P's sliding direction relative to Q or None.
    Returns gaps phi (m), rows J (``J v`` = separating speed, m/s), drifts ``Jdot v`` (m/s^2)
    and force rows G (a normal force lam > 0 pushes P away from Q; when sliding with P's
    direction u relative to Q it carries the kinetic friction ``-mu_k lam u_i``, u_i each point's
    own sliding direction (:func:`_point_slide_directions`), or u itself when ``own`` is False)."""
    rp = la.dot(P.R.T)
    x = rp + P.t
    phi = (x - (lo.dot(Q.R.T) + Q.t)).dot(k) - rad
    JD = P.along(rp, k)
    if not Q.world:
        rq = x - Q.t
        JD -= Q.along(rq, k)
        c = cross(Q.w, k)  # the normal turns with Q: 2 (v_P - v_Q) . (w_Q x k)
        JD[:, -1] += 2.0 * (P.velocity_along(rp, c) - Q.velocity_along(rq, c))
    J, drift = JD[:, :-1], JD[:, -1]
    G = J
    if u is not None:
        xc = x - rad[:, None] * k
        uu = _point_slide_directions(P.velocity(xc) - Q.velocity(xc), k, u) if own else np.broadcast_to(u, x.shape)
        G = J - mu_k * (P.directional_jacobian(xc, uu) - Q.directional_jacobian(xc, uu))
    return phi, J, drift, G


def _rows_on_world(A: _Body, n: np.ndarray, la: np.ndarray, lo: np.ndarray, rad: np.ndarray,
                   anchor: np.ndarray | None, T: np.ndarray, k: int, memo: list | None = None):
    """:func:`_gap_rows` and the stick rows of A's points on the fixed world, in one product.

    Every row is a direction d at a lever arm r from A's origin: ``[d | r x d] @ [J | drift]``
    gives its Jacobian row and the drift's rigid part; the centripetal part is ``d . W r`` with
    ``W = w w^T - |w|^2 I``. Normal rows: d = n at each point; stick rows: the tangents T (2, 3)
    at the anchor, and the torsion ``[0 | n]`` (k = 2 or 3, 0 when not sticking).
    Returns ``(phi, J, drift, G)`` as :meth:`ContactHinge._rows` (G is J: no sliding friction).
    ``memo`` (a hinge's list, or None) keeps what the state does not change: W's direction
    columns and the normal's skew matrix, for these points, tangents and normal.
    """
    # (ndarray.dot throughout: numpy's @ costs a microsecond more per small product, and the
    # contact rows are built at every step)
    m = len(la)
    W0, Sn = _world_template(n, la, T, k, memo)
    rp = la.dot(A.R.T)
    W = W0.copy()
    W[:m, 3:] = rp.dot(Sn)  # r x n
    phi = np.zeros(m + k)
    phi[:m] = (rp + A.t - lo).dot(n) - rad
    Wn = A.spin().dot(n)
    if k:
        ra = A.R.dot(anchor)
        W[m:m + 2, 3:] = T.dot(_skew(ra, -1.0))  # ra x t
    JD = W.dot(A.JA)
    JD[:m, -1] += rp.dot(Wn)
    if k:
        JD[m:m + 2, -1] += T.dot(A.spin().dot(ra))
    J = JD[:, :-1]
    return phi, J, JD[:, -1], J


def _world_template(n: np.ndarray, la: np.ndarray, T: np.ndarray, k: int, memo: list | None):
    """:func:`_rows_on_world`'s constant parts: W (m + k, 6) with the directions [n | .] on the
    normal rows, [t | .] on the tangent rows and [0 | n] on the torsion row (the lever columns are
    the state's), and n's skew matrix; kept in ``memo`` while the points, tangents and normal are
    the same."""
    key = (la, T, k, n.tobytes())
    if memo and memo[0][0] is la and memo[0][1] is T and memo[0][2:] == key[2:]:
        return memo[1], memo[2]
    m = len(la)
    W0 = np.zeros((m + k, 6))
    W0[:m, :3] = n
    if k:
        W0[m:m + 2, :3] = T
        if k == 3:
            W0[m + 2, 3:] = n
    Sn = _skew(n)
    if memo is not None:
        memo[:] = [key, W0, Sn]
    return W0, Sn


#: m/s: a support point slower than this (relative to the other body) takes the contact's
#: sliding direction for its friction; a faster one its own (see _point_slide_directions)
POINT_SLIDE_SPEED = 1e-6


def _point_slide_directions(dv: np.ndarray, k: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Each sliding point's friction direction (k, 3), unit: its own tangential velocity relative
    to the other body (dv (k, 3), m/s, normal k).

    Coulomb's law holds at every point of a sliding contact, so a sole that slides and turns
    about its normal meets a friction moment too; one direction for the whole contact (its
    centroid's) would leave the turn free. A point at rest (the centre of a turn) has no direction
    of its own: blended with the contact's direction u over ``POINT_SLIDE_SPEED``, it takes u's.
    """
    dvt = dv - np.outer(dv.dot(k), k)
    d = dvt + POINT_SLIDE_SPEED * u
    return d / np.sqrt(np.einsum("ij,ij->i", d, d))[:, None]


def _edge_geometry(A: _Body, B: _Body, e: tuple):
    """The closest points of an edge of A and an edge of B (lines, world), their normal and how far
    (m) the closest points lie inside each segment.

    Args:
        e: ``(a0, a1, b0, b1, sign)``: the edges' ends in A's and B's joint frames.
    Returns ``(xa, xb, n, c, u, w, inside)``: n = sign (u x w) / |u x w| (unit, from B towards A),
    c = u x w, u = a1 - a0 and w = b1 - b0 (world), inside = the smallest distance of a closest
    point from its segment's ends (negative outside)."""
    a0, b0 = A.point(e[0]), B.point(e[2])
    u, w = A.R @ (e[1] - e[0]), B.R @ (e[3] - e[2])
    s, t, inside = _closest_on_lines(a0, u, b0, w)
    c = cross(u, w)
    n = e[4] * c / math.sqrt(c @ c)
    return a0 + s * u, b0 + t * w, n, c, u, w, inside


def _closest_on_lines(a0: np.ndarray, u: np.ndarray, b0: np.ndarray, w: np.ndarray):
    """Parameters s, t of the closest points ``a0 + s u``, ``b0 + t w`` of two non-parallel lines,
    and the smallest distance (m) of either point from its segment's ends (negative outside)."""
    r = a0 - b0
    uu, uw, ww, ur, wr = u @ u, u @ w, w @ w, u @ r, w @ r
    den = uu * ww - uw * uw
    s = (uw * wr - ww * ur) / den
    t = (uu * wr - uw * ur) / den
    return s, t, min(min(s, 1.0 - s) * math.sqrt(uu), min(t, 1.0 - t) * math.sqrt(ww))


def _edge_rows(A: _Body, B: _Body, e: tuple, u_slide: np.ndarray | None, mu_k: float, own: bool = True):
    """The row of an edge of A crossing an edge of B: their signed distance along the common normal.

    ``phi = n . (x_A - x_B)`` (x the lines' closest points, n = sign e_A x e_B / |e_A x e_B|),
    ``d phi/dt = n . (v_A(x_A) - v_B(x_B))`` (n turns, but stays normal to ``x_A - x_B = phi n``;
    the points slide along the edges, normal to n) and ``d2 phi/dt2 = n . (a_A(x_A) - a_B(x_B))
    + 2 n' . (v_A(x_A) - v_B(x_B)) - phi |n'|^2`` (from the material points at x_A and x_B,
    ``n'' . (x_A - x_B) = -phi |n'|^2``). Returns ``(phi, J (1, nv), drift (1,), G (1, nv))`` as
    :func:`_gap_rows` (G carries the kinetic friction ``-mu_k lam u`` when sliding)."""
    xa, xb, n, c, u, w, _ = _edge_geometry(A, B, e)
    phi = float(n @ (xa - xb))
    JD = A.along((xa - A.t)[None], n) - B.along((xb - B.t)[None], n)
    cdot = cross(cross(A.w, u), w) + cross(u, cross(B.w, w))
    nc = math.sqrt(c @ c)
    ch = c / nc
    ndot = e[4] * (cdot - ch * (ch @ cdot)) / nc
    dv = A.velocity(xa[None])[0] - B.velocity(xb[None])[0]
    JD[0, -1] += 2.0 * (ndot @ dv) - phi * (ndot @ ndot)
    J = JD[:, :-1]
    G = J
    if u_slide is not None:
        x = xa[None]
        us = _point_slide_directions(dv[None], n, u_slide) if own else u_slide[None]
        G = J - mu_k * (A.directional_jacobian(x, us) - B.directional_jacobian(x, us))
    return np.array([phi]), J, JD[:, -1], G


def _point_rows_of(sides, p: SupportPoint, u: np.ndarray | None, mu_k: float):
    """The rows of one support point (a material point on a surface, or an edge crossing)."""
    if p.edges is not None:
        return _edge_rows(sides[0][0], sides[0][1], p.edges, u, mu_k)
    if p.radius_b > 0.0:
        return _ball_rows(sides[0][0], sides[0][1], p.local_a[None, :], p.local_o[None, :], p.radius, p.radius_b, u, mu_k)
    uo = None if u is None else (u if p.owner == 0 else -u)
    return _gap_rows(*sides[p.owner], p.local_a[None, :], p.local_o[None, :], np.array([p.radius]), uo, mu_k)


def _ball_centres(A: _Body, B: _Body, la: np.ndarray, lb: np.ndarray):
    """Centres (world, m) of a ball of A and a ball of B (centres ``la``, ``lb`` (1, 3) in their
    joint frames), their distance L (m) and the unit normal from B's towards A's."""
    xa, xb = A.point(la), B.point(lb)
    d = (xa - xb)[0]
    L = math.sqrt(d @ d)
    return xa, xb, L, d / L


def _ball_rows(A: _Body, B: _Body, la: np.ndarray, lb: np.ndarray, ra: float, rb: float,
               u: np.ndarray | None, mu_k: float, own: bool = True):
    """The normal row of a ball of A (centre ``la``, radius ra) on a ball of B (``lb``, rb).

    ``phi = L - ra - rb`` with L the centres' distance; ``d phi/dt = n . (v_A(c_A) - v_B(c_B))``
    (n from B's centre towards A's) and ``d2 phi/dt2 = n . (a_A(c_A) - a_B(c_B)) + |dv_t|^2 / L``
    (the normal turns at ``dv_t / L``, dv_t the centres' relative velocity normal to n). Returns
    ``(phi, J, drift, G)`` as :func:`_gap_rows` (G carries the kinetic friction when sliding)."""
    xa, xb, L, n = _ball_centres(A, B, la, lb)
    JD = A.along(xa - A.t, n) - B.along(xb - B.t, n)
    dv = A.velocity(xa)[0] - B.velocity(xb)[0]
    dvt = dv - (n @ dv) * n
    JD[0, -1] += (dvt @ dvt) / L
    J = JD[:, :-1]
    G = J
    if u is not None:
        xc = xa - ra * n
        uu = _point_slide_directions(A.velocity(xc) - B.velocity(xc), n, u) if own else u[None]
        G = J - mu_k * (A.directional_jacobian(xc, uu) - B.directional_jacobian(xc, uu))
    return np.array([L - ra - rb]), J, JD[:, -1], G


def _rolling_rows(A: _Body, B: _Body, x: np.ndarray, xdot: np.ndarray, T: np.ndarray, tdot: np.ndarray | None):
    """Stick rows of a ball: no slip at the *current* contact point x (world, m), which moves at
    ``xdot`` (m/s) over both bodies, along the tangents T (2, 3) (turning at ``tdot`` or None).

    ``d/dt v_A(x(t)) = a_A(x) + w_A x (xdot - v_A(x))``: the material acceleration at x
    (:meth:`_Body.at_point`) plus the change of the point it is taken at. A row held at an anchor
    fixed in A instead (a material point) would pull that point, carried up the ball as it
    rolls, back to the ground: a torque that spins the ball up without bound. Returns
    ``[J | drift]`` (2, nv + 1)."""
    JD = A.at_point(x - A.t, T)
    vA = A.velocity(x[None])[0]
    JD[:, -1] += T.dot(cross(A.w, xdot - vA))
    if not B.world:
        JD -= B.at_point(x - B.t, T)
        vB = B.velocity(x[None])[0]
        JD[:, -1] -= T.dot(cross(B.w, xdot - vB))
        if tdot is not None:
            JD[:, -1] += tdot.dot(vA - vB)
    return JD


def _crossk(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross products of (k, 3) / (3,) arrays without numpy.cross's overhead."""
    if a.ndim == 1:  # w x r_i = -(r_i x w)
        return b.dot(_skew(a, -1.0))
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[:, 0] = a[:, 1] * b[..., 2] - a[:, 2] * b[..., 1]
    out[:, 1] = a[:, 2] * b[..., 0] - a[:, 0] * b[..., 2]
    out[:, 2] = a[:, 0] * b[..., 1] - a[:, 1] * b[..., 0]
    return out


@dataclass
class SupportPoint:
    """A support point of a contact hinge: a material point of one body on the other's surface.

    Attributes:
        local_a: the material point (m, in its owner's joint frame); a sphere's centre.
        local_o: the point of the other body's surface under it at creation (m, its joint frame).
        radius: sphere radius (m): the contact point is ``x - radius n``; 0 for polyhedra.
        owner: 0 when the point belongs to A (on B's surface, normal ``n``), 1 when it is a
            vertex of B on A's face (normal: A's outward face normal), as at the corners of
            the overlap of two boxes' faces that are B's.
    """

    local_a: np.ndarray
    local_o: np.ndarray
    radius: float = 0.0
    owner: int = 0
    offset: float = 0.0  # spare vertices: how far (m) below the surface it already was when watched
    #: where an edge of one face crosses an edge of the other: a point of neither body, which
    #: moves along both edges as they slide; the source re-places it after every step
    crossing: bool = False
    #: an edge of A crossing an edge of B at an angle: ``(a0, a1, b0, b1, sign)``, the edges'
    #: ends in A's and B's joint frames; its row is the edges' distance along ``sign e_A x e_B``
    #: (see :func:`_edge_rows`), ``local_a``/``local_o`` the crossing's closest points
    edges: tuple | None = None
    #: a ball of A on a ball of B: B's radius (m); ``local_o`` is then B's centre (its joint frame)
    radius_b: float = 0.0


@dataclass
class _Face:
    """A rectangular face of a box B: centre and in-plane axes with half-extents, in B's joint frame."""

    center: np.ndarray
    axes: np.ndarray  # (2, 3)
    half: np.ndarray  # (2,)


# ------------------------------------------------------------- contact hinge
class ContactHinge(Constraint):
    """The temporary hinge of one contacting pair (see the module docstring for its rows).

    Args:
        name: constraint name (``contact <geom_a>/<geom_b>``).
        pair: index of the pair in the collision world.
        geoms: (geometry of A, geometry of B); joints: their joint ids (0 = world).
        normal_b: B's outward surface normal in B's joint frame (unit).
        mu: (mu_static, mu_kinetic).
    """

    kind = "contact"
    second_order = False  # redundant support points are resolved by the support set

    def __init__(self, name: str, pair: int, geoms: tuple[str, str], joints: tuple[int, int],
                 normal_b: np.ndarray, mu: tuple[float, float]):
        super().__init__(name)
        self.pair, self.geoms, self.joints = pair, geoms, joints
        # the names as first met: the roles (which body is A) may swap at a later change
        self.names = tuple(geoms)
        self.label = f"{geoms[0]}/{geoms[1]}"
        self.normal_b = np.asarray(normal_b, dtype=float)
        self.normal_a = None  # A's outward face normal (A's joint frame), for points owned by B
        self.mu_s, self.mu_k = mu
        self.points: list[SupportPoint] = []  # the support points whose normal rows are held
        # the other support points: each an affine combination of ``points`` in the contact plane,
        # so holding ``points`` holds them too; forces may be shifted onto them (support_margin)
        self.dependent: list[SupportPoint] = []
        self.candidates: list[SupportPoint] = []  # the resting points of the contact region
        self.spare_geometry: list[np.ndarray] = []
        self.spare: list[SupportPoint] = []  # other vertices, watched for touching down
        self.faces: tuple[_Face | None, _Face | None] = (None, None)  # finite faces of B and of A
        self.region = "none"
        self.mode = "stick" if self.mu_s > 0 else "frictionless"
        self.slide_dir = np.zeros(3)  # world, at slip onset
        self.slipped = False
        self.stick_keep = np.ones(3, dtype=bool)  # stick rows held (dependent ones are dropped)
        self.detached = False  # True while the support LCP applies its forces as external forces
        # held by a controller (inverse dynamics): every candidate point stays, and the solve keeps
        # the forces compressive and inside the friction pyramid (force_inequalities)
        self.controlled = False
        self.version = 0
        self._anchor_a = self._anchor_o = None
        self._rrel0 = None
        self._tangents_b = _tangents(self.normal_b)
        self._cache_version = -1
        self._affine = None
        self._group_key = None
        self._group_cache = []
        self.balls = False  # a ball on a ball: the normal is the centres' line, not fixed in B
        self.depth0 = 0.0  # the pair's signed distance (m, <= 0) when its support was last set
        self.shown0 = 0.0  # the penetration (m, <= 0) its support points showed then (shown_depth)

    # the constraint protocol ------------------------------------------------
    @property
    def ideal(self) -> bool:
        """Its forces act along its rows unless it slides (kinetic friction)."""
        return self.mode != "slide" or self.detached

    @property
    def signature(self):
        return (self.name, self.version, self.detached, self.mode)

    @property
    def size(self) -> int:
        if self.detached:
            return 0
        k = self._stick_rows()  # (read at every assembly: a list sum beats numpy's on 3 flags)
        return len(self.points) + (sum(self.stick_keep.tolist()[:k]) if k else 0)

    def _stick_mask(self) -> np.ndarray:
        return self.stick_keep[: self._stick_rows()]

    def _stick_rows(self) -> int:
        if self.mode != "stick":
            return 0
        return 3 if self.region in ("edge", "face") else 2

    def row_labels(self) -> list[str]:
        # read at every assembly: cached on what they depend on (the lists are only read)
        key = (len(self.points), self.detached, self.mode, self.region, self.stick_keep.tobytes())
        cached = self.__dict__.get("_labels")
        if cached is not None and cached[0] == key:
            return cached[1]
        labs = [] if self.detached else [f"{self.name}.n{i}" for i in range(len(self.points))] + \
            [f"{self.name}.{s}" for s, k in zip(("t1", "t2", "torsion"), self._stick_mask()) if k]
        self._labels = (key, labs)
        return labs

    def describe(self) -> str:
        return f"contact {self.label}: {self.region}, {len(self.support())} points, {self.mode}"

    def support(self) -> list[SupportPoint]:
        """Every support point: the held ones, then the dependent ones."""
        return self.points + self.dependent

    def positions(self, pts: Sequence[SupportPoint], sides=None) -> np.ndarray:
        """World positions (k, 3) of support points (m), each on its owner."""
        sides = sides or self.sides()
        if not pts:
            return np.zeros((0, 3))
        return np.array([sides[p.owner][0].point(p.local_a) for p in pts])

    def support_margin(self, fn: np.ndarray, sides=None) -> float:
        """The largest smallest normal force (N) over the compressive distributions of the held
        points' forces ``fn`` (k,) on the whole support.

        The dependent points carry no rows: a force moved onto one of them is taken off the held
        points by its affine coefficients (the same resultant and moment). The margin is positive
        while the centre of pressure is strictly inside the support polygon and reaches zero where
        it leaves it; without dependent points it is ``min(fn)``."""
        if not self.dependent:
            return float(fn.min(initial=np.inf))
        return _support_margin(fn, self.affine(sides))

    def affine(self, sides=None) -> np.ndarray:
        """Affine coordinates (d, k) of the dependent points in the held points (rows sum to 1).

        Constant while every support point is a material point of one body; recomputed from the
        positions otherwise (points of both bodies move relative to each other when sliding)."""
        key = (self.version, self.mech._version)
        if self._affine is not None:
            old, C, rigid = self._affine
            if old[0] == key[0] and (rigid or old[1] == key[1]):
                return C
        sides = sides or self.sides()
        Xb, Xd = self.positions(self.points, sides), self.positions(self.dependent, sides)
        A = np.vstack([Xb.T, np.ones(len(Xb))])
        B = np.vstack([Xd.T, np.ones(len(Xd))])
        C = np.linalg.lstsq(A, B, rcond=None)[0].T
        self._affine = (key, C, self._rigid)
        return C

    @property
    def _rigid(self) -> bool:
        sup = self.support()
        return len({p.owner for p in sup}) == 1 and not any(p.crossing for p in sup)

    def _rows(self):
        if self._cache_version == self.mech._version:
            return self._cache
        sides = self.sides()
        A, B, n = sides[0]
        groups = self._groups()
        if B.world and self.mode != "slide" and len(groups) == 1 and groups[0][0] == 0 \
                and len(groups[0][1]) == len(self.points) and not self.balls \
                and not (self.mode == "stick" and self._rolls):
            # the common case (a foot on the ground): A's material points on the fixed world
            _, _, la, lo, rad = groups[0]
            self._cache = _rows_on_world(A, n, la, lo, rad, self._anchor_a, self._tangents_b, self._stick_rows(),
                                         self.__dict__.setdefault("_world_memo", []))
            self._cache_version = self.mech._version
            return self._cache
        blocks = []
        if self.points:
            blocks.append(self._normal_rows(sides))
        k = self._stick_rows()
        if k:
            blocks.append(self._stick_block(A, B, n, k))
        nv = self.mech.nv
        if not blocks:
            z = np.zeros(0)
            self._cache = (z, np.zeros((0, nv)), z, np.zeros((0, nv)))
        else:
            self._cache = tuple(np.concatenate([b[i] for b in blocks]) for i in range(4))
        self._cache_version = self.mech._version
        return self._cache

    def sides(self):
        """See :func:`_sides` (kept while the state and the normals are the same)."""
        c = self._sides_cache
        if c is not None and c[0] == self.mech._version and c[1] is self.normal_b and c[2] is self.normal_a \
                and c[3] == self.joints:
            return c[4]
        if self.balls:  # the normal follows the centres' line
            A, B = _bodies(self.mech, self.joints)
            p = self.points[0] if self.points else self.candidates[0]
            n = _ball_centres(A, B, p.local_a[None], p.local_o[None])[3]
            out = ((A, B, n), (B, A, -n))
        else:
            out = _sides(self.mech, self.joints, self.normal_b, self.normal_a)
        self._sides_cache = (self.mech._version, self.normal_b, self.normal_a, self.joints, out)
        return out

    def _slips(self, v: np.ndarray, tol: float = 1e-9) -> bool:
        """Whether its held stick rows see a relative motion (``|J v| > tol``, m/s or rad/s) at v."""
        k = len(self.points)
        J = self.jacobian()[k:]
        return bool(len(J)) and float(np.abs(J @ v).max()) > tol

    @property
    def _rolls(self) -> bool:
        """A ball's point contact: its stick rows are rolling rows at the current contact point."""
        return bool(self.points) and self.points[0].radius > 0.0

    def _tangent_basis(self, B: _Body, n: np.ndarray) -> np.ndarray:
        """The stick rows' tangents (2, 3) (world): fixed in B, or for a ball on a ball, from n."""
        return _tangents(n) if self.balls else self._tangents_b.dot(B.R.T)

    def _rolling_block(self, A: _Body, B: _Body, n: np.ndarray):
        """:func:`_rolling_rows` of a ball on a face (n fixed in B) or on a ball (n the centres' line)."""
        p = self.points[0]
        c = A.point(p.local_a[None])
        vc = A.velocity(c)[0]
        c = c[0]
        T = self._tangent_basis(B, n)
        if self.balls:
            xb = B.point(p.local_o[None])
            dv = vc - B.velocity(xb)[0]
            L = float(np.linalg.norm(c - xb[0]))
            ndot = (dv - (n @ dv) * n) / L
            tdot = None  # (their turn meets a relative velocity that the rows keep at zero)
        else:
            ndot = cross(B.w, n)
            tdot = np.array([cross(B.w, t) for t in T])
        JD = _rolling_rows(A, B, c - p.radius * n, vc - p.radius * ndot, T, tdot)
        J = JD[:, :-1]
        return np.zeros(2), J, JD[:, -1], J

    _sides_cache = None

    def _groups(self):
        """The held points by owner, as arrays: ``[(owner, index, local_a, local_o, radius)]``
        (cached while the points are the same objects)."""
        # the key holds the points themselves: ids of freed points could be reused
        key = (self.version, tuple(self.points))
        if not _same_key(self._group_key, key):
            own = np.array([-1 if p.edges is not None else p.owner for p in self.points], dtype=int)
            self._group_cache = [
                (owner, idx, np.array([self.points[i].local_a for i in idx], dtype=float),
                 np.array([self.points[i].local_o for i in idx], dtype=float),
                 np.array([self.points[i].radius for i in idx], dtype=float))
                for owner in (0, 1) if (idx := np.flatnonzero(own == owner)).size]
            self._group_key = key
        return self._group_cache

    def _normal_rows(self, sides):
        u, own = self._sliding_direction(*sides[0]) if self.mode == "slide" else (None, False)
        if self.balls:
            p = self.points[0]
            return _ball_rows(*sides[0][:2], p.local_a[None], p.local_o[None], p.radius, p.radius_b, u, self.mu_k, own)
        groups = self._groups()
        m = len(self.points)
        if len(groups) == 1 and groups[0][0] == 0 and len(groups[0][1]) == m:  # the common case: every point is A's
            _, _, la, lo, rad = groups[0]
            return _gap_rows(*sides[0], la, lo, rad, u, self.mu_k, own)
        nv = self.mech.nv
        out = [np.zeros(m), np.zeros((m, nv)), np.zeros(m), np.zeros((m, nv))]
        for i, p in enumerate(self.points):
            if p.edges is not None:  # an edge crossing an edge at an angle
                rows = _edge_rows(*sides[0][:2], p.edges, u, self.mu_k, own)
                for k in range(4):
                    out[k][i] = rows[k][0]
        for owner, idx, la, lo, rad in groups:
            uo = None if u is None else (u if owner == 0 else -u)  # the owner's direction relative to the other
            rows = _gap_rows(*sides[owner], la, lo, rad, uo, self.mu_k, own)
            for k in range(4):
                out[k][idx] = rows[k]
        return tuple(out)

    def _stick_block(self, A: _Body, B: _Body, n: np.ndarray, k: int):
        if self._rolls:
            return self._rolling_block(A, B, n)
        ra = A.R.dot(self._anchor_a)
        t = self._tangents_b.dot(B.R.T)  # (2, 3)
        # velocity-level rows (no position term): rows of two sticking bodies that are redundant
        # (a foot and its toe) stay consistent, where anchors' position errors would not be
        JD = np.empty((k, self.mech.nv + 1))
        JD[:2] = A.at_point(ra, t)
        if k == 3:
            JD[2] = A.JA[3:].T.dot(n)  # torsion: n . (w_A - w_B), its drift n . alpha
        if not B.world:
            rb = ra + A.t - B.t
            JD[:2] -= B.at_point(rb, t)
            for i in range(2):
                c = cross(B.w, t[i])  # the tangents turn with B
                JD[i, -1] += 2.0 * (A.velocity_along(ra, c) - B.velocity_along(rb, c))
            if k == 3:
                JD[2] -= B.JA[3:].T.dot(n)
                JD[2, -1] += cross(B.w, n).dot(A.w - B.w)
        J = JD[:, :-1]
        return np.zeros(k), J, JD[:, -1], J

    def _part(self, i: int) -> np.ndarray:
        if self.detached:
            return np.zeros((0, self.mech.nv)) if i % 2 else np.zeros(0)
        keep = self.row_mask()
        part = self._rows()[i]
        return part if False not in keep.tolist() else part[keep]

    def force_inequalities(self):
        """``-lam_n <= 0`` per point and, sticking, ``|f_t1| + |f_t2| <= mu_s sum(lam_n)`` (a pyramid
        inside Coulomb's cone), while the hinge is ``controlled``."""
        if not self.controlled or self.detached:
            return None
        k = len(self.points)
        C = [np.hstack([-np.eye(k), np.zeros((k, self.size - k))])]
        m = self._stick_mask()[:2]
        if m.any():
            nt = int(m.sum())
            for signs in itertools.product((1.0, -1.0), repeat=nt):
                row = np.zeros(self.size)
                row[:k] = -self.mu_s
                row[k:k + nt] = signs
                C.append(row[None])
        C = np.vstack(C)
        return C, np.zeros(len(C))

    def row_mask(self) -> np.ndarray:
        """Which of the full rows (normals, then t1, t2, torsion) are held."""
        return np.concatenate([np.ones(len(self.points), dtype=bool), self._stick_mask()])

    def terms(self):
        """``(error, jacobian, drift)`` in one call (the rows are built once per state)."""
        if self.detached:
            nv = self.mech.nv
            return np.zeros(0), np.zeros((0, nv)), np.zeros(0)
        phi, J, drift, _ = self._rows()
        if self.mode == "stick" and not all(self.stick_keep.tolist()[: self._stick_rows()]):
            keep = self.row_mask()
            return phi[keep], J[keep], drift[keep]
        return phi, J, drift

    def error(self):
        return self._part(0)

    def jacobian(self):
        return self._part(1)

    def drift(self):
        return self._part(2)

    def force_jacobian(self):
        return self._part(3)

    # contact kinematics -------------------------------------------------------
    def _sliding_direction(self, A: _Body, B: _Body, n: np.ndarray) -> tuple[np.ndarray, bool]:
        """The contact's sliding direction (world, unit) and whether it still slides (False past
        a stop: then every point's friction keeps that direction)."""
        vt = self.tangential_velocity(A, B, n)
        s = np.linalg.norm(vt)
        # past a stop (within an integration step) friction keeps its direction, so that the
        # stop is a visible zero crossing of the slide guard instead of chatter inside a step
        moving = s > 1e-9 and vt.dot(self.slide_dir) > 0
        return (vt / s if moving else self.slide_dir), moving

    def sliding_friction(self, fn: np.ndarray) -> np.ndarray:
        """The kinetic friction on A (N, world (3,)) of a sliding contact whose held points carry the
        normal forces ``fn`` (k,) N: ``-mu_k fn_i u_i`` summed, u_i each point's sliding direction."""
        sides = self.sides()
        A, B, n = sides[0]
        u, own = self._sliding_direction(A, B, n)
        if not own:
            return -self.mu_k * fn.sum() * u
        x = self.positions(self.points, sides) - np.array([p.radius for p in self.points])[:, None] * n
        return -self.mu_k * (fn @ _point_slide_directions(A.velocity(x) - B.velocity(x), n, u))

    def centroid_local(self) -> np.ndarray:
        """The support points' centroid as a point of A (m, A's joint frame)."""
        sup = self.support()
        key = (self.version, tuple(map(id, sup)))
        cached = self.__dict__.get("_centroid")
        if cached is not None and cached[0] == key:  # only kept for material points of A
            return cached[1]
        sides = self.sides()
        A = sides[0][0]
        c = A.R.T @ (self.positions(sup, sides).mean(axis=0) - A.t)
        # points of A alone (no crossing points, none of B): the same point of A at every state
        self._centroid = (key, c) if all(p.owner == 0 and not p.crossing for p in sup) else None
        return c

    def tangential_velocity(self, A: _Body | None = None, B: _Body | None = None, n=None) -> np.ndarray:
        """Velocity (m/s, world) of A relative to B at the support centroid, in B's tangent plane."""
        if A is None:
            A, B, n = self.sides()[0]
        x = A.point(self.centroid_local()) - np.mean([p.radius for p in self.points]) * n
        dv = A.velocity(x) - B.velocity(x)
        return dv - n.dot(dv) * n

    def set_anchor(self) -> None:
        """Hold the current relative placement at the support centroid (stick onset)."""
        A, B, n = self.sides()[0]
        x = A.point(self.centroid_local()) - np.mean([p.radius for p in self.points]) * n
        self._anchor_a = A.R.T @ (x - A.t)
        self._anchor_o = B.R.T @ (x - B.t)
        self._rrel0 = B.R.T @ A.R
        self._cache_version = -1

    def tangent_world(self, ft: np.ndarray) -> np.ndarray:
        """A tangential force (2,) in the hinge's tangent basis as a world vector (3,)."""
        A, B, n = self.sides()[0]
        return ft @ self._tangent_basis(B, n)

    def shown_depth(self) -> float:
        """The deepest penetration (m, <= 0) its support points show: their normal rows' gaps
        (the dependent points' are the affine combinations of the held ones'), 0 when none is below
        the surface. Their rows hold them: a drift of these gaps is corrected by the stabilization."""
        m = len(self.points)
        if not m or self.detached:
            return 0.0
        phi = self._rows()[0][:m].tolist()  # (read at every step's guards: a few floats)
        s = min(phi)
        if self.dependent:  # (plain loops: generators cost more than these few products)
            for row in self.affine().tolist():
                d = 0.0
                for c, p in zip(row, phi):
                    d += c * p
                s = min(s, d)
        return min(s, 0.0)

    def forces(self, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Split a multiplier vector into normal forces (k,) N and tangential force (2,) N (views of
        ``lam`` where they can be: read them, do not write them)."""
        k = len(self.points)
        if self.mode == "stick":
            keep = self.stick_keep.tolist()  # (read at every step's force guards: floats, no masks)
            if keep[0] and keep[1]:
                return lam[:k], lam[k:k + 2]
        ft = np.zeros(2)
        m = self._stick_mask()[:2]
        ft[m] = lam[k:k + int(m.sum())]
        return lam[:k], ft


def _multipliers_of(sol, h: ContactHinge) -> np.ndarray:
    """A hinge's multipliers in a solution (zeros when there is none, or it has none: detached, or
    solved before it existed). Not ``dict.get``'s default: that would build the zeros at every
    call, twice per step."""
    lam = None if sol is None else sol.lam.get(h.name)
    return np.zeros(h.size) if lam is None else lam


def _coincides(s: SupportPoint, points: Sequence[SupportPoint]) -> bool:
    """Whether a point of the same owner coincides with s (in the owner's frame; numpy's
    ``allclose(s, p, atol=1e-7)``: within 1e-7 m + 1e-5 of p's coordinates)."""
    mine = [p.local_a for p in points if p.owner == s.owner]
    if not mine:
        return False
    P = np.asarray(mine)
    return bool((np.abs(s.local_a - P) <= 1e-7 + 1e-5 * np.abs(P)).all(axis=1).any())


def _same_key(a, b) -> bool:
    """Whether two cache keys ``(version, tuple of objects, ...)`` hold the same version and objects."""
    if a is None or a[0] != b[0] or len(a) != len(b):
        return False
    for x, y in zip(a[1:], b[1:]):
        if len(x) != len(y) or not all(map(operator.is_, x, y)):
            return False
    return True


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x)


def _tangents(n: np.ndarray) -> np.ndarray:
    a = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = np.cross(n, a)
    t1 /= np.linalg.norm(t1)
    return np.array([t1, np.cross(n, t1)])


# ---------------------------------------------------------- contact geometry
@dataclass
class _PairContact:
    """The contact geometry of one touching pair at one state (A, B chosen, points built)."""

    pair: int
    geoms: tuple[str, str]
    joints: tuple[int, int]
    normal_b: np.ndarray
    points: list[SupportPoint]
    region: str
    spare: list[SupportPoint] = field(default_factory=list)
    faces: tuple = (None, None)
    normal_a: np.ndarray | None = None
    balls: bool = False


def _se3_to_tf(M: pin.SE3) -> coal.Transform3s:
    return coal.Transform3s(M.rotation, M.translation)


def _box_vertices(box: coal.Box) -> np.ndarray:
    h = np.asarray(box.halfSide)
    return np.array(list(itertools.product(*[(-x, x) for x in h])))


class _Geometry:
    """Builds support points from coal's contact patches for the world's pairs."""

    SUPPORTED_A = (coal.Box, coal.Sphere)
    SUPPORTED_B = (coal.Box, coal.Halfspace)

    def __init__(self, world: CollisionWorld, touch_distance: float):
        self.world = world
        self.touch_distance = touch_distance
        gm = world.gmodel
        self.objs = [gm.geometryObjects[i] for i in range(gm.ngeoms)]
        self.preq = coal.ContactPatchRequest()

    def roles(self, pair: int) -> tuple[int, int] | None:
        """Geometry indices (A, B) able to carry a hinge, B preferring the world / a half-space."""
        ia, ib = self.world.pair_indices[pair]
        ga, gb = self.objs[ia].geometry, self.objs[ib].geometry
        options = []
        for a, b, sa, sb in ((ia, ib, ga, gb), (ib, ia, gb, ga)):
            if isinstance(sa, self.SUPPORTED_A) and isinstance(sb, self.SUPPORTED_B) or \
                    isinstance(sa, coal.Sphere) and isinstance(sb, coal.Sphere):
                fixed = self.objs[b].parentJoint == 0 or isinstance(sb, coal.Halfspace)
                options.append((not fixed, (a, b)))
        return min(options)[1] if options else None

    def contact(self, pair: int) -> _PairContact | None:
        """The pair's contact patch at the world's placed state, or None when not touching."""
        roles = self.roles(pair)
        if roles is None:
            return None
        ia, ib = roles
        gd = self.world.gdata
        Ma, Mb = gd.oMg[ia], gd.oMg[ib]
        sa, sb = self.objs[ia].geometry, self.objs[ib].geometry
        if isinstance(sb, coal.Sphere):
            return self._balls(pair, ia, ib, sa, sb, Ma, Mb)
        req = coal.CollisionRequest()
        req.security_margin = self.touch_distance
        req.num_max_contacts = 1
        res = coal.CollisionResult()
        coal.collide(sa, _se3_to_tf(Ma), sb, _se3_to_tf(Mb), req, res)
        if not res.isCollision():
            return None
        pres = coal.ContactPatchResult()
        coal.computeContactPatch(sa, _se3_to_tf(Ma), sb, _se3_to_tf(Mb), res, self.preq, pres)
        if pres.numContactPatches() == 0:
            return None
        patch = pres.getContactPatch(0)
        n = -np.asarray(patch.getNormal(), dtype=float)  # coal: from shape 1 (A) to shape 2 (B)
        pts = [np.asarray(patch.getPoint(k), dtype=float) for k in range(patch.size())]
        if isinstance(sa, coal.Sphere) and isinstance(sb, coal.Box):
            exact = _ball_on_box_normal(Ma.translation, sb, Mb)
            if exact is not None:  # (a centre inside the box keeps the face's normal)
                return self._build(pair, ia, ib, sa, sb, Ma, Mb, exact, pts)
        n, swap = self._snap_normal(n, sa, Ma, sb, Mb)
        if swap:
            ia, ib, sa, sb, Ma, Mb = ib, ia, sb, sa, Mb, Ma
        return self._build(pair, ia, ib, sa, sb, Ma, Mb, n, pts)

    def _balls(self, pair, ia, ib, sa, sb, Ma, Mb) -> _PairContact | None:
        """A ball on a ball: one support point, A's centre, held at ``ra + rb`` from B's centre."""
        d = Ma.translation - Mb.translation
        L = float(np.linalg.norm(d))
        ra, rb = float(sa.radius), float(sb.radius)
        if L - ra - rb > self.touch_distance or L == 0.0:
            return None
        ja, jb = self.objs[ia].parentJoint, self.objs[ib].parentJoint
        data = self.world.data
        Ja = data.oMi[ja] if ja else pin.SE3.Identity()
        Jb = data.oMi[jb] if jb else pin.SE3.Identity()
        point = SupportPoint(Ja.actInv(Ma.translation), Jb.actInv(Mb.translation), ra, radius_b=rb)
        return _PairContact(pair, (self.objs[ia].name, self.objs[ib].name), (ja, jb), Jb.rotation.T @ (d / L),
                            [point], "point", balls=True)

    def _snap_normal(self, n, sa, Ma, sb, Mb):
        """Use the exact face normal of the box whose face is in contact (B's, or A's with roles swapped)."""
        if isinstance(sb, coal.Halfspace):
            return Mb.rotation @ np.asarray(sb.n, dtype=float), False
        best = (-2.0, n, False)
        if isinstance(sb, coal.Box):
            for k in range(3):
                for s in (1.0, -1.0):
                    axis = s * Mb.rotation[:, k]
                    best = max(best, (axis @ n, axis, False), key=lambda z: z[0])
        if isinstance(sa, coal.Box) and isinstance(sb, coal.Box):
            for k in range(3):
                for s in (1.0, -1.0):
                    axis = s * Ma.rotation[:, k]  # A's outward face normal is -n
                    if -axis @ n > best[0] + 1e-9:
                        best = (-axis @ n, axis, True)
        return best[1], best[2]

    def _build(self, pair, ia, ib, sa, sb, Ma, Mb, n, pts) -> _PairContact:
        objs = self.objs
        ja, jb = objs[ia].parentJoint, objs[ib].parentJoint
        data = self.world.data
        Ja = data.oMi[ja] if ja else pin.SE3.Identity()
        Jb = data.oMi[jb] if jb else pin.SE3.Identity()
        plane_b = self._plane_point(sb, Mb, n)
        nb = Jb.rotation.T @ n
        if isinstance(sa, coal.Sphere):
            c = Ma.translation
            point = SupportPoint(Ja.actInv(c), Jb.actInv(c - n * (n @ (c - plane_b))), float(sa.radius))
            return _PairContact(pair, (objs[ia].name, objs[ib].name), (ja, jb), nb, [point], "point")
        face_a = self._plane_point(sa, Ma, -n)
        verts_a = _box_vertices(sa) @ Ma.rotation.T + Ma.translation
        verts_b = _box_vertices(sb) @ Mb.rotation.T + Mb.translation if isinstance(sb, coal.Box) else np.zeros((0, 3))
        near = 10.0 * self.touch_distance
        face_b = self._face(sb, Mb, Jb, n) if isinstance(sb, coal.Box) else None
        face_a_l = self._face(sa, Ma, Ja, -n)
        mech = self.world.mech
        mech.kinematics()
        A, B = _Body(mech, ja), _Body(mech, jb)
        points = []
        snapped: list[np.ndarray] = []
        edges_a = _box_edges(sa, Ma)
        edges_b = _box_edges(sb, Mb) if isinstance(sb, coal.Box) else []
        for p in _dedupe(pts):
            ee = self._edge_crossing(edges_a, edges_b, p, n, near, Ma.translation)
            if ee is not None:  # an edge crossing the other's edge at an angle: the edges' own row
                a0, a1, b0, b1, sign, xa, xb = ee
                snapped.append(xa)
                points.append(SupportPoint(Ja.actInv(xa), Jb.actInv(xb), crossing=True, edges=(
                    Ja.actInv(a0), Ja.actInv(a1), Jb.actInv(b0), Jb.actInv(b1), sign)))
                continue
            xa = p + n * (n @ (face_a - p))  # onto A's support plane along n
            xb = p - n * (n @ (p - plane_b))  # onto B's
            # a corner stays its body's own corner (a tilted sole's support plane through its lowest
            # corner would put the others' images off the sole)
            if np.min(np.linalg.norm(verts_a - p, axis=1)) <= near:
                xa = verts_a[int(np.argmin(np.linalg.norm(verts_a - p, axis=1)))]
            if len(verts_b) and np.min(np.linalg.norm(verts_b - p, axis=1)) <= near:
                xb = verts_b[int(np.argmin(np.linalg.norm(verts_b - p, axis=1)))]
            if any(np.linalg.norm(xa - y) <= 1e-9 for y in snapped):
                continue  # two patch points at one corner: one support point
            snapped.append(xa)
            crossing = _margin(face_b, B, xa[None])[0] <= near and _margin(face_a_l, A, xb[None])[0] <= near
            if self._owner(face_b, face_a_l, A, B, xa, xb, near) == 0:
                points.append(SupportPoint(Ja.actInv(xa), Jb.actInv(xb), crossing=crossing))
            else:
                points.append(SupportPoint(Jb.actInv(xb), Ja.actInv(xa), owner=1, crossing=crossing))
        # vertices touching the other face that the patch left out (its points lie around the deepest one)
        for owner, (verts, plane, k, face, Mq, Jp, Jq) in enumerate(
                ((verts_a, plane_b, n, isinstance(sb, coal.Box) and (sb, Mb), Mb, Ja, Jb),
                 (verts_b, face_a, -n, (sa, Ma), Ma, Jb, Ja))):
            for x in verts:
                if (x - plane) @ k > self.touch_distance or not _inside(face, x, self.touch_distance):
                    continue
                have = [Ja.act(p.local_a) if p.owner == 0 else Jb.act(p.local_a) for p in points]
                if all(np.linalg.norm(x - y) > near for y in have):
                    points.append(SupportPoint(Jp.actInv(x), Jq.actInv(x - k * ((x - plane) @ k)), owner=owner))
        region = {1: "vertex", 2: "edge"}.get(len(points), "face")
        spare = [SupportPoint(Ja.actInv(x), Jb.actInv(plane_b)) for x in verts_a]
        spare += [SupportPoint(Jb.actInv(x), Ja.actInv(face_a), owner=1) for x in verts_b]
        faces = (face_b, face_a_l)
        return _PairContact(pair, (objs[ia].name, objs[ib].name), (ja, jb), nb, points, region, spare, faces,
                            Ja.rotation.T @ -n)

    def _edge_crossing(self, edges_a, edges_b, p, n, near, center_a):
        """The edges of A and B through patch point p (world) when they cross at an angle, else None.

        Both edges pass within ``near`` of p, are not parallel, their closest points lie inside both
        segments (farther than ``near`` from the ends: a corner is a vertex point), and they are
        not both in the contact plane (normal n; such coplanar crossings are face points). Returns
        ``(a0, a1, b0, b1, sign, x_a, x_b)``: the edges' ends, the sign that makes ``sign e_A x e_B``
        point from B towards A (A's centre ``center_a`` on its positive side) and the closest points."""
        if not len(edges_a) or not len(edges_b):
            return None
        (a0, a1), (b0, b1) = _nearest_edge(edges_a, p), _nearest_edge(edges_b, p)
        u, w = a1 - a0, b1 - b0
        if _segment_distance(p, a0, u) > near or _segment_distance(p, b0, w) > near:
            return None
        c = np.cross(u, w)
        if np.linalg.norm(c) < 1e-3 * np.linalg.norm(u) * np.linalg.norm(w):
            return None  # (nearly) parallel: a line contact, its ends are the points
        if abs(n @ u) <= self.touch_distance and abs(n @ w) <= self.touch_distance:
            return None  # coplanar in the contact plane: a crossing point on a face
        s, t, inside = _closest_on_lines(a0, u, b0, w)
        if inside <= near:
            return None
        xa, xb = a0 + s * u, b0 + t * w
        sign = 1.0 if c @ (center_a - xa) > 0 else -1.0
        return a0, a1, b0, b1, sign, xa, xb

    @staticmethod
    def _owner(face_b, face_a, A: _Body, B: _Body, xa: np.ndarray, xb: np.ndarray, near: float) -> int:
        """Whose material point a patch point becomes: A's (0) on B's face or B's (1) on A's face.

        A corner of one face inside the other stays its own; a point on both faces' boundaries
        (an edge crossing an edge, or a corner on the other's edge) goes to the body in whose
        material it stays over the other face longer, judged by the relative sliding velocity:
        a block sliding over an edge rests on the edge's points, not on its own passing corners
        (which would leave the face at once, an event per step)."""
        if _margin(face_b, B, xa[None])[0] > near:
            return 0
        if _margin(face_a, A, xb[None])[0] > near:
            return 1
        tau = 1e-6  # s; margins are piecewise linear, so a finite step gives their rates exactly
        dv = A.velocity(xa[None])[0] - B.velocity(xa[None])[0]
        rate_a = _margin(face_b, B, (xa + tau * dv)[None])[0] - _margin(face_b, B, xa[None])[0]
        rate_b = _margin(face_a, A, (xb - tau * dv)[None])[0] - _margin(face_a, A, xb[None])[0]
        return 0 if rate_a >= rate_b else 1

    @staticmethod
    def _plane_point(sb, Mb, n):
        if isinstance(sb, coal.Halfspace):
            nl = np.asarray(sb.n, dtype=float)
            return Mb.act(nl * float(sb.d))
        h = np.asarray(sb.halfSide)
        return Mb.translation + n * np.max(np.abs(Mb.rotation.T @ n) * h)

    @staticmethod
    def _face(sb, Mb, Jb, n) -> _Face:
        h = np.asarray(sb.halfSide)
        loc = Mb.rotation.T @ n
        k = int(np.argmax(np.abs(loc)))
        others = [i for i in range(3) if i != k]
        center = Mb.translation + n * h[k]
        axes = np.array([Mb.rotation[:, i] for i in others])
        R = Jb.rotation.T
        return _Face(Jb.actInv(center), axes @ R.T, h[others])


def _ball_on_box_normal(c: np.ndarray, box: coal.Box, M: pin.SE3) -> np.ndarray | None:
    """The unit normal (world) from a box's nearest point towards a ball's centre c (m, world),
    None when c is inside the box. On a face it is the face's normal; over an edge or a corner it
    points from that edge or corner (a face's normal there would let the ball sink into the edge
    while its row held it on the face's plane)."""
    local = M.rotation.T @ (c - M.translation)
    h = np.asarray(box.halfSide)
    d = local - np.clip(local, -h, h)
    nd = float(np.linalg.norm(d))
    if nd == 0.0:
        return None
    return M.rotation @ (d / nd)


def _box_edges(box: coal.Box, M: pin.SE3) -> np.ndarray:
    """The 12 edges of a placed box: their ends (12, 2, 3) (m, world)."""
    V = _box_vertices(box) @ M.rotation.T + M.translation
    idx = [(i, j) for i, j in itertools.combinations(range(8), 2) if (i ^ j) in (1, 2, 4)]
    return np.array([(V[i], V[j]) for i, j in idx])


def _segment_distance(p: np.ndarray, a: np.ndarray, u: np.ndarray) -> float:
    """Distance (m) of point p from the segment from a along u."""
    s = min(max((p - a) @ u / (u @ u), 0.0), 1.0)
    return float(np.linalg.norm(p - a - s * u))


def _nearest_edge(edges: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The edge (2, 3) of ``edges`` (k, 2, 3) nearest to point p."""
    return edges[int(np.argmin([_segment_distance(p, a, b - a) for a, b in edges]))]


def _margin(face: _Face | None, Q: _Body, x: np.ndarray) -> np.ndarray:
    """How far (m) world points x (k, 3) lie inside Q's finite face (in its plane), inf without one."""
    if face is None:
        return np.full(len(x), np.inf)
    if Q.world:  # (the fixed world's face is in world axes already: every step's guards ask)
        return (face.half - np.abs((x - face.center).dot(face.axes.T))).min(axis=1)
    r = x - Q.point(face.center)
    return (face.half - np.abs(r.dot(face.axes.dot(Q.R.T).T))).min(axis=1)


def _inside(face, x: np.ndarray, tol: float) -> bool:
    """Whether world point x lies over a box's face (``(box, placement)``; False means not a box: inside)."""
    if face is False or face is None:
        return True
    box, M = face
    loc = M.rotation.T @ (x - M.translation)
    return bool(np.all(np.abs(loc) <= np.asarray(box.halfSide) + tol))


def _dedupe(pts, tol=1e-9):
    out = []
    for p in pts:
        if all(np.linalg.norm(p - q) > tol for q in out):
            out.append(p)
    return out


def _spread_order(X: np.ndarray, idx: Sequence[int]) -> list[int]:
    """Indices ``idx`` of points X (k, 3), widest first: the farthest from their centroid, the
    farthest from it, the farthest from their line, then the rest (a well-conditioned basis)."""
    idx = list(idx)
    if len(idx) <= 1:
        return idx
    P = X[idx]
    first = int(np.argmax(np.linalg.norm(P - P.mean(axis=0), axis=1)))
    second = int(np.argmax(np.linalg.norm(P - P[first], axis=1)))
    e = P[second] - P[first]
    third = int(np.argmax(np.linalg.norm(np.cross(P - P[first], e), axis=1)))
    order = list(dict.fromkeys([first, second, third] + list(range(len(idx)))))
    return [idx[i] for i in order]


def _affine_residual(Xb: np.ndarray, Xd: np.ndarray) -> np.ndarray:
    """Distance (m) of each point of Xd (d, 3) from the affine hull of the points Xb (k, 3)."""
    if not len(Xb):
        return np.full(len(Xd), np.inf)
    A = np.vstack([Xb.T, np.ones(len(Xb))])
    B = np.vstack([Xd.T, np.ones(len(Xd))])
    c = np.linalg.lstsq(A, B, rcond=None)[0]
    return np.linalg.norm(A @ c - B, axis=0)


def _region(X: np.ndarray, tol: float = 1e-7) -> str:
    """``vertex``, ``edge`` or ``face``: the affine dimension of support points X (k, 3) (m)."""
    if len(X) <= 1:
        return "vertex"
    sv = np.linalg.svd(X - X.mean(axis=0), compute_uv=False)
    return {0: "vertex", 1: "edge"}.get(int(np.sum(sv > tol)), "face")


# ----------------------------------------------------------- support-set LCP
def _support_qp(A: np.ndarray, s0: np.ndarray, normal: np.ndarray, t: float) -> np.ndarray:
    """``min 1/2 lam^T (A_sym + eps I) lam + s0^T lam`` with ``lam >= 0`` on the normal rows.

    The mixed LCP's solution when A is symmetric (forward dynamics); the least-squares forces
    among equivalent ones when points are redundant."""
    k = len(s0)
    H = 0.5 * (A + A.T)
    scale = max(float(np.max(np.abs(np.diag(H)))), 1e-12)
    # A is positive semi-definite up to round-off (and for sliding friction only nearly so)
    shift = max(0.0, -float(np.linalg.eigvalsh(H)[0])) + 1e-9 * scale
    H = H + shift * np.eye(k)
    try:  # lam >= 0 on the normal rows
        lam = solve_qp(H, s0, G=-np.eye(k)[normal], h=np.zeros(int(np.count_nonzero(normal)))).x
    except QPError as exc:
        raise ControlkitError(f"t = {t:.9g} s: the contact support problem could not be solved ({exc})") from exc
    return np.where(normal, np.maximum(lam, 0.0), lam)


def _refine_lcp(A: np.ndarray, s0: np.ndarray, normal: np.ndarray, lam: np.ndarray,
                max_iter: int = 50) -> np.ndarray:
    """Active-set pivoting on the true (possibly unsymmetric, e.g. sliding friction) A from the QP's
    support: drop the most tensile support point, add the most penetrating free point, until
    ``lam >= 0, s = s0 + A lam >= 0`` hold with ``lam_i s_i = 0`` on the normal rows (the other rows
    always held; least-squares forces on redundant sets)."""
    k = len(s0)
    tol_s = 1e-9 * max(float(np.max(np.abs(s0))), 1e-12)
    S = ~normal | (lam > 1e-9 * max(float(lam[normal].max(initial=0.0)), 1e-12))
    for _ in range(max_iter):
        lamS = np.zeros(k)
        idx = np.flatnonzero(S)
        if idx.size:
            lamS[idx] = np.linalg.lstsq(A[np.ix_(idx, idx)], -s0[idx], rcond=1e-10)[0]
        s = s0 + A @ lamS
        neg = np.where(S & normal, lamS, np.inf)
        pen = np.where(~S & normal, s, np.inf)
        tol_l = 1e-9 * max(float(np.abs(lamS).max(initial=0.0)), 1e-12)
        if neg.min() < -tol_l:
            S[int(np.argmin(neg))] = False
        elif pen.min() < -tol_s:
            S[int(np.argmin(pen))] = True
        else:
            return np.where(normal, np.maximum(lamS, 0.0), lamS)
    return lam  # no convergence: keep the QP's forces


def _basic_forces(rows: np.ndarray, others: np.ndarray, lam: np.ndarray) -> np.ndarray | None:
    """Compressive forces on a basic subset of points with the same generalized force as ``lam``.

    Args:
        rows: the candidate points' normal rows (k, nv).
        others: rows whose forces are free (constraints, sticking rows) (m, nv), m may be 0.
        lam: compressive normal forces (k,) (N).
    Returns forces (k,) >= 0, nonzero on points with independent rows (Caratheodory: a nonneg
    combination of k vectors is one of at most rank-many of them), or None when NNLS leaves a
    residual (then no such subset was found)."""
    if not len(rows):
        return np.zeros(0)  # (scipy's nnls crashes on an empty matrix)
    A = rows.T
    if len(others):
        Q = np.linalg.qr(others.T)[0]
        A = A - Q @ (Q.T @ A)  # modulo the free forces' span
    b = A @ lam
    x, res = nnls(A, b)
    return x if res <= 1e-9 * max(float(np.linalg.norm(b)), 1e-12) else None


def _top_of_lines(lines, default: float) -> float:
    """``max_s min_i (a_i s + b_i)`` of lines ``(a_i, b_i)``, or ``default`` when unbounded.

    The 1-D LP's dual: the least of the flat lines' heights and of the heights where a rising line
    meets a falling one (a dual vertex has one or two nonzero weights). A handful of lines: plain
    floats beat numpy's per-call cost."""
    best = math.inf
    up, down = [], []
    for a, b in lines:
        if a > 0.0:
            up.append((a, b))
        elif a < 0.0:
            down.append((a, b))
        elif b < best:
            best = b
    for a, b in up:
        for c, e in down:
            x = (a * e - c * b) / (a - c)
            if x < best:
                best = x
    return best if best < math.inf else default


def _support_margin(fn: np.ndarray, C: np.ndarray) -> float:
    """``max t`` over redistributions: dependent forces ``mu >= t`` and held forces ``fn - C^T mu >= t``.

    Args:
        fn: the held points' normal forces (k,) (N).
        C: affine coordinates (d, k) of the d dependent points in the held ones.
    The same generalized force for every ``mu``: a dependent point's row is ``C[i]`` of the held rows.
    """
    k, d = len(fn), len(C)
    if d == 1:
        f = fn.tolist()
        lines = [(1.0, 0.0)]  # the dependent force's own line, then the held ones' (a loop: no comprehension)
        for c, x in zip(C[0].tolist(), f):
            lines.append((-c, x))
        return _top_of_lines(lines, min(f, default=math.inf))
    # a small LP as a regularized QP in (mu, t), scaled to forces of order one
    scale = max(float(np.abs(fn).max(initial=0.0)), 1e-12)
    n = d + 1
    G = 1e-8 * np.eye(n)
    a = np.zeros(n)
    a[-1] = 1.0
    rows = np.zeros((n, d + k))
    rows[:d, :d] = np.eye(d)
    rows[:d, d:] = -C
    rows[d, :] = -1.0
    b = np.concatenate([np.zeros(d), -fn / scale])
    try:  # (rows^T x >= b written as -rows^T x <= -b)
        x = solve_qp(G, -a, G=-rows.T, h=-b).x
    except QPError:
        return float(fn.min(initial=np.inf))
    return float(x[-1] * scale)


# ----------------------------------------------------------- the event source
class ContactSource(EventSource):
    """Impacts, contact hinges and stick/slip friction for the pairs of a collision world.

    Args:
        world: the collision world.
        friction: a :class:`FrictionTable`, ``(mu_s, mu_k)``, one mu, 0 (frictionless) or a dict.
        restitution: impact restitution: one e, ``{(mat_a, mat_b): e, "default": e}`` or a table.
        law: impact law: ``"simultaneous"`` (default), ``"propagative"`` or ``"plastic"``.
        tolerance: time tolerance (s) of event isolation.
        touch_distance: pairs closer than this (m) are touching.
        penetration_tolerance: slack (m) of the watched vertices and face margins.
        rest_velocity: a contact whose normal velocity after an impact is below this (m/s) rests.
        stick_velocity: a new contact whose sliding speed is below this (m/s) sticks.
    """

    kind = VELOCITY

    def __init__(self, world: CollisionWorld, friction=None, restitution=0.0, *, law: str = "simultaneous",
                 tolerance: float = 1e-9, touch_distance: float = 1e-5, penetration_tolerance: float = 1e-6,
                 rest_velocity: float = 1e-3, stick_velocity: float = 1e-4, impact_velocity: float = 1e-7,
                 name: str = "contacts"):
        if law not in LAWS:
            raise ControlkitError(f"enable_contacts: law must be one of {', '.join(LAWS)}; got {law!r}")
        for what, val in (("tolerance", tolerance), ("touch_distance", touch_distance),
                          ("penetration_tolerance", penetration_tolerance), ("rest_velocity", rest_velocity),
                          ("stick_velocity", stick_velocity)):
            if not val > 0:
                raise ControlkitError(f"enable_contacts: {what} must be positive, got {val}")
        mats = world.mech.materials
        self.world = world
        self.friction = FrictionTable.make(friction, mats)
        self.restitution = RestitutionTable.make(restitution, mats)
        self.law = law
        self.tolerance = float(tolerance)
        self.touch_distance = float(touch_distance)
        self.slack = float(penetration_tolerance)
        self.rest_velocity = float(rest_velocity)
        self.stick_velocity = float(stick_velocity)
        self.impact_velocity = float(impact_velocity)
        self.crossing_slack = 1e-3  # m: how far a crossing point may lag before it is an event
        self.name = name
        self.geometry = _Geometry(world, self.touch_distance)
        self.hinges: dict[int, ContactHinge] = {}
        # pairs whose contact broke while they still touched -> their distance then (m, <= 0)
        self._grace: dict[int, float] = {}
        self.support_solves: list[float] = []  # wall time (s) of each support-set solve
        self._stuck: list[ContactHinge] = []  # sticking hinges that still slipped at the last update
        self.impacts = 0

    # --------------------------------------------------------------- guards
    def guards(self, sim, t, q, v):
        self._layout = None
        self._step = sim.dt  # s: the longest step (how far a crossing point may lag)
        d = self.world.distances(q)
        for k, d0 in self._grace.items():
            # broken while touching: a later return is a crossing past the slack, counted from
            # where the pair was (a drifted contact may break slightly overlapping)
            d[k] += self.slack - d0
        if not self.hinges:
            return d
        mech = sim.mech
        # the solution must be this state's under the simulator's statements: a program's guard
        # may have set the state (to read a point) without solving
        if not (mech._q is q and mech._v is v and mech.solved(sim.equations)):
            try:
                sim._accel(t, q, v)
            except InconsistentEquationsError:
                # the supports' rows can no longer hold together (nearly dependent, drifted apart):
                # their force guards read as crossed, so the first such instant is an event and the
                # supports are chosen again there
                self._net(d)
                return np.concatenate([d] + [np.full(len(self._hinge_guards(h, np.zeros(h.size))), -1.0)
                                             for h in self.hinges.values()])
        self._net(d)
        sol = mech.solution
        out, starts, at = [d], [], len(d)
        for h in self.hinges.values():
            starts.append(at)
            out.append(self._hinge_guards(h, _multipliers_of(sol, h)))
            at += len(out[-1])
        self._layout = (self._layout_key(q), starts, at)
        return np.concatenate(out)

    _layout = None
    _step = 0.0

    def _net(self, d: np.ndarray) -> None:
        """The hinged pairs' distance guards (in place; the mechanism at the guards' state).

        A hinged pair is watched through its hinge, and its distance as a safety net: an edge
        crossing into a face (a block sliding over the end of the ground) has no vertex to watch,
        and shows only as the pair's penetration growing past the tolerance. Only the penetration
        its support points do not show counts: theirs is their own rows' error, which the
        stabilization corrects (semi-implicit Euler's drift: a sticking sole under a swinging leg
        sinks ~50 um/s at 1 ms steps until Baumgarte's offset, ~10 um, holds it)."""
        for k, h in self.hinges.items():
            d[k] += self.slack - h.depth0 - (h.shown_depth() - h.shown0)

    def _layout_key(self, q):
        """What the state-only guards depend on besides the statements."""
        hinges = []  # (twice per step: a loop, no generator)
        for k, h in self.hinges.items():
            hinges.append((k, id(h), h.version, h.mode, h.controlled, h.depth0, h.shown0))
        return q.tobytes(), tuple(self._grace.items()), tuple(hinges)

    def guards_after_control(self, sim, t, q, v, before):
        """Only the force guards again (the support margins, stick and slide): distances and
        vertex gaps depend on the state alone, which a control phase does not change."""
        lay, mech = self._layout, sim.mech
        if lay is None or len(before) != lay[2] or lay[0] != self._layout_key(q) \
                or not (mech._q is q and mech._v is v and mech.solved(sim.equations)):
            return self.guards(sim, t, q, v)
        sol, out = mech.solution, before.copy()
        for h, start in zip(self.hinges.values(), lay[1]):
            f = self._force_guards(h, _multipliers_of(sol, h))
            out[start:start + len(f)] = f
        return out

    def _hinge_guards(self, h: ContactHinge, lam: np.ndarray) -> np.ndarray:
        return np.concatenate([np.asarray(self._force_guards(h, lam), dtype=float), *self._geometry_guards(h)])

    def _force_guards(self, h: ContactHinge, lam: np.ndarray) -> list[float]:
        """The guards that depend on the forces (the statements): support margin, stick or slide
        (none for a controlled hinge: the solve keeps its forces compressive and in the pyramid)."""
        if h.controlled:
            return []
        fn, ft = h.forces(lam)
        f = fn.tolist()  # (a few numbers: Python's floats beat numpy's per-call cost)
        # the support holds while some compressive distribution over all its points gives these
        # forces; a margin that is zero in theory (a point resting with no load) fires only on a
        # tensile force beyond round-off, not on noise around zero
        g = [h.support_margin(fn) + 1e-9 * (sum(map(abs, f)) + 1e-12)]
        if h.mode == "stick":
            g.append(h.mu_s * sum(f) - math.hypot(*ft.tolist()))
        elif h.mode == "slide":
            g.append(h.tangential_velocity().dot(h.slide_dir))
        return g

    def _geometry_guards(self, h: ContactHinge) -> list[np.ndarray]:
        """Spare vertices touching down (inside the other's face) and support points leaving a face
        (arrays, in guard order)."""
        g: list[np.ndarray] = []
        sides = h.sides()
        watched, edges = self._watched(h)
        for owner, la, lo, offset, pts, slack, crossings in watched:
            P, Q, k = sides[owner]
            face = h.faces[owner]
            if len(la):
                x = P.point(la)
                # (over the fixed world, lo's points are world points already)
                gap = (x - (lo if Q.world else Q.point(lo))).dot(k) - offset
                # a vertex matters only over the face: max(gap, -margin) <= 0 means below and inside
                g.append((gap if face is None else np.maximum(gap, -_margin(face, Q, x))) + self.slack)
            if face is not None and len(pts):
                # a crossing point follows its edges (re-placed after each step); its guard only
                # catches a crossing that ends (the edges no longer cross near it). Held fixed in
                # its owner during a step it lags by up to a step's relative motion, which its
                # slack allows (a block sliding at 3 m/s over the ground's end at 2 ms steps:
                # 6 mm, else a zero-energy event every step)
                x = P.point(pts)
                margin = _margin(face, Q, x) + slack
                if crossings:
                    crossing = slack > self.slack
                    dv = P.velocity(x[crossing]) - Q.velocity(x[crossing])
                    dv -= np.outer(dv.dot(k), k)
                    margin[crossing] += self._step * np.sqrt(np.einsum("ij,ij->i", dv, dv))
                g.append(margin)
        if edges:  # an edge crossing: it ends where it leaves either edge
            g.append(np.array([_edge_geometry(*sides[0][:2], p.edges)[-1] + self.slack for p in edges]))
        return g

    def _watched(self, h: ContactHinge):
        """Per owner: the spare vertices (local points of both bodies, offsets) and the support
        points with their slacks, as arrays, and whether any of those is a crossing point; and the
        edge-crossing support points (cached while the hinge's points are the same)."""
        key = (h.version, tuple(h.spare), tuple(h.support()))
        if not _same_key(h.__dict__.get("_watch_key"), key):
            out = []
            for owner in (0, 1):
                spare = [s for s in h.spare if s.owner == owner]
                pts = [p for p in h.support() if p.owner == owner and p.edges is None]
                if not spare and not pts:
                    continue
                out.append((owner, np.array([s.local_a for s in spare]).reshape(-1, 3),
                            np.array([s.local_o for s in spare]).reshape(-1, 3), np.array([s.offset for s in spare]),
                            np.array([p.local_a for p in pts]).reshape(-1, 3),
                            np.array([self.crossing_slack if p.crossing else self.slack for p in pts]),
                            any(p.crossing for p in pts)))
            h._watch_key, h._watch = key, (out, [p for p in h.support() if p.edges is not None])
        return h._watch

    def max_step(self, sim, t, q, v):
        return self.world.time_to_contact(q, v, exclude=set(self.hinges), a=sim._a,
                                          horizon=max(sim.dt, sim._h_adapt or 0.0))

    def after_step(self, sim) -> None:
        """The control-phase hook: crossing points follow their edges; and after a handler (a
        velocity jump: a lock, another source's impact), a touching pair without a hinge that now
        approaches is an impact at that instant (its distance guard, already <= 0, shows none)."""
        handled = sim._restart
        self.follow_crossings(sim)
        if not handled:
            return
        d = self.world.distances(sim.q)
        near = [k for k in np.flatnonzero(d <= self.touch_distance).tolist() if k not in self.hinges]
        if near and min(c.normal_velocity for c in self.world.contacts(sim.q, sim.v, which=near)) < -self.impact_velocity:
            self.update(sim)

    def follow_crossings(self, sim) -> None:
        """After a step: move each crossing support point to where its two edges now cross.

        Such a point is a material point of neither body: held fixed in one, it would leave that
        body's face at once (an event every micrometre of sliding). Re-placed after every step,
        it lags its true place by at most one step's motion. An edge crossing an edge at an angle
        has its rows from the edges themselves; only its recorded closest points move here."""
        placed = moved = False
        for k, h in self.hinges.items():
            support = h.support()
            old, edges = [], []  # (every step: loops, no comprehension objects)
            for i, p in enumerate(support):
                if p.edges is not None:
                    edges.append(i)
                elif p.crossing:
                    old.append(i)
            if not old and not edges:
                continue
            if not placed:
                sim.mech.set_state(sim.q, sim.v, check=False)
                self.world._place(sim.q, True)
                placed = True
            sides = h.sides()
            changed = False
            for i in edges:
                p = support[i]
                A, B = sides[0][0], sides[0][1]
                xa, xb = _edge_geometry(A, B, p.edges)[:2]
                la = A.R.T @ (xa - A.t)
                if np.linalg.norm(la - p.local_a) > 1e-9:
                    support[i] = SupportPoint(la, B.R.T @ (xb - B.t), crossing=True, edges=p.edges)
                    changed = True
            g = self.geometry.contact(k) if old else None
            new = [p for p in g.points if p.crossing and p.edges is None] \
                if g is not None and g.joints == h.joints else []
            if not new:
                old = []  # the crossing ended: its margin guard fires
            where = np.array([sides[p.owner][0].point(p.local_a) for p in new]).reshape(-1, 3)
            for i in old:
                p = support[i]
                x = sides[p.owner][0].point(p.local_a)
                j = int(np.argmin(np.linalg.norm(where - x, axis=1)))
                if 1e-9 < np.linalg.norm(where[j] - x) <= self.crossing_slack:
                    support[i] = new[j]
                    changed = True
            h.points, h.dependent = support[:len(h.points)], support[len(h.points):]
            if changed:
                h.version += 1
                h._cache_version = -1
                moved = True
        if moved:
            sim.set_state()

    # -------------------------------------------------------------- handler
    def handle(self, sim, t, fired):
        self.update(sim)

    def update(self, sim) -> None:
        """Re-establish every contact at the simulator's state: impacts, support sets, stick/slip."""
        mech = sim.mech
        mech.set_state(sim.q, sim.v, check=False)
        self.world._place(sim.q, True)
        d = self.world.distances(sim.q)
        self._grace = {k: d0 for k, d0 in self._grace.items() if d[k] <= self.touch_distance}
        touching = sorted(set(np.flatnonzero(d <= self.touch_distance)) | set(self.hinges))
        geo = {k: self.geometry.contact(int(k)) for k in touching}
        geo = {k: g for k, g in geo.items() if g is not None}
        self._impact(sim, geo)
        self._establish(sim, geo)
        self._settle(sim)
        # the guards count from the distances here (q is unchanged): broken pairs and hinged ones;
        # a broken pair hinged again is watched through its hinge alone (its offset counted once)
        self._grace = {k: min(float(d[k]), 0.0) for k in self._grace if k not in self.hinges}
        # an unhinged pair left touching and not parting (an edge on an edge after their impact):
        # its distance starts at or below 0, where no crossing of 0 can fire; watched from here
        # past the slack instead (random drop seed 7 sank 84 um with no event after such an impact)
        for k, c in self._lingering(sim, geo, d):
            self._grace[k] = min(float(d[k]), 0.0)
        for k, h in self.hinges.items():
            h.depth0 = min(float(d[k]), 0.0)
            h.shown0 = h.shown_depth()

    def rest_speed(self, mech) -> float:
        """The separating speed (m/s) below which a bounce ends in rest: ``rest_velocity``, or
        ``sqrt(2 g slack)`` when larger (g the gravity's magnitude): a bounce that cannot rise by
        more than the penetration tolerance would land back inside the tolerance band, and the
        next watched crossing lies one tolerance deeper (a box bouncing by micrometres sank by
        the tolerance at every bounce)."""
        g = float(np.linalg.norm(mech.model.gravity.linear))
        return max(self.rest_velocity, math.sqrt(2.0 * g * self.slack))

    def _settle(self, sim) -> None:
        """Hold what the hinges now hold: the velocity's M-weighted projection onto ``J v = 0`` of
        every held row (an impulse, so kinetic energy can only drop).

        Done when a sticking hinge still slips: it begins to stick while its points slip at up to
        ``stick_velocity`` (and an edge or face may still turn about its normal); left to the rows'
        velocity feedback, that slip is taken out over ~1/kv s by the static friction forces,
        which do work on the bodies: a box sticking while it turned at 0.05 rad/s gained 0.15 W.
        (Every held row takes part, so the others stay held.)"""
        mech = sim.mech
        cons = list(mech.constraints.values())
        if not self._stuck:
            return
        mech.set_state(sim.q, sim.v, check=False)
        J = np.vstack([c.jacobian() for c in cons if c.size])
        if not len(J) or float(np.abs(J @ sim.v).max()) == 0.0:
            return
        sim.v = project_velocities(mech, cons, sim.q, sim.v)
        mech.set_state(sim.q, sim.v, check=False)
        sim.set_state()

    def _point_rows(self, sim, geo):
        """Normal rows (k, nv), normal velocities (k,) and owners of every candidate point."""
        mech = sim.mech
        mech.set_state(sim.q, sim.v, check=False)
        mech.kinematics()
        rows, owners = [], []
        for k, g in geo.items():
            sides = _sides(mech, g.joints, g.normal_b, g.normal_a)
            for i, p in enumerate(g.points):
                rows.append(_point_rows_of(sides, p, None, 0.0)[1])
                owners.append((k, i))
        J = np.vstack(rows) if rows else np.zeros((0, mech.nv))
        return J, J @ sim.v, owners

    def _lingering(self, sim, geo, d):
        """Unhinged pairs of ``geo`` at distance <= 0 whose nearest points do not part faster than
        ``rest_velocity``: ``[(pair, coal contact)]``."""
        ks = [int(k) for k in geo if k not in self.hinges and k not in self._grace and d[k] <= 0.0]
        if not ks:
            return []
        return [(c.index, c) for c in self.world.contacts(sim.q, sim.v, which=ks) if c.normal_velocity <= self.rest_velocity]

    def _missed_rows(self, sim, geo, J, u, owners):
        """The point rows plus, for an unhinged touching pair whose support points all part while
        coal's nearest points close (an edge striking an edge at an angle, whose patch points a face's
        normal cannot hold: random drop seed 7 went 0.17 mm deep), one row along coal's normal at
        its nearest points, so that the impact sees the approach."""
        extra = []
        for k in geo:
            if k in self.hinges or any(kk == k and ui < -self.impact_velocity for ui, (kk, _) in zip(u.tolist(), owners)):
                continue
            c = self.world.contacts(sim.q, sim.v, which=[int(k)])[0]
            if c.distance <= self.touch_distance and c.normal_velocity < -self.impact_velocity:
                extra.append((k, c))
        if not extra:
            return J, u, owners
        return (np.vstack([J] + [c.jacobian[None] for _, c in extra]),
                np.concatenate([u, [c.normal_velocity for _, c in extra]]), owners + [(k, -1) for k, _ in extra])

    def _impact(self, sim, geo) -> None:
        if not geo:
            return
        J, u, owners = self._missed_rows(sim, geo, *self._point_rows(sim, geo))
        if not len(u) or u.min() >= -self.impact_velocity:
            return
        mech = sim.mech
        M, _ = mech.dynamics()
        # bilateral constraints (loop closures, welds) take part in the impact as stiff plastic rows
        cons = [c for c in mech.constraints.values() if not isinstance(c, ContactHinge)]
        e = np.array([self.restitution(*geo[k].geoms) for k, _ in owners])
        fixed = [c.jacobian() for c in cons]
        # so do sticking contacts' tangential rows (impulsive stick: a foot standing on the ground
        # does not slide when the other one strikes), where the impulse stays inside the cone
        sticking = [h for h in self.hinges.values() if h.mode == "stick" and h._stick_rows()]
        was_sticking = list(sticking)
        names = ", ".join(f"{geo[k].geoms[0]}/{geo[k].geoms[1]}" for k in geo)
        where = f"t = {sim.t:.9g} s, impact of {names}"
        while True:
            stick = [h._rows()[1][len(h.points):][h._stick_mask()] for h in sticking]
            held = np.vstack(fixed + stick) if fixed or stick else None
            try:
                res = resolve_impact(M, J, sim.v, e, self.law, bilateral=held, where=where)
            except ImpactError:
                if not sticking:
                    raise
                # no impulses hold every sticking hinge (their rows and the resting points' depend
                # on each other and disagree: boxes landing together, stuck side by side): they
                # slide through the impact, as when their impulse leaves the friction cone
                sticking = []
                continue
            # a bounce leaving slower than the rest speed ends the bounces (their accumulation point
            # is within 2 u / (|a_n| (1 - e))): plastic, so the pair rests in a hinge with no
            # normal velocity left (which would lift it off the ground before the rows pulled it back)
            ua = J @ res.v
            slow = (e > 0.0) & (ua > self.impact_velocity) & (ua <= self.rest_speed(mech)) & (res.impulses[:len(e)] > 0.0)
            if slow.any():
                e = np.where(slow, 0.0, e)
                continue
            slipping = self._impulse_outside_cone(res.impulses, owners, len(J), sum(len(f) for f in fixed), sticking, stick)
            if slipping is None:
                break
            sticking.remove(slipping)  # it slides through the impact: only its normal rows take part
        k0, k1 = res.kinetic_energy_before, res.kinetic_energy_after
        nimp = len(u)
        sim.log("impact", f"{self.law} impact: {names}; kinetic energy {k0:.6g} -> {k1:.6g} J", law=self.law,
                pairs=[list(geo[k].geoms) for k in geo], normal_velocity_before=u.tolist(),
                normal_velocity_after=(J @ res.v).tolist(), impulses=res.impulses[:nimp].tolist(),
                restitution=e.tolist(), kinetic_energy_before=k0, kinetic_energy_after=k1,
                v_before=sim.v.tolist(), v_after=res.v.tolist())
        self.impacts += 1
        sim.v = res.v
        mech.set_state(sim.q, sim.v, check=False)
        u1 = J @ res.v
        for h in was_sticking:
            # slid through the impact and still resting on all its points: it slides on (held as
            # sticking, its slip would be stopped by static friction doing work, or impulsively);
            # a hinge tipping off some points is chosen again by the support pass
            if h not in sticking and all(u1[i] <= self.rest_velocity for i, (k, _) in enumerate(owners) if k == h.pair):
                vt = h.tangential_velocity()
                if np.linalg.norm(vt) > self.stick_velocity:
                    h.mode, h.slide_dir = "slide", _unit(vt)
                    h.version += 1
                    h._cache_version = -1

    @staticmethod
    def _impulse_outside_cone(impulses, owners, npoints, nfixed, sticking, stick) -> "ContactHinge | None":
        """The sticking hinge whose tangential impulse (N s) exceeds mu_s times its normal impulse, if any.

        ``impulses``: per row of ``[points, fixed, stick]`` (the bilateral rows' with either sign)."""
        off = npoints + nfixed
        for h, rows in zip(sticking, stick):
            pt = impulses[off:off + min(len(rows), 2)]
            off += len(rows)
            pn = sum(impulses[i] for i, (k, _) in enumerate(owners) if k == h.pair)
            if np.linalg.norm(pt) > h.mu_s * pn * (1 + 1e-9) + 1e-12:
                return h
        return None

    def _establish(self, sim, geo) -> None:
        mech = sim.mech
        J, u, owners = self._point_rows(sim, geo) if geo else (np.zeros((0, mech.nv)), np.zeros(0), [])
        resting = {}
        for (k, i), ui in zip(owners, u):
            if ui <= self.rest_velocity:
                resting.setdefault(k, []).append(i)
        old = {k: (h.region, len(h.support()), h.mode) for k, h in self.hinges.items()}
        # candidate hinges: every resting point, normal rows lifted
        for k in list(self.hinges):
            if k not in resting:
                self._remove(sim, k, "separating")
        for k, idx in resting.items():
            g = geo[k]
            h = self.hinges.get(k)
            if h is None:
                h = self._new_hinge(sim, g)
            self._reshape(h, g, idx)
        for h in self.hinges.values():
            h.slipped = False
        for _ in range(6):  # support sets and friction modes depend on each other
            if not self.hinges:
                break
            self._support(sim)
            if not self.hinges or not self._friction_pass(sim):
                break
        for k, h in list(self.hinges.items()):
            self._log_change(sim, h, old.get(k))
        # sticking hinges whose stick rows still see a slip (a stick begun at up to stick_velocity,
        # an edge or face still turning about its normal): what _settle takes out
        self._stuck = [h for h in self.hinges.values() if h.mode == "stick" and not h.controlled and h._slips(sim.v)]
        sim.set_state()

    def _new_hinge(self, sim, g: _PairContact) -> ContactHinge:
        mu = self.friction(*g.geoms)
        h = ContactHinge(f"contact {g.geoms[0]}/{g.geoms[1]}", g.pair, g.geoms, g.joints, g.normal_b, mu)
        h.points, h.region = list(g.points), g.region
        h.bind(sim.mech)
        h._sim = sim
        h.mode = "new"
        self.hinges[g.pair] = h
        sim.mech.constraints[h.name] = h
        return h

    def _reshape(self, h: ContactHinge, g: _PairContact, idx: list[int]) -> None:
        h.joints, h.geoms, h.normal_b, h.normal_a = g.joints, g.geoms, g.normal_b, g.normal_a
        h.balls = g.balls
        h._tangents_b = _tangents(g.normal_b)
        h.candidates = [g.points[i] for i in idx]
        h.points, h.dependent = list(h.candidates), []
        h.region = g.region if len(idx) == len(g.points) else {1: "vertex", 2: "edge"}.get(len(idx), "face")
        if g.region == "point":
            h.region = "point"
        h.spare_geometry = [s for s in g.spare
                            if not _coincides(s, h.points)]
        h.spare = list(h.spare_geometry)
        h.faces = g.faces
        h.version += 1
        h._cache_version = -1

    def _remove(self, sim, k: int, why: str) -> None:
        h = self.hinges.pop(k)
        sim.mech.constraints.pop(h.name, None)
        self._grace[k] = 0.0  # its distance is set at the end of update()
        if hasattr(h, "_logged_mode"):  # a candidate dropped in the update that proposed it was never made
            sim.log("contact_broken", f"{h.label}: contact broken ({why})", pair=list(h.names))

    # ------------------------------------------------------ support set (QP)
    def _support(self, sim) -> None:
        t0 = time.perf_counter()
        mech = sim.mech
        hinges = list(self.hinges.values())
        for h in hinges:
            if h.mode == "new":
                vt = h.tangential_velocity()
                if h.mu_s == 0:
                    h.mode = "frictionless"
                elif np.linalg.norm(vt) <= self.stick_velocity:
                    h.mode = "stick"
                    h.set_anchor()
                else:
                    h.mode, h.slide_dir = "slide", vt / np.linalg.norm(vt)
        torques_free = self._torques_free(sim)
        for h in hinges:
            h.stick_keep[:] = True
            h.points, h.dependent, h.spare = list(h.candidates), [], list(h.spare_geometry)
            h.controlled = torques_free and self._actuated(mech, h)
            h.version += 1
            h._cache_version = -1
        # a controlled contact keeps every candidate: the solve distributes compressive forces
        hinges = [h for h in hinges if not h.controlled]
        lam, held = self._lcp(sim, hinges) if hinges else (np.zeros(0), np.zeros(0, dtype=bool))
        self._choose_bases(mech, hinges, held)
        for _ in range(len(lam) + 1):
            # the support found holds with compressive forces (the LCP's); a basis made
            # inconsistent by round-off or by a dependency on other hinges gives up its weakest point
            try:
                sol = sim.solve_now()
            except InconsistentEquationsError:
                # no forces at all hold these rows together (nearly dependent rows whose errors
                # disagree, or sliding friction making the contact matrix singular): the first
                # point whose release makes them consistent is released, sliding hinges' first
                if not self._release_for_consistency(sim):
                    raise
                continue
            worst = min(((h.support_margin(h.forces(sol.lam[h.name])[0]), h) for h in self.hinges.values()
                         if not h.controlled), key=lambda z: z[0], default=(np.inf, None))
            h = worst[1]
            if h is None or worst[0] >= -1e-9 * max(float(np.abs(sol.lam[h.name]).max(initial=0.0)), 1e-12):
                break
            self._release(sim, h, h.points[int(np.argmin(h.forces(sol.lam[h.name])[0]))])
        sol = sim.solve_now() if any(h.controlled for h in self.hinges.values()) else None
        for h in self.hinges.values():
            self._arm_spares(h)
            if h.controlled and h.region != "point":
                fn = h.forces(sol.lam[h.name])[0]
                h.region = {0: "none", 1: "vertex", 2: "edge"}.get(int(np.sum(fn > 1e-9 * max(fn.max(initial=0), 1e-12))), "face")
        self.support_solves.append(time.perf_counter() - t0)

    def _release(self, sim, h: ContactHinge, point: SupportPoint) -> None:
        """Give up one support point of h (it becomes a spare vertex, watched for touching down);
        the free hinges' held and dependent points are chosen again; h is removed if left empty."""
        h.spare.append(point)
        free = [x for x in self.hinges.values() if not x.controlled]
        for x in free:
            x.points, x.dependent = [p for p in x.support() if p is not point], []
            x.stick_keep[:] = True
            x._cache_version = -1
        if not h.points:
            self._remove(sim, h.pair, "no compressive support")
            free.remove(h)
        self._choose_bases(sim.mech, free, np.ones(sum(len(x.points) for x in free), dtype=bool))

    def _release_for_consistency(self, sim) -> bool:
        """Release the first support point (sliding hinges' first; never a hinge's last) after
        which the rows are consistent; False (everything as it was) if no single point does it."""
        free = [h for h in self.hinges.values() if not h.controlled]
        saved = [(h, list(h.points), list(h.dependent), list(h.spare), h.stick_keep.copy()) for h in free]
        for h in sorted(free, key=lambda x: x.mode != "slide"):
            for point in list(h.points) if len(h.support()) > 1 else []:
                self._release(sim, h, point)
                try:
                    sim.solve_now()
                    return True
                except InconsistentEquationsError:
                    for x, points, dependent, spare, keep in saved:
                        x.points, x.dependent, x.spare = list(points), list(dependent), list(spare)
                        x.stick_keep[:] = keep
                        x.version += 1
                        x._cache_version = -1
        return False

    @staticmethod
    def _torques_free(sim) -> bool:
        """Whether the solve chooses the actuators' torques (inverse dynamic control)."""
        mech = sim.mech
        if mech.ntau == 0:
            return False
        # the statements say it, assembled at this state (a solve could fail: every candidate
        # point is held at this moment, and nearly dependent ones need not be consistent)
        mech.set_state(sim.q, sim.v, check=False)
        p = build_problem(mech, sim.equations, sim.t)
        fixed = set(np.concatenate([cols for _, cols, _ in p.fixed]).tolist()) if p.fixed else set()
        return not set(range(p.layout.tau.start, p.layout.tau.stop)) <= fixed

    @staticmethod
    def _actuated(mech, h: ContactHinge) -> bool:
        """Whether an actuated joint moves either body of the hinge (then a controller holds it)."""
        act = np.asarray(mech.S).any(axis=0)
        model = mech.model
        for j in h.joints:
            while j:
                jm = model.joints[j]
                if act[jm.idx_v:jm.idx_v + jm.nv].any():
                    return True
                j = model.parents[j]
        return False

    def _arm_spares(self, h: ContactHinge) -> None:
        """Watch the spare vertices from where they are: one already slightly below the surface
        (a dropped redundant point) fires when it sinks a further ``penetration_tolerance``."""
        sides = h.sides()
        spares = []
        for s in h.spare:
            P, Q, k = sides[s.owner]
            gap = float((P.point(s.local_a) - Q.point(s.local_o)) @ k)
            spares.append(SupportPoint(s.local_a, s.local_o, s.radius, s.owner, min(gap, 0.0)))
        h.spare = spares

    def _choose_bases(self, mech, hinges, held: np.ndarray) -> None:
        """Each hinge's support (its ``held`` candidates) as held points and dependent points.

        Every support point rests, so all must stay on the surface; but the rows of coplanar
        points are dependent (three corners of a face hold the fourth), and dependent rows would
        leave the forces indeterminate and make nearly dependent ones (a foot and its toe both
        flat) inconsistent. So an independent subset is held, chosen for its spread (a wide
        triangle, not the one that happens to carry the load now), and the rest are dependent
        points: their forces can be taken over from the held ones (:meth:`ContactHinge.support_margin`),
        so the contact changes only when no compressive distribution over the whole support is
        left (the centre of pressure leaves the support polygon), not whenever the load leaves the
        held triangle. A support point dependent through other constraints only (not in its own
        hinge's plane) is watched as a spare vertex instead. Also sets each hinge's ``stick_keep``.
        """
        chosen: list[np.ndarray] = []

        def add(row) -> bool:
            nr = np.linalg.norm(row)
            if nr == 0.0:
                return False
            trial = np.array(chosen + [row / nr])
            sv = np.linalg.svd(trial, compute_uv=False)
            if len(sv) < len(trial) or sv[-1] <= 1e-5 * sv[0]:  # well clear of the solver's and the critical-form rank tests
                return False
            chosen.append(row / nr)
            return True

        for c in mech.constraints.values():
            if not isinstance(c, ContactHinge):
                for row in c.jacobian():
                    add(row)
        full = [h._rows()[1] for h in hinges]
        for h, J in zip(hinges, full):
            k = len(h.points)
            for i in range(h._stick_rows()):
                h.stick_keep[i] = add(J[k + i])
            h._cache_version = -1
        off = 0
        for h, J in zip(hinges, full):
            k = len(h.points)
            support = [i for i in range(k) if held[off + i]]
            off += k
            sides = h.sides()
            X = h.positions(h.points, sides)
            basis = [i for i in _spread_order(X, support) if add(J[i])]
            rest = [i for i in support if i not in basis]
            plane = _affine_residual(X[basis], X[rest]) if rest else np.zeros(0)
            dependent = [i for i, r in zip(rest, plane) if r <= 1e-9]
            unsupported = [i for i in range(k) if i not in basis and i not in dependent]
            h.spare += [h.points[i] for i in unsupported]
            h.points, h.dependent = [h.points[i] for i in basis], [h.points[i] for i in dependent]
            h.version += 1
            h._cache_version = -1
            h._affine = None
            if not h.points:
                self._remove(h._sim, h.pair, "no compressive support")
            elif h.region != "point":
                h.region = _region(h.positions(h.support(), sides))

    @staticmethod
    def _equivalent_compressive(mech, hinges, lam: np.ndarray) -> np.ndarray | None:
        """Compressive normal forces with the same generalized force as ``lam`` (all candidate
        points held, every sticking row and constraint free), or None when there are none."""
        free = [c.jacobian() for c in mech.constraints.values() if not isinstance(c, ContactHinge)]
        rows = []
        for h in hinges:
            J = h._rows()[1]
            rows.append(J[: len(h.points)])
            free.append(J[len(h.points):])
        others = np.vstack(free) if free else np.zeros((0, mech.nv))
        return _basic_forces(np.vstack(rows), others, lam)

    def _lcp(self, sim, hinges: Sequence[ContactHinge]) -> tuple[np.ndarray, np.ndarray]:
        """Normal forces (N) of every candidate point and which points stay (see the module docstring).

        First the candidate set itself: when holding every candidate point bilaterally needs
        no tensile force, that is the LCP's solution. Otherwise the mixed LCP (normal forces
        >= 0 with complementarity, sticking rows' forces free) in contact space, its matrix from
        full solves with the hinges' forces applied as external forces.
        """
        mech = sim.mech
        try:
            sol = sim.solve_now()
            lam = np.concatenate([h.forces(sol.lam[h.name])[0] for h in hinges])
            held = np.ones(len(lam), dtype=bool)  # every candidate held: none separates
            if lam.min(initial=0.0) >= -1e-9 * max(float(np.abs(lam).max(initial=0.0)), 1e-12):
                return np.maximum(lam, 0.0), held
            # indeterminate forces (redundant points) are the least-squares ones, which may pull
            # where a compressive set with the same generalized force (the same motion) exists
            basic = self._equivalent_compressive(mech, hinges, lam)
            if basic is not None:
                return basic, held
        except ControlkitError:
            pass  # e.g. candidates that cannot all hold at once
        q, v, t = sim.q, sim.v, sim.t
        f0 = np.zeros(mech.nv)
        if sim.external_force is not None:
            mech.set_state(q, v, check=False)
            f0 = np.asarray(sim.external_force(t, mech), dtype=float)
        mech.set_state(q, v, check=False)
        blocks = [h._rows() for h in hinges]
        phi, J, drift, G = (np.concatenate([b[i] for b in blocks]) for i in range(4))
        normal = np.concatenate([np.arange(len(b[0])) < len(h.points) for b, h in zip(blocks, hinges)])
        for h in hinges:
            h.detached = True
        try:
            stab = drift + sim.equations.kv * (J @ v) + sim.equations.kp * phi
            a0 = evaluate(mech, sim.equations, t, q, v, f0).a
            s0 = J @ a0 + stab
            cols = [J @ evaluate(mech, sim.equations, t, q, v, f0 + G[i]).a + stab - s0 for i in range(len(J))]
        finally:
            for h in hinges:
                h.detached = False
                h._cache_version = -1
            mech.set_state(q, v, check=False)
        A = np.array(cols).T
        lam = _refine_lcp(A, s0, normal, _support_qp(A, s0, normal, t))
        sep = s0 + A @ lam
        tol_s = 1e-9 * max(float(np.max(np.abs(s0))), 1e-12)
        tol_l = 1e-9 * max(float(np.abs(lam).max(initial=0.0)), 1e-12)
        held = (lam > tol_l) | (sep <= tol_s)  # in the support: pressed, or resting with zero force
        return lam[normal], held[normal]

    # -------------------------------------------------------------- friction
    def _friction_pass(self, sim) -> bool:
        """One pass of Coulomb's law over the hinges; True when a mode changed.

        A sticking pair whose friction reaches ``mu_s f_n`` slides, against its friction force;
        a sliding pair that has stopped sticks (tentatively: the next pass checks the static law)."""
        sol = sim.solve_now()
        changed = False
        for h in self.hinges.values():
            if h.controlled and h.mode == "stick":
                continue  # its friction stays in the pyramid (force_inequalities)
            fn, ft = h.forces(_multipliers_of(sol, h))
            # the same test as the slip guard (which fires at <= 0), so a handled event never repeats
            if h.mode == "stick" and np.linalg.norm(ft) >= h.mu_s * fn.sum() * (1 - 1e-9) - 1e-12:
                if np.linalg.norm(ft) == 0.0:
                    continue  # no support left to hold anything: the support pass removes it
                h.mode, h.slide_dir = "slide", _unit(-h.tangent_world(ft))
                h.slipped = True  # it starts sliding now: not "stopped" within this update
                changed = True
            elif h.mode == "slide" and h.slipped:
                pass
            elif h.mode == "slide" and np.linalg.norm(vt := h.tangential_velocity()) > self.stick_velocity:
                if vt @ h.slide_dir < (1 - 1e-6) * np.linalg.norm(vt):
                    h.slide_dir = _unit(vt)  # turned: follow the sliding direction, re-arm the guard
                    h._cache_version = -1
            elif h.mode == "slide":
                h.mode = "stick"
                h.set_anchor()
                changed = True
            if changed:
                h.version += 1
                h._cache_version = -1
        return changed

    # ---------------------------------------------------------------- logging
    def _log_change(self, sim, h: ContactHinge, before) -> None:
        pts = len(h.support())
        data = dict(pair=list(h.names), region=h.region, points=pts, mode=h.mode)
        if before is None:
            sim.log("contact_made", f"{h.label}: {h.region} contact, {pts} points, {h.mode}", **data)
            h._logged_mode = h.mode
            return
        region, npts, mode = before
        if (region, npts) != (h.region, pts):
            sim.log("contact_changed", f"{h.label}: {region} -> {h.region} ({npts} -> {pts} points)",
                    before=region, **data)
        if mode != h.mode and mode != "new":
            kind = "slip" if h.mode == "slide" else "stick" if h.mode == "stick" else "contact_changed"
            sim.log(kind, f"{h.label}: {mode} -> {h.mode}", **data)

    # ------------------------------------------------------------ reporting
    def pair_forces(self, sim) -> dict[str, dict]:
        """Contact forces on A of every hinged pair at the last solve, by ``"geom_a/geom_b"``.

        Each entry: ``normal`` (N, total), ``friction`` (N, world vector: held by the
        sticking rows, or ``-mu_k f_n u`` while sliding), ``mode``, ``region``, ``points``.
        """
        sol = sim.mech.solution
        out = {}
        for h in self.hinges.values():
            fn, ft = h.forces(_multipliers_of(sol, h))
            if h.mode == "stick":
                fr = h.tangent_world(ft)
            elif h.mode == "slide":
                fr = h.sliding_friction(fn)
            else:
                fr = np.zeros(3)
            out[h.label] = dict(normal=float(np.add.reduce(fn)), friction=fr, mode=h.mode,
                                region=h.region, points=len(h.support()))
        return out

    def force_probe(self, sim, geom_a: str, geom_b: str) -> "ContactForceProbe":
        """A recordable quantity: (normal N, friction x, y, z N) of one pair, zeros when apart."""
        return ContactForceProbe(self, sim, f"{geom_a}/{geom_b}")


class ContactForceProbe:
    """Contact force of one pair as a recordable quantity (``Simulator(record={...})``), N."""

    def __init__(self, source: ContactSource, sim, key: str):
        self.source, self.sim, self.key, self.name = source, sim, key, f"contact force {key}"

    def position(self, mech) -> np.ndarray:
        forces = self.source.pair_forces(self.sim)
        f = forces.get(self.key)
        if f is None:
            a, b = self.key.split("/")
            f = forces.get(f"{b}/{a}")
        return np.zeros(4) if f is None else np.concatenate([[f["normal"]], f["friction"]])


def enable_contacts(sim, friction=None, restitution=0.0, pairs: Sequence[tuple[str, str]] | None = None,
                    filter: PairFilter | None = None, **options) -> ContactSource:
    """Continuous contact with Coulomb friction and impacts between the mechanism's geometries.

    Args:
        sim: the simulator.
        friction: ``(mu_static, mu_kinetic)``, one mu, 0 (frictionless), ``{(mat_a, mat_b): (mu_s, mu_k),
            "default": ...}`` or a :class:`FrictionTable` (default (0.5, 0.4)).
        restitution: impact restitution (default 0: plastic), as for :func:`sim.impact.add_impacts`.
        pairs: geometry (or body) pairs to watch; default all pairs the collision filters keep.
        filter: extra pair predicate.
        options: see :class:`ContactSource` (``law``, ``tolerance``, ``touch_distance``,
            ``penetration_tolerance``, ``rest_velocity``, ``stick_velocity``, ``name``).
    Returns:
        the registered source; it also establishes the contacts of the current state
        (bodies resting on each other at the start get their hinges at once).
    """
    world = CollisionWorld(sim.mech, pairs=pairs, filter=filter)
    options.setdefault("tolerance", min(sim.event_tolerance, 1e-9))
    src = ContactSource(world, friction, restitution, **options)
    unsupported = [k for k in range(len(world)) if src.geometry.roles(k) is None]
    if unsupported:
        objs = src.geometry.objs
        names = ", ".join(f"{a}/{b} ({type(objs[ia].geometry).__name__}/{type(objs[ib].geometry).__name__})"
                          for k in unsupported for (a, b), (ia, ib) in [(world.names[k], world.pair_indices[k])])
        raise ModelError(f"enable_contacts: no continuous contact model for the pairs {names}: contacts hold "
                         f"boxes and balls on boxes and half-spaces, and balls on balls; leave those pairs out "
                         f"(pairs=, filter=) or watch them with impacts alone (sim.enable_impacts)")
    sim.add_source(src)
    sim.control_phase.append(src.after_step)
    src.update(sim)
    return src
