"""Primitive solid shapes: volume, centre of mass, inertia and collision geometry.

Each shape is a small frozen dataclass with dimensions in metres. It computes its
volume (m^3), its centre of mass in its own frame (m), its inertia about the centre
of mass (kg m^2, for a given mass), the spatial inertia ``pin.Inertia`` from a
density (kg/m^3) or a total mass (kg), and a coal geometry for collision and display.

Shape frame conventions (every shape is symmetric about its frame's z axis or
about all three axes):

- :class:`Cuboid` ``(x, y, z)``: origin at the centroid, edges along the axes,
  side lengths ``x``, ``y``, ``z``.
- :class:`Sphere` ``(radius)``: origin at the centre.
- :class:`Cylinder` ``(radius, length)``: axis along z, origin at the centroid,
  end faces at ``z = +-length/2``.
- :class:`Pipe` ``(outer_radius, inner_radius, length)``: a cylinder with a coaxial
  cylindrical hole; axis along z, origin at the centroid.
- :class:`Cone` ``(radius, height)``: axis along z, origin at the **centre of the
  base disc**, apex at ``z = +height``; its centre of mass is at ``z = height/4``.

Every shape also names a few points (:meth:`Shape.features`, identity orientation):
the face centres ``top``/``bottom`` (``+z``/``-z``) of cuboids, cylinders and pipes,
and ``base``/``apex`` of a cone. The body's ``center`` feature (its centre of mass)
is added by :class:`robots.definition.Body`.

Collision geometry: ``coal.Box``, ``coal.Sphere``, ``coal.Cylinder``, ``coal.Cone``
(coal's cone is centred on its mid-height, so :meth:`Shape.geometry_placement`
shifts it by ``height/2``). coal has no pipe: a :class:`Pipe` is represented by a
closed triangle mesh (``coal.BVHModelOBBRSS``, ``segments`` facets around), which keeps
the hole (a convex hull would fill it); collision queries against it are mesh
queries, which detect surface crossings (a body entirely inside the wall is not
reported).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import coal
import numpy as np
import pinocchio as pin

from controlkit.errors import ModelError

__all__ = [
    "Shape",
    "Cuboid",
    "Sphere",
    "Cylinder",
    "Cone",
    "Pipe",
    "cuboid",
    "sphere",
    "cylinder",
    "cone",
    "pipe",
    "mass_from",
]


def _check_positive(shape: str, param: str, value: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ModelError(f"{shape}: {param} must be a positive number, got {value!r}") from None
    if not math.isfinite(v) or v <= 0.0:
        raise ModelError(f"{shape}: {param} must be positive and finite, got {value!r}")
    return v


def mass_from(volume: float, density: float | None = None, mass: float | None = None, where: str = "shape") -> float:
    """Total mass (kg) from exactly one of ``density`` (kg/m^3) or ``mass`` (kg)."""
    if (density is None) == (mass is None):
        raise ModelError(f"{where}: give exactly one of density (kg/m^3) or mass (kg), got density={density!r}, mass={mass!r}")
    if density is not None:
        return _check_positive(where, "density", density) * volume
    return _check_positive(where, "mass", mass)


@dataclass(frozen=True)
class Shape:
    """Base class of the primitive shapes (see the module docstring for frames)."""

    kind: ClassVar[str] = "shape"

    def volume(self) -> float:
        """Volume (m^3)."""
        raise NotImplementedError

    def com(self) -> np.ndarray:
        """Centre of mass (3,) in the shape frame (m), for uniform density."""
        return np.zeros(3)

    def unit_inertia(self) -> np.ndarray:
        """Inertia about the centre of mass per unit mass (3, 3), m^2."""
        raise NotImplementedError

    def inertia_com(self, mass: float) -> np.ndarray:
        """Inertia tensor (3, 3) about the centre of mass, shape axes, kg m^2, for ``mass`` kg."""
        return _check_positive(self.kind, "mass", mass) * self.unit_inertia()

    def mass(self, *, density: float | None = None, mass: float | None = None) -> float:
        """Total mass (kg) from exactly one of ``density`` (kg/m^3) or ``mass`` (kg)."""
        return mass_from(self.volume(), density, mass, where=repr(self))

    def inertia(self, *, density: float | None = None, mass: float | None = None) -> pin.Inertia:
        """Spatial inertia in the shape frame from ``density`` (kg/m^3) or total ``mass`` (kg)."""
        m = self.mass(density=density, mass=mass)
        return pin.Inertia(m, self.com(), self.inertia_com(m))

    def geometry(self) -> coal.CollisionGeometry:
        """A new coal geometry of this shape (placed by :meth:`geometry_placement`)."""
        raise NotImplementedError

    def geometry_placement(self) -> pin.SE3:
        """Placement of the coal geometry in the shape frame."""
        return pin.SE3.Identity()

    def features(self) -> dict[str, np.ndarray]:
        """Named points (m) the shape defines in its own frame."""
        return {}


def _diag(a: float, b: float, c: float) -> np.ndarray:
    return np.diag([a, b, c])


@dataclass(frozen=True)
class Cuboid(Shape):
    """A rectangular box of side lengths ``x``, ``y``, ``z`` (m), centred on its frame."""

    x: float
    y: float
    z: float
    kind: ClassVar[str] = "cuboid"

    def __post_init__(self):
        for p in ("x", "y", "z"):
            object.__setattr__(self, p, _check_positive(self.kind, p, getattr(self, p)))

    def volume(self) -> float:
        return self.x * self.y * self.z

    def unit_inertia(self) -> np.ndarray:
        x2, y2, z2 = self.x**2, self.y**2, self.z**2
        return _diag(y2 + z2, x2 + z2, x2 + y2) / 12.0

    def geometry(self) -> coal.Box:
        return coal.Box(self.x, self.y, self.z)

    def features(self) -> dict[str, np.ndarray]:
        return {"top": np.array([0.0, 0.0, self.z / 2]), "bottom": np.array([0.0, 0.0, -self.z / 2])}


@dataclass(frozen=True)
class Sphere(Shape):
    """A solid ball of ``radius`` (m) centred on its frame."""

    radius: float
    kind: ClassVar[str] = "sphere"

    def __post_init__(self):
        object.__setattr__(self, "radius", _check_positive(self.kind, "radius", self.radius))

    def volume(self) -> float:
        return 4.0 / 3.0 * math.pi * self.radius**3

    def unit_inertia(self) -> np.ndarray:
        return np.eye(3) * 0.4 * self.radius**2

    def geometry(self) -> coal.Sphere:
        return coal.Sphere(self.radius)


@dataclass(frozen=True)
class Cylinder(Shape):
    """A solid cylinder of ``radius`` and ``length`` (m), axis z, centred on its frame."""

    radius: float
    length: float
    kind: ClassVar[str] = "cylinder"

    def __post_init__(self):
        for p in ("radius", "length"):
            object.__setattr__(self, p, _check_positive(self.kind, p, getattr(self, p)))

    def volume(self) -> float:
        return math.pi * self.radius**2 * self.length

    def unit_inertia(self) -> np.ndarray:
        r2, l2 = self.radius**2, self.length**2
        t = (3.0 * r2 + l2) / 12.0
        return _diag(t, t, r2 / 2.0)

    def geometry(self) -> coal.Cylinder:
        return coal.Cylinder(self.radius, self.length)

    def features(self) -> dict[str, np.ndarray]:
        return {"top": np.array([0.0, 0.0, self.length / 2]), "bottom": np.array([0.0, 0.0, -self.length / 2])}


@dataclass(frozen=True)
class Cone(Shape):
    """A solid right circular cone: base ``radius``, ``height`` (m), axis z.

    The frame origin is the centre of the base disc; the apex is at ``(0, 0, height)``
    and the centre of mass at ``(0, 0, height/4)``.
    """

    radius: float
    height: float
    kind: ClassVar[str] = "cone"

    def __post_init__(self):
        for p in ("radius", "height"):
            object.__setattr__(self, p, _check_positive(self.kind, p, getattr(self, p)))

    def volume(self) -> float:
        return math.pi * self.radius**2 * self.height / 3.0

    def com(self) -> np.ndarray:
        return np.array([0.0, 0.0, self.height / 4.0])

    def unit_inertia(self) -> np.ndarray:
        r2, h2 = self.radius**2, self.height**2
        t = 3.0 / 20.0 * r2 + 3.0 / 80.0 * h2
        return _diag(t, t, 3.0 / 10.0 * r2)

    def geometry(self) -> coal.Cone:
        return coal.Cone(self.radius, self.height)

    def geometry_placement(self) -> pin.SE3:
        return pin.SE3(np.eye(3), np.array([0.0, 0.0, self.height / 2.0]))

    def features(self) -> dict[str, np.ndarray]:
        return {"base": np.zeros(3), "apex": np.array([0.0, 0.0, self.height])}


@dataclass(frozen=True)
class Pipe(Shape):
    """A tube: cylinder of ``outer_radius`` with a coaxial hole of ``inner_radius``, ``length`` (m).

    Axis z, frame at the centroid. Collision geometry is a closed triangle mesh with
    ``segments`` facets around the axis (coal has no pipe primitive).
    """

    outer_radius: float
    inner_radius: float
    length: float
    segments: int = 32
    kind: ClassVar[str] = "pipe"

    def __post_init__(self):
        for p in ("outer_radius", "inner_radius", "length"):
            object.__setattr__(self, p, _check_positive(self.kind, p, getattr(self, p)))
        if self.inner_radius >= self.outer_radius:
            raise ModelError(
                f"pipe: inner_radius ({self.inner_radius} m) must be smaller than outer_radius ({self.outer_radius} m)"
            )
        if int(self.segments) < 3:
            raise ModelError(f"pipe: segments must be at least 3, got {self.segments!r}")

    def volume(self) -> float:
        return math.pi * (self.outer_radius**2 - self.inner_radius**2) * self.length

    def unit_inertia(self) -> np.ndarray:
        s = self.outer_radius**2 + self.inner_radius**2
        t = (3.0 * s + self.length**2) / 12.0
        return _diag(t, t, s / 2.0)

    def geometry(self) -> coal.BVHModelOBBRSS:
        n = int(self.segments)
        ang = 2.0 * math.pi * np.arange(n) / n
        c, s = np.cos(ang), np.sin(ang)
        h = self.length / 2.0
        rings = []  # 0: outer bottom, 1: outer top, 2: inner bottom, 3: inner top
        for r, z in ((self.outer_radius, -h), (self.outer_radius, h), (self.inner_radius, -h), (self.inner_radius, h)):
            rings.append(np.column_stack([r * c, r * s, np.full(n, z)]))
        verts = np.vstack(rings)
        tris = []
        for i in range(n):
            k = (i + 1) % n
            ob, ot, ib, it = i, n + i, 2 * n + i, 3 * n + i
            ob2, ot2, ib2, it2 = k, n + k, 2 * n + k, 3 * n + k
            tris += [(ob, ob2, ot2), (ob, ot2, ot)]  # outer wall, normals out
            tris += [(ib, it2, ib2), (ib, it, it2)]  # inner wall, normals toward the axis
            tris += [(ot, ot2, it2), (ot, it2, it)]  # top annulus
            tris += [(ob, ib2, ob2), (ob, ib, ib2)]  # bottom annulus
        mesh = coal.BVHModelOBBRSS()
        mesh.beginModel(len(tris), len(verts))
        mesh.addVertices(verts)
        mesh.addTriangles(np.array(tris, dtype=np.int64))
        mesh.endModel()
        return mesh

    def features(self) -> dict[str, np.ndarray]:
        return {"top": np.array([0.0, 0.0, self.length / 2]), "bottom": np.array([0.0, 0.0, -self.length / 2])}


def cuboid(x: float, y: float, z: float) -> Cuboid:
    """A box of side lengths x, y, z (m), centred on its frame."""
    return Cuboid(x, y, z)


def sphere(r: float) -> Sphere:
    """A ball of radius r (m) centred on its frame."""
    return Sphere(r)


def cylinder(r: float, length: float) -> Cylinder:
    """A cylinder of radius r and length (m), axis z, centred on its frame."""
    return Cylinder(r, length)


def cone(r: float, height: float) -> Cone:
    """A cone of base radius r and height (m), axis z, frame at the base centre (COM at height/4)."""
    return Cone(r, height)


def pipe(r_outer: float, r_inner: float, length: float, segments: int = 32) -> Pipe:
    """A tube of outer/inner radius and length (m), axis z, centred on its frame."""
    return Pipe(r_outer, r_inner, length, segments)
