"""A small definition language for mechanisms (the thesis' Fig. 2.2 and 2.3).

- :class:`Body` — a primitive object: a shape (:mod:`robots.shapes`) with a density
  or a mass, named features, a colour and an optional material tag.
- hinges (:mod:`robots.hinges`): ``Spherical``, ``Revolute``, ``Prismatic``,
  ``Universal``, ``Weld``, ``Free``.
- :class:`Composite` — components (bodies or composites) and the joins between them.
- :class:`Scene` — the configuration: top-level components placed in the world
  (``fixed=True`` welds a component to the world; otherwise it gets a free-flyer
  root), compiled by :meth:`Scene.build` into a :class:`controlkit.mechanism.Mechanism`.

Frames and names:

- A body's frame is its shape's frame (see :mod:`robots.shapes`). Features are
  points ``(x, y, z)`` (m, identity orientation) or ``pin.SE3`` frames in the body
  frame. Every body has a ``center`` feature at its centre of mass, plus the shape's
  own points (``top``/``bottom`` face centres, a cone's ``base``/``apex``); explicit
  features override shape points, but not ``center``.
- ``join(parent, parent_feature, child, child_feature, hinge, rotation=R0)`` places
  the child's feature frame on the parent's, ``F_child = F_parent * J(q) * R0``; with
  every hinge at its zero (identity) coordinate this is the **declared pose**.
- Names may not contain dots: dots build paths. A body ``l1`` in composite
  ``pendulum`` is the BODY frame ``pendulum.l1``, its feature ``topback`` the
  OP_FRAME ``pendulum.l1.topback``, hinge ``j1`` the joint ``pendulum.j1``.
  Components added directly to a :class:`Scene` have no prefix. Joins name a
  component of the composite and a feature path inside it (``"l3.botback"`` for a
  feature of body ``l3`` inside a composite component).
- A join without a name is named ``"{parent}_to_{child}"``; ``join(name=...)``
  overrides the hinge's own ``name``. Component and hinge names share one namespace
  per composite.
- A composite's root is its first component that is not the child of one of its
  joins (the first component if every one is). A placed top-level component's
  placement is its root body's placement in the world.
- Joining two components that are already connected closes a loop: the builder
  cuts that join and adds a loop-closure constraint (see :mod:`robots.builder`).
"""
from __future__ import annotations

from typing import Mapping, Sequence, Union

import coal
import numpy as np
import pinocchio as pin

from controlkit.errors import ModelError, UnknownNameError

from .hinges import Hinge, as_rotation
from .shapes import Shape

__all__ = ["Body", "Composite", "Scene", "Join", "Component", "pose", "as_placement"]

FeatureSpec = Union[Sequence[float], np.ndarray, pin.SE3]
DEFAULT_COLOR = (0.72, 0.72, 0.78, 1.0)


def check_name(name: str, what: str) -> str:
    """Validate a user-given name (non-empty string without dots)."""
    if not isinstance(name, str) or not name:
        raise ModelError(f"{what} needs a non-empty string name, got {name!r}")
    if "." in name:
        raise ModelError(f"{what} name {name!r} may not contain '.', which separates path components")
    return name


def pose(
    xyz: Sequence[float] = (0.0, 0.0, 0.0),
    *,
    rpy: Sequence[float] | None = None,
    quat: Sequence[float] | None = None,
    rotation=None,
) -> pin.SE3:
    """A placement from a position (m) and at most one orientation.

    Args:
        xyz: translation (m).
        rpy: roll, pitch, yaw (rad), ``R = Rz(yaw) Ry(pitch) Rx(roll)``.
        quat: unit quaternion ``(w, x, y, z)`` (the thesis' Euler parameters).
        rotation: a 3x3 matrix, a ``pin.Quaternion`` or a rotation vector (rad).
    """
    given = [r for r in (rpy, quat, rotation) if r is not None]
    if len(given) > 1:
        raise ModelError("pose: give at most one of rpy, quat, rotation")
    t = np.asarray(xyz, dtype=float).reshape(-1)
    if t.shape != (3,) or not np.all(np.isfinite(t)):
        raise ModelError(f"pose: xyz must be a finite 3-vector (m), got {xyz!r}")
    R = np.eye(3)
    if rpy is not None:
        R = pin.rpy.rpyToMatrix(*np.asarray(rpy, dtype=float).reshape(3))
    elif quat is not None:
        w, x, y, z = np.asarray(quat, dtype=float).reshape(4)
        R = pin.Quaternion(w, x, y, z).normalized().matrix()
    elif rotation is not None:
        R = as_rotation(rotation, "pose rotation")
    return pin.SE3(R, t)


