"""A contact hinge's rows in one compiled call (numba): the formulas of :mod:`sim.contact.rows` (with
:mod:`sim.contact.curved`'s line rolling) on plain floats, beside the Python reference they agree with.

:meth:`ContactHinge.rows` builds, at every evaluation, the gaps, Jacobian rows, drifts and force
rows of its support points and stick rows. In Python that is dozens of numpy calls on 3-vectors
(each ~1 us of wrapper) per hinge; here the whole hinge is one call on its two bodies' state (the
placements ``H`` (4, 4), velocities ``V`` (6,) [linear; angular] and ``[J | drift]`` (6, nv + 1),
:class:`sim.contact.bodies._Body`) and its parameters, packed once per support (:func:`pack`).

Every row is a direction d at a lever r from a body's origin: ``d . J_lin + (r x d) . J_ang`` on
the Jacobian columns, and on the drift column ``d . a_o + (r x d) . alpha + d . (w x (w x r))``
(the classical acceleration of the material point), as :meth:`_Body.along` computes it. The sums
run in another order than numpy's BLAS products: the results agree to rounding (tests/
test_contact_row_kernel.py: 1e-12 relative), not bit for bit.

:data:`sim.contact.hinge.COMPILED_ROWS` selects the path; :data:`sim.contact.hinge.ROW_COUNTS`
counts the calls taken by each. numba compiles :func:`hinge_rows` on its first use on a machine
(a few seconds) and keeps it in ``__pycache__``.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from controlkit.friction import POINT_SLIDE_SPEED

from .bodies import _bodies

# the layout of the float parameters ``f`` (see :func:`pack`)
F_NB, F_NA, F_TB, F_ANCHOR, F_SLIDE, F_CENTROID = 0, 3, 6, 12, 15, 18
F_MEAN_RAD, F_MU_K, F_RADIUS_B, F_LINE, F_RADIUS, F_BLEND = 21, 22, 23, 24, 27, 28
F_SIZE = 29
# the layout of the integer parameters ``iv``
I_K, I_STICK, I_SLIDING, I_BALLS, I_HAS_NA, I_BWORLD = 0, 1, 2, 3, 4, 5
I_SIZE = 6
#: stick row kinds (``iv[I_STICK]``): at an anchor fixed in A, rolling at a ball's point, rolling
#: at the middle of a cylinder's line
STICK_ANCHOR, STICK_ROLL_POINT, STICK_ROLL_LINE = 0, 1, 2
#: point kinds (column 7 of ``P``): a point of A on B's surface, of B on A's face, an edge crossing
OWNER_EDGE = -1.0

SLIP_SPEED = 1e-9  # m/s: the hinge's (sim.contact.hinge.SLIP_SPEED), repeated for the kernel


# ------------------------------------------------------------ 3-vector helpers
@numba.njit
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@numba.njit
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@numba.njit
def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@numba.njit
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@numba.njit
def _scale(s, a):
    return (s * a[0], s * a[1], s * a[2])


@numba.njit
def _vec(x, i):
    """The 3-vector x[i:i + 3] of a flat array."""
    return (x[i], x[i + 1], x[i + 2])


@numba.njit
def _rot(H, v):
    """R v for the rotation of a placement H (4, 4)."""
    return (H[0, 0] * v[0] + H[0, 1] * v[1] + H[0, 2] * v[2],
            H[1, 0] * v[0] + H[1, 1] * v[1] + H[1, 2] * v[2],
            H[2, 0] * v[0] + H[2, 1] * v[1] + H[2, 2] * v[2])


@numba.njit
def _origin(H):
    return (H[0, 3], H[1, 3], H[2, 3])


@numba.njit
def _point(H, v):
    """R v + t: a point of the body (joint frame) in the world."""
    return _add(_rot(H, v), _origin(H))


@numba.njit
def _velocity(H, V, x):
    """The velocity (m/s) of the body's material point at world x: v_o + w x (x - t)."""
    return _add((V[0], V[1], V[2]), _cross((V[3], V[4], V[5]), _sub(x, _origin(H))))


