"""Walking by forward dynamics on real contact (walking part 2): the walking program of
:mod:`controllers.walking` (thesis Fig. 6.7-6.9) driving a whole-body QP, for any biped.

The robot is a :class:`~controllers.biped_model.Biped` (its soles, legs, torso and held joints by
name; mass, sole rectangles and torque limits from its model): the thesis biped
(``examples/walking_fd.py``) and PAL's Talos (``examples/talos_walk.py``) go through this code
alike. The gait (stride, swing and double-support times, clearance, centre-of-mass height, a turn
per step) is a :class:`~controllers.gait.Gait`.

Two programs run side by side:

- the **servo** (:class:`WholeBody`, at its own clock, 1 kHz) reads the measured state, puts it
  on the controller's own model of the robot (which may be wrong) and solves one QP: unknowns
  accelerations, joint torques and the wrench of every planted foot; the planted feet's
  no-acceleration rows with their wrench limits (:class:`~controllers.whole_body.FootContact`:
  unilateral, friction pyramid, centre of pressure in the sole, a load ceiling), torque limits,
  and costs for the tasks in force. It assigns the torques, which the simulator holds until the
  next tick;
- the **walking program** (:func:`walk`), the coroutine of Fig. 6.9: each phase changes the
  servo's tasks (a swing heel's trajectory, a foot's orientation) and the set of planted feet,
  and waits with ``until`` for the condition that ends it.

The simulator integrates forward dynamics with the held torques; the feet touch the ground only
through ``sim.contact``'s unilateral contacts with Coulomb friction (mu .8): heel strikes are
impacts and contact events, lift-offs are contacts broken by a tensile force. Nothing is welded.

What physics changes in the pattern of part 1 (each constant marks "thesis:"/"part 1:" where it
departs), and why:

1. The centre of mass follows a linear-inverted-pendulum plan (:class:`WalkPlan`) whose zero-moment
   point rests in the stance foot's sole during a swing and moves from foot to foot during double
   support (a ZMP preview solved over the whole walk as one banded system): with a real floor the
   whole weight must pass through the feet, so the centre of mass must be carried over the stance
   foot before a foot lifts. Part 1's torso centring between the feet is this plan.
2. Slow, short steps (:class:`~controllers.gait.Gait`'s defaults: 0.15 m strides, 0.6 s swings,
   0.4 s double supports; part 1: 0.5 m in 0.5 s): the stance is flat-footed and the centre of
   mass stays low (``Gait.com_drop``), so the torques stay far from their limits and the centre of
   pressure inside the sole.
3. Take-off: a foot leaves the ground flat, after the load has been moved off it (its load
   ceiling ramps to zero during double support): the toe segment cannot carry a push-off through
   a sole of 7 cm without the centre of pressure reaching its edge. Landing: the heel comes down
   with the foot level, at ``Gait.strike_speed`` and no forward speed (part 1: 0.02 m/s; a
   forward speed would make the struck foot slide).
4. The torso is held upright (part 1 leans it 10 deg forward; here a lean moves the centre of
   mass plan's reference away from the torso for no gain).
5. Part 1's cost on all body accelerations (Fig. 6.8) becomes a posture cost: every joint but
   the toes is pulled toward the standing posture, which fixes each leg's swivel about its
   hip-ankle line (part 1's note 8).
6. The thesis biped's toe segments are held 5 deg up (``Biped.held``, :func:`~controllers.biped_model.thesis_biped`): only their joint line, the sole's front edge,
   reaches the ground, so the foot stands on its sole alone and its contact with the ground is
   one rigid sole (the simulation watches the soles' pairs only). A toe resting beside the sole
   makes the ground's split of load and friction between sole and toe arbitrary (the points
   are redundant), and a lightly loaded foot then slips on whichever carries the friction.
   They are held by a control equation (their accelerations are the posture's PD), not a cost:
   a toe segment is so light that a cost on it trades the QP's conditioning against the hold
   (measured with a cost at 1% of the posture weight: the servo swung the toes as reaction
   wheels through the unwatched floor, up to 66 rad/s; heavier weights made the walk slide).
7. The servo keeps a planted foot's centre of pressure in the inner ``COP_MARGIN`` of its sole
   (a ZMP safety margin). A just-landed foot carries only ``MIN_LOAD``, and the least squared
   torques put its centre of pressure on a sole corner; on the real floor the ground then holds
   that foot on the corner alone, and it rocked onto a neighbouring corner and back every 2 ms
   (an impact and two contact changes each time) until it was loaded: 5x the events, 5x the
   slip. With the margin the sole stays in face contact. A foot's share of the sideways force follows
   its load too (:meth:`~controllers.whole_body.FootContact.share_weights`): a landed or
   unloading foot at the same share as the loaded one had its friction at the cone.

Units: m, s, rad, N, N m.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pinocchio as pin

from controlkit.equations import EquationSet
from controlkit.expressions import TimeFunction, acc, orientation_error, pos, vel
from controlkit.quantities import CenterOfMass, ControlTorques, FrameOrientation, FramePoint, JointAccelerations
from controllers import whole_body
from controllers.arm import smooth_ramp
from controllers.biped_model import Biped, Foot
from controllers.gait import Gait
from controllers.primitives import Quintic
from controllers.walk_plan import DIRECTION, Step, WalkPlan, _yaw
from controllers.whole_body import FootContact, note_loads

__all__ = ["WalkPlan", "Step", "WholeBody", "WalkingGains", "walk", "walker"]

# ------------------------------------------------------------------ Fig. 6.7 (pattern)
# the gait (stride, swing and double-support times, clearance, strike speeds, centre-of-mass
# height) is data: controllers.gait.Gait, whose defaults are this walk's (note 2); the footsteps
# and the centre-of-mass path (note 1) are controllers.walk_plan.WalkPlan's
CLOSE_TO_TARGET = 0.01                     # m

# ------------------------------------------------------------------ ours
UNLOAD_TIME = 0.15                         # s: a trailing foot's load ceiling ramps to zero over this
LOAD_TIME = 0.05                           # s: a landed foot's load ceiling ramps up over this
LIFT_LOAD = 30.0                           # N: what a trailing foot still carries when it lifts
MIN_LOAD = 20.0                            # N: a planted foot carries at least this (its contact stays firm)
SETTLE_TIME = 0.15                         # s: the longest a touched-down foot may take to rest flat
COP_MARGIN = 0.8                           # the servo keeps a planted foot's centre of pressure in this share of the sole (note 7)
FLAT_HEIGHT = 5e-4                         # m: a sole whose corners are all this close to the ground is flat


@dataclass
class WalkingGains:
    """Task gains (kp 1/s^2, kd 1/s) and weights (unitless) of the servo's costs."""

    com_kp: tuple = (100.0, 100.0, 400.0)
    com_kd: tuple = (20.0, 20.0, 40.0)
    com_weight: float = 10.0
    orientation_kp: float = 400.0
    orientation_kd: float = 40.0
    orientation_weight: float = 10.0
    heel_kp: float = 400.0
    heel_kd: float = 40.0
    heel_weight: float = 10.0
    foot_kp: float = 400.0
    foot_kd: float = 40.0
    foot_weight: float = 10.0
    posture_kp: float = 100.0
    posture_kd: float = 20.0
    posture_weight: float = 0.1
    # a planted foot's wrench at its sole centre (per N, N, N, N m, N m, N m), a regularization:
    # see StanceGains
    wrench_weights: tuple = (1.0, 1.0, 1.0, 50.0, 50.0, 50.0)
    foot_kv: float = 20.0  # 1/s: a planted foot's velocity is damped at this rate (it should be still)