def as_placement(spec, where: str) -> pin.SE3:
    """A ``pin.SE3`` from an SE3 or a 3-vector (m)."""
    if isinstance(spec, pin.SE3):
        return spec.copy()
    try:
        return pose(spec)
    except (ModelError, TypeError, ValueError):
        raise ModelError(f"{where}: expected a pin.SE3 or a 3-vector (m), got {spec!r}") from None


class Body:
    """A primitive object: a shape with uniform density, features and display attributes.

    Args:
        name: body name (no dots).
        shape: a :class:`robots.shapes.Shape`; the body frame is the shape frame.
        density: kg/m^3 (exactly one of density or mass).
        mass: total mass, kg.
        features: ``{name: (x, y, z) | pin.SE3}`` in the body frame (m).
        color: RGBA in [0, 1] for the visual model.
        material: a free-form material tag (used by contact models).
        collision_geometry: a coal geometry replacing the shape in the collision
            model only (e.g. ``coal.Halfspace`` for a ground), placed by
            ``collision_placement`` in the body frame.
    """

    def __init__(
        self,
        name: str,
        shape: Shape,
        *,
        density: float | None = None,
        mass: float | None = None,
        features: Mapping[str, FeatureSpec] | None = None,
        color: Sequence[float] = DEFAULT_COLOR,
        material: str | None = None,
        collision_geometry: coal.CollisionGeometry | None = None,
        collision_placement: pin.SE3 | None = None,
    ):
        self.name = check_name(name, "body")
        if not isinstance(shape, Shape):
            raise ModelError(f"body {name!r}: shape must be a robots.shapes.Shape, got {type(shape).__name__}")
        self.shape = shape
        self.mass = shape.mass(density=density, mass=mass)
        self.density = self.mass / shape.volume()
        self.inertia = pin.Inertia(self.mass, shape.com(), shape.inertia_com(self.mass))
        c = np.asarray(color, dtype=float).reshape(-1)
        if c.shape == (3,):
            c = np.append(c, 1.0)
        if c.shape != (4,) or np.any(c < 0) or np.any(c > 1):
            raise ModelError(f"body {name!r}: color must be RGB or RGBA in [0, 1], got {color!r}")
        self.color = c
        self.material = material
        self.collision_geometry = collision_geometry
        self.collision_placement = collision_placement.copy() if collision_placement is not None else pin.SE3.Identity()
        self.features: dict[str, pin.SE3] = {"center": pin.SE3(np.eye(3), shape.com())}
        for fname, p in shape.features().items():
            self.features[fname] = pin.SE3(np.eye(3), np.asarray(p, dtype=float))
        for fname, spec in (features or {}).items():
            check_name(fname, f"feature of body {name!r}")
            if fname == "center":
                raise ModelError(f"body {name!r}: feature 'center' is reserved (it is the centre of mass)")
            self.features[fname] = as_placement(spec, f"feature {fname!r} of body {name!r}")

    def feature(self, name: str) -> pin.SE3:
        """Placement of a feature in the body frame; raises UnknownNameError listing the valid ones."""
        if name not in self.features:
            raise UnknownNameError("feature", name, self.features, f"body {self.name!r}")
        return self.features[name]

    def feature_paths(self) -> list[str]:
        """Names of the features (for messages)."""
        return list(self.features)

    def __repr__(self) -> str:
        return f"Body({self.name!r}, {self.shape!r}, mass={self.mass:.6g} kg)"


class Join:
    """One declared join of a composite (see :meth:`Composite.join`)."""

    def __init__(self, name, parent, parent_feature, child, child_feature, hinge, rotation):
        self.name = name
        self.parent, self.parent_feature = parent, parent_feature
        self.child, self.child_feature = child, child_feature
        self.hinge = hinge
        self.rotation = rotation

    def __repr__(self) -> str:
        return (
            f"Join({self.name!r}: {self.parent}.{self.parent_feature} -> {self.child}.{self.child_feature},"
            f" {self.hinge.kind})"
        )