@numba.njit
def _unit(a):
    s = math.sqrt(_dot(a, a))
    return (a[0] / s, a[1] / s, a[2] / s)


# ------------------------------------------------------------- row builders
@numba.njit
def _add_row(out, i, JA, sign, d, c, extra):
    """out[i] += sign (d . JA[:3] + c . JA[3:]) over out's columns (all of JA's with the drift
    column, which also takes ``sign * extra``, or only the Jacobian's)."""
    ncol = out.shape[1]
    for j in range(ncol):
        out[i, j] += sign * (d[0] * JA[0, j] + d[1] * JA[1, j] + d[2] * JA[2, j]
                             + c[0] * JA[3, j] + c[1] * JA[4, j] + c[2] * JA[5, j])
    if ncol == JA.shape[1]:
        out[i, ncol - 1] += sign * extra


@numba.njit
def _point_row(out, i, JA, V, sign, r, d):
    """out[i] += sign [d . J(x) | d . a(x)] for the material point at lever r (world) from the body's
    origin, along d (:meth:`_Body.along`: the centripetal part ``(r . w)(w . d) - (r . d)|w|^2``)."""
    w = (V[3], V[4], V[5])
    extra = _dot(r, w) * _dot(w, d) - _dot(r, d) * _dot(w, w)
    _add_row(out, i, JA, sign, d, _cross(r, d), extra)


@numba.njit
def _direction_row(out, i, JA, sign, r, d):
    """out[i] += sign d . J(x) (out (., nv)): the velocity of the material point at lever r along d."""
    _add_row(out, i, JA, sign, d, _cross(r, d), 0.0)


@numba.njit
def _slide_direction(dv, k, u):
    """:meth:`FrictionLaw.slide_directions` of one point: its tangential velocity blended with u."""
    dk = _dot(dv, k)
    d = _add(_sub(dv, _scale(dk, k)), _scale(POINT_SLIDE_SPEED, u))
    return _unit(d)


@numba.njit
def _friction_row(G, i, JP, HP, VP, JQ, HQ, VQ, qworld, xc, k, u, own, mu_k):
    """G[i] -= mu_k (d . J_P(xc) - d . J_Q(xc)), d the point's sliding direction (its own when
    ``own``, else u): the kinetic friction a sliding point's normal force carries."""
    if own:
        d = _slide_direction(_sub(_velocity(HP, VP, xc), _velocity(HQ, VQ, xc)), k, u)
    else:
        d = u
    _direction_row(G, i, JP, -mu_k, _sub(xc, _origin(HP)), d)
    if not qworld:
        _direction_row(G, i, JQ, mu_k, _sub(xc, _origin(HQ)), d)


@numba.njit
def _gap_row(phi, JD, G, i, JP, HP, VP, JQ, HQ, VQ, qworld, k, la, lo, rad, sliding, u, own, mu_k):
    """Row i of a material point ``la`` of P on Q's surface (normal k, world, fixed in Q) over
    ``lo`` (:func:`sim.contact.rows._gap_rows`)."""
    rp = _rot(HP, la)
    x = _add(rp, _origin(HP))
    phi[i] = _dot(_sub(x, _point(HQ, lo)), k) - rad
    _point_row(JD, i, JP, VP, 1.0, rp, k)
    if not qworld:
        rq = _sub(x, _origin(HQ))
        _point_row(JD, i, JQ, VQ, -1.0, rq, k)
        c = _cross((VQ[3], VQ[4], VQ[5]), k)  # the normal turns with Q
        JD[i, JD.shape[1] - 1] += 2.0 * (_dot(c, _velocity(HP, VP, x)) - _dot(c, _velocity(HQ, VQ, x)))
    if sliding:
        _copy_row(G, i, JD)
        _friction_row(G, i, JP, HP, VP, JQ, HQ, VQ, qworld, _sub(x, _scale(rad, k)), k, u, own, mu_k)


@numba.njit
def _copy_row(G, i, JD):
    for j in range(G.shape[1]):
        G[i, j] = JD[i, j]


