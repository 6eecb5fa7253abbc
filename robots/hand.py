"""A parametric robot hand over a table with an object to grasp (thesis Fig. 1.1 and 7.2).

The thesis motivates Newton with the design of Salisbury-like hands: three or four fingers,
three phalanges each, one palm. The seeds give no dimensions; the values here are chosen:

- ``palm``: a 0.12 x 0.12 x 0.02 m plate of 0.3 kg, on a vertical slider ``lift`` (actuated,
  m) hanging from a fixed ``mount``; its underside is the palm's ``bottom`` feature;
- ``fingers`` (3 or 4) spaced evenly round a circle of ``finger_radius`` (0.045 m) under the
  palm, finger ``i`` at azimuth ``2 pi i / fingers``; each has ``f{i}_proximal``,
  ``f{i}_middle``, ``f{i}_distal`` (cuboids 0.016 x 0.016 x length, lengths ``phalanges``
  = 0.05, 0.04, 0.03 m, 1000 kg/m^3) joined by revolute flexion hinges ``f{i}_j1``
  (palm-proximal), ``f{i}_j2``, ``f{i}_j3`` (actuated, rad), axes tangent to the circle so
  that positive flexion curls the finger towards the palm's axis. At zero the fingers hang
  straight down; ``spread`` (rad, default 0.35) opens every ``j1`` outward in q0;
- ``table``: the ground (a coal half-space, top at z = 0);
- the object (``object``), resting on the table under the palm: ``"box"`` (0.05 m cube),
  ``"cylinder"`` (radius 0.025 m, height 0.07 m, upright) or ``"sphere"`` (radius 0.03 m),
  0.15 kg.

q0: the palm high enough that the open fingertips clear the object by ``clearance``
(0.02 m). ``info``: ``fingers``, ``tips`` (distal bodies), ``joints`` per finger,
``object`` and its size, ``grasp_height`` (the palm top's height, m, with the fingertips at the object's
mid-height, straight fingers), ``pairs`` (the contact pairs to watch: every phalanx with the
object, the object with the table).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pinocchio as pin

from controlkit.errors import ModelError

from .builder import BuiltMechanism
from .definition import Body, Scene, pose
from .hinges import Prismatic, Revolute
from .scenes import ground_body
from .shapes import cuboid, cylinder, sphere

__all__ = ["hand", "OBJECTS"]

OBJECTS = {"box": 0.05, "cylinder": (0.025, 0.07), "sphere": 0.03}  # sizes (m)
OBJECT_MASS = 0.15  # kg
PALM = (0.12, 0.12, 0.02)  # m
PALM_MASS = 0.3  # kg
FINGER_WIDTH = 0.016  # m
_SKIN = (0.85, 0.7, 0.6, 1.0)


def _object(kind: str) -> tuple[Body, float]:
    """The object body and its height (m)."""
    if kind == "box":
        a = OBJECTS["box"]
        return Body("object", cuboid(a, a, a), mass=OBJECT_MASS, color=(0.2, 0.5, 0.8, 1.0)), a
    if kind == "cylinder":
        r, h = OBJECTS["cylinder"]
        return Body("object", cylinder(r, h), mass=OBJECT_MASS, color=(0.2, 0.7, 0.4, 1.0)), h
    if kind == "sphere":
        r = OBJECTS["sphere"]
        return Body("object", sphere(r), mass=OBJECT_MASS, color=(0.8, 0.3, 0.3, 1.0)), 2 * r
    raise ModelError(f"hand: object must be one of {', '.join(OBJECTS)}, got {kind!r}")


def _add_finger(s: Scene, i: int, lengths: Sequence[float]) -> list[str]:
    """Finger i's three phalanges and flexion hinges under the palm's ``base_i``; its hinge names."""
    names = [f"f{i}_proximal", f"f{i}_middle", f"f{i}_distal"]
    for n, L in zip(names, lengths):
        s.add(Body(n, cuboid(FINGER_WIDTH, FINGER_WIDTH, L), density=1000.0,
                   features={"top": (0.0, 0.0, L / 2), "bottom": (0.0, 0.0, -L / 2)}, color=_SKIN))
    # in the base frame x points outward and z down the finger: +y turns the tip inward
    s.join("palm", f"base_{i}", names[0], "top", Revolute((0.0, 1.0, 0.0)), name=f"f{i}_j1")
    s.join(names[0], "bottom", names[1], "top", Revolute((0.0, 1.0, 0.0)), name=f"f{i}_j2")
    s.join(names[1], "bottom", names[2], "top", Revolute((0.0, 1.0, 0.0)), name=f"f{i}_j3")
    return [f"f{i}_j1", f"f{i}_j2", f"f{i}_j3"]


def _palm(fingers: int, finger_radius: float) -> Body:
    """The palm with its ``top``, ``bottom`` and one ``base_<i>`` per finger on a circle of
    ``finger_radius`` (m), each turned about z to its finger's azimuth."""
    features = {"top": (0.0, 0.0, PALM[2] / 2), "bottom": (0.0, 0.0, -PALM[2] / 2)}
    for i in range(fingers):
        az = 2 * math.pi * i / fingers
        features[f"base_{i}"] = pin.SE3(pin.exp3(np.array([0.0, 0.0, az])),
                                        np.array([finger_radius * math.cos(az), finger_radius * math.sin(az), -PALM[2] / 2]))
    return Body("palm", cuboid(*PALM), mass=PALM_MASS, features=features, color=(0.5, 0.5, 0.55, 1.0))


