"""The thesis' walking program (section 6.6.2, Fig. 6.7-6.9) by inverse dynamic control.

Read it next to Fig. 6.9. The cycle has six phases — swing the right leg, land
the right foot, lift the left foot, swing the left leg, land the left foot, lift the
right foot — written once in :func:`walk` for a ``swing`` and a ``stance`` leg that
trade places after every step. Each phase adds the thesis' control equations
(Fig. 6.4) and waits with ``until`` for the condition that ends it; the simulator
isolates that moment as a control event. A quadratic cost (Fig. 6.8) fixes what the
equations leave free.

Feet are held as in the thesis ("magnetic shoes"): a planted foot, or its toe
segment during take-off, is welded to the ground by a constraint that the program
puts on and takes off explicitly.

Coordinates: x forward, y left, z up. The thesis has y up and its z axis to the
walker's right, so its rotation "10 deg about (0 0 1)" (toes up) is our rotation of
-10 deg about y. Thesis joint angles count 180 deg as a straight joint; ours count
flexion from straight: the thesis' 175 deg knee is our 5 deg.

Where we depart from the thesis, and why (each is marked "thesis:" or "ours" at its constant):

1. Inside step. The literal Fig. 6.7 target, other heel + 20% of the hip-to-hip
   vector, puts the feet 3.6 cm apart on our biped (hips 18 cm apart, feet 10 cm
   wide): they overlap, and the swing foot crosses over. We read the fraction as how
   far the foot steps inside its own hip line: other heel + (1 - 20%) x the sideways
   part of hip-to-hip (feet 14.4 cm apart).
2. Swing clearance. The quintic alone runs the heel from where it lifted straight to
   its target on the ground, so the toes would pass through the floor and the leg,
   reaching far and low, straightens its knee and folds it backwards. A lift of
   ``Gait.clearance`` (6 cm) at mid-swing (zero, with its rates, at both ends) is added.
3. Landing. The thesis stiffens the landing knee to 175 deg in 0.05 s; with the heel
   trajectory removed, that knee drives the heel into the ground at about 4 m/s on
   our legs. We hold the knee at the angle it has; the stance knee is straightened
   to 175 deg at the start of every swing (as the thesis' START does).
4. Heel strike. The thesis' shoes hold a touching foot level with forces and torques,
   without an impact. Our shoe grips the foot with a momentum-consistent (plastic)
   velocity jump — toe joint and foot held, so the light foot and toes do not whip
   about the free ankle — then lets it turn flat about the heel in ``TIME_TO_FLAT`` and
   welds it. On a heel alone the biped could not hold its torso (a point support
   leaves the torso's rotation about it free), so the trailing toes stay welded until
   the landed foot is flat: take-off ends when the toe joint has passed 10 deg *and*
   the other foot is flat.
5. Take-off. The thesis flexes the trailing knee to 160 deg (20 deg); on our legs the
   toe joint then never reaches 10 deg (nor at 25 deg). We flex it to ``TAKEOFF_KNEE``.
6. Cost. The torso-centring term of Fig. 6.8 acts on the horizontal (x, y) position:
   in 3D it would pull the torso down towards the feet. Its gains are garbled in the
   scan; ours (``CENTRING_KP``, ``CENTRING_KV``) are stiff enough for the torso to keep
   up with the feet (at 9 1/s^2 and 6 1/s it lags, and the swing leg falls out of reach).
7. Torso orientation. Fig. 6.7 gives the torso the same rotation as the striking foot,
   10 deg about the lateral axis, which taken literally leans it 10 deg backwards; we
   lean it forwards, as a walker does (``TORSO_ORIENTATION``).
8. Knee heading (``KNEE_FORWARD_TIME``). Spherical hips and ankles leave each leg free
   to swivel about its hip-ankle line. The thesis' cost minimizes accelerations, so it
   never damps a swivel once started (an impact starts one): a nearly straight stance
   leg then spins faster and faster about its axis. A PD keeps each knee's axis square
   to the walking direction (knee pointing forward), one equation per leg.
9. Time constants. The knee PDs use the thesis' T = -dt / ln 0.01; the orientation
   and toe PDs the library's default (1% from rest at dt, T = dt / 6.64): with the
   thesis' value the torso, jolted at every heel strike, yaws up to 13 deg.
10. No floor. As in the thesis, the feet meet the floor only through the shoes. Take-off
    starts while the body still sinks onto the landed leg, so for about 20 ms the
    trailing heel dips up to 3.5 mm below the floor before it rises. (A floor that
    pushes — a unilateral heel contact — would prevent it; a kinematic inequality on
    the heel's height, having no floor force, makes the actuators hold it up instead,
    with torques of 10^4 N m.)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from controlkit.expressions import acc, pos, vel
from controlkit.quantities import CachedQuantity, Quantity
from controllers.gait import Gait
from controllers.primitives import Quintic, orient_with_pd, pd_time_constant, rotation, set_angle_with_pd, track

__all__ = ["walk", "THESIS_GAIT", "Leg", "move_heel_to_target", "initialize", "BODIES", "KneeHeading", "BodyAccelerations"]

# ------------------------------------------------------------------ Fig. 6.7
#: the thesis' gait: 0.5 m in 0.5 s swings, heel strikes at 0.05 m/s down (its heel-Y speed: Y is up
#: there) and 0.02 m/s forward; inside step: thesis other heel + 20% of hip-to-hip, ours + (1 - 20%)
#: (note 1); clearance ours (note 2). Double support and centre-of-mass height are not this program's.
THESIS_GAIT = Gait(stride=0.5, step_time=0.5, clearance=0.06, inside_step_fraction=0.20,
                   strike_speed=-0.05, strike_forward_speed=0.02)
DIRECTION = np.array([1.0, 0.0, 0.0])      # walking direction
_DIRECTION = tuple(DIRECTION.tolist())     # (as floats, for the per-evaluation algebra)
LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
FOOT_STRIKE_ORIENTATION = rotation(-10.0, (0, 1, 0))  # 10 deg about the lateral axis: toes up
TORSO_ORIENTATION = rotation(10.0, (0, 1, 0))         # thesis: the same rotation as the foot (note 7): leaning forward

# ------------------------------------------------------------------ Fig. 6.9
STANCE_KNEE = math.radians(5.0)            # the thesis' 175 deg
TAKEOFF_KNEE = math.radians(40.0)          # thesis: 160 deg, 20 deg of flexion (note 5)
TOE_STRAIGHT = 0.0                         # the thesis' 180 deg
TOE_LIFTED = math.radians(10.0)            # take-off ends when the toe joint passes this
CLOSE_TO_TARGET = 0.01                     # m

# ------------------------------------------------------------------ ours
FLAT = math.radians(0.1)                   # a landing foot counts as flat within this (rad)
TIME_TO_FLAT = 0.05                        # s: the shoe turns a landing foot flat about its heel
CENTRING_WEIGHT = 20.0                     # Fig. 6.8's weight of the torso-centring term
CENTRING_KP, CENTRING_KV = 25.0, 10.0      # 1/s^2, 1/s (note 6)
KNEE_FORWARD_TIME = 0.1                    # s: PD keeping each knee pointing forward (note 8)

#: the bodies whose accelerations the cost of Fig. 6.8 keeps small
BODIES = ("torso", "thigh_l", "shank_l", "foot_l", "toe_l", "thigh_r", "shank_r", "foot_r", "toe_r")


@dataclass
class Leg:
    """The names belonging to one leg (side ``l`` or ``r``), and its statements' names."""

    side: str

    def __post_init__(self):
        s = self.side
        self.foot, self.toe_segment = f"foot_{s}", f"toe_{s}"
        self.heel, self.hip = f"foot_{s}.heel", f"torso.hip_{s}"
        self.knee, self.toe_joint = f"knee_{s}", f"toe_joint_{s}"
        # control equations (Fig. 6.4)
        self.heel_traj, self.foot_orientation = f"{s}-heel-traj", f"{s}-foot-orientation"
        self.knee_angle, self.toe_angle = f"{s}-knee-angle", f"{s}-toe-angle"
        # the magnetic shoe's constraints
        self.shoe, self.toe_shoe, self.heel_pin = f"{s}-shoe", f"{s}-toe-shoe", f"{s}-heel-pin"
        self.knee_forward = f"{s}-knee-forward"  # ours (note 8)


