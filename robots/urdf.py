"""Real robots from URDF: ``load(name)`` from example-robot-data and ``from_urdf(path)``.

Both return a :class:`controlkit.mechanism.Mechanism` whose actuated joints are all
joints except free-flyers (a floating base is unactuated). ``load`` puts the
mechanism in the robot's reference configuration (example-robot-data's ``q0``,
e.g. Talos' half-sitting pose); ``from_urdf`` leaves it at the neutral one.
Everything is read from local files: no network access.
"""
from __future__ import annotations

import os
from typing import Sequence

import pinocchio as pin

from controlkit.errors import ModelError, UnknownNameError
from controlkit.mechanism import Mechanism

__all__ = ["load", "from_urdf", "robot_names"]


def robot_names() -> list[str]:
    """Names accepted by :func:`load` (every robot example-robot-data ships)."""
    from example_robot_data.robots_loader import ROBOTS

    return sorted(ROBOTS)


def load(name: str) -> Mechanism:
    """A robot of example-robot-data (``"talos"``, ``"ur5"``, ``"panda"``, ``"solo12"``, ...).

    Raises UnknownNameError (listing the valid names) for an unknown robot and
    ModelError when its files cannot be loaded.
    """
    import example_robot_data

    names = robot_names()
    if name not in names:
        raise UnknownNameError("robot", name, names, "example-robot-data")
    try:
        robot = example_robot_data.load(name)
    except Exception as e:  # the loaders raise plain exceptions with the file name
        raise ModelError(f"could not load robot {name!r} from example-robot-data: {e}") from e
    mech = Mechanism(robot.model, robot.collision_model, robot.visual_model, name=name)
    q0 = getattr(robot, "q0", None)
    if q0 is not None and len(q0) == mech.nq:
        mech.set_state(q0)
    return mech


def from_urdf(
    path: str | os.PathLike,
    package_dirs: Sequence[str] | str | None = None,
    free_flyer: bool = False,
    *,
    name: str | None = None,
) -> Mechanism:
    """A mechanism from a URDF file.

    Args:
        path: the URDF file.
        package_dirs: directories searched for ``package://`` meshes (default: the
            URDF's directory and its parent).
        free_flyer: give the robot a floating base (joint ``root_joint``, unactuated).
        name: mechanism name (default: the URDF's robot name).

    Raises ModelError, with the path in the message, if the file is missing or is
    not a valid URDF (or its meshes cannot be found).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ModelError(f"from_urdf: expected the path of a URDF file (str or os.PathLike), got {path!r}")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ModelError(f"URDF file not found: {path!r}")
    if package_dirs is None:
        here = os.path.dirname(os.path.abspath(path))
        package_dirs = [here, os.path.dirname(here)]
    elif isinstance(package_dirs, (str, os.PathLike)):
        package_dirs = [os.fspath(package_dirs)]
    else:
        package_dirs = [os.fspath(p) for p in package_dirs]
    try:
        if free_flyer:
            model, collision, visual = pin.buildModelsFromUrdf(path, package_dirs, pin.JointModelFreeFlyer())
        else:
            model, collision, visual = pin.buildModelsFromUrdf(path, package_dirs)
    except Exception as e:  # pinocchio raises ValueError/RuntimeError with the parser's message
        raise ModelError(f"could not load URDF {path!r}: {e}".strip()) from e
    return Mechanism(model, collision, visual, name=name or model.name or os.path.basename(path))
