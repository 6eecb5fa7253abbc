"""The thesis' walking program (section 6.6.2, Fig. 6.7-6.9) by inverse dynamic control.

Read it next to Fig. 6.9. The cycle has six phases — swing the right leg, land
the right foot, lift the left foot, swing the left leg, land the left foot, lift the
right foot — written once for a ``swing`` and a ``stance`` leg that trade places.
Each phase adds the thesis' control equations (Fig. 6.4) and waits with ``until``
for the condition that ends it; the simulator isolates that moment as a control
event. A quadratic cost (Fig. 6.8) fixes what the equations leave free.

Feet are held as in the thesis ("magnetic shoes"): a planted foot, or its toe
segment during take-off, is welded to the ground until the program releases it.
At heel strike the heel is pinned and the foot turned flat before it is welded
(a small concurrent program, ``plant_foot``), because the thesis' strike
orientation lands the foot toes-up.

Coordinates: x forward, y left, z up (the thesis has y up; its lateral axis
(0 0 1) is our y). Thesis joint angles count 180 deg as a straight knee; ours count
flexion from straight: 175 deg is 5 deg of flexion, 160 deg is 20 deg.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from controlkit.expressions import acc
from controllers.primitives import Quintic, orient_with_pd, rotation, set_angle_with_pd, track

# ---------------------------------------------------------------- Fig. 6.7
TIME_IN_AIR = 0.5                          # s
STRIDE = 0.5                               # m
DIRECTION = np.array([1.0, 0.0, 0.0])      # walking direction
INSIDE_STEP_FRACTION = 0.20                # of the hip-to-hip vector
HEEL_VERTICAL_STRIKE_SPEED = -0.05         # m/s (the thesis' heel-Y strike speed)
HEEL_FORWARD_STRIKE_SPEED = 0.02           # m/s (heel-X strike speed, along DIRECTION)
FOOT_STRIKE_ORIENTATION = rotation(-10.0, (0, 1, 0))  # 10 deg about the lateral axis: toes up
TORSO_ORIENTATION = rotation(10.0, (0, 1, 0))         # 10 deg about the lateral axis: leaning forward
STANCE_KNEE = math.radians(5.0)            # the thesis' 175 deg
TAKEOFF_KNEE = math.radians(40.0)          # the thesis has 160 deg (20 of flexion); our legs need 40
TOE_STRAIGHT = 0.0                         # the thesis' 180 deg
TOE_LIFTED = math.radians(10.0)            # take-off ends when the toe joint passes this
CLOSE_TO_TARGET = 0.01                     # m
FLAT = math.radians(0.5)                   # a landing foot counts as flat within this
SWING_CLEARANCE = 0.06                     # m: heel lift at mid-swing (ours: the thesis' quintic
                                           # alone keeps a heel that starts on the ground on it)
# Fig. 6.8: the torso-centring term between the feet (gains garbled in the scan: ours)
CENTRING_WEIGHT, CENTRING_KP, CENTRING_KV = 20.0, 25.0, 10.0


@dataclass
class Leg:
    """The names belonging to one leg (side ``l`` or ``r``), and its statements' names."""

    side: str

    def __post_init__(self):
        s = self.side
        self.foot, self.toe_segment = f"foot_{s}", f"toe_{s}"
        self.heel, self.hip = f"foot_{s}.heel", f"torso.hip_{s}"
        self.knee, self.toe_joint = f"knee_{s}", f"toe_joint_{s}"
        self.heel_traj, self.foot_orientation = f"{s}-heel-traj", f"{s}-foot-orientation"
        self.knee_angle, self.toe_angle = f"{s}-knee-angle", f"{s}-toe-angle"
        self.shoe, self.toe_shoe, self.heel_pin = f"{s}-shoe", f"{s}-toe-shoe", f"{s}-heel-pin"


def position(ctl, frame: str) -> np.ndarray:
    """World position (m) of a frame now."""
    return ctl.value(ctl.point(frame))


def move_heel_to_target(ctl, leg: Leg, other: Leg) -> np.ndarray:
    """Fig. 6.7: a quintic for the swing heel to one stride past the other heel; returns the target."""
    hip_to_hip = position(ctl, leg.hip) - position(ctl, other.hip)
    target_x = position(ctl, other.heel) + STRIDE * DIRECTION + INSIDE_STEP_FRACTION * hip_to_hip
    target_x[2] = 0.0  # on the ground
    target_v = HEEL_VERTICAL_STRIKE_SPEED * np.array([0.0, 0.0, 1.0]) + HEEL_FORWARD_STRIKE_SPEED * DIRECTION
    heel = ctl.point(leg.heel)
    path = SwingPath(Quintic(ctl.value(heel), ctl.velocity(heel), target_x, target_v, ctl.t, TIME_IN_AIR))
    track(ctl, leg.heel_traj, heel, path, TIME_IN_AIR)
    return target_x


class SwingPath:
    """The heel's quintic plus a lift of SWING_CLEARANCE at mid-swing (zero at both ends, with its rates)."""

    def __init__(self, quintic: Quintic):
        self.q = quintic

    def __call__(self, t: float):
        p, v, a = self.q(t)
        T = self.q.dt
        s = min(max((t - self.q.t0) / T, 0.0), 1.0)
        h = 16.0 * SWING_CLEARANCE  # 16 s^2 (1 - s)^2 peaks at 1 for s = 1/2
        bump = h * s * s * (1 - s) ** 2
        dbump = h * (2 * s - 6 * s**2 + 4 * s**3) / T
        ddbump = h * (2 - 12 * s + 12 * s**2) / T**2 if 0.0 < s < 1.0 else 0.0
        e = np.array([0.0, 0.0, 1.0])
        return p + bump * e, v + dbump * e, a + ddbump * e