@numba.njit
def _edge_row(phi, JD, G, i, JA, HA, VA, JB, HB, VB, bworld, e, sliding, u, own, mu_k):
    """Row i of an edge of A crossing an edge of B (:func:`sim.contact.rows._edge_rows`); e (13,):
    the edges' ends a0, a1 (A's frame), b0, b1 (B's) and the sign."""
    ea0, ea1, eb0, eb1, sgn = _vec(e, 0), _vec(e, 3), _vec(e, 6), _vec(e, 9), e[12]
    a0, b0 = _point(HA, ea0), _point(HB, eb0)
    ua, wb = _rot(HA, _sub(ea1, ea0)), _rot(HB, _sub(eb1, eb0))
    r = _sub(a0, b0)  # the closest points of the two lines (sim.contact.rows._closest_on_lines)
    uu, uw, ww, ur, wr = _dot(ua, ua), _dot(ua, wb), _dot(wb, wb), _dot(ua, r), _dot(wb, r)
    den = uu * ww - uw * uw
    s = (uw * wr - ww * ur) / den
    t = (uu * wr - uw * ur) / den
    c = _cross(ua, wb)
    nc = math.sqrt(_dot(c, c))
    n = (sgn * c[0] / nc, sgn * c[1] / nc, sgn * c[2] / nc)
    xa, xb = _add(a0, _scale(s, ua)), _add(b0, _scale(t, wb))
    ph = _dot(n, _sub(xa, xb))
    phi[i] = ph
    _point_row(JD, i, JA, VA, 1.0, _sub(xa, _origin(HA)), n)
    _point_row(JD, i, JB, VB, -1.0, _sub(xb, _origin(HB)), n)
    wa, wbv = (VA[3], VA[4], VA[5]), (VB[3], VB[4], VB[5])
    cdot = _add(_cross(_cross(wa, ua), wb), _cross(ua, _cross(wbv, wb)))
    ch = (c[0] / nc, c[1] / nc, c[2] / nc)
    cc = _dot(ch, cdot)
    nd = _sub(cdot, _scale(cc, ch))
    ndot = (sgn * nd[0] / nc, sgn * nd[1] / nc, sgn * nd[2] / nc)
    dv = _sub(_velocity(HA, VA, xa), _velocity(HB, VB, xb))
    JD[i, JD.shape[1] - 1] += 2.0 * _dot(ndot, dv) - ph * _dot(ndot, ndot)
    if sliding:
        _copy_row(G, i, JD)
        d = _slide_direction(dv, n, u) if own else u
        _direction_row(G, i, JA, -mu_k, _sub(xa, _origin(HA)), d)
        if not bworld:
            _direction_row(G, i, JB, mu_k, _sub(xa, _origin(HB)), d)


@numba.njit
def _ball_row(phi, JD, G, i, JA, HA, VA, JB, HB, VB, bworld, la, lb, ra, rb, sliding, u, own, mu_k):
    """Row i of a ball of A (centre la, radius ra) on a ball of B (lb, rb)
    (:func:`sim.contact.rows._ball_rows`)."""
    xa, xb = _point(HA, la), _point(HB, lb)
    d = _sub(xa, xb)
    L = math.sqrt(_dot(d, d))
    n = (d[0] / L, d[1] / L, d[2] / L)
    _point_row(JD, i, JA, VA, 1.0, _sub(xa, _origin(HA)), n)
    _point_row(JD, i, JB, VB, -1.0, _sub(xb, _origin(HB)), n)
    dv = _sub(_velocity(HA, VA, xa), _velocity(HB, VB, xb))
    dvt = _sub(dv, _scale(_dot(n, dv), n))
    JD[i, JD.shape[1] - 1] += _dot(dvt, dvt) / L
    phi[i] = L - ra - rb
    if sliding:
        _copy_row(G, i, JD)
        _friction_row(G, i, JA, HA, VA, JB, HB, VB, bworld, _sub(xa, _scale(ra, n)), n, u, own, mu_k)