# ------------------------------------------------------------------ Fig. 6.9
def walk(ctl, steps: int | None = None, gait: Gait = THESIS_GAIT):
    """The walking program of Fig. 6.9, from standing on both feet.

    ``steps`` limits the number of steps (default: walk on); after the last one the
    biped stands on both feet and the program ends. ``gait``: stride, swing time, clearance
    and strike speeds (its double support, start and centre-of-mass height are not used here:
    the phases follow each other as Fig. 6.9 says).
    """
    left, right = Leg("l"), Leg("r")
    put_on_shoe(ctl, left)
    put_on_shoe(ctl, right)
    initialize(ctl)  # the cost of Fig. 6.8
    keep_knee_forward(ctl, left)  # note 8
    keep_knee_forward(ctl, right)
    # START
    orient_with_pd(ctl, "torso-constraint", "torso", TORSO_ORIENTATION, 2.0)
    take_off_shoe(ctl, right)
    swing, stance = right, left
    taken = 0
    while True:
        # R-SWING: the swing-phase equations of Fig. 6.4
        target = move_heel_to_target(ctl, swing, stance, gait)
        stiffen_knee(ctl, stance, STANCE_KNEE, 0.1)
        orient_with_pd(ctl, swing.foot_orientation, swing.foot, FOOT_STRIKE_ORIENTATION, gait.step_time)
        set_angle_with_pd(ctl, swing.toe_angle, swing.toe_joint, TOE_STRAIGHT, gait.step_time)
        yield ctl.until(lambda: distance_to_target(ctl, swing, target) < CLOSE_TO_TARGET,  # noqa: B023 (the program waits at this yield: the condition is called in this iteration only)
                        label=f"{swing.heel} near target")

        # R-LANDING: the leading leg is stiffened as the foot nears the ground
        ctl.remove(swing.heel_traj)
        stiffen_knee(ctl, swing, joint_angle(ctl, swing.knee), 0.05)  # thesis: 175 deg (note 3)
        yield ctl.until(lambda: heel_has_touched(ctl, swing), label=f"{swing.heel} touched")  # noqa: B023 (the program waits at this yield: the condition is called in this iteration only)
        taken += 1
        ctl.log("heel strike", foot=swing.foot, target=target.tolist(), heel=position(ctl, swing.heel).tolist())
        ctl.remove(swing.foot_orientation, swing.toe_angle)
        grip_heel(ctl, swing)  # the shoe takes the heel and turns the foot flat (note 4)
        if steps is not None and taken >= steps:
            yield ctl.until(lambda: foot_is_flat(ctl, swing), label=f"{swing.foot} flat")  # noqa: B023 (the program waits at this yield: the condition is called in this iteration only)
            lay_foot_flat(ctl, swing)
            return  # standing on both feet

        # L-TAKEOFF: the trailing knee flexes, its heel lifts, its toes stay on the ground
        ctl.remove(stance.knee_angle)
        lift_heel(ctl, stance)
        stiffen_knee(ctl, stance, TAKEOFF_KNEE, 0.1)  # thesis: 160 deg (note 5)
        yield ctl.until(lambda: foot_is_flat(ctl, swing), label=f"{swing.foot} flat")  # noqa: B023 (the program waits at this yield: the condition is called in this iteration only)
        lay_foot_flat(ctl, swing)
        yield ctl.until(lambda: joint_angle(ctl, stance.toe_joint) > TOE_LIFTED, label=f"{stance.toe_joint} lifted")  # noqa: B023 (the program waits at this yield: the condition is called in this iteration only)
        ctl.remove(stance.knee_angle)
        leave_ground(ctl, stance)

        # L-SWING, L-LANDING, R-TAKEOFF: the same with the legs' roles exchanged
        swing, stance = stance, swing