# ------------------------------------------------------------------ the servo
class WholeBody:
    """The whole-body QP on the controller's own model; its tasks are what the phases change.

    Args:
        model_mech: the controller's :class:`~controlkit.mechanism.Mechanism` (its own instance,
            possibly with wrong masses).
        biped: the robot's :class:`~controllers.biped_model.Biped` (feet, torso held upright,
            held joints, torque limits).
        com_path: ``t -> (p, v, a)`` of the centre of mass (m).
        gains: :class:`WalkingGains`; mu: the friction coefficient the planted feet's wrenches
            respect (their pyramid is inside it).

    :meth:`program` is the servo (a control program to run at 1 kHz). ``last`` is its last
    solution on the model, ``solves`` the number of solves. Set ``torque_log`` to a list to
    keep every tick's ``(t, torques)`` in it (s; (ntau,), N m), for measuring the servo's smoothness.
    Each tick is :func:`controllers.whole_body.servo_evaluate` (its QP by :mod:`controllers.servo_solve`);
    set ``qp`` to a :class:`~controlkit.qp.QPWorkspace` to warm-start that QP from tick to tick (None:
    cold solves; the warm start measured no faster, the QP being solved at one tick in six).
    """

    torque_log: list | None = None

    def __init__(self, model_mech, biped: Biped, com_path, *, gains: WalkingGains | None = None, mu: float = 0.8):
        self.cm, self.biped, self.com_path, self.torso = model_mech, biped, com_path, biped.torso
        self.feet = {side: foot.contact(mu) for side, foot in biped.feet.items()}
        self.g = gains or WalkingGains()
        self.torque_limit = biped.torque_limits
        self.eqs = EquationSet(kp=0.0, kv=self.g.foot_kv, critical_forms=False)
        self.planted: dict[str, FootContact] = {}
        self.ceilings: dict[str, Callable[[float], float]] = {}
        self.last = None
        self.solves = 0
        self.qp = None  # the servo QP's warm start (a controlkit.qp.QPWorkspace), or None: cold solves
        self._ref = {"a": np.zeros(model_mech.nv)}  # the posture's accelerations at this tick
        m = model_mech.model
        self.weight = pin.computeTotalMass(m) * float(-m.gravity.linear[2])  # N: the model's moving bodies'

    # the phases' vocabulary
    def sync(self, ctl) -> None:
        """Put the measured state on the model (what the phases' targets are computed from)."""
        self.cm.set_state(ctl.q, ctl.v, check=False)
        self.cm.kinematics()

    def plant(self, ctl, side: str, ceiling: Callable[[float], float] | None = None) -> None:
        """A foot is on the ground: the model holds it still, its wrench within the sole's limits."""
        self.sync(ctl)
        f = self.feet[side]
        c = FootContact(f"{side}-stance", f["frame"], COP_MARGIN * f["half_length"], COP_MARGIN * f["half_width"],
                        f["sole_depth"], f["mu"], min_force=MIN_LOAD)
        c.bind(self.cm)
        self.cm.constraints[c.name] = c
        self.planted[side] = c
        if ceiling is not None:
            self.ceilings[side] = ceiling
        # with two feet down the forces between them are free: share the load by moving the centres
        # of pressure as little from mid-sole as the tasks allow (see StanceGains.wrench_weights)
        c.nominal_load = self.weight / 2.0
        self.eqs.add_regularization(f"{side}-wrench", c.sole_wrench(self.cm), c.share_weights(self.g.wrench_weights))

    def unplant(self, side: str) -> None:
        """The foot may leave the ground: the model no longer holds it."""
        c = self.planted.pop(side)
        self.cm.constraints.pop(c.name)
        self.ceilings.pop(side, None)
        self.remove(f"{side}-wrench")

    def set_ceiling(self, side: str, ceiling: Callable[[float], float] | None) -> None:
        """Bound a planted foot's normal force (N) by ``ceiling(t)`` (None: unbounded)."""
        if ceiling is None:
            self.ceilings.pop(side, None)
            self.planted[side].max_force = math.inf
        else:
            self.ceilings[side] = ceiling

    def track_point(self, name: str, point: tuple, path, kp=None, kd=None, weight=None) -> None:
        """Cost: a point ``(frame, offset (3,) or None)`` follows ``path(t) -> (p, v, a)`` (PD with feedforward)."""
        g = self.g
        kp, kd, weight = kp or g.heel_kp, kd or g.heel_kd, weight or g.heel_weight
        p = FramePoint(self.cm, *point)

        gains = ((kp,) * 3, (kd,) * 3)

        def ref(t):
            pd, vd, ad = path(t)
            return pd_reference(pd, vd, ad, *gains)

        self.eqs.add_cost(name, acc(p) + kd * vel(p) + kp * pos(p) - TimeFunction(ref, name), weight)

    def hold_orientation(self, name: str, frame: str, R, kp=None, kd=None, weight=None) -> None:
        """Cost: a frame turns to (and stays at) orientation R (3, 3), or follows ``R(t)``."""
        g = self.g
        kp, kd, weight = kp or g.foot_kp, kd or g.foot_kd, weight or g.foot_weight
        o = FrameOrientation(self.cm, frame)
        R = R if callable(R) else np.asarray(R, dtype=float)
        self.eqs.add_cost(name, acc(o) + kd * vel(o) + kp * orientation_error(o, R), weight)

    def _turning_torso(self, R0: np.ndarray) -> None:
        """Cost: the torso upright and turning with the walk's heading (the plan's ``heading_path``):
        its orientation ``Rz(psi(t)) R0`` tracked with the turn's rate and acceleration fed forward
        (without them it lags the turn by kd / kp times the rate: 2 deg at 19 deg/s)."""
        g, path = self.g, self.com_path.heading_path
        o = FrameOrientation(self.cm, self.torso)
        kp, kd = g.orientation_kp, g.orientation_kd

        def target(t):
            return _yaw(path(t)[0]) @ R0

        def feedforward(t):
            _, rate, accel = path(t)
            return np.array([0.0, 0.0, accel + kd * rate])

        self.eqs.add_cost("torso upright", acc(o) + kd * vel(o) + kp * orientation_error(o, target)
                          - TimeFunction(feedforward, "torso turn"), g.orientation_weight)

    def _posture(self) -> None:
        """Cost: every joint's acceleration (legs, torso, arms, head) but the held joints' follows the
        posture's PD (``self._ref["a"]``); equation: the held joints' accelerations are their PD's (note 6)."""
        every = JointAccelerations(self.cm).joints  # every joint but the free flyer
        held = self.biped.held
        body = JointAccelerations(self.cm, [n for n in every if n not in held])
        self.eqs.add_cost("posture", body - TimeFunction(lambda t: self._ref["a"][body.v_index], "posture"),
                          self.g.posture_weight)
        if held:
            fixed = JointAccelerations(self.cm, [n for n in every if n in held])
            self.eqs.add_equation("joints held", fixed == TimeFunction(lambda t: self._ref["a"][fixed.v_index], "held"))

    def remove(self, *names: str) -> None:
        for n in names:
            self.eqs.remove(n)

    # the servo
    def program(self, ctl):
        """The servo: every tick, solve the QP at the measured state and assign the torques."""
        g, cm, eqs = self.g, self.cm, self.eqs
        self.sync(ctl)
        q0 = ctl.q.copy()
        for joint, angle in self.biped.held.items():  # (the thesis biped's toes held up: note 6)
            q0[cm.joint_q_slice(joint)] = angle
        com = CenterOfMass(cm)
        Kp, Kd = np.diag(g.com_kp), np.diag(g.com_kd)
        kp, kd = Kp.diagonal(), Kd.diagonal()  # (diagonal gains: elementwise in the reference)

        gains = (kp.tolist(), kd.tolist())

        def com_ref(t):
            p, v, a = self.com_path(t)
            return pd_reference(p, v, a, *gains)

        eqs.add_cost("com path", acc(com) + Kd @ vel(com) + Kp @ pos(com) - TimeFunction(com_ref, "com path"),
                     g.com_weight)
        R0 = FrameOrientation(cm, self.torso).position(cm)
        if any(st.heading for st in getattr(self.com_path, "steps", ())):
            self._turning_torso(R0)
        else:
            self.hold_orientation("torso upright", self.torso, R0, g.orientation_kp, g.orientation_kd,
                                  g.orientation_weight)
        ref = self._ref
        model = cm.model
        self._posture()
        tau = ControlTorques(cm)
        eqs.add_inequality("torque limit", tau <= self.torque_limit)
        eqs.add_inequality("torque limit (negative)", tau >= -self.torque_limit)
        out = ControlTorques(ctl.mech)
        while True:
            q, v, t = ctl.q, ctl.v, ctl.t
            ref["a"] = g.posture_kp * pin.difference(model, q, q0) - g.posture_kd * v
            for side, c in self.planted.items():
                f = self.ceilings.get(side)
                c.max_force = math.inf if f is None else max(float(f(t)), 0.0)
                eqs.set_weight(f"{side}-wrench", c.share_weights(g.wrench_weights))
            sol = whole_body.servo_evaluate(self.qp, cm, eqs, t, q, v)
            note_loads(sol, self.planted.values())
            self.last = sol
            self.solves += 1
            if self.torque_log is not None:
                self.torque_log.append((t, sol.tau))
            ctl.assign("whole-body torques", out, sol.tau)
            yield