@numba.njit
def _tangents(n):
    """:func:`sim.contact.geometry._tangents`: t1 = n x a / |n x a| (a = x, or y when n is near
    x), t2 = n x t1."""
    a = (1.0, 0.0, 0.0) if abs(n[0]) < 0.9 else (0.0, 1.0, 0.0)
    t1 = _cross(n, a)
    s = math.sqrt(_dot(t1, t1))
    t1 = (t1[0] / s, t1[1] / s, t1[2] / s)
    return t1, _cross(n, t1)


@numba.njit
def _rolling(JD, i0, JA, HA, VA, JB, HB, VB, bworld, x, xdot, t1, t2, tdot1, tdot2, turning):
    """Rows i0, i0 + 1: no slip at the current contact point x along t1, t2
    (:func:`sim.contact.rows._rolling_rows`; ``turning``: the tangents turn at tdot1, tdot2)."""
    last = JD.shape[1] - 1
    ra = _sub(x, _origin(HA))
    va = _velocity(HA, VA, x)
    wa = (VA[3], VA[4], VA[5])
    ga = _cross(wa, _sub(xdot, va))
    _point_row(JD, i0, JA, VA, 1.0, ra, t1)
    _point_row(JD, i0 + 1, JA, VA, 1.0, ra, t2)
    JD[i0, last] += _dot(t1, ga)
    JD[i0 + 1, last] += _dot(t2, ga)
    if not bworld:
        rb = _sub(x, _origin(HB))
        vb = _velocity(HB, VB, x)
        gb = _cross((VB[3], VB[4], VB[5]), _sub(xdot, vb))
        _point_row(JD, i0, JB, VB, -1.0, rb, t1)
        _point_row(JD, i0 + 1, JB, VB, -1.0, rb, t2)
        JD[i0, last] -= _dot(t1, gb)
        JD[i0 + 1, last] -= _dot(t2, gb)
        if turning:
            dv = _sub(va, vb)
            JD[i0, last] += _dot(tdot1, dv)
            JD[i0 + 1, last] += _dot(tdot2, dv)


@numba.njit
def _torsion(JD, i, JA, VA, JB, VB, bworld, n, ndot):
    """Row i: n . (w_A - w_B), its drift n . (alpha_A - alpha_B) + ndot . (w_A - w_B) (ndot = w_B x n)."""
    zero = (0.0, 0.0, 0.0)
    _add_row(JD, i, JA, 1.0, zero, n, 0.0)
    if not bworld:
        _add_row(JD, i, JB, -1.0, zero, n, 0.0)
        JD[i, JD.shape[1] - 1] += _dot(ndot, _sub((VA[3], VA[4], VA[5]), (VB[3], VB[4], VB[5])))


@numba.njit
def _stick_rows(JD, m, k, JA, HA, VA, JB, HB, VB, bworld, n, t1, t2, f, iv, P):
    """The stick rows (rows m.. of JD): at the anchor, or rolling (see :data:`STICK_ANCHOR`)."""
    last = JD.shape[1] - 1
    wb = (VB[3], VB[4], VB[5])
    kind = iv[I_STICK]
    if kind == STICK_ANCHOR:  # (sim.contact.hinge.ContactHinge._stick_block)
        ra = _rot(HA, _vec(f, F_ANCHOR))
        _point_row(JD, m, JA, VA, 1.0, ra, t1)
        _point_row(JD, m + 1, JA, VA, 1.0, ra, t2)
        if not bworld:
            x = _add(ra, _origin(HA))
            rb = _sub(x, _origin(HB))
            _point_row(JD, m, JB, VB, -1.0, rb, t1)
            _point_row(JD, m + 1, JB, VB, -1.0, rb, t2)
            dv = _sub(_velocity(HA, VA, x), _velocity(HB, VB, x))
            JD[m, last] += 2.0 * _dot(_cross(wb, t1), dv)
            JD[m + 1, last] += 2.0 * _dot(_cross(wb, t2), dv)
        if k == 3:
            _torsion(JD, m + 2, JA, VA, JB, VB, bworld, n, _cross(wb, n))
        return
    r = f[F_RADIUS]
    if kind == STICK_ROLL_POINT:
        la = (P[0, 0], P[0, 1], P[0, 2])
    else:
        la = _vec(f, F_LINE)
    c = _point(HA, la)
    vc = _velocity(HA, VA, c)
    if iv[I_BALLS]:  # the normal is the centres' line: it turns at dv_t / L
        xb = _point(HB, (P[0, 3], P[0, 4], P[0, 5]))
        dv = _sub(vc, _velocity(HB, VB, xb))
        d = _sub(c, xb)
        L = math.sqrt(_dot(d, d))
        nd = _sub(dv, _scale(_dot(n, dv), n))
        ndot = (nd[0] / L, nd[1] / L, nd[2] / L)
        _rolling(JD, m, JA, HA, VA, JB, HB, VB, bworld, _sub(c, _scale(r, n)), _sub(vc, _scale(r, ndot)),
                 t1, t2, t1, t2, False)
        return
    ndot = _cross(wb, n)
    _rolling(JD, m, JA, HA, VA, JB, HB, VB, bworld, _sub(c, _scale(r, n)), _sub(vc, _scale(r, ndot)),
             t1, t2, _cross(wb, t1), _cross(wb, t2), True)
    if kind == STICK_ROLL_LINE and k == 3:
        _torsion(JD, m + 2, JA, VA, JB, VB, bworld, n, ndot)