class Composite:
    """A named group of components (bodies or composites) and joins.

    Args:
        name: composite name (no dots); prefixes the names of everything inside.
        self_collision: if False, no collision pairs are generated between bodies
            inside this composite (the thesis' pendulum links pass through each other).
    """

    kind = "composite"

    def __init__(self, name: str, *, self_collision: bool = True):
        self.name = check_name(name, self.kind)
        self.self_collision = bool(self_collision)
        self.components: dict[str, Component] = {}
        self.joins: list[Join] = []

    # ------------------------------------------------------------- structure
    def _where(self) -> str:
        return f"{self.kind} {self.name!r}"

    def _claim(self, name: str, what: str) -> None:
        if name in self.components:
            raise ModelError(f"duplicate name {name!r} in {self._where()}: a component named {name!r} already exists ({what})")
        if any(j.name == name for j in self.joins):
            raise ModelError(f"duplicate name {name!r} in {self._where()}: a hinge named {name!r} already exists ({what})")

    def add(self, component: "Component") -> "Component":
        """Add a body or composite; returns it."""
        if not isinstance(component, (Body, Composite)) or isinstance(component, Scene):
            raise ModelError(f"{self._where()}: can only add a Body or Composite, got {type(component).__name__}")
        if component is self or _contains(component, self):
            raise ModelError(f"{self._where()}: cannot add {component.kind if isinstance(component, Composite) else 'body'} "
                             f"{component.name!r}: it contains {self._where()}, so the nesting would be a cycle")
        self._claim(component.name, f"while adding {component!r}")
        self.components[component.name] = component
        return component

    def component(self, name: "str | Component") -> "Component":
        """A component by name (or the component itself); raises UnknownNameError."""
        if isinstance(name, (Body, Composite)):
            if self.components.get(name.name) is not name:
                raise UnknownNameError("component", name.name, self.components, self._where())
            return name
        if name not in self.components:
            raise UnknownNameError("component", name, self.components, self._where())
        return self.components[name]

    def join(
        self,
        parent: "str | Component",
        parent_feature: str,
        child: "str | Component",
        child_feature: str,
        hinge: Hinge,
        *,
        rotation=None,
        name: str | None = None,
    ) -> Join:
        """Join ``child`` to ``parent`` at matching features with a hinge.

        The child's feature frame is placed on the parent's feature frame, turned by
        ``rotation`` (3x3 matrix, ``pin.Quaternion`` or rotation vector in rad; the
        declared relative orientation). A feature of a component that is a composite
        is a dotted path (``"l3.botback"``). Joining components that are already
        connected closes a loop.
        """
        p, c = self.component(parent), self.component(child)
        if not isinstance(hinge, Hinge):
            raise ModelError(f"{self._where()}: hinge must be a robots.hinges.Hinge, got {type(hinge).__name__}")
        jname = name or hinge.name or f"{p.name}_to_{c.name}"
        check_name(jname, f"hinge in {self._where()}")
        pbody, _ = resolve_feature(p, parent_feature)
        cbody, _ = resolve_feature(c, child_feature)
        if p is c and pbody == cbody:
            raise ModelError(
                f"hinge {jname!r} in {self._where()} joins body {pbody!r} to itself"
                f" (features {parent_feature!r} and {child_feature!r}); a hinge must join two different bodies"
            )
        self._claim(jname, f"hinge joining {p.name!r} to {c.name!r}")
        R0 = np.eye(3) if rotation is None else as_rotation(rotation, f"rotation of hinge {jname!r}")
        j = Join(jname, p.name, parent_feature, c.name, child_feature, hinge, R0)
        self.joins.append(j)
        return j

    def root(self) -> str:
        """Name of the root component (see the module docstring)."""
        if not self.components:
            raise ModelError(f"{self._where()} has no components")
        children = {j.child for j in self.joins}
        for n in self.components:
            if n not in children:
                return n
        return next(iter(self.components))

    def root_body(self) -> str:
        """Path of the root body relative to this composite (``"l0"``, ``"arm.base"``)."""
        c = self.components[self.root()]
        if isinstance(c, Composite):
            return f"{c.name}.{c.root_body()}"
        return c.name

    def feature_paths(self) -> list[str]:
        """Every feature path reachable inside this composite (``"l1.topback"``)."""
        out = []
        for n, c in self.components.items():
            out += [f"{n}.{f}" for f in c.feature_paths()]
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, components={list(self.components)}, joins={[j.name for j in self.joins]})"


Component = Union[Body, Composite]


def _contains(outer: Component, inner: Component) -> bool:
    """Whether ``inner`` is ``outer`` or nested anywhere inside it."""
    if outer is inner:
        return True
    if not isinstance(outer, Composite):
        return False
    return any(_contains(c, inner) for c in outer.components.values())