def pd_reference(p: np.ndarray, v: np.ndarray, a: np.ndarray, kp, kd) -> np.ndarray:
    """``a + kd v + kp p`` (3,) of a path's point, velocity and acceleration (3,) each, with per-axis
    gains ``kp``, ``kd`` (three floats each): a task's PD target, in floats (read at every tick)."""
    (p0, p1, p2), (v0, v1, v2), (a0, a1, a2) = p.tolist(), v.tolist(), a.tolist()
    return np.array([a0 + kd[0] * v0 + kp[0] * p0, a1 + kd[1] * v1 + kp[1] * p1, a2 + kd[2] * v2 + kp[2] * p2])


# ------------------------------------------------------------------ Fig. 6.9
def walk(ctl, body: WholeBody, plan: WalkPlan, contacts: Callable[[str], list] | None = None):
    """The walking program of Fig. 6.9 on the whole-body servo, from standing on both feet.

    A foot's touch is sensed as a contact of the simulated foot (``contacts(geom)``: the contacts
    touching a geometry: the simulator's ``contacts_of``; None: no touch sensor) or its sole's lowest
    corner at the ground. Ends standing on both feet after the plan's steps.
    """
    legs = body.biped.feet
    W = body.weight  # N: the controller's model's weight (its load ceilings ramp over it)
    body.plant(ctl, "l")
    body.plant(ctl, "r")
    level = {s: ctl.value(ctl.orientation(legs[s].frame)).copy() for s in "lr"}
    taken = 0
    for step in plan.steps:
        swing = legs[step.side]
        # L-TAKEOFF (double support): the load leaves the trailing foot before it lifts (note 3)
        unload = step.lift - UNLOAD_TIME
        if ctl.t < unload:
            yield ctl.after(unload - ctl.t)
        w0 = ctl.t
        body.set_ceiling(step.side, lambda t, w0=w0: LIFT_LOAD + W * (1.0 - smooth_ramp((t - w0) / UNLOAD_TIME)[0]))
        yield ctl.after(max(step.lift - ctl.t, 0.0))
        # R-SWING: the heel on its trajectory, the foot level
        body.unplant(step.side)
        ctl.log("lift-off", foot=swing.frame, geom=swing.geom)
        path = swing_path(ctl, swing, step.target, step.land, plan.gait, step.heading)
        body.track_point(swing.heel_traj, swing.heel, path)
        R = level[step.side] if step.heading == 0.0 else _yaw(step.heading) @ level[step.side]
        body.hold_orientation(swing.orientation_task, swing.frame, R)
        yield ctl.until(lambda: distance_to_target(ctl, swing, step.target) < CLOSE_TO_TARGET,  # noqa: B023 (the program waits at this yield: the condition is called in this iteration only)
                        label=f"{swing.frame} heel near target")
        # R-LANDING: the heel comes on down at the strike speed (the path goes on at it)
        yield ctl.until(lambda: foot_has_touched(ctl, swing, contacts), label=f"{swing.frame} touched")  # noqa: B023 (the program waits at this yield: the condition is called in this iteration only)
        taken += 1
        ctl.log("heel strike", foot=swing.frame, geom=swing.geom, target=step.target.tolist(),
                heel=ctl.value(ctl.point(*swing.heel)).tolist())
        # it settles flat, still level and pressed down by its path, before it is planted: the
        # servo's model holds a planted foot flat, and one still on an edge would be pushed about
        touched = ctl.t
        yield ctl.until(lambda: foot_is_flat(ctl, swing, contacts) or ctl.t > touched + SETTLE_TIME,  # noqa: B023 (the program waits at this yield: the condition is called in this iteration only)
                        label=f"{swing.frame} flat")
        body.remove(swing.heel_traj, swing.orientation_task)
        t0 = ctl.t
        body.plant(ctl, step.side, ceiling=lambda t, t0=t0: LIFT_LOAD + W * smooth_ramp((t - t0) / LOAD_TIME)[0])
        ctl.log("planted", foot=swing.frame, geom=swing.geom)
        yield ctl.after(LOAD_TIME)
        body.set_ceiling(step.side, None)
    yield ctl.until(lambda: ctl.t >= plan.end - 0.5, label="standing")