@numba.njit(cache=True)
def hinge_rows(HA, VA, JA, HB, VB, JB, P, E, f, iv):
    """A hinge's rows ``(phi (m + k,), [J | drift] (m + k, nv + 1), G (m, nv) or (0, nv))``.

    Args:
        HA, VA, JA / HB, VB, JB: the bodies' placements (4, 4), velocities (6,) and ``[J | drift]``
            (6, nv + 1) (:class:`sim.contact.bodies._Body`).
        P (m, 8): per held point its local_a, local_o, radius, owner (0, 1 or :data:`OWNER_EDGE`);
        E (m, 13): per edge point its edges and sign; f, iv: the parameters (:func:`pack`).
    """
    m = P.shape[0]
    nrow, ng = _row_count(m, iv)
    phi = np.zeros(nrow)
    JD = np.zeros((nrow, JA.shape[1]))
    G = np.zeros((ng, JA.shape[1] - 1))
    _fill_rows(phi, JD, G, HA, VA, JA, HB, VB, JB, P, E, f, iv)
    return phi, JD, G


@numba.njit(cache=True)
def batch_rows(HS, VS, JAS, joints, P, E, F, IV, poff, roff, goff):
    """The rows of several hinges in one call: hinge h's rows are ``phi[roff[h]:roff[h + 1]]``,
    ``JD[roff[h]:roff[h + 1]]`` and ``G[goff[h]:goff[h + 1]]``, as :func:`hinge_rows` gives them.

    Args:
        HS (nj, 4, 4), VS (nj, 6), JAS (nj, 6, nv + 1): the body table by joint id
            (:func:`sim.contact.bodies.body_table`; only the hinges' joints are read).
        joints (n, 2): each hinge's joints (A, B); P, E: the hinges' point rows stacked
            (hinge h's are ``poff[h]:poff[h + 1]``); F (n, F_SIZE), IV (n, I_SIZE): the parameters.
    """
    ncol = JAS.shape[2]
    phi = np.zeros(roff[-1])
    JD = np.zeros((roff[-1], ncol))
    G = np.zeros((goff[-1], ncol - 1))
    for h in range(joints.shape[0]):
        a, b = joints[h, 0], joints[h, 1]
        r0, r1, g0, g1, p0, p1 = roff[h], roff[h + 1], goff[h], goff[h + 1], poff[h], poff[h + 1]
        _fill_rows(phi[r0:r1], JD[r0:r1], G[g0:g1], HS[a], VS[a], JAS[a], HS[b], VS[b], JAS[b],
                   P[p0:p1], E[p0:p1], F[h], IV[h])
    return phi, JD, G


