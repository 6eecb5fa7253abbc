"""Hinges of the definition language: how a join lets a child move on its parent.

A hinge's motion ``J`` is expressed in the **hinge frame**, which is the parent's
feature frame: the child's feature frame is ``F_child = F_parent * J(q) * R0``,
where ``R0`` is the join's relative rotation (the declared pose has ``J = identity``).
Axes are unit vectors in the parent feature frame (they are normalised).

========================  =====  =====  =========================================
hinge                     nq     nv     coordinate (declared sense)
========================  =====  =====  =========================================
:class:`Spherical`        4      3      rotation (quaternion in q; 3x3 matrix or
                                        rotation vector (rad) as initial value)
:class:`Revolute`         1      1      angle about ``axis`` (rad)
:class:`Prismatic`        1      1      displacement along ``axis`` (m)
:class:`Universal`        2      2      angles about ``axis1`` then ``axis2`` (rad)
:class:`Cylindrical`      2      2      displacement along ``axis`` (m), angle
                                        about it (rad)
:class:`Weld`             0      0      none: the child is rigidly attached
:class:`Free`             7      6      placement (``pin.SE3``)
========================  =====  =====  =========================================

Actuation: every hinge with degrees of freedom is actuated by default
(``actuated=True``) except :class:`Free` (default ``actuated=False``); a
:class:`Weld` has nothing to actuate. Pass ``actuated=False`` for passive hinges.

When the builder has to traverse a join against its declared direction (the child
is nearer the tree's root), the Pinocchio joint is built from the child's side and
measures the inverse motion: a revolute or prismatic coordinate changes sign, a
universal's axes swap order, a spherical's rotation is transposed, a cylindrical's
two coordinates both change sign. Initial values
are always given in the declared sense and converted by :meth:`Hinge.coordinates`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pinocchio as pin

from controlkit.errors import ModelError

__all__ = ["Hinge", "Spherical", "Revolute", "Prismatic", "Universal", "Cylindrical", "Weld", "Free", "as_rotation"]


def _unit(axis: Sequence[float], where: str) -> np.ndarray:
    a = np.asarray(axis, dtype=float).reshape(-1)
    if a.shape != (3,) or not np.all(np.isfinite(a)) or np.linalg.norm(a) < 1e-12:
        raise ModelError(f"{where}: an axis must be a non-zero 3-vector, got {axis!r}")
    return a / np.linalg.norm(a)


def as_rotation(value, where: str = "rotation") -> np.ndarray:
    """A 3x3 rotation from a 3x3 matrix, a ``pin.Quaternion`` or a rotation vector (3,) in rad."""
    if isinstance(value, pin.Quaternion):
        return value.normalized().matrix()
    if isinstance(value, pin.SE3):
        return value.rotation.copy()
    R = np.asarray(value, dtype=float)
    if R.shape == (3,):
        return pin.exp3(R)
    if R.shape != (3, 3) or not np.allclose(R @ R.T, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
        raise ModelError(f"{where}: expected a 3x3 rotation matrix, a pin.Quaternion or a rotation vector, got {value!r}")
    return R


def _align_z(axis: np.ndarray) -> np.ndarray:
    """A rotation mapping e_z onto ``axis``."""
    z = np.array([0.0, 0.0, 1.0])
    if np.allclose(axis, -z):
        return pin.exp3(np.array([np.pi, 0.0, 0.0]))
    return pin.Quaternion.FromTwoVectors(z, axis).matrix()


class Hinge:
    """Base class of hinges. ``name`` (optional) names the joint; ``actuated`` marks motors."""

    kind = "hinge"
    nq = 0
    nv = 0
    default_actuated = True

    def __init__(self, *, name: str | None = None, actuated: bool | None = None):
        self.name = name
        self.actuated = self.default_actuated if actuated is None else bool(actuated)
        if self.nv == 0:
            self.actuated = False

    def alignment(self) -> np.ndarray:
        """Rotation from the hinge (parent feature) frame to the Pinocchio joint frame."""
        return np.eye(3)

    def joint_model(self, reversed_: bool = False) -> pin.JointModel | None:
        """The Pinocchio joint model (None for a weld)."""
        raise NotImplementedError

    def coordinates(self, value, reversed_: bool = False) -> np.ndarray:
        """Pinocchio coordinates (nq,) for an initial value given in the declared sense."""
        raise ModelError(f"{self.kind} hinge has no coordinates to set")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, actuated={self.actuated})"


class Spherical(Hinge):
    """Ball-and-socket hinge: 3 rotational degrees of freedom about the feature point."""

    kind = "spherical"
    nq, nv = 4, 3

    def joint_model(self, reversed_: bool = False) -> pin.JointModel:
        return pin.JointModelSpherical()

    def coordinates(self, value, reversed_: bool = False) -> np.ndarray:
        R = as_rotation(value, f"initial value of spherical hinge {self.name!r}")
        if reversed_:
            R = R.T
        return pin.Quaternion(R).coeffs().copy()


class _Axial(Hinge):
    def __init__(self, axis: Sequence[float] = (0.0, 0.0, 1.0), *, name: str | None = None, actuated: bool | None = None):
        super().__init__(name=name, actuated=actuated)
        self.axis = _unit(axis, f"{self.kind} hinge {name!r}")

    def alignment(self) -> np.ndarray:
        return _align_z(self.axis)

    def coordinates(self, value, reversed_: bool = False) -> np.ndarray:
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise ModelError(f"initial value of {self.kind} hinge {self.name!r} must be a number, got {value!r}") from None
        return np.array([-x if reversed_ else x])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(axis={self.axis.tolist()}, name={self.name!r}, actuated={self.actuated})"


class Revolute(_Axial):
    """Pin hinge: rotation about ``axis`` (unit vector in the parent feature frame); angle in rad."""

    kind = "revolute"
    nq, nv = 1, 1

    def joint_model(self, reversed_: bool = False) -> pin.JointModel:
        return pin.JointModelRZ()


class Prismatic(_Axial):
    """Slider: translation along ``axis`` (unit vector in the parent feature frame); displacement in m."""

    kind = "prismatic"
    nq, nv = 1, 1

    def joint_model(self, reversed_: bool = False) -> pin.JointModel:
        return pin.JointModelPZ()


class Cylindrical(_Axial):
    """Cylindrical hinge: slides along ``axis`` and turns about it (2 DOF); value (displacement m, angle rad).

    Pinocchio has no cylindrical joint: it is a composite joint, a prismatic then a revolute
    about the same z (they commute, so the order does not matter)."""

    kind = "cylindrical"
    nq, nv = 2, 2

    def joint_model(self, reversed_: bool = False) -> pin.JointModel:
        jm = pin.JointModelComposite(pin.JointModelPZ())
        jm.addJoint(pin.JointModelRZ())
        return jm

    def coordinates(self, value, reversed_: bool = False) -> np.ndarray:
        x = np.asarray(value, dtype=float).reshape(-1)
        if x.shape != (2,):
            raise ModelError(f"initial value of cylindrical hinge {self.name!r} must be (displacement m, angle rad),"
                             f" got {value!r}")
        return -x if reversed_ else x.copy()


class Universal(Hinge):
    """Universal (Cardan) hinge: rotation about ``axis1`` then about the rotated ``axis2`` (orthogonal), rad."""

    kind = "universal"
    nq, nv = 2, 2

    def __init__(
        self,
        axis1: Sequence[float] = (1.0, 0.0, 0.0),
        axis2: Sequence[float] = (0.0, 1.0, 0.0),
        *,
        name: str | None = None,
        actuated: bool | None = None,
    ):
        super().__init__(name=name, actuated=actuated)
        self.axis1 = _unit(axis1, f"universal hinge {name!r} axis1")
        self.axis2 = _unit(axis2, f"universal hinge {name!r} axis2")
        if abs(self.axis1 @ self.axis2) > 1e-9:
            raise ModelError(f"universal hinge {name!r}: axis1 {axis1!r} and axis2 {axis2!r} must be orthogonal")

    def joint_model(self, reversed_: bool = False) -> pin.JointModel:
        if reversed_:
            return pin.JointModelUniversal(self.axis2, self.axis1)
        return pin.JointModelUniversal(self.axis1, self.axis2)

    def coordinates(self, value, reversed_: bool = False) -> np.ndarray:
        x = np.asarray(value, dtype=float).reshape(-1)
        if x.shape != (2,):
            raise ModelError(f"initial value of universal hinge {self.name!r} must be two angles (rad), got {value!r}")
        return np.array([-x[1], -x[0]]) if reversed_ else x.copy()


class Weld(Hinge):
    """Fixed hinge: the child is rigidly attached to the parent (no degree of freedom)."""

    kind = "weld"
    nq, nv = 0, 0
    default_actuated = False

    def joint_model(self, reversed_: bool = False) -> None:
        return None


class Free(Hinge):
    """Free hinge: 6 degrees of freedom (a free-flyer relative to the parent feature frame)."""

    kind = "free"
    nq, nv = 7, 6
    default_actuated = False

    def joint_model(self, reversed_: bool = False) -> pin.JointModel:
        return pin.JointModelFreeFlyer()

    def coordinates(self, value, reversed_: bool = False) -> np.ndarray:
        if not isinstance(value, pin.SE3):
            raise ModelError(f"initial value of free hinge {self.name!r} must be a pin.SE3, got {value!r}")
        return pin.SE3ToXYZQUAT(value.inverse() if reversed_ else value).copy()