# ------------------------------------------------------------------ quantities
def position(ctl, frame: str) -> np.ndarray:
    """World position (m) of a frame now."""
    return ctl.value(ctl.point(frame))


def heel_has_touched(ctl, leg: Leg) -> bool:
    """The heel reached the ground (z <= 0)."""
    return position(ctl, leg.heel)[2] <= 0.0


def joint_angle(ctl, joint: str) -> float:
    """A one-dof joint's angle (rad) now."""
    return float(ctl.value(ctl.angle(joint))[0])


def foot_tilt(ctl, leg: Leg) -> float:
    """Angle (rad) between the foot's sole and the ground."""
    R = ctl.value(ctl.orientation(leg.foot))
    return math.acos(min(1.0, R[2, 2]))


def foot_is_flat(ctl, leg: Leg) -> bool:
    """The foot's sole is level with the ground, within FLAT."""
    return foot_tilt(ctl, leg) < FLAT


class KneeHeading(CachedQuantity):
    """How far a knee's axis turns out of the lateral direction: (knee axis) . DIRECTION (1).

    Zero when the knee points along the walking direction; the leg's swivel about its
    hip-ankle line changes it, so a PD on it fixes that swivel (note 8).
    """

    size, unit = 1, ""

    def __init__(self, mech, thigh: str):
        self.fid = mech.frame_id(thigh)
        self.name = f"{thigh} knee heading"
        self._version = -1

    def _evaluate(self, mech):
        # at every evaluation: Pinocchio's getters called directly and the 3-vector algebra on
        # Python floats (numpy's per-call cost is most of the work on arrays of three)
        model, d, fid = mech.model, mech.kinematics(), self.fid
        y0, y1, y2 = d.oMf[fid].rotation[:, 1].tolist()  # the knee turns about the thigh's y
        w0, w1, w2 = pin.getFrameVelocity(model, d, fid, LWA).angular.tolist()
        a0, a1, a2 = pin.getFrameClassicalAcceleration(model, d, fid, LWA).angular.tolist()
        d0, d1, d2 = _DIRECTION
        # n = y x d: d/dt (y . d) = (w x y) . d = w . (y x d)
        n0, n1, n2 = y1 * d2 - y2 * d1, y2 * d0 - y0 * d2, y0 * d1 - y1 * d0
        J = np.array([n0, n1, n2]).dot(pin.getFrameJacobian(model, d, fid, LWA)[3:])[None, :]
        # d2/dt2 (y . d) = (dw x y + w x (w x y)) . d
        wd = w0 * d0 + w1 * d1 + w2 * d2
        yd = y0 * d0 + y1 * d1 + y2 * d2
        drift = (a0 * n0 + a1 * n1 + a2 * n2) + (w0 * y0 + w1 * y1 + w2 * y2) * wd - (w0 * w0 + w1 * w1 + w2 * w2) * yd
        return np.array([yd]), np.array([w0 * n0 + w1 * n1 + w2 * n2]), J, np.array([drift])