@numba.njit
def _row_count(m, iv):
    """How many rows (points and stick rows) and force rows a hinge of m held points has."""
    k = iv[I_K]
    nstick = 2 if (k and iv[I_STICK] == STICK_ROLL_POINT) else k
    return m + nstick, (m if iv[I_SLIDING] != 0 else 0)


@numba.njit
def _fill_rows(phi, JD, G, HA, VA, JA, HB, VB, JB, P, E, f, iv):
    """:func:`hinge_rows` into zeroed arrays of its shapes."""
    m = P.shape[0]
    bworld = iv[I_BWORLD] != 0
    k = iv[I_K]
    sliding = iv[I_SLIDING] != 0
    balls = iv[I_BALLS] != 0
    # the normal n (world, from B towards A): B's face normal, or the centres' line of two balls
    if balls:
        d = _sub(_point(HA, (P[0, 0], P[0, 1], P[0, 2])), _point(HB, (P[0, 3], P[0, 4], P[0, 5])))
        L = math.sqrt(_dot(d, d))
        n = (d[0] / L, d[1] / L, d[2] / L)
    else:
        n = _rot(HB, _vec(f, F_NB))
    nm = _rot(HA, _vec(f, F_NA)) if iv[I_HAS_NA] else (-n[0], -n[1], -n[2])  # A's face normal
    # a sliding contact's direction (ContactHinge._sliding_direction): its centroid's tangential
    # velocity while it moves along the slip's direction, else that direction; at a slide's onset
    # the two blended (F_BLEND, m/s, > 0)
    u = (0.0, 0.0, 0.0)
    own = False
    if sliding:
        sd = _vec(f, F_SLIDE)
        x = _sub(_point(HA, _vec(f, F_CENTROID)), _scale(f[F_MEAN_RAD], n))
        dv = _sub(_velocity(HA, VA, x), _velocity(HB, VB, x))
        vt = _sub(dv, _scale(_dot(n, dv), n))
        if f[F_BLEND] > 0.0:  # at its onset: the slip's direction blended with sd
            w = _add(vt, _scale(f[F_BLEND], sd))
            L = math.sqrt(_dot(w, w))
            u = (w[0] / L, w[1] / L, w[2] / L) if L > 0.0 else sd
        else:
            s = math.sqrt(_dot(vt, vt))
            own = s > SLIP_SPEED and _dot(vt, sd) > 0
            u = (vt[0] / s, vt[1] / s, vt[2] / s) if own else sd
    mu_k = f[F_MU_K]
    for i in range(m):
        owner = P[i, 7]
        if balls:
            _ball_row(phi, JD, G, i, JA, HA, VA, JB, HB, VB, bworld, (P[i, 0], P[i, 1], P[i, 2]),
                      (P[i, 3], P[i, 4], P[i, 5]), P[i, 6], f[F_RADIUS_B], sliding, u, own, mu_k)
        elif owner == OWNER_EDGE:
            _edge_row(phi, JD, G, i, JA, HA, VA, JB, HB, VB, bworld, E[i], sliding, u, own, mu_k)
        elif owner == 0.0:
            _gap_row(phi, JD, G, i, JA, HA, VA, JB, HB, VB, bworld, n, (P[i, 0], P[i, 1], P[i, 2]),
                     (P[i, 3], P[i, 4], P[i, 5]), P[i, 6], sliding, u, own, mu_k)
        else:  # a point of B on A's face: B's direction relative to A is -u
            _gap_row(phi, JD, G, i, JB, HB, VB, JA, HA, VA, False, nm, (P[i, 0], P[i, 1], P[i, 2]),
                     (P[i, 3], P[i, 4], P[i, 5]), P[i, 6], sliding, (-u[0], -u[1], -u[2]), own, mu_k)
    if k:  # the tangents: fixed in B, or for a ball rolling on a ball, from n
        if balls and iv[I_STICK] != STICK_ANCHOR:
            t1, t2 = _tangents(n)
        else:
            t1, t2 = _rot(HB, _vec(f, F_TB)), _rot(HB, _vec(f, F_TB + 3))
        _stick_rows(JD, m, k, JA, HA, VA, JB, HB, VB, bworld, n, t1, t2, f, iv, P)


