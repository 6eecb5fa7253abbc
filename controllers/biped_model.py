"""What the walking controller needs to know of a biped: a few names, the rest read from its model.

:class:`Biped` describes any humanoid :class:`~controlkit.mechanism.Mechanism` (a URDF robot or
a definition-language model) for :mod:`controllers.walking_fd`: per side its sole (a frame whose
local -z face is the sole, and the sole's rectangle, read from a box in the collision model), its
heel (the sole's rear edge centre unless given), the leg joints, and the torso frame held
upright. Mass, leg length, torque limits and the sole geometry are read from the model, so the
walking code holds no constant of one robot. :func:`thesis_biped` and :func:`talos_biped` are the
descriptions of the two bipeds shipped (:func:`robots.biped`, :func:`robots.talos.talos`).

Units: m, kg, N m, rad.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from controlkit.errors import ModelError

__all__ = ["Foot", "Biped", "thesis_biped", "talos_biped"]


@dataclass
class Foot:
    """One foot of a :class:`Biped` (side ``"l"`` or ``"r"``).

    Attributes:
        frame: the sole frame: its local -z face is the sole (its x forward, z up when flat).
        geom: the sole's collision geometry (a box): what the simulation's contacts watch.
        half_length, half_width: the sole rectangle's half sizes along the frame's x and y (m).
        depth: the sole's centre lies ``depth`` below the frame origin along -z (m).
        heel: the heel point's frame and its offset in that frame (3,) (m).
        hip: a frame at the hip (the footsteps' width is the hips' distance).
        corners: the sole's four corners in the sole frame (3, 4) (m).
    """

    side: str
    frame: str
    geom: str
    half_length: float
    half_width: float
    depth: float
    heel: tuple
    hip: str
    corners: np.ndarray = field(repr=False, default=None)

    def __post_init__(self):
        a, b = self.half_length, self.half_width
        self.corners = np.array([[sx * a, sy * b, -self.depth] for sx in (1, -1) for sy in (1, -1)]).T
        s = self.side
        # the walking program's statement names
        self.heel_traj, self.orientation_task = f"{s}-heel-traj", f"{s}-foot-orientation"

    def contact(self, mu: float) -> dict:
        """The :class:`~controllers.whole_body.FootContact` arguments of this foot planted."""
        return dict(frame=self.frame, half_length=self.half_length, half_width=self.half_width,
                    sole_depth=self.depth, mu=mu)


@dataclass
class Biped:
    """A humanoid as the walking controller sees it.

    Attributes:
        feet: ``{"l": Foot, "r": Foot}``.
        torso: the frame held upright (the floating base or the trunk).
        legs: ``{"l": [joint names], "r": [...]}`` hip to ankle.
        held: joints held at fixed angles by an equation, not a cost: ``{joint: angle}`` (rad)
            (the thesis biped's toe joints, note 6 of :mod:`controllers.walking_fd`).
        mass: total mass of the moving bodies (kg); leg_length: hip joint to sole, legs straight (m).
        torque_limits: |tau| bound per actuated degree of freedom (ntau,) (N m).
        name: the robot's name.
    """

    feet: dict
    torso: str
    legs: dict
    held: dict
    mass: float
    leg_length: float
    torque_limits: np.ndarray
    name: str = "biped"

    @classmethod
    def from_model(cls, mech, *, soles: dict, torso: str, legs: dict, sole_geoms: dict | None = None,
                   heels: dict | None = None, hips: dict | None = None, held: dict | None = None,
                   torque_limit: float | None = None) -> "Biped":
        """A biped from its model and a few names.

        Args:
            mech: the robot's :class:`~controlkit.mechanism.Mechanism`.
            soles: ``{"l": frame, "r": frame}``: each sole frame (x forward, the sole its -z face).
            torso: the frame held upright; legs: ``{"l": [hip ... ankle joint names], "r": ...}``.
            sole_geoms: each sole's box in the collision model (default: named as its frame).
                Its faces must be parallel to the frame's and its bottom face centred under the
                frame origin: the rectangle and depth are read from it.
            heels: ``{side: frame}`` or ``{side: (frame, offset (3,))}``; default the sole's rear
                edge centre. hips: ``{side: frame}``; default the legs' first joints' frames.
            held: ``{joint: angle}`` (rad) held by an equation.
            torque_limit: |tau| bound (N m) for joints whose model has no finite effort limit
                (a URDF's ``effort``); required if there is any.
        Raises ModelError naming what is missing or inconsistent.
        """
        model = mech.model
        sole_geoms = sole_geoms or dict(soles)
        feet = {}
        for side, frame in soles.items():
            if not model.existFrame(frame):
                raise ModelError(f"Biped {mech.name!r}: no sole frame {frame!r} (side {side!r}) in the model")
            a, b, depth = _sole_box(mech, frame, sole_geoms[side])
            if heels is None:
                heel = (frame, np.array([-a, 0.0, -depth]))
            else:
                heel = heels[side] if isinstance(heels[side], tuple) else (heels[side], None)
            hip = hips[side] if hips else _joint_frame(mech, legs[side][0])
            feet[side] = Foot(side, frame, sole_geoms[side], a, b, depth, heel, hip)
        for joints in legs.values():
            for j in joints:
                mech.joint_id(j)  # raises UnknownNameError listing the joints
        effort = np.asarray(model.effortLimit, dtype=float)[6 if _floating(model) else 0:]
        limits = effort.copy()
        unbounded = ~(np.isfinite(limits) & (limits > 0) & (limits < 1e300))
        if unbounded.any():
            if torque_limit is None:
                raise ModelError(f"Biped {mech.name!r}: {int(unbounded.sum())} joints have no effort limit in "
                                 "the model; give torque_limit= (N m)")
            limits[unbounded] = torque_limit
        return cls(feet, torso, {s: list(j) for s, j in legs.items()}, dict(held or {}),
                   float(pin.computeTotalMass(model)), _leg_length(mech, legs, soles), limits, mech.name)

    def heel_point(self, side: str) -> tuple:
        """``(frame, offset or None)`` of a heel, as :class:`~controlkit.quantities.FramePoint` takes them."""
        return self.feet[side].heel


def _floating(model) -> bool:
    return model.njoints > 1 and model.joints[1].shortname() == "JointModelFreeFlyer"


def _joint_frame(mech, joint: str) -> str:
    """A frame on a joint: the body frame the joint moves (a URDF's child link), else the joint's own."""
    model = mech.model
    jid = mech.joint_id(joint)
    for f in model.frames:
        if f.parentJoint == jid and f.type == pin.FrameType.BODY:
            return f.name
    return joint


def _sole_box(mech, frame: str, geom_name: str) -> tuple:
    """(half length, half width, depth) of a sole box under a frame (m)."""
    import coal
    model = mech.model
    geom = next((g for g in mech.collision_model.geometryObjects if g.name == geom_name), None)
    if geom is None:
        raise ModelError(f"Biped {mech.name!r}: no collision geometry {geom_name!r} for the sole of {frame!r} "
                         "(give sole_geoms=, or add a box: robots.talos adds the Talos soles)")
    if not isinstance(geom.geometry, coal.Box):
        raise ModelError(f"Biped {mech.name!r}: the sole {geom_name!r} is a {type(geom.geometry).__name__}; "
                         "the walking controller needs a box (its bottom face is the sole)")
    f = model.frames[model.getFrameId(frame)]
    if f.parentJoint != geom.parentJoint:
        raise ModelError(f"Biped {mech.name!r}: sole frame {frame!r} and geometry {geom_name!r} are on different joints")
    rel = f.placement.actInv(geom.placement)  # the box in the sole frame
    hx, hy, hz = np.asarray(geom.geometry.halfSide, dtype=float)
    bottom = rel.translation - hz * rel.rotation[:, 2]
    if not np.allclose(rel.rotation, np.eye(3), atol=1e-9) or abs(bottom[0]) > 1e-9 or abs(bottom[1]) > 1e-9:
        raise ModelError(f"Biped {mech.name!r}: the sole box {geom_name!r} must be aligned with {frame!r} and its "
                         f"bottom face centred under the frame origin (it is at {bottom.tolist()} in the frame)")
    depth = float(-bottom[2])
    return float(hx), float(hy), depth if abs(depth) > 1e-12 else 0.0


def _leg_length(mech, legs: dict, soles: dict) -> float:
    """Hip joint to sole (m), the legs straight (the model's neutral configuration), the longer leg."""
    model = mech.model
    data = model.createData()
    pin.framesForwardKinematics(model, data, pin.neutral(model))
    out = 0.0
    for side, joints in legs.items():
        hip = data.oMi[mech.joint_id(joints[0])].translation
        sole = data.oMf[model.getFrameId(soles[side])].translation
        out = max(out, float(np.linalg.norm(hip - sole)))
    return out


def thesis_biped(built, toe_up: float = math.radians(5.0)) -> Biped:
    """The thesis biped (:func:`robots.biped`): soles ``foot_l``/``foot_r`` (the rear foot boxes),
    heels ``foot_l.heel``, torso ``torso``; its toe joints held ``toe_up`` (rad; note 6 of
    :mod:`controllers.walking_fd`); 300 N m per joint (the model has no effort limits)."""
    mech = built.mechanism
    return Biped.from_model(
        mech, soles={"l": "foot_l", "r": "foot_r"}, torso="torso",
        legs={s: [f"hip_{s}", f"knee_{s}", f"ankle_{s}"] for s in "lr"},
        heels={s: f"foot_{s}.heel" for s in "lr"}, hips={s: f"torso.hip_{s}" for s in "lr"},
        held={f"toe_joint_{s}": toe_up for s in "lr"}, torque_limit=300.0)


def talos_biped(mech) -> Biped:
    """PAL's Talos (:func:`robots.talos.talos`, with its sole boxes): soles ``left_sole_link`` /
    ``right_sole_link``, legs ``leg_*_1..6_joint``, the floating base ``base_link`` held upright;
    torque limits the URDF's efforts."""
    sides = {"l": "left", "r": "right"}
    return Biped.from_model(
        mech, soles={s: f"{n}_sole_link" for s, n in sides.items()}, torso="base_link",
        legs={s: [f"leg_{n}_{k}_joint" for k in range(1, 7)] for s, n in sides.items()},
        sole_geoms={s: f"{n}_sole" for s, n in sides.items()})