def hand(
    fingers: int = 3,
    obj: str = "box",
    *,
    phalanges: Sequence[float] = (0.05, 0.04, 0.03),
    finger_radius: float = 0.045,
    spread: float = 0.35,
    clearance: float = 0.02,
    finger_armature: float = 2e-4,
) -> BuiltMechanism:
    """The hand, the table and one object (see the module docstring).

    Args:
        fingers: 3 or 4.
        obj: ``"box"``, ``"cylinder"`` or ``"sphere"``.
        phalanges: proximal, middle, distal lengths (m).
        finger_radius: radius (m) of the circle of finger bases under the palm.
        spread: initial outward opening of every finger's first hinge (rad).
        clearance: height (m) of the open fingertips above the object's top in q0.
        finger_armature: each finger hinge's geared motor inertia seen at the joint (kg m^2;
            a 1e-8 kg m^2 rotor behind a 1:141 gear); without it a 8 g distal phalanx has a
            2e-6 kg m^2 inertia no 1 kHz torque loop can damp.
    """
    if fingers not in (3, 4):
        raise ModelError(f"hand: fingers must be 3 or 4, got {fingers!r}")
    lengths = [float(x) for x in phalanges]
    if len(lengths) != 3 or min(lengths) <= 0:
        raise ModelError(f"hand: phalanges must be three positive lengths (m), got {phalanges!r}")
    body, height = _object(obj)
    s = Scene(f"hand_{fingers}_{obj}")
    g, gpose = ground_body("table")
    s.add(g, gpose, fixed=True)
    s.add(body, pose((0.0, 0.0, height / 2)))
    total = sum(lengths)
    # the palm's top (where the slider holds it) with straight fingers reaching the object's mid-height
    grasp_height = height / 2 + total + PALM[2]
    open_drop = total * math.cos(spread)  # vertical reach of the open finger
    start = height + clearance + open_drop + PALM[2]
    s.add(Body("mount", cuboid(0.04, 0.04, 0.04), density=1000.0, features={"rail": (0.0, 0.0, 0.0)}),
          pose((0.0, 0.0, grasp_height)), fixed=True)
    s.add(_palm(fingers, finger_radius))
    s.join("mount", "rail", "palm", "top", Prismatic((0.0, 0.0, 1.0), actuated=True), name="lift")
    joints = {i: _add_finger(s, i, lengths) for i in range(fingers)}
    tips = [f"f{i}_distal" for i in range(fingers)]
    # each base feature is turned about z to its finger's azimuth: its y axis, the flexion axis,
    # is tangent to the circle, so the flexion sign is the same for every finger
    initial = {"lift": start - grasp_height}
    initial.update({j[0]: -spread for j in joints.values()})
    built = s.build(initial=initial)
    model = built.mechanism.model
    for js in joints.values():
        for j in js:
            model.armature[built.mechanism.joint_v_slice(j)] = finger_armature
    phal = [f"f{i}_{p}" for i in range(fingers) for p in ("proximal", "middle", "distal")]
    built.info.update(fingers=fingers, tips=tips, joints=joints, object=obj, object_height=height,
                      grasp_height=grasp_height, lengths=lengths,
                      pairs=[(p, "object") for p in phal] + [("object", "table")])
    return built