def swing_path(ctl, foot: Foot, target: np.ndarray, land: float, gait: Gait, heading: float = 0.0):
    """Fig. 6.7: a quintic for the heel to its target at touchdown time, lifted at mid-swing
    (``heading``: the landing foot's, rad about z, the direction of its forward strike speed)."""
    heel = ctl.point(*foot.heel)
    forward = DIRECTION if heading == 0.0 else _yaw(heading) @ DIRECTION
    v1 = gait.strike_speed * np.array([0.0, 0.0, 1.0]) + gait.strike_forward_speed * forward
    return Lifted(Quintic(ctl.value(heel), ctl.velocity(heel), target, v1, ctl.t, land - ctl.t), gait.clearance)


class Lifted:
    """A quintic plus a lift of ``clearance`` at mid-way (zero, with its rate and acceleration, at both ends)."""

    def __init__(self, quintic: Quintic, clearance: float):
        self.quintic, self.clearance = quintic, clearance

    def __call__(self, t: float):
        p, v, a = self.quintic(t)  # (new arrays: the lift is added to their heights)
        T = self.quintic.dt
        s = min(max((t - self.quintic.t0) / T, 0.0), 1.0)
        h = 16.0 * self.clearance
        p[2] += h * s * s * (1 - s) ** 2
        v[2] += h * (2 * s - 6 * s**2 + 4 * s**3) / T
        a[2] += h * (2 - 12 * s + 12 * s**2) / T**2 if 0.0 < s < 1.0 else 0.0
        return p, v, a