class BodyAccelerations(Quantity):
    """Translational and angular accelerations of several bodies' origins, stacked (6 per body).

    One quantity for the whole sum of Fig. 6.8 (one block of cost rows instead of one per body).
    """

    unit = "m, rad"

    def __init__(self, mech, bodies):
        self.bodies = list(bodies)
        self.fids = [mech.frame_id(b) for b in self.bodies]
        self.size = 6 * len(self.fids)
        self.name = "accelerations of " + ", ".join(self.bodies)

    # (at every evaluation: each frame's rows straight from Pinocchio's getters into one new array)
    def jacobian(self, mech):
        model, d = mech.model, mech.kinematics()
        J = np.empty((self.size, mech.nv))
        k = 0
        for f in self.fids:
            J[k:k + 6] = pin.getFrameJacobian(model, d, f, LWA)
            k += 6
        return J

    def drift(self, mech):
        model, d = mech.model, mech.kinematics()
        out = np.empty(self.size)
        k = 0
        for f in self.fids:
            out[k:k + 6] = pin.getFrameClassicalAcceleration(model, d, f, LWA).vector
            k += 6
        return out


# ------------------------------------------------------------------ Fig. 6.7
def move_heel_to_target(ctl, leg: Leg, other: Leg, gait: Gait = THESIS_GAIT) -> np.ndarray:
    """Fig. 6.7: a quintic for the swing heel to one stride past the other heel; returns the target (m)."""
    hip_to_hip = position(ctl, leg.hip) - position(ctl, other.hip)
    sideways = hip_to_hip - (hip_to_hip @ DIRECTION) * DIRECTION
    sideways[2] = 0.0
    target_x = position(ctl, other.heel) + gait.stride * DIRECTION + (1.0 - gait.inside_step_fraction) * sideways
    target_x[2] = 0.0  # on the ground
    target_v = gait.strike_speed * np.array([0.0, 0.0, 1.0]) + gait.strike_forward_speed * DIRECTION
    heel = ctl.point(leg.heel)
    quintic = Quintic(ctl.value(heel), ctl.velocity(heel), target_x, target_v, ctl.t, gait.step_time)
    track(ctl, leg.heel_traj, heel, SwingPath(quintic, gait.clearance), gait.step_time)
    return target_x


class SwingPath:
    """The heel's quintic plus a lift of ``clearance`` (m) at mid-swing (zero, with its rate and
    acceleration, at both ends; note 2)."""

    def __init__(self, quintic: Quintic, clearance: float = THESIS_GAIT.clearance):
        self.quintic, self.clearance = quintic, clearance

    def __call__(self, t: float):
        p, v, a = self.quintic(t)
        T = self.quintic.dt
        s = min(max((t - self.quintic.t0) / T, 0.0), 1.0)
        h = 16.0 * self.clearance  # 16 s^2 (1 - s)^2 peaks at 1 for s = 1/2
        lift = h * s * s * (1 - s) ** 2
        rate = h * (2 * s - 6 * s**2 + 4 * s**3) / T
        accel = h * (2 - 12 * s + 12 * s**2) / T**2 if 0.0 < s < 1.0 else 0.0
        # (the quintic's arrays are new at every call: lifted in place, at every evaluation)
        p[2] += lift
        v[2] += rate
        a[2] += accel
        return p, v, a