def initialize(ctl, bodies: list[str]) -> None:
    """Fig. 6.8: the quadratic cost — every body's accelerations, plus the torso kept between the feet."""
    for b in bodies:
        ctl.add_cost(f"{b} acceleration", acc(ctl.point(b)))
        ctl.add_cost(f"{b} angular acceleration", acc(ctl.orientation(b)))
    torso, lf, rf = ctl.point("torso"), ctl.point("foot_l"), ctl.point("foot_r")
    horizontal = np.array([[1.0, 0, 0], [0, 1.0, 0]])

    def between_feet(t):
        mid = 0.5 * (ctl.value(lf) + ctl.value(rf)) - ctl.value(torso)
        mid_v = 0.5 * (ctl.velocity(lf) + ctl.velocity(rf)) - ctl.velocity(torso)
        return horizontal @ (CENTRING_KP * mid + CENTRING_KV * mid_v)

    ctl.add_cost("torso centring", horizontal @ acc(torso) - between_feet, CENTRING_WEIGHT)


def plant_foot(leg: Leg):
    """A program: pin the heel where it touched, turn the foot flat, then weld it (the magnetic shoe)."""

    def program(ctl):
        ctl.remove(leg.foot_orientation)  # the strike orientation
        ctl.weld(leg.heel_pin, leg.heel, kind="point")
        orient_with_pd(ctl, leg.foot_orientation, leg.foot, np.eye(3), 0.15)
        yield ctl.until(lambda: foot_tilt(ctl, leg) < FLAT, label=f"{leg.foot} flat")
        ctl.remove(leg.foot_orientation, leg.toe_angle)
        ctl.release(leg.heel_pin)
        put_on_shoe(ctl, leg)

    program.__name__ = f"plant_{leg.foot}"
    return program


def put_on_shoe(ctl, leg: Leg) -> None:
    """Weld the foot to the ground where it is, and hold its toe joint."""
    ctl.weld(leg.shoe, leg.foot)
    ctl.hold_angle(leg.toe_shoe, leg.toe_joint)


def take_off_shoe(ctl, leg: Leg) -> None:
    """Release both welds of a shoe."""
    ctl.release(leg.shoe)
    ctl.release(leg.toe_shoe)


def foot_tilt(ctl, leg: Leg) -> float:
    """Angle (rad) between the foot's sole and the ground."""
    R = ctl.value(ctl.orientation(leg.foot))
    return math.acos(min(1.0, R[2, 2]))


def heel_has_touched(ctl, leg: Leg) -> bool:
    """The heel reached the ground (z <= 0)."""
    return position(ctl, leg.heel)[2] <= 0.0


def stiffen(ctl, leg: Leg, flexion: float, dt: float) -> None:
    """set-angle-with-PD on a knee, replacing the knee's previous PD (rad, s)."""
    if ctl.has(leg.knee_angle):
        ctl.remove(leg.knee_angle)
    set_angle_with_pd(ctl, leg.knee_angle, leg.knee, flexion, dt, thesis_time_constant=True)


def walk(ctl, steps: int | None = None):
    """The walking program of Fig. 6.9; ``steps`` limits the number of steps (default: walk on)."""
    left, right = Leg("l"), Leg("r")
    put_on_shoe(ctl, left)
    put_on_shoe(ctl, right)
    initialize(ctl, ["torso", "thigh_l", "shank_l", "foot_l", "toe_l", "thigh_r", "shank_r", "foot_r", "toe_r"])
    # START
    orient_with_pd(ctl, "torso-constraint", "torso", TORSO_ORIENTATION, 2.0)
    take_off_shoe(ctl, right)
    swing, stance = right, left
    taken = 0
    while steps is None or taken < steps:
        # SWING
        target = move_heel_to_target(ctl, swing, stance)
        stiffen(ctl, stance, STANCE_KNEE, 0.1)
        orient_with_pd(ctl, swing.foot_orientation, swing.foot, FOOT_STRIKE_ORIENTATION, TIME_IN_AIR)
        set_angle_with_pd(ctl, swing.toe_angle, swing.toe_joint, TOE_STRAIGHT, TIME_IN_AIR)
        yield ctl.until(lambda: np.linalg.norm(position(ctl, swing.heel) - target) < CLOSE_TO_TARGET,
                        label=f"{swing.heel} near target")
        # LANDING: the leading leg is stiffened as the foot nears the ground
        ctl.remove(swing.heel_traj)
        stiffen(ctl, swing, ctl.value(ctl.angle(swing.knee))[0], 0.05)
        yield ctl.until(lambda: heel_has_touched(ctl, swing), label=f"{swing.heel} touched")
        ctl.log("heel strike", foot=swing.foot, target=target.tolist(), heel=position(ctl, swing.heel).tolist())
        taken += 1
        ctl.start(plant_foot(swing))
        # TAKEOFF of the stance leg: the heel lifts, the toes stay on the ground
        take_off_shoe(ctl, stance)
        ctl.weld(stance.toe_shoe, stance.toe_segment)
        stiffen(ctl, stance, TAKEOFF_KNEE, 0.1)
        yield ctl.until(lambda: ctl.value(ctl.angle(stance.toe_joint))[0] > TOE_LIFTED,
                        label=f"{stance.toe_joint} lifted")
        ctl.remove(stance.knee_angle)
        ctl.release(stance.toe_shoe)
        swing, stance = stance, swing
