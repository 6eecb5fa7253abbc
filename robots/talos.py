"""PAL's Talos humanoid (example-robot-data) made ready to stand and walk on real contact.

:func:`talos` loads the full robot (``robots.load("talos")``: nq 39, nv 38, 90.3 kg, the URDF's
effort limits and rotor inertias) and replaces its collision model with what the contact
simulation handles: one box per sole (``left_sole`` / ``right_sole``, on the ankle links,
their bottom faces centred on the URDF's ``left_sole_link`` / ``right_sole_link`` frames) and,
with ``with_ground``, a half-space ``ground`` (top at z = 0). The URDF's collision meshes are
not kept: the simulated contacts are box or sphere on box or half-space, and a walker's other
links stay clear of the floor. The visual meshes are kept for the replay.

The initial configuration is example-robot-data's half-sitting pose with the ankle rolls at zero
(the pose rolls both soles by -0.0017 rad, one edge 0.2 mm above the other), lowered so that both
soles rest flat on z = 0.
"""
from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin

from controlkit.mechanism import Mechanism

from .builder import BuiltMechanism
from .urdf import load

__all__ = ["talos", "SOLE_HALF_LENGTH", "SOLE_HALF_WIDTH"]

#: the sole rectangle (m): inside the ankle link's collision mesh (x -0.116..0.105, y +-0.067
#: about the sole frame), as TSID's Talos examples take it
SOLE_HALF_LENGTH = 0.10
SOLE_HALF_WIDTH = 0.065
_SOLE_THICKNESS = 0.02


def talos(with_ground: bool = False) -> BuiltMechanism:
    """Talos with sole boxes (and a ground), standing half-sitting on z = 0.

    ``info``: ``soles`` (``{"l": "left_sole_link", "r": "right_sole_link"}``), ``sole_geoms``
    (``{"l": "left_sole", "r": "right_sole"}``), ``sole_half_size`` (m).
    """
    robot = load("talos")
    model = robot.model
    geoms = pin.GeometryModel()
    soles, names = {}, {}
    for side, word in (("l", "left"), ("r", "right")):
        frame = model.frames[model.getFrameId(f"{word}_sole_link")]
        box = coal.Box(2 * SOLE_HALF_LENGTH, 2 * SOLE_HALF_WIDTH, _SOLE_THICKNESS)
        up = pin.SE3(np.eye(3), np.array([0.0, 0.0, _SOLE_THICKNESS / 2]))
        obj = pin.GeometryObject(f"{word}_sole", frame.parentJoint, frame.placement * up, box)
        obj.meshColor = np.array([0.25, 0.2, 0.2, 1.0])
        geoms.addGeometryObject(obj)
        soles[side], names[side] = frame.name, obj.name
    if with_ground:
        ground = pin.GeometryObject("ground", 0, pin.SE3.Identity(), coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0))
        geoms.addGeometryObject(ground)
    mech = Mechanism(model, geoms, robot.visual_model, name="talos")
    q0 = robot.q.copy()
    for word in ("left", "right"):  # (half-sitting rolls both soles -0.0017 rad: level them)
        q0[model.idx_qs[model.getJointId(f"leg_{word}_6_joint")]] = 0.0
    data = model.createData()
    pin.framesForwardKinematics(model, data, q0)
    q0[2] -= min(data.oMf[model.getFrameId(f)].translation[2] for f in soles.values())
    v0 = np.zeros(model.nv)
    mech.set_state(q0, v0)
    info = {"soles": soles, "sole_geoms": names, "sole_half_size": (SOLE_HALF_LENGTH, SOLE_HALF_WIDTH)}
    return BuiltMechanism(mech, q0, v0, info)