def resolve_feature(component: Component, path: str) -> tuple[str, pin.SE3]:
    """(body path relative to the component's parent, feature placement in that body) of a feature path."""
    if not isinstance(path, str):
        raise ModelError(f"feature of {component.name!r} must be named by a string, got {path!r}")
    if isinstance(component, Body):
        return component.name, component.feature(path)
    head, _, rest = path.partition(".")
    if not rest or head not in component.components:
        raise UnknownNameError("feature", path, component.feature_paths(), f"composite {component.name!r}")
    try:
        body, M = resolve_feature(component.components[head], rest)
    except UnknownNameError:
        raise UnknownNameError("feature", path, component.feature_paths(), f"composite {component.name!r}") from None
    return f"{component.name}.{body}", M


class _Placement:
    def __init__(self, name: str, placement: pin.SE3 | None, fixed: bool, velocity, joint_name: str | None):
        self.name, self.placement, self.fixed = name, placement, fixed
        self.velocity = velocity
        self.joint_name = joint_name


class Scene(Composite):
    """The configuration: components placed in the world, compiled to a Mechanism.

    Args:
        name: the mechanism's name; components added to a scene carry no prefix.
        gravity: gravity vector (m/s^2), default ``(0, 0, -9.81)``.
        self_collision: as for :class:`Composite`.
    """

    kind = "scene"

    def __init__(self, name: str = "scene", *, gravity: Sequence[float] = (0.0, 0.0, -9.81), self_collision: bool = True):
        super().__init__(name, self_collision=self_collision)
        g = np.asarray(gravity, dtype=float).reshape(-1)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ModelError(f"scene {name!r}: gravity must be a finite 3-vector (m/s^2), got {gravity!r}")
        self.gravity = g
        self.placements: dict[str, _Placement] = {}

    def add(
        self,
        component: Component,
        placement=None,
        *,
        fixed: bool = False,
        velocity: Sequence[float] | None = None,
        joint_name: str | None = None,
    ) -> Component:
        """Add a top-level component, optionally placed in the world.

        Args:
            component: a body or composite.
            placement: world placement (``pin.SE3`` or 3-vector, m) of the component's
                root body. A placed component is a tree root; an unplaced one must be
                joined to a placed one.
            fixed: weld the root body to the world (default: a free-flyer root joint,
                unactuated, named ``joint_name`` or ``"{name}_root"``).
            velocity: initial ``(vx, vy, vz, wx, wy, wz)`` of the root body origin in
                world axes (m/s, rad/s); only for free (not fixed) components.
        """
        super().add(component)
        if placement is None and (fixed or velocity is not None or joint_name is not None):
            placement = pin.SE3.Identity() if fixed else None
            if placement is None:
                raise ModelError(f"scene {self.name!r}: component {component.name!r} has a velocity or joint name but no placement")
        if placement is not None:
            M = as_placement(placement, f"placement of {component.name!r} in scene {self.name!r}")
            vel = None
            if velocity is not None:
                if fixed:
                    raise ModelError(f"scene {self.name!r}: fixed component {component.name!r} cannot have a velocity")
                vel = np.asarray(velocity, dtype=float).reshape(-1)
                if vel.shape != (6,) or not np.all(np.isfinite(vel)):
                    raise ModelError(f"scene {self.name!r}: velocity of {component.name!r} must be 6 numbers, got {velocity!r}")
            if joint_name is not None:
                check_name(joint_name, f"root joint of {component.name!r}")
            self.placements[component.name] = _Placement(component.name, M, bool(fixed), vel, joint_name)
        return component

    def build(self, initial: Mapping[str, object] | None = None, *, check_closure: float | bool = True):
        """Compile to a :class:`robots.builder.BuiltMechanism` (mechanism, q0, v0).

        Args:
            initial: ``{hinge name: value}`` initial hinge coordinates in the declared
                sense (rad, m, rotations; see :mod:`robots.hinges`); others start at zero.
            check_closure: raise ModelError naming each loop closure whose error at q0
                exceeds a tolerance (m, rad): ``True`` (default) for
                :data:`robots.builder.CLOSURE_TOLERANCE`, a number for that tolerance,
                ``False`` not to check (a pose the simulator's projection is to close).
        """
        from .builder import build_scene

        return build_scene(self, initial=initial, check_closure=check_closure)

