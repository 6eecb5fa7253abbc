"""The 16-DOF biped of thesis Fig. 6.3 on a free-floating torso.

Returns a :class:`robots.builder.BuiltMechanism` (see :mod:`robots.seeds`).

Structure (thesis section 6.6.2): a torso, two legs with revolute knees, two feet
with revolute toe joints; hips and ankles spherical. Per leg 3 + 1 + 3 + 1 = 8 DOF,
16 in all, every one actuated; the torso's free-flyer ``root_joint`` is not.

Axes: x forward, y to the left, z up. Left parts carry ``_l`` (at +y), right ``_r``.

Dimensions and masses follow Winter's anthropometric tables (Biomechanics and Motor
Control of Human Movement, table 4.1) for a body of height H = 1.8 m and mass
M = 75 kg: segment lengths as fractions of H (ankle height .039, shank .246, thigh
.245, hip to shoulder .288, head and neck .182, foot length .152, foot width .055)
and mass fractions of M (trunk with arms .597, head and neck .081, thigh .100, shank
.0465, foot .0145, split 80/20 between ``foot`` and ``toe``). Segments are uniform
solids (cuboid torso and feet, cylinder thighs and shanks, sphere head welded to the
torso), so each COM is at mid-segment (Winter: .433 from the proximal end) and the
moments are those of the solids, close to Winter's radii of gyration.

Bodies: ``torso``, ``head`` (welded), ``thigh_l``, ``shank_l``, ``foot_l``, ``toe_l``
(and ``_r``). Joints: ``hip_l`` (spherical), ``knee_l`` (revolute about +y,
positive = flexion), ``ankle_l`` (spherical), ``toe_joint_l`` (revolute about -y,
positive = toes bent up relative to the foot, as when the heel lifts).
Features: ``torso.center`` (the COM, a tool-like point for the torso), ``torso.hip_l``
and ``thigh_l.hip`` (hip centres), ``thigh_l.knee``, ``shank_l.knee``,
``shank_l.ankle``, ``foot_l.ankle``, ``foot_l.heel`` (bottom of the heel),
``foot_l.toe`` (the ball of the foot: sole point under the toe joint),
``toe_l.base``, ``toe_l.tip`` (tip of the toes, on the sole).

q0 stands with both feet flat on z = 0 (heels and toe tips at z = 0), torso upright,
knees bent by ``knee_angle`` with each ankle directly below its hip (hips pitched by
alpha, ankles by knee_angle - alpha, ``tan alpha = L_s sin k / (L_t + L_s cos k)``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from controlkit.errors import ModelError

from .builder import BuiltMechanism
from .definition import Body, Scene
from .hinges import Revolute, Spherical, Weld
from .shapes import cuboid, cylinder, sphere

__all__ = ["biped", "BIPED_HEIGHT", "BIPED_MASS"]

BIPED_HEIGHT = 1.8
BIPED_MASS = 75.0

_SKIN = (0.85, 0.7, 0.6, 1.0)
_CLOTH = (0.3, 0.4, 0.6, 1.0)
_SHOE = (0.25, 0.2, 0.2, 1.0)


def _ry(angle: float) -> np.ndarray:
    return pin.exp3(np.array([0.0, angle, 0.0]))


@dataclass(frozen=True)
class _Dims:
    """Segment lengths (m) and masses (kg) of the biped from Winter's fractions of H and M."""

    H: float
    M: float

    @property
    def lengths(self) -> tuple[float, float, float, float, float]:
        """Ankle height, shank, thigh, trunk, head and neck (m)."""
        H = self.H
        return 0.039 * H, 0.246 * H, 0.245 * H, 0.288 * H, 0.182 * H

    @property
    def masses(self) -> tuple[float, float, float, float, float]:
        """Trunk, head, thigh, shank, foot (kg)."""
        M = self.M
        return 0.597 * M, 0.081 * M, 0.100 * M, 0.0465 * M, 0.0145 * M


