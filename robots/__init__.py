"""Model definitions for controlkit.

- :mod:`robots.shapes` — primitive shapes (volume, centre of mass, inertia, coal geometry);
- :mod:`robots.hinges` and :mod:`robots.definition` — the definition language
  (bodies with features, hinges, composites, scenes);
- :mod:`robots.builder` — compiles a scene to a :class:`controlkit.mechanism.Mechanism`;
- :mod:`robots.urdf` — URDF robots (``load("talos")``, ``from_urdf(path)``);
- :mod:`robots.seeds` — the seed models of the thesis and papers; every seed returns a
  :class:`robots.builder.BuiltMechanism` ``(mechanism, q0, v0, info)`` that unpacks as
  ``mech, q0 = robots.four_bar()``.
"""
from .builder import BuiltMechanism, build_scene
from .definition import Body, Composite, Scene, pose
from .hinges import Cylindrical, Free, Hinge, Prismatic, Revolute, Spherical, Universal, Weld
from .shapes import Cone, Cuboid, Cylinder, Pipe, Shape, Sphere, cone, cuboid, cylinder, pipe, sphere

__all__ = [
    "BuiltMechanism", "build_scene", "Body", "Composite", "Scene", "pose",
    "Hinge", "Spherical", "Revolute", "Prismatic", "Universal", "Cylindrical", "Weld", "Free",
    "Shape", "Cuboid", "Sphere", "Cylinder", "Cone", "Pipe", "cuboid", "sphere", "cylinder", "cone", "pipe",
]
from .seeds import (
    SEEDS,
    THESIS_TO_WORLD,
    ball_on_ground,
    biped,
    box_on_ground,
    box_on_slope,
    brick_stack,
    critical_form,
    four_bar,
    friction_block,
    ground_body,
    newtons_cradle,
    pendulum_chain,
    redundant_arm,
    thesis_pendulum,
    thesis_pendulum_scene,
    three_r_pendulum,
    three_spheres,
)
from .urdf import from_urdf, load, robot_names

__all__ += list(SEEDS) + ["SEEDS", "THESIS_TO_WORLD", "ground_body", "load", "from_urdf", "robot_names"]
