"""The tailed biped of seed 001 (Fig. 1): a planar body with two legs and a tail.

The paper leaves the robot's dimensions open; the values chosen here (a small robot, RHex/IMPASS
scale) are:

=============  ==========================================================================
body           box 0.40 x 0.10 x 0.08 m, 4.0 kg, centre at the base; moves in x-z, pitches about y
legs           ``leg_1``, ``leg_2``: rods 0.30 m, 0.30 kg each, on hips ``hip_1``, ``hip_2``
               at the body's centre 0.04 m below it; a foot sphere (radius 0.02 m) at the end
tail           ``tail``: rod 0.45 m, 0.25 kg, on hinge ``tail_joint`` at the body's rear end
               (x = -0.20 m); a tip sphere (radius 0.02 m) at the end
joint angles   hips: 0 = leg straight down, positive swings the foot forward (+x);
               tail: 0 = tail straight back (-x), positive lowers the tip
ground         half-space z <= 0; friction at feet and tail tip (Coulomb, chosen mu = 0.8)
=============  ==========================================================================

All hinges turn about -y (so positive angles swing a foot forward and the tail tip down) and are
actuated (hip torques, tail torque). Coordinates q = (x, y, z, yaw, pitch, hip_1, hip_2, tail_joint)
(m, rad); pitch is positive nose-up (about -y as the hinges). The base's sideways slide y and yaw
(motions nothing excites: the robot stays in the x-z plane) are there so the 3-D contact model's rows
(two tangential directions per point) are independent rather than zero or repeated.
"""
from __future__ import annotations

import math

import coal
import numpy as np
import pinocchio as pin

from controlkit.errors import ModelError
from controlkit.mechanism import Mechanism

from .builder import BuiltMechanism

BODY = (0.40, 0.10, 0.08)  # m
BODY_MASS = 4.0  # kg
LEG_LENGTH, LEG_MASS = 0.30, 0.30  # m, kg
TAIL_LENGTH, TAIL_MASS = 0.45, 0.25  # m, kg
TIP_RADIUS = 0.02  # m
HIP = np.array([0.0, 0.0, -0.04])  # m, body frame
TAIL_BASE = np.array([-0.20, 0.0, 0.0])  # m, body frame
FRICTION = 0.8

__all__ = ["tailed_biped", "stance_pose", "BODY", "LEG_LENGTH", "TAIL_LENGTH", "TIP_RADIUS", "FRICTION"]

# the pitch hinge's frame: turned by pi/2 about x, so its z is world -y (every hinge's axis) and its y is world z
_DOWN_Y = pin.SE3(pin.utils.rpyToMatrix(math.pi / 2, 0.0, 0.0), np.zeros(3))


def _rod(mass: float, length: float, direction: np.ndarray) -> pin.Inertia:
    """Uniform thin rod from the joint along ``direction`` (unit, joint frame)."""
    c = 0.5 * length * direction
    i_perp = mass * length ** 2 / 12.0
    inertia = i_perp * (np.eye(3) - np.outer(direction, direction)) + 1e-6 * np.eye(3)
    return pin.Inertia(mass, c, inertia)


