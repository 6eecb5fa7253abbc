"""The contact rows as pure functions of the bodies' state: gaps, Jacobian rows, drifts and
force rows of support points on surfaces, edges crossing edges, balls on balls, and rolling."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from controlkit.friction import FrictionLaw
from controlkit.vec3 import cross

from .bodies import _Body, _skew

if TYPE_CHECKING:
    from .geometry import SupportPoint


def _gap_rows(P: _Body, Q: _Body, k: np.ndarray, la: np.ndarray, lo: np.ndarray, rad: np.ndarray,
              u: np.ndarray | None, mu_k: float, own: bool = True):
    """Rows of material points of P resting on Q's surface (outward normal k, fixed in Q).

    Args:
        la: the points in P's joint frame (m, 3); lo: the surface points under them in Q's (m, 3);
        rad: sphere radii (m,) (0 for polyhedra); u: P's sliding direction relative to Q or None.
    Returns gaps phi (m), rows J (``J v`` = separating speed, m/s), drifts ``Jdot v`` (m/s^2)
    and force rows G (a normal force lam > 0 pushes P away from Q; when sliding with P's
    direction u relative to Q it carries the kinetic friction ``-mu_k lam u_i``, u_i each point's
    own sliding direction (:meth:`FrictionLaw.slide_directions`), or u itself when ``own`` is False)."""
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
        uu = FrictionLaw.slide_directions(P.velocity(xc) - Q.velocity(xc), k, u) if own else np.broadcast_to(u, x.shape)
        G = FrictionLaw.kinetic_rows(J, P.directional_jacobian(xc, uu) - Q.directional_jacobian(xc, uu), mu_k)
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
        us = FrictionLaw.slide_directions(dv[None], n, u_slide) if own else u_slide[None]
        G = FrictionLaw.kinetic_rows(J, A.directional_jacobian(x, us) - B.directional_jacobian(x, us), mu_k)
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
        uu = FrictionLaw.slide_directions(A.velocity(xc) - B.velocity(xc), n, u) if own else u[None]
        G = FrictionLaw.kinetic_rows(J, A.directional_jacobian(xc, uu) - B.directional_jacobian(xc, uu), mu_k)
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


def ball_rolling_block(h, A: _Body, B: _Body, n: np.ndarray):
    """Stick rows of hinge h's ball (its one point) on a face (n fixed in B) or on a ball (n the
    centres' line): :func:`_rolling_rows` at the contact point. Returns ``(phi, J, drift, G)`` (2 rows)."""
    p = h.points[0]
    c = A.point(p.local_a[None])
    vc = A.velocity(c)[0]
    c = c[0]
    T = h._tangent_basis(B, n)
    if h.balls:
        xb = B.point(p.local_o[None])
        dv = vc - B.velocity(xb)[0]
        d = c - xb[0]
        L = math.sqrt(d.dot(d))  # (numpy.linalg.norm's own sum)
        ndot = (dv - (n @ dv) * n) / L
        tdot = None  # (their turn meets a relative velocity that the rows keep at zero)
    else:
        ndot = cross(B.w, n)
        tdot = np.array([cross(B.w, t) for t in T])
    JD = _rolling_rows(A, B, c - p.radius * n, vc - p.radius * ndot, T, tdot)
    J = JD[:, :-1]
    return np.zeros(2), J, JD[:, -1], J


def normal_rows(h, sides, u: np.ndarray | None, own: bool):
    """The normal rows ``(phi, J, drift, G)`` of hinge h's held points (in their order) on
    ``sides`` (:func:`sim.contact.bodies._sides`); u: A's sliding direction relative to B (None
    unless sliding), own: whether each point takes its own (:func:`_gap_rows`)."""
    if h.balls:
        p = h.points[0]
        return _ball_rows(*sides[0][:2], p.local_a[None], p.local_o[None], p.radius, p.radius_b, u, h.mu_k, own)
    groups = h._groups()
    m = len(h.points)
    if len(groups) == 1 and groups[0][0] == 0 and len(groups[0][1]) == m:  # the common case: every point is A's
        _, _, la, lo, rad = groups[0]
        return _gap_rows(*sides[0], la, lo, rad, u, h.mu_k, own)
    nv = h.mech.nv
    out = [np.zeros(m), np.zeros((m, nv)), np.zeros(m), np.zeros((m, nv))]
    for i, p in enumerate(h.points):
        if p.edges is not None:  # an edge crossing an edge at an angle
            rows = _edge_rows(*sides[0][:2], p.edges, u, h.mu_k, own)
            for k in range(4):
                out[k][i] = rows[k][0]
    for owner, idx, la, lo, rad in groups:
        uo = None if u is None else (u if owner == 0 else -u)  # the owner's direction relative to the other
        rows = _gap_rows(*sides[owner], la, lo, rad, uo, h.mu_k, own)
        for k in range(4):
            out[k][idx] = rows[k]
    return tuple(out)