# ------------------------------------------------------------- the Python side
def packed(h):
    """Hinge h's parameters ``(P, E, f, iv)`` for its support and mode (:func:`pack`, kept by the
    hinge: dropped by its invalidate() and set_anchor()), or None where the kernel does not cover it."""
    k = h.stick_row_count()
    p = h._packed
    if p is None or p[0] != (h.version, h.mode, k):
        p = h._packed = ((h.version, h.mode, k), pack(h, k))
    return p[1]


def row_count(m: int, iv: np.ndarray) -> tuple[int, int]:
    """How many rows (points and stick rows) and force rows the kernel gives a hinge of m points."""
    k = int(iv[I_K])
    nstick = 2 if (k and iv[I_STICK] == STICK_ROLL_POINT) else k
    return m + nstick, (m if iv[I_SLIDING] else 0)


def rows_of(h):
    """Hinge h's rows ``(phi, J, drift, G)`` as :meth:`ContactHinge.rows` (G is J unless it slides)
    by :func:`hinge_rows`, or None where :func:`pack` does not cover it."""
    p = packed(h)
    if p is None:
        return None
    P, E, f, iv = p
    A, B = _bodies(h.mech, h.joints)
    if iv[I_SLIDING]:  # (the support's centroid: a point of A, or where the points are now)
        f[F_CENTROID:F_CENTROID + 3] = h.centroid_local()
    phi, JD, G = hinge_rows(A.H, A.V, A.JA, B.H, B.V, B.JA, P, E, f, iv)
    J = JD[:, :-1]
    return phi, J, JD[:, -1], (G if len(G) else J)


def pack(h, k: int):
    """A hinge's parameters for :func:`hinge_rows`: ``(P, E, f, iv)``, or None where the compiled
    path does not cover it (no held point, a stick anchor not set, more than one point of a ball
    on a ball). ``k``: its stick row count. Kept by the hinge while its support and mode stay."""
    pts = h.points
    m = len(pts)
    if not m or (h.balls and m != 1):
        return None
    P = np.zeros((m, 8))
    E = np.zeros((m, 13))
    for i, p in enumerate(pts):
        if p.edges is not None:
            P[i, 7] = OWNER_EDGE
            a0, a1, b0, b1, sign = p.edges
            E[i, 0:3], E[i, 3:6], E[i, 6:9], E[i, 9:12], E[i, 12] = a0, a1, b0, b1, sign
        else:
            P[i, 0:3], P[i, 3:6], P[i, 6], P[i, 7] = p.local_a, p.local_o, p.radius, p.owner
    f = np.zeros(F_SIZE)
    iv = np.zeros(I_SIZE, dtype=np.int64)
    f[F_NB:F_NB + 3] = h.normal_b
    if h.normal_a is not None:
        f[F_NA:F_NA + 3] = h.normal_a
        iv[I_HAS_NA] = 1
    f[F_TB:F_TB + 6] = np.asarray(h._tangents_b).ravel()
    f[F_SLIDE:F_SLIDE + 3] = h.slide_dir
    f[F_BLEND] = h.blend_speed
    f[F_MEAN_RAD] = np.mean([p.radius for p in pts])
    f[F_MU_K] = h.mu_k
    f[F_RADIUS_B] = pts[0].radius_b
    f[F_RADIUS] = pts[0].radius
    iv[I_K] = k
    iv[I_SLIDING] = h.mode == "slide"
    iv[I_BALLS] = h.balls
    iv[I_BWORLD] = h.joints[1] == 0
    if k:
        if pts[0].radius > 0.0:  # a ball's point, or a cylinder's line (ContactHinge._rolls)
            iv[I_STICK] = STICK_ROLL_POINT if m == 1 else STICK_ROLL_LINE
            f[F_LINE:F_LINE + 3] = np.mean([p.local_a for p in pts], axis=0)
        elif h._anchor_a is None:
            return None
        else:
            iv[I_STICK] = STICK_ANCHOR
            f[F_ANCHOR:F_ANCHOR + 3] = h._anchor_a
    return P, E, f, iv
