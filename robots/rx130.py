"""A 6R industrial robot standing in for the Stäubli RX130L of the locking paper (seed 002, Sec. 7).

The paper says only that "all geometric and inertia parameters were identified and used";
it publishes none of them, only the structure (a 6R serial robot: a positioning chain of
three revolute joints and a spherical wrist), the reference configuration q = 0 (Fig. 5),
the gear ratio (100, motor angles and rates = 100 x the joint's) and the lock times. This
model keeps that structure with **stand-in values chosen here** (of the RX130's size class):

====================  =======================================================================
joint (axis)          body after it: mass (kg), centre of mass (m, in the joint frame), size (m)
====================  =======================================================================
``joint_1`` (z)       column: 60, (0, 0, 0.275), 0.35 x 0.35 x 0.55
``joint_2`` (y)       upper arm, 0.55 m above joint 1: 40, (0.3125, 0.2, 0), 0.625 x 0.15 x 0.2
``joint_3`` (y)       forearm, 0.625 m along the upper arm: 25, (0.22, 0.1, 0), 0.45 x 0.15 x 0.15
``joint_4`` (x)       forearm roll, 0.45 m further: 8, (0.2, 0, 0), 0.4 x 0.12 x 0.12
``joint_5`` (y)       wrist, 0.4 m further (wrist centre 0.85 m from joint 3): 3, (0.05, 0, 0)
``joint_6`` (x)       flange, 0.11 m further: 1, (0.02, 0, 0)
====================  =======================================================================

The upper arm and forearm run beside the column (centres of mass 0.2 and 0.1 m off the plane
of joint 1's axis), so the arm's swing drives joint 1 through the mass matrix. At q = 0 the arm is stretched
out horizontally along x; released there, gravity swings it down.

Drives: gear ratio ``N = 100``; each motor's rotor inertia ``J_m`` (kg m^2, motor side: 2.4e-4
for joints 1-3, 6e-5 for 4-6) turns at ``N q'``, so it adds ``N^2 J_m`` to the joint's diagonal
mass (Pinocchio's ``armature``: 2.4 and 0.6 kg m^2). Motor angles and rates are ``N q`` and
``N q'``; the generalized momentum on the motor side is ``p / N``.
"""
from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin

from controlkit.mechanism import Mechanism

from .builder import BuiltMechanism

__all__ = ["rx130", "GEAR_RATIO", "MOTOR_INERTIA"]

GEAR_RATIO = 100.0
MOTOR_INERTIA = np.array([2.4e-4, 2.4e-4, 2.4e-4, 6e-5, 6e-5, 6e-5])  # kg m^2, motor side

# (joint axis, joint placement in the parent joint frame (m), mass (kg), com (m), box size (m))
_LINKS = (
    ("z", (0.0, 0.0, 0.0), 60.0, (0.0, 0.0, 0.275), (0.35, 0.35, 0.55)),
    ("y", (0.0, 0.0, 0.55), 40.0, (0.3125, 0.2, 0.0), (0.625, 0.15, 0.2)),
    ("y", (0.625, 0.0, 0.0), 25.0, (0.22, 0.1, 0.0), (0.45, 0.15, 0.15)),
    ("x", (0.45, 0.0, 0.0), 8.0, (0.2, 0.0, 0.0), (0.4, 0.12, 0.12)),
    ("y", (0.4, 0.0, 0.0), 3.0, (0.05, 0.0, 0.0), (0.1, 0.1, 0.1)),
    ("x", (0.11, 0.0, 0.0), 1.0, (0.02, 0.0, 0.0), (0.04, 0.1, 0.1)),
)
_JOINTS = {"x": pin.JointModelRX, "y": pin.JointModelRY, "z": pin.JointModelRZ}


def rx130(gear_ratio: float = GEAR_RATIO, motor_inertia=MOTOR_INERTIA, *, actuated: bool = False) -> BuiltMechanism:
    """The stand-in RX130L (see the module docstring), at q = 0 and at rest.

    Args:
        gear_ratio: N, motor angle per joint angle.
        motor_inertia: rotor inertias J_m (6,), kg m^2 on the motor side (0 for none).
        actuated: declare the six joints actuated (passive by default: the paper's robot is
            released with its drives off).

    ``info``: ``gear_ratio``, ``motor_inertia``, ``armature`` (N^2 J_m, kg m^2), ``joints``.
    """
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, 0.0, -9.81]), np.zeros(3))
    geom = pin.GeometryModel()
    parent = 0
    joints = []
    for i, (axis, place, mass, com, size) in enumerate(_LINKS, start=1):
        name = f"joint_{i}"
        j = model.addJoint(parent, _JOINTS[axis](), pin.SE3(np.eye(3), np.array(place)), name)
        com = np.array(com)
        lx, ly, lz = size
        I = mass / 12.0 * np.diag([ly**2 + lz**2, lx**2 + lz**2, lx**2 + ly**2])
        model.appendBodyToJoint(j, pin.Inertia(mass, com, I), pin.SE3.Identity())
        model.addBodyFrame(f"link_{i}", j, pin.SE3.Identity(), model.addJointFrame(j))
        go = pin.GeometryObject(f"link_{i}", j, pin.SE3(np.eye(3), com), coal.Box(*size))
        go.meshColor = np.array([0.9, 0.6, 0.1, 1.0]) if i % 2 else np.array([0.5, 0.5, 0.55, 1.0])
        geom.addGeometryObject(go)
        joints.append(name)
        parent = j
    model.addFrame(pin.Frame("flange", parent, model.getFrameId("link_6"), pin.SE3(np.eye(3), np.array([0.04, 0, 0])),
                             pin.FrameType.OP_FRAME))
    Jm = np.broadcast_to(np.asarray(motor_inertia, dtype=float), (6,)).copy()
    model.armature[:] = gear_ratio**2 * Jm
    mech = Mechanism(model, pin.GeometryModel(), geom, name="rx130", actuated=joints if actuated else [])
    q0, v0 = np.zeros(6), np.zeros(6)
    mech.set_state(q0, v0)
    info = {"gear_ratio": float(gear_ratio), "motor_inertia": Jm, "armature": model.armature.copy(), "joints": joints}
    return BuiltMechanism(mech, q0, v0, info)
