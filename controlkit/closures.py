"""Loop closures through sliding and two-axis hinges, and a rolling disk (thesis 4.3).

The thesis writes a hinge's constraint as scalar products of vectors fixed in the two
bodies (Fig. 4.2, 4.3). Two kinds of scalar rows build every closure here, each with its
exact Jacobian and drift (``Jdot v``), between frames ``a`` (parent side) and ``b`` (child
side) that coincide in the declared pose:

- an **axis row** ``u . w`` with ``u`` fixed in a and ``w`` fixed in b: two axes kept
  perpendicular (rad);
- a **line row** ``(p_b - p_a) . u`` with ``u`` fixed in a: b's origin kept off a's
  direction ``u`` (m).

Closures (z of the frames along the hinge axis, as the builder places them):

- :class:`CylinderConstraint` — cylindrical hinge (slides along and turns about z): 4 rows;
- :class:`SliderConstraint` — prismatic hinge (slides along z only): 5 rows;
- :class:`UniversalConstraint` — universal hinge: origins coincide and ``axis1`` (in a)
  stays perpendicular to ``axis2`` (in b): 4 rows.

:class:`RollingDisk` is nonholonomic: a disk (a body whose local z is its axis) rolls
without slipping on the plane z = ``height``: the velocity of its material point at the
contact is zero (3 rows; only the normal row has a position-level error).
"""
from __future__ import annotations

import numpy as np

from .constraints import Constraint, _TwoFrames
from .errors import ModelError
from .vec3 import cross

__all__ = ["CylinderConstraint", "SliderConstraint", "UniversalConstraint", "RollingDisk"]


def _unit(u, what: str) -> np.ndarray:
    u = np.asarray(u, dtype=float).reshape(3)
    n = np.linalg.norm(u)
    if not n > 1e-12:
        raise ModelError(f"{what}: an axis must be a non-zero 3-vector, got {u!r}")
    return u / n


class _ScalarRows(_TwoFrames):
    """A closure made of axis rows and line rows (see the module docstring)."""

    #: (axis in a's frame, axis in b's frame) pairs kept perpendicular
    axis_pairs: tuple = ()
    #: directions in a's frame along which b's origin does not move
    line_dirs: tuple = ()
    #: whether the origins coincide (3 point rows first)
    point: bool = False

    def _state(self):
        Ma, Mb = self._placements()
        va, vb = self._vel()
        return Ma, Mb, va, vb

    def error(self):
        Ma, Mb = self._placements()
        rows = [Ma.translation - Mb.translation] if self.point else []
        d = Mb.translation - Ma.translation
        rows += [[(Ma.rotation @ u) @ (Mb.rotation @ w)] for u, w in self.axis_pairs]
        rows += [[d @ (Ma.rotation @ u)] for u in self.line_dirs]
        return np.concatenate(rows)

    def jacobian(self):
        Ma, Mb = self._placements()
        mech = self.mech
        Ja = mech.frame_jacobian(self.fa)
        Jb = mech.frame_jacobian(self.fb) if self.fb is not None else np.zeros_like(Ja)
        rows = [Ja[:3] - Jb[:3]] if self.point else []
        for u, w in self.axis_pairs:
            n = cross(Ma.rotation @ u, Mb.rotation @ w)
            rows.append((n @ (Ja[3:] - Jb[3:]))[None])
        d = Mb.translation - Ma.translation
        for u in self.line_dirs:
            uw = Ma.rotation @ u
            rows.append((uw @ (Jb[:3] - Ja[:3]) + cross(uw, d) @ Ja[3:])[None])
        return np.vstack(rows)

    def drift(self):
        Ma, Mb, va, vb = self._state()
        wa, wb = va[3:], vb[3:]
        da = self.mech.frame_drift(self.fa)
        db = self.mech.frame_drift(self.fb) if self.fb is not None else np.zeros(6)
        rows = [da[:3] - db[:3]] if self.point else []
        for u, w in self.axis_pairs:
            uw, ww = Ma.rotation @ u, Mb.rotation @ w
            n = cross(uw, ww)
            ndot = cross(cross(wa, uw), ww) + cross(uw, cross(wb, ww))
            rows.append([n @ (da[3:] - db[3:]) + ndot @ (wa - wb)])
        d = Mb.translation - Ma.translation
        dd = vb[:3] - va[:3]
        for u in self.line_dirs:
            uw = Ma.rotation @ u
            udot = cross(wa, uw)
            uddot = cross(da[3:], uw) + cross(wa, udot)
            rows.append([uw @ (db[:3] - da[:3]) + 2.0 * dd @ udot + d @ uddot])
        return np.concatenate(rows)