def distance_to_target(ctl, leg: Leg, target: np.ndarray) -> float:
    """Distance (m) of the heel from its target."""
    d = position(ctl, leg.heel) - target
    return math.sqrt(d.dot(d))  # (np.linalg.norm's own arithmetic, without its checks: a guard, every step)


# ------------------------------------------------------------------ Fig. 6.8
def initialize(ctl, bodies=BODIES) -> None:
    """Fig. 6.8: the quadratic cost — every body's accelerations, plus the torso kept between the feet."""
    ctl.add_cost("body accelerations", acc(BodyAccelerations(ctl.mech, bodies)))
    torso, lf, rf = ctl.point("torso"), ctl.point("foot_l"), ctl.point("foot_r")
    horizontal = np.array([[1.0, 0, 0], [0, 1.0, 0]])
    mech = ctl.mech
    model, fids = mech.model, (lf.fid, rf.fid, torso.fid)

    def F(t):
        # read inside an assembly, at the state being evaluated: Pinocchio's getters directly, the
        # arithmetic on Python floats (the same operations as on the (3,) arrays: the same values)
        d = mech.kinematics()
        oMf = d.oMf
        lx, ly, _ = oMf[fids[0]].translation.tolist()
        rx, ry, _ = oMf[fids[1]].translation.tolist()
        tx, ty, _ = oMf[fids[2]].translation.tolist()
        ulx, uly, _ = pin.getFrameVelocity(model, d, fids[0], LWA).linear.tolist()
        urx, ury, _ = pin.getFrameVelocity(model, d, fids[1], LWA).linear.tolist()
        utx, uty, _ = pin.getFrameVelocity(model, d, fids[2], LWA).linear.tolist()
        return np.array([CENTRING_KP * (0.5 * (lx + rx) - tx) + CENTRING_KV * (0.5 * (ulx + urx) - utx),
                         CENTRING_KP * (0.5 * (ly + ry) - ty) + CENTRING_KV * (0.5 * (uly + ury) - uty)])

    ctl.add_cost("torso centring", horizontal @ acc(torso) - F, CENTRING_WEIGHT)


# ------------------------------------------------------------------ the magnetic shoes
def put_on_shoe(ctl, leg: Leg) -> None:
    """Weld the foot to the ground where it is, and hold its toe joint."""
    ctl.hold_angle(leg.toe_shoe, leg.toe_joint)
    ctl.weld(leg.shoe, leg.foot)


def take_off_shoe(ctl, leg: Leg) -> None:
    """Release both welds of a shoe."""
    ctl.release(leg.shoe)
    ctl.release(leg.toe_shoe)


def grip_heel(ctl, leg: Leg) -> None:
    """Heel strike (note 4): the shoe stops the foot and its toes, then lets the foot turn about the heel."""
    put_on_shoe(ctl, leg)  # the impact: a velocity jump of the stiffened foot
    ctl.release(leg.shoe)
    ctl.weld(leg.heel_pin, leg.heel, kind="point")
    orient_with_pd(ctl, leg.foot_orientation, leg.foot, np.eye(3), TIME_TO_FLAT)


def lay_foot_flat(ctl, leg: Leg) -> None:
    """The gripped foot is flat: weld it where it is (the shoe is on)."""
    ctl.remove(leg.foot_orientation)
    ctl.release(leg.heel_pin)
    ctl.weld(leg.shoe, leg.foot)


def lift_heel(ctl, leg: Leg) -> None:
    """Take-off: the shoe lets go of the foot but holds its toe segment."""
    take_off_shoe(ctl, leg)
    ctl.weld(leg.toe_shoe, leg.toe_segment)


def leave_ground(ctl, leg: Leg) -> None:
    """End of take-off: the shoe lets go of the toes."""
    ctl.release(leg.toe_shoe)


def keep_knee_forward(ctl, leg: Leg) -> None:
    """A PD holding the knee's axis square to the walking direction (fixes the leg's swivel, note 8)."""
    k = KneeHeading(ctl.mech, f"thigh_{leg.side}")
    T = pd_time_constant(KNEE_FORWARD_TIME)
    ctl.add_equation(leg.knee_forward, acc(k) + (2.0 / T) * vel(k) + (1.0 / T**2) * pos(k) == 0)


def stiffen_knee(ctl, leg: Leg, flexion: float, dt: float) -> None:
    """set-angle-with-PD on a knee (rad, s), replacing the knee's previous PD."""
    if ctl.has(leg.knee_angle):
        ctl.remove(leg.knee_angle)
    set_angle_with_pd(ctl, leg.knee_angle, leg.knee, flexion, dt, thesis_time_constant=True)