def tailed_biped(name: str = "tailed_biped") -> Mechanism:
    """The planar tailed biped (see the module's table); geometries ``foot_1``, ``foot_2``, ``tail_tip``,
    ``body``, ``ground``; frames of the same names at the spheres' centres."""
    model = pin.Model()
    gm = pin.GeometryModel()
    jx = model.addJoint(0, pin.JointModelPX(), pin.SE3.Identity(), "base_x")
    model.appendBodyToJoint(jx, pin.Inertia.Zero(), pin.SE3.Identity())
    jy = model.addJoint(jx, pin.JointModelPY(), pin.SE3.Identity(), "base_y")
    model.appendBodyToJoint(jy, pin.Inertia.Zero(), pin.SE3.Identity())
    jz = model.addJoint(jy, pin.JointModelPZ(), pin.SE3.Identity(), "base_z")
    model.appendBodyToJoint(jz, pin.Inertia.Zero(), pin.SE3.Identity())
    jz = model.addJoint(jz, pin.JointModelRZ(), pin.SE3.Identity(), "base_yaw")
    model.appendBodyToJoint(jz, pin.Inertia.Zero(), pin.SE3.Identity())
    # hinges about -y: joint frames rotated by pi about x (their z is world -y, their y is world -z)
    jb = model.addJoint(jz, pin.JointModelRZ(), _DOWN_Y, "pitch")
    bx, by, bz = BODY
    # in the body's (pitch hinge's) frame: x = world x, y = world z, z = world -y
    model.appendBodyToJoint(jb, pin.Inertia(BODY_MASS, np.zeros(3), np.diag([
        BODY_MASS * (bz ** 2 + by ** 2) / 12, BODY_MASS * (bx ** 2 + by ** 2) / 12, BODY_MASS * (bx ** 2 + bz ** 2) / 12])),
        pin.SE3.Identity())
    fb = model.addBodyFrame("body", jb, pin.SE3.Identity(), 0)
    gb = pin.GeometryObject("body", jb, fb, pin.SE3.Identity(), coal.Box(bx, bz, by))
    gm.addGeometryObject(gb)
    down = np.array([0.0, -1.0, 0.0])  # world -z in the body's frame
    back = np.array([-1.0, 0.0, 0.0])
    hip_place = pin.SE3(np.eye(3), np.array([HIP[0], HIP[2], -HIP[1]]))
    for i in (1, 2):
        j = model.addJoint(jb, pin.JointModelRZ(), hip_place, f"hip_{i}")
        model.appendBodyToJoint(j, _rod(LEG_MASS, LEG_LENGTH, down), pin.SE3.Identity())
        f = model.addBodyFrame(f"foot_{i}", j, pin.SE3(np.eye(3), LEG_LENGTH * down), 0)
        gm.addGeometryObject(pin.GeometryObject(f"foot_{i}", j, f, pin.SE3(np.eye(3), LEG_LENGTH * down),
                                                coal.Sphere(TIP_RADIUS)))
    tail_place = pin.SE3(np.eye(3), np.array([TAIL_BASE[0], TAIL_BASE[2], -TAIL_BASE[1]]))
    j = model.addJoint(jb, pin.JointModelRZ(), tail_place, "tail_joint")
    model.appendBodyToJoint(j, _rod(TAIL_MASS, TAIL_LENGTH, back), pin.SE3.Identity())
    f = model.addBodyFrame("tail_tip", j, pin.SE3(np.eye(3), TAIL_LENGTH * back), 0)
    gm.addGeometryObject(pin.GeometryObject("tail_tip", j, f, pin.SE3(np.eye(3), TAIL_LENGTH * back),
                                            coal.Sphere(TIP_RADIUS)))
    gm.addGeometryObject(pin.GeometryObject("ground", 0, 0, pin.SE3.Identity(),
                                            coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)))
    for g in gm.geometryObjects:
        g.meshColor = np.array((0.35, 0.35, 0.4, 1.0) if g.name == "ground" else (0.8, 0.45, 0.15, 1.0))
    return Mechanism(model, gm, gm.copy(), name=name, actuated=["hip_1", "hip_2", "tail_joint"])


def _tip(angle: float, length: float, base: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """A rod's tip in the body's x-z plane (x, z), rod turned by ``angle`` about -y from ``rest``."""
    c, s = math.cos(angle), math.sin(angle)
    # rotation about -y by angle: x' = c x - s z ... (a positive angle swings -z towards +x)
    d = np.array([c * rest[0] - s * rest[1], s * rest[0] + c * rest[1]])
    return np.array([base[0], base[2]]) + length * d


def stance_pose(leg: float, tail: float, other_leg: float | None = None) -> np.ndarray:
    """The configuration (nq,) with foot 1 and the tail tip both on the ground (sphere centres at
    z = TIP_RADIUS), the hip at x = 0: the body pitch is what puts the two on one horizontal line.

    Args:
        leg: ``hip_1`` angle (rad); tail: ``tail_joint`` angle (rad); other_leg: ``hip_2`` (default: leg + 0.6,
            ahead and lifted).
    Raises ModelError when the pose puts the body or a foot below the ground.
    """
    f = _tip(leg, LEG_LENGTH, HIP, np.array([0.0, -1.0]))
    t = _tip(tail, TAIL_LENGTH, TAIL_BASE, np.array([-1.0, 0.0]))
    d = f - t  # from tail tip to foot, body frame (x, z)
    pitch = math.atan2(-d[1], d[0])  # the pitch (about -y) that levels the line tail tip -> foot
    c, s = math.cos(pitch), math.sin(pitch)
    R = np.array([[c, -s], [s, c]])  # body -> world in (x, z) for a rotation about -y
    fw = R @ f
    if not d[0] > 0:
        raise ModelError(f"stance_pose: the foot ({leg} rad) must be ahead of the tail tip ({tail} rad)")
    z = TIP_RADIUS - fw[1]
    q = np.array([-fw[0], 0.0, z, 0.0, pitch, leg, leg + 0.6 if other_leg is None else other_leg, tail])
    return q


def built(leg: float = 0.25, tail: float = 0.35) -> BuiltMechanism:
    """The robot standing on foot 1 and the tail tip (:func:`stance_pose`), at rest."""
    mech = tailed_biped()
    q0 = stance_pose(leg, tail)
    v0 = np.zeros(mech.nv)
    mech.set_state(q0, v0)
    return BuiltMechanism(mech, q0, v0, {"friction": FRICTION})