_X, _Y, _Z = np.eye(3)


class CylinderConstraint(_ScalarRows):
    """Cylindrical-hinge loop closure (4 rows): z axes parallel, b's origin on a's z axis."""

    size, kind = 4, "cylindrical"
    axis_pairs = ((_X, _Z), (_Y, _Z))
    line_dirs = (_X, _Y)

    def row_labels(self):
        return [f"{self.name}.{s}" for s in ("axis_x", "axis_y", "line_x", "line_y")]


class SliderConstraint(_ScalarRows):
    """Prismatic-hinge loop closure (5 rows): the cylinder's rows and no turn about z (x_a . y_b = 0)."""

    size, kind = 5, "prismatic"
    axis_pairs = ((_X, _Z), (_Y, _Z), (_X, _Y))
    line_dirs = (_X, _Y)

    def row_labels(self):
        return [f"{self.name}.{s}" for s in ("axis_x", "axis_y", "turn", "line_x", "line_y")]


class UniversalConstraint(_ScalarRows):
    """Universal-hinge loop closure (4 rows): origins coincide, ``axis1`` (a) stays perpendicular to ``axis2`` (b).

    Args:
        name, frame_a, frame_b: as for every two-frame constraint.
        axis1: the first axis in frame a's coordinates; axis2: the second in frame b's (unit
            vectors, perpendicular in the declared pose).
    """

    size, kind, point = 4, "universal", True

    def __init__(self, name: str, frame_a: str, frame_b: str, axis1=(1.0, 0.0, 0.0), axis2=(0.0, 1.0, 0.0)):
        super().__init__(name, frame_a, frame_b)
        self.axis_pairs = ((_unit(axis1, f"universal closure {name!r}"), _unit(axis2, f"universal closure {name!r}")),)

    def row_labels(self):
        return [f"{self.name}.{s}" for s in ("x", "y", "z", "cross")]


class RollingDisk(Constraint):
    """A disk rolling without slipping on the horizontal plane z = ``height`` (3 nonholonomic rows).

    Args:
        name: constraint name.
        frame: the disk's frame (origin at its centre, local z its axis).
        radius: disk radius (m).
        height: the plane's height (m).

    Rows: the velocity of the disk's material point at the contact, ``v_c + w x r`` with
    ``r`` from the centre to the lowest rim point; the contact slides over the rim, so the
    drift carries ``w x dr/dt``. The position error is the contact point's height (the x and y
    rows have none: rolling is not integrable).
    """

    size, kind = 3, "rolling"

    def __init__(self, name: str, frame: str, radius: float, height: float = 0.0):
        super().__init__(name)
        if not radius > 0:
            raise ModelError(f"rolling disk {name!r}: radius must be positive (m), got {radius!r}")
        self.frame, self.radius, self.height = frame, float(radius), float(height)

    def bind(self, mech) -> None:
        super().bind(mech)
        self.fid = mech.frame_id(self.frame)

    def _geometry(self):
        M = self.mech.kinematics().oMf[self.fid]
        a = M.rotation[:, 2]
        s = _Z - a[2] * a
        ns = np.linalg.norm(s)
        if ns < 1e-9:
            raise ModelError(f"rolling disk {self.name!r}: the disk lies flat (axis vertical); it cannot roll")
        return M, a, s, ns, -self.radius * s / ns

    def contact_point(self) -> np.ndarray:
        """World position (m) of the contact (the disk's lowest rim point)."""
        M, _, _, _, r = self._geometry()
        return M.translation + r

    def error(self):
        return np.array([0.0, 0.0, self.contact_point()[2] - self.height])

    def jacobian(self):
        J = self.mech.frame_jacobian(self.fid)
        r = self._geometry()[4]
        return J[:3] - np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]]) @ J[3:]

    def drift(self):
        M, a, s, ns, r = self._geometry()
        nu = self.mech.frame_velocity(self.fid)
        w = nu.angular
        d = self.mech.frame_drift(self.fid)
        adot = cross(w, a)
        sdot = -(adot[2] * a + a[2] * adot)
        rdot = -self.radius * (sdot / ns - s * (s @ sdot) / ns**3)
        return d[:3] + cross(d[3:], r) + cross(w, rdot)

    def describe(self) -> str:
        return f"rolling {self.name}: {self.frame} (radius {self.radius} m) on z = {self.height} m"