def distance_to_target(ctl, foot: Foot, target: np.ndarray) -> float:
    """Distance (m) of the heel from its target."""
    return math.dist(ctl.value(ctl.point(*foot.heel)).tolist(), np.asarray(target, dtype=float).tolist())


def sole_height(ctl, foot: Foot, highest: bool = False) -> float:
    """Height (m) of the foot's lowest (or highest) sole corner."""
    mech = ctl.mech
    M = mech.kinematics().oMf[mech.frame_id(foot.frame)]
    z = M.rotation[2].dot(foot.corners)
    return float((z.max() if highest else z.min()) + M.translation[2])


def foot_is_flat(ctl, foot: Foot, contacts: Callable[[str], list] | None = None) -> bool:
    """The sole rests on the ground: its contact is a face (the touch sensor ``contacts``, see
    :func:`walk`), or all its corners are within ``FLAT_HEIGHT`` of the ground."""
    if contacts is not None and any(c.region == "face" for c in contacts(foot.geom)):
        return True
    return sole_height(ctl, foot, highest=True) <= FLAT_HEIGHT


def foot_has_touched(ctl, foot: Foot, contacts: Callable[[str], list] | None = None) -> bool:
    """The foot touches the ground: a contact holds it (the touch sensor ``contacts``, see
    :func:`walk`), or its sole reached z = 0."""
    if contacts is not None and contacts(foot.geom):
        return True
    return sole_height(ctl, foot) <= 0.0