def sliding_normal_rows(h, sides, u: np.ndarray | None, own: bool):
    """:func:`normal_rows`, the kinetic friction spread over the whole support of a hinge that carries
    others (:func:`spread_friction_rows`)."""
    rows = normal_rows(h, sides, u, own)
    return spread_friction_rows(h, rows, u, own) if u is not None and own and h.carried else rows


def spread_friction_rows(h, rows, u: np.ndarray, own: bool):
    """Hinge h's sliding normal rows ``rows`` with the kinetic friction spread over its whole support
    (held, dependent and carried points), each point along its own direction.

    Its held points' forces are one distribution among equivalent ones (the same resultant and moments
    of the normal forces); carrying another contact's points (a plank across two blocks) they are far
    from any physical one (tens of newtons pulling and pushing a few centimetres apart), and friction
    along directions that differ from point to point (the contact turning) would then drive the turn
    instead of braking it. So each held force is spread by :meth:`ContactHinge.spread_weights` (the
    least-squares distribution over every support point) before each point's friction is taken."""
    phi, J, drift, G = rows
    W = h.spread_weights()  # (k + d, k)
    F = [G - J]
    for x, pts, ux in [(h, h.dependent, u)] + [(r, r.dependent, u if r.joints == h.joints else -u) for r in h.carried]:
        if pts:
            F.append(_friction_rows(x, x.sides(), pts, ux, own))
    F = np.vstack(F)
    return phi, J, drift, J + W.T.dot(F)


def support_normal_rows(h, sides, pts) -> np.ndarray:
    """The normal Jacobian rows (len(pts), nv) of any support points ``pts`` of hinge h (held or not;
    ``J v`` their separating speeds, m/s): material points by owner in one product each, edge
    crossings and balls on balls one by one."""
    out = np.zeros((len(pts), h.mech.nv))
    for owner in (0, 1):
        idx = [i for i, p in enumerate(pts) if p.owner == owner and p.edges is None and not p.radius_b > 0.0]
        if idx:
            la = np.array([pts[i].local_a for i in idx], dtype=float)
            lo = np.array([pts[i].local_o for i in idx], dtype=float)
            rad = np.array([pts[i].radius for i in idx], dtype=float)
            out[idx] = _gap_rows(*sides[owner], la, lo, rad, None, h.mu_k)[1]
    for i, p in enumerate(pts):
        if p.edges is not None or p.radius_b > 0.0:
            out[i] = _point_rows_of(sides, p, None, h.mu_k)[1][0]
    return out


def _friction_rows(h, sides, pts, u: np.ndarray, own: bool) -> np.ndarray:
    """The kinetic friction rows (len(pts), nv) of support points ``pts`` of hinge h (no edge
    crossings: those have no friction row here), A sliding along u relative to B."""
    out = np.zeros((len(pts), h.mech.nv))
    for owner in (0, 1):
        idx = [i for i, p in enumerate(pts) if p.owner == owner and p.edges is None]
        if idx:
            la = np.array([pts[i].local_a for i in idx], dtype=float)
            lo = np.array([pts[i].local_o for i in idx], dtype=float)
            rad = np.array([pts[i].radius for i in idx], dtype=float)
            _, Jp, _, Gp = _gap_rows(*sides[owner], la, lo, rad, u if owner == 0 else -u, h.mu_k, own)
            out[idx] = Gp - Jp
    return out


def anchor_stick_block(h, A: _Body, B: _Body, n: np.ndarray, k: int):
    """Hinge h's stick rows at its anchor (fixed in A): the tangents (fixed in B) and, when
    ``k == 3``, the torsion about n. Returns ``(phi, J, drift, G)`` with k rows."""
    ra = A.R.dot(h._anchor_a)
    t = h._tangents_b.dot(B.R.T)  # (2, 3)
    # velocity-level rows (no position term): rows of two sticking bodies that are redundant
    # (a foot and its toe) stay consistent, where anchors' position errors would not be
    JD = np.empty((k, h.mech.nv + 1))
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
