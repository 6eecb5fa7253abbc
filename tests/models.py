"""Small Pinocchio models built directly, for tests that must not depend on robots/."""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from controlkit.mechanism import Mechanism


def lifted_block(mass: float = 2.0) -> Mechanism:
    """A block on a vertical prismatic joint (the thesis' section 6.3.1 block), actuated."""
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelPZ(), pin.SE3.Identity(), "lift")
    model.appendBodyToJoint(j, pin.Inertia(mass, np.zeros(3), np.eye(3) * 0.1), pin.SE3.Identity())
    model.addFrame(pin.Frame("block", j, 0, pin.SE3.Identity(), pin.FrameType.BODY))
    return Mechanism(model, name="block")


def pendulum(n: int = 1, length: float = 1.0, mass: float = 1.0, actuated: bool = True) -> Mechanism:
    """A planar chain of n revolute (y axis) links of uniform rods hanging along -z."""
    model = pin.Model()
    parent = 0
    for i in range(n):
        placement = pin.SE3(np.eye(3), np.array([0.0, 0.0, -length if i else 0.0]))
        j = model.addJoint(parent, pin.JointModelRY(), placement, f"j{i}")
        inertia = pin.Inertia(mass, np.array([0, 0, -length / 2]), np.diag([mass * length**2 / 12] * 2 + [1e-6]))
        model.appendBodyToJoint(j, inertia, pin.SE3.Identity())
        model.addFrame(pin.Frame(f"l{i}", j, 0, pin.SE3.Identity(), pin.FrameType.BODY))
        model.addFrame(pin.Frame(f"l{i}.tip", j, 0, pin.SE3(np.eye(3), np.array([0, 0, -length])), pin.FrameType.OP_FRAME))
        parent = j
    names = [f"j{i}" for i in range(n)]
    return Mechanism(model, name=f"pendulum{n}", actuated=names if actuated else [])


def free_ball(mass: float = 1.0, actuated: bool = False) -> Mechanism:
    """A free-flying ball (no collision geometry); ``actuated`` puts a thruster on all 6 dof."""
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root")
    model.appendBodyToJoint(j, pin.Inertia.FromSphere(mass, 0.1), pin.SE3.Identity())
    model.addFrame(pin.Frame("ball", j, 0, pin.SE3.Identity(), pin.FrameType.BODY))
    return Mechanism(model, name="ball", actuated=["root"] if actuated else [])