# ------------------------------------------------------------------ setting up
def walker(sim, biped: Biped, model_mech, steps: int, *, gait: Gait | None = None, period: float = 1e-3,
           gains=None, mu: float = 0.8):
    """Add the walking program and its servo (at ``period`` s) to a simulator; returns (WholeBody, WalkPlan).

    ``biped``: the robot's description (:class:`~controllers.biped_model.Biped`, of the simulated
    mechanism; the controller's model ``model_mech`` has the same names). ``gait``: the steps'
    lengths and times (default ``Gait()``). ``mu``: the friction the servo counts on.

    The simulator's contacts are the caller's (``sim.contact.enable_contacts``, after this call,
    so the first support set is found with the servo's torques)."""
    mech = sim.mech
    mech.set_state(sim.q, sim.v, check=False)
    heels = {s: FramePoint(mech, *foot.heel).position(mech).copy() for s, foot in biped.feet.items()}
    com0 = CenterOfMass(model_mech)
    model_mech.set_state(sim.q, sim.v, check=False)
    mid_sole = float(np.mean([f.half_length for f in biped.feet.values()]))  # heel to mid-sole
    plan = WalkPlan(heels, com0.position(model_mech).copy(), steps, gait=gait, zmp_from_heel=mid_sole)
    body = WholeBody(model_mech, biped, plan, gains=gains, mu=mu)
    sim.add_program(lambda ctl: walk(ctl, body, plan, sim.contacts_of), name="walk")
    sim.add_program(body.program, name="whole-body servo", period=period)
    return body, plan
