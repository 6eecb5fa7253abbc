"""The 5-DOF redundant arm of thesis Fig. 6.10.

Returns a :class:`robots.builder.BuiltMechanism` (see :mod:`robots.seeds`).

"The base rotates about a vertical axis and the four distal links rotate about
parallel axes that lie in the horizontal plane" (section 6.6.3). The thesis gives
no dimensions; we use a fixed pedestal ``base`` (cylinder, on the floor z = 0), a
``turret`` turning about z (``joint_1``) and four equal cylindrical links
``link_1`` .. ``link_4`` with pitch hinges ``joint_2`` .. ``joint_5`` about +y (in the
turret frame; positive leans the arm toward +x when the yaw is zero). At zero
angles the arm points straight up (a singular configuration). Feature
``link_4.tool`` is the tip (the end effector); every hinge is actuated.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from controlkit.errors import ModelError

from .builder import BuiltMechanism
from .definition import Body, Scene
from .hinges import Revolute
from .shapes import cylinder

__all__ = ["redundant_arm"]


def redundant_arm(
    angles: Sequence[float] = (0.0, 0.5, 0.4, 0.3, 0.2),
    *,
    link_lengths: Sequence[float] = (0.4, 0.4, 0.4, 0.4),
    link_radius: float = 0.035,
    density: float = 2700.0,
    base_height: float = 0.1,
    turret_height: float = 0.2,
) -> BuiltMechanism:
    """The thesis' redundant arm: base yaw plus four parallel pitch joints.

    Args:
        angles: q0 joint angles (rad) of ``joint_1`` (yaw) .. ``joint_5`` (pitches).
        link_lengths: lengths (m) of ``link_1`` .. ``link_4``.
        link_radius: radius of the link cylinders (m); density kg/m^3 (aluminium).
        base_height, turret_height: heights (m) of the fixed pedestal and the turret.

    ``info["tool"] = "link_4.tool"``; ``info["pitch_joints"]`` lists joint_2..joint_5.
    """
    a = np.asarray(angles, dtype=float).reshape(-1)
    lengths = [float(x) for x in link_lengths]
    if a.shape != (5,):
        raise ModelError(f"redundant_arm: angles must be 5 numbers (rad), got {angles!r}")
    if len(lengths) != 4:
        raise ModelError(f"redundant_arm: link_lengths must be 4 lengths (m), got {link_lengths!r}")
    s = Scene("redundant_arm")
    s.add(Body("base", cylinder(2.5 * link_radius, base_height), density=density, color=(0.3, 0.3, 0.3, 1)), (0, 0, base_height / 2), fixed=True)
    s.add(Body("turret", cylinder(1.6 * link_radius, turret_height), density=density, color=(0.5, 0.5, 0.55, 1)))
    s.join("base", "top", "turret", "bottom", Revolute((0, 0, 1)), name="joint_1")
    parent = "turret"
    colors = [(0.85, 0.45, 0.2, 1), (0.9, 0.7, 0.2, 1), (0.3, 0.65, 0.4, 1), (0.3, 0.5, 0.85, 1)]
    for i, L in enumerate(lengths, start=1):
        feats = {"tool": (0.0, 0.0, L / 2)} if i == 4 else None
        s.add(Body(f"link_{i}", cylinder(link_radius, L), density=density, features=feats, color=colors[i - 1]))
        s.join(parent, "top", f"link_{i}", "bottom", Revolute((0, 1, 0)), name=f"joint_{i + 1}")
        parent = f"link_{i}"
    built = s.build(initial={f"joint_{i + 1}": a[i] for i in range(5)})
    built.info.update(tool="link_4.tool", yaw_joint="joint_1", pitch_joints=[f"joint_{i}" for i in range(2, 6)])
    return built