def _add_leg(s: Scene, side: str, d: _Dims) -> None:
    """Add one leg (thigh, shank, foot, toe) under ``torso.hip_<side>``."""
    H = d.H
    ankle_h, L_s, L_t, _, _ = d.lengths
    _, _, m_thigh, m_shank, m_foot = d.masses
    foot_len, foot_w = 0.152 * H, 0.055 * H
    sole_t = 0.5 * ankle_h  # foot box thickness; the ankle point is above it
    rear_len, toe_len = 0.75 * foot_len, 0.25 * foot_len
    heel_to_ankle = 0.18 * foot_len
    thigh = Body(f"thigh_{side}", cylinder(0.042 * H, L_t), mass=m_thigh, features={"hip": (0, 0, L_t / 2), "knee": (0, 0, -L_t / 2)}, color=_CLOTH)
    shank = Body(f"shank_{side}", cylinder(0.028 * H, L_s), mass=m_shank, features={"knee": (0, 0, L_s / 2), "ankle": (0, 0, -L_s / 2)}, color=_SKIN)
    foot = Body(
        f"foot_{side}",
        cuboid(rear_len, foot_w, sole_t),
        mass=0.8 * m_foot,
        features={
            "ankle": (-rear_len / 2 + heel_to_ankle, 0.0, ankle_h - sole_t / 2),
            "heel": (-rear_len / 2, 0.0, -sole_t / 2),
            "toe": (rear_len / 2, 0.0, -sole_t / 2),
        },
        color=_SHOE,
    )
    toe_t = 0.6 * sole_t
    toe = Body(
        f"toe_{side}",
        cuboid(toe_len, foot_w, toe_t),
        mass=0.2 * m_foot,
        features={"base": (-toe_len / 2, 0.0, -toe_t / 2), "tip": (toe_len / 2, 0.0, -toe_t / 2)},
        color=_SHOE,
    )
    for b in (thigh, shank, foot, toe):
        s.add(b)
    s.join("torso", f"hip_{side}", thigh.name, "hip", Spherical(), name=f"hip_{side}")
    s.join(thigh.name, "knee", shank.name, "knee", Revolute((0, 1, 0)), name=f"knee_{side}")
    s.join(shank.name, "ankle", foot.name, "ankle", Spherical(), name=f"ankle_{side}")
    s.join(foot.name, "toe", toe.name, "base", Revolute((0, -1, 0)), name=f"toe_joint_{side}")


def biped(
    height: float = BIPED_HEIGHT,
    mass: float = BIPED_MASS,
    *,
    knee_angle: float = 0.2,
    with_ground: bool = False,
) -> BuiltMechanism:
    """The thesis biped (Fig. 6.3), standing with slightly bent knees.

    Args:
        height: standing height with straight legs (m); segments scale with it.
        mass: total mass (kg), distributed by Winter's fractions.
        knee_angle: knee flexion in q0 (rad), 0 for straight legs.
        with_ground: add a fixed ``ground`` (coal half-space, top at z = 0).

    ``info`` holds ``feet`` (``{"l": "foot_l", "r": "foot_r"}``), ``heels``,
    ``toe_tips``, ``hips`` (feature names), ``segment_lengths`` (m) and ``masses`` (kg).
    """
    if not (height > 0 and mass > 0):
        raise ModelError(f"biped: height (m) and mass (kg) must be positive, got {height!r}, {mass!r}")
    if not (0.0 <= knee_angle < math.pi / 2):
        raise ModelError(f"biped: knee_angle must be in [0, pi/2) rad, got {knee_angle!r}")
    d = _Dims(height, mass)
    H = d.H
    ankle_h, L_s, L_t, L_trunk, L_head = d.lengths
    m_trunk, m_head, m_thigh, m_shank, m_foot = d.masses
    hip_half = 0.05 * H  # hip joint centres 0.1 H apart
    torso_w, torso_d = 0.2 * H, 0.11 * H
    head_r = 0.061 * H

    k = knee_angle
    alpha = math.atan2(L_s * math.sin(k), L_t + L_s * math.cos(k))
    beta = k - alpha
    hip_z = ankle_h + L_s * math.cos(beta) + L_t * math.cos(alpha)  # sole -> ankle -> knee -> hip

    s = Scene("biped")
    torso = Body(
        "torso",
        cuboid(torso_d, torso_w, L_trunk),
        mass=m_trunk,
        features={
            "hip_l": (0.0, hip_half, -L_trunk / 2),
            "hip_r": (0.0, -hip_half, -L_trunk / 2),
            "neck": (0.0, 0.0, L_trunk / 2),
        },
        color=_CLOTH,
    )
    head = Body("head", sphere(head_r), mass=m_head, features={"neck": (0.0, 0.0, -(L_head - head_r))}, color=_SKIN)
    s.add(torso, (0.0, 0.0, hip_z + L_trunk / 2), joint_name="root_joint")
    s.add(head)
    s.join("torso", "neck", "head", "neck", Weld(), name="neck")
    for side in ("l", "r"):
        _add_leg(s, side, d)
    if with_ground:
        from .scenes import ground_body

        g, gpose = ground_body()
        s.add(g, gpose, fixed=True)

    initial = {}
    for side in ("l", "r"):
        initial[f"hip_{side}"] = _ry(-alpha)
        initial[f"knee_{side}"] = k
        initial[f"ankle_{side}"] = _ry(-beta)
    built = s.build(initial=initial)
    foot_len = 0.152 * H
    built.info.update(
        feet={"l": "foot_l", "r": "foot_r"},
        heels={"l": "foot_l.heel", "r": "foot_r.heel"},
        toe_tips={"l": "toe_l.tip", "r": "toe_r.tip"},
        hips={"l": "torso.hip_l", "r": "torso.hip_r"},
        segment_lengths={"thigh": L_t, "shank": L_s, "trunk": L_trunk, "head": L_head, "ankle_height": ankle_h, "foot": foot_len},
        masses={"torso": m_trunk, "head": m_head, "thigh": m_thigh, "shank": m_shank, "foot": 0.8 * m_foot, "toe": 0.2 * m_foot},
        knee_angle=k,
    )
    return built
