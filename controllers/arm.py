"""Task-space control of arms: the thesis' redundant-arm algorithm and limited end-effector tracking.

The thesis' redundant arm (section 6.6.3, Fig. 6.10): an end-effector trajectory is a
time-varying acceleration constraint (a control equation on ``acc(tool)``); what the
equation leaves free is fixed by a quadratic cost. Three costs are provided:

- ``"two_phase"`` — the thesis' algorithm after Hsu, Hauser and Sastry [41]: PD
  controllers on the deviation ``e_j = theta_j - mean(theta)`` of each distal joint
  from the distal joints' mean give desired accelerations
  ``thetaddot_j^PD = mean(thetaddot) - kv edot_j - kp e_j``, and the cost
  ``sum_j (thetaddot_j - thetaddot_j^PD)^2`` projects them onto the accelerations the
  end-effector equations allow. Phase 1 holds the end effector still while the
  angles become equal; phase 2 tracks the trajectory, and the angles stay equal
  (the cost is zero there: "the cost function is minimized when
  thetaddot_3 = thetaddot_4 = thetaddot_5").
- ``"torques"`` — the naive sum of squared joint torques;
- ``"accelerations"`` — the naive sum of squared joint accelerations.

Why the two-phase cost does not beat the naive ones at every instant of every path:
equal distal angles maximize ``det(J J^T)`` at a given end-effector position only
approximately (the observation of Hsu, Hauser and Sastry the thesis builds on). On this
arm the maximum over the self-motion manifold (:func:`best_manipulability`) lies about 4%
higher, at unequal angles, so a naive cost whose self-motion happens to drift toward it
is above the two-phase algorithm for a while: on the tilted circle of
``controlkit.studies.compare.ARM_CIRCLE`` (after the example's phase 1) the squared-acceleration cost is
up to 1.4% above it during 0.8 s of the first turn, before it drifts on to 0.40 of it.
On reaches toward the edge of the workspace (:func:`reach_path`, the example's default)
both naive costs' drift lowers the manipulability from the start, and the two-phase
algorithm is above both at every instant.

For real manipulators (Panda, UR5) :func:`tracking_program` tracks an end-effector
path with a joint-posture cost (acting in the null space of the tracking equation)
and joint position, velocity and torque limits as QP inequalities written at the
acceleration level (:func:`add_joint_limits`).

Paths are callables ``path(t) -> (p (3,) m, v (3,) m/s, a (3,) m/s^2)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pinocchio as pin
from scipy.optimize import minimize

from controlkit.errors import ControlkitError
from controlkit.expressions import acc, pos, vel
from controlkit.quantities import ControlTorques, Quantity
from controllers.primitives import pd_time_constant, position_with_pd, track

Path = Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]]
COSTS = ("two_phase", "torques", "accelerations")


# ------------------------------------------------------------- quantities
class JointAngles(Quantity):
    """The angles (rad) of several one-dof joints stacked (k,); Jacobian rows select their velocities."""

    unit = "rad"

    def __init__(self, mech, joints: Sequence[str]):
        self.joints = list(joints)
        if not self.joints:
            raise ControlkitError("JointAngles needs at least one joint")
        self.name = "angles(" + ", ".join(self.joints) + ")"
        self.iv, self.iq = [], []
        for j in self.joints:
            vs, qs = mech.joint_v_slice(j), mech.joint_q_slice(j)
            if vs.stop - vs.start != 1 or qs.stop - qs.start != 1:
                raise ControlkitError(f"JointAngles: joint {j!r} is not a one-dof joint with one coordinate")
            self.iv.append(vs.start)
            self.iq.append(qs.start)
        self.iv, self.iq = np.array(self.iv), np.array(self.iq)
        self.size = len(self.joints)
        self._J = np.zeros((self.size, mech.nv))
        self._J[np.arange(self.size), self.iv] = 1.0

    def position(self, mech) -> np.ndarray:
        return mech.q[self.iq].copy()

    def velocity(self, mech) -> np.ndarray:
        return mech.v[self.iv].copy()

    def jacobian(self, mech) -> np.ndarray:
        return self._J

    def drift(self, mech) -> np.ndarray:
        return np.zeros(self.size)


class Manipulability(Quantity):
    """Yoshikawa's manipulability ``det(J J^T)`` of a point's 3 x nv Jacobian (m^6 for revolute joints).

    Args:
        mech: the mechanism.
        frame: the end-effector frame (its origin's linear Jacobian is used).
        joints: restrict J to these joints' columns (default all).
    """

    size, unit = 1, "m^6"

    def __init__(self, mech, frame: str, joints: Sequence[str] | None = None):
        self.frame, self.fid = frame, mech.frame_id(frame)
        self.name = f"manipulability({frame})"
        self.cols = None if joints is None else np.array([mech.joint_v_slice(j).start for j in joints])

    def position(self, mech) -> np.ndarray:
        J = mech.frame_jacobian(self.fid)[:3]
        if self.cols is not None:
            J = J[:, self.cols]
        return np.array([float(np.linalg.det(J @ J.T))])


class SolvedAccelerations(Quantity):
    """Joint accelerations of the last solve (rad/s^2) as a recordable quantity: all (nv,) or some joints'."""

    unit = "rad/s^2"

    def __init__(self, mech, joints: Sequence[str] | None = None):
        if joints is None:
            self.cols, self.name = np.arange(mech.nv), "a"
        else:
            self.cols = np.concatenate([np.arange(mech.joint_v_slice(j).start, mech.joint_v_slice(j).stop)
                                        for j in joints])
            self.name = "a(" + ", ".join(joints) + ")"
        self.size = len(self.cols)

    def position(self, mech) -> np.ndarray:
        return mech.solution.a[self.cols].copy()


class PathError(Quantity):
    """Distance (m) of a point from a path's position at the current time, as a recordable quantity.

    ``clock()`` returns the time the mechanism's state belongs to (the simulator's ``t``).
    """

    size, unit = 1, "m"

    def __init__(self, point: Quantity, path: Path, clock: Callable[[], float]):
        self.point, self.path, self.clock = point, path, clock
        self.name = f"error({point.name})"

    def position(self, mech) -> np.ndarray:
        return np.array([float(np.linalg.norm(self.point.position(mech) - self.path(self.clock())[0]))])


class PointAcceleration(Quantity):
    """World acceleration (m/s^2) of a point quantity in the last solve: ``J a + Jdot v``."""

    size, unit = 3, "m/s^2"

    def __init__(self, point: Quantity):
        self.point, self.name = point, f"acc({point.name})"

    def position(self, mech) -> np.ndarray:
        return self.point.jacobian(mech) @ mech.solution.a + self.point.drift(mech)


def manipulability(mech, frame: str) -> float:
    """``det(J J^T)`` (m^6) of a frame origin's linear Jacobian at the mechanism's state."""
    return float(Manipulability(mech, frame).position(mech)[0])


# ------------------------------------------------------------------ paths
def smooth_ramp(s: float) -> tuple[float, float, float]:
    """Quintic ramp ``10 s^3 - 15 s^4 + 6 s^5`` on [0, 1] (clamped) and its first two derivatives in s."""
    if s <= 0.0:
        return 0.0, 0.0, 0.0
    if s >= 1.0:
        return 1.0, 0.0, 0.0
    return (s**3 * (10 - 15 * s + 6 * s * s), 30 * s**2 * (1 - s) ** 2, 60 * s * (1 - s) * (1 - 2 * s))


@dataclass
class CirclePath:
    """A circle traversed with a smooth (quintic) start and stop.

    ``p(t) = center + radius (cos phi u + sin phi w)``, ``phi = phase + 2 pi turns ramp((t - t0) / duration)``;
    before ``t0`` the point rests at the start, after ``t0 + duration`` at the end.

    Args:
        center: (3,), m. radius: m. u, w: orthonormal in-plane axes (3,).
        t0: start time (s); duration: s; turns: revolutions (may be fractional or negative).
        phase: angle of the start point (rad).
    """

    center: np.ndarray
    radius: float
    u: np.ndarray
    w: np.ndarray
    t0: float
    duration: float
    turns: float = 1.0
    phase: float = 0.0

    def __post_init__(self):
        self.center = np.asarray(self.center, dtype=float)
        self.u = np.asarray(self.u, dtype=float) / np.linalg.norm(self.u)
        w = np.asarray(self.w, dtype=float)
        w = w - (w @ self.u) * self.u
        self.w = w / np.linalg.norm(w)
        if self.radius <= 0 or self.duration <= 0:
            raise ControlkitError(f"CirclePath: radius ({self.radius} m) and duration ({self.duration} s) must be positive")

    @classmethod
    def through(cls, start, center, normal, t0: float, duration: float, turns: float = 1.0) -> "CirclePath":
        """The circle about ``center`` (m) in the plane normal to ``normal`` that starts at ``start`` (m)."""
        start, center, normal = (np.asarray(x, dtype=float) for x in (start, center, normal))
        r = start - center
        r = r - (r @ normal) / (normal @ normal) * normal
        radius = float(np.linalg.norm(r))
        u = r / radius
        w = np.cross(normal / np.linalg.norm(normal), u)
        return cls(start - radius * u, radius, u, w, t0, duration, turns)

    def __call__(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s, ds, dds = smooth_ramp((t - self.t0) / self.duration)
        k = 2 * math.pi * self.turns
        phi, w, al = self.phase + k * s, k * ds / self.duration, k * dds / self.duration**2
        e = math.cos(phi) * self.u + math.sin(phi) * self.w
        de = -math.sin(phi) * self.u + math.cos(phi) * self.w
        return self.center + self.radius * e, self.radius * w * de, self.radius * (al * de - w * w * e)


@dataclass
class PathSequence:
    """Paths one after the other: ``paths[i]`` from ``starts[i]`` (s) on."""

    paths: list
    starts: list

    def __call__(self, t: float):
        i = int(np.searchsorted(self.starts, t, side="right")) - 1
        return self.paths[max(i, 0)](t)


@dataclass
class LinePath:
    """A straight move from ``start`` to ``end`` (m) with a quintic profile between t0 and t0 + duration (s)."""

    start: np.ndarray
    end: np.ndarray
    t0: float
    duration: float

    def __call__(self, t: float):
        s, ds, dds = smooth_ramp((t - self.t0) / self.duration)
        d = np.asarray(self.end, float) - np.asarray(self.start, float)
        return (np.asarray(self.start, float) + s * d, ds / self.duration * d, dds / self.duration**2 * d)


def reach_path(start, end, t0: float, leg: float, repeats: int = 1) -> PathSequence:
    """Out and back: ``start`` -> ``end`` -> ``start`` (m), ``repeats`` times from ``t0`` (s).

    Each leg is a :class:`LinePath` of ``leg`` s (quintic: at rest at both ends), so the
    whole path lasts ``2 leg repeats`` s and ends at rest where it started.
    """
    if leg <= 0 or repeats < 1:
        raise ControlkitError(f"reach_path: leg ({leg} s) must be positive and repeats ({repeats}) at least 1")
    start, end = np.asarray(start, float), np.asarray(end, float)
    paths, starts = [], []
    for i in range(2 * repeats):
        a, b = (start, end) if i % 2 == 0 else (end, start)
        paths.append(LinePath(a, b, t0 + i * leg, leg))
        starts.append(t0 + i * leg)
    return PathSequence(paths, starts)


def best_manipulability(mech, frame: str, q: np.ndarray, starts: Sequence[np.ndarray] = ()) -> tuple[float, np.ndarray]:
    """The largest ``det(J J^T)`` (m^6) over configurations that put ``frame`` where it is at ``q``.

    A local search (SLSQP) on the self-motion manifold of a fixed-base arm with one coordinate
    per joint (nq == nv), from ``q`` and from each of ``starts`` (configurations, rad); returns
    the best value found and its configuration. The mechanism's state is not touched.
    """
    model = mech.model
    if model.nq != model.nv:
        raise ControlkitError(f"best_manipulability: needs nq == nv, {mech.name!r} has nq = {model.nq}, nv = {model.nv}")
    data, fid = model.createData(), mech.frame_id(frame)

    def place(x):
        pin.framesForwardKinematics(model, data, x)
        return data.oMf[fid].translation.copy()

    def w(x):
        J = pin.computeFrameJacobian(model, data, x, fid, pin.LOCAL_WORLD_ALIGNED)[:3]
        return float(np.linalg.det(J @ J.T))

    q = np.asarray(q, float)
    target = place(q)
    best = (w(q), q.copy())
    for x0 in [q, *starts]:
        res = minimize(lambda x: -w(x), np.asarray(x0, float), method="SLSQP",
                       constraints=[{"type": "eq", "fun": lambda x: place(x) - target}],
                       options={"ftol": 1e-12, "maxiter": 200})
        if np.linalg.norm(place(res.x) - target) < 1e-8 and -res.fun > best[0]:
            best = (-res.fun, res.x.copy())
    return best


# ------------------------------------------------------------------ costs
def equal_angles_cost(ctl, name: str, joints: Sequence[str], dt: float = 1.0, weight: float = 1.0) -> JointAngles:
    """The thesis' equal-joint-angle cost: ``sum_j (thetaddot_j - thetaddot_j^PD)^2``.

    ``thetaddot_j^PD = mean(thetaddot) - kv edot_j - kp e_j`` with ``e_j = theta_j - mean(theta)``,
    a critically damped PD reaching 1% in ``dt`` s (gains ``kp = 1/T^2`` 1/s^2, ``kv = 2/T`` 1/s).
    Written on the centred angles ``C theta`` (``C = I - 1 1^T / k``), so its value is
    ``|C (thetaddot + kv thetadot + kp theta)|^2``; ``weight`` scales it (dimensionless).
    """
    th = JointAngles(ctl.mech, joints)
    k = th.size
    if k < 2:
        raise ControlkitError(f"equal_angles_cost({name!r}): needs at least two joints, got {list(joints)}")
    T = pd_time_constant(dt)
    C = np.eye(k) - np.full((k, k), 1.0 / k)
    ctl.add_cost(name, C @ (acc(th) + (2.0 / T) * vel(th) + (1.0 / T**2) * pos(th)), weight)
    return th


def add_redundancy_cost(ctl, kind: str, joints: Sequence[str], name: str | None = None, dt: float = 1.0) -> str:
    """Add one of :data:`COSTS` (``two_phase`` on ``joints``; the naive ones on all joints); returns its name."""
    if kind not in COSTS:
        raise ControlkitError(f"unknown redundancy cost {kind!r}; choose one of {', '.join(COSTS)}")
    name = name or {"two_phase": "equal distal angles", "torques": "squared torques",
                    "accelerations": "squared accelerations"}[kind]
    if kind == "two_phase":
        equal_angles_cost(ctl, name, joints, dt)
    elif kind == "torques":
        ctl.add_cost(name, ControlTorques(ctl.mech))
    else:
        ctl.add_cost(name, acc(JointAngles(ctl.mech, ctl.mech.actuated_joints)))
    return name


# --------------------------------------------------------------- programs
def redundant_arm_program(tool: str, distal_joints: Sequence[str], path: Path, t_switch: float,
                          cost: str = "two_phase", equalize_time: float = 1.0, hold_time: float = 0.2):
    """The thesis' redundant-arm control program (section 6.6.3), or the same with a naive cost.

    Phase 1 (until ``t_switch`` s): the end effector ``tool`` is held at ``path(t_switch)``'s
    position by a PD control equation (1% in ``hold_time`` s; exact when it starts there);
    phase 2: the control equation makes it track ``path`` (m). The redundancy cost (one of
    :data:`COSTS`) acts throughout; ``equalize_time`` (s) sets the equal-angle PD.
    Each phase change is logged with the distal angles' spread (rad).
    """
    if cost not in COSTS:
        raise ControlkitError(f"unknown redundancy cost {cost!r}; choose one of {', '.join(COSTS)}")

    def program(ctl):
        tool_point = ctl.point(tool)
        angles = JointAngles(ctl.mech, distal_joints)
        add_redundancy_cost(ctl, cost, distal_joints, dt=equalize_time)
        if ctl.t < t_switch:
            position_with_pd(ctl, "hold end effector", tool, path(t_switch)[0], hold_time)
            ctl.log("phase 1: equalize the distal joint angles, end effector held")
            yield ctl.after(t_switch - ctl.t)
            ctl.remove("hold end effector")
        spread = float(np.ptp(ctl.value(angles)))
        ctl.log(f"phase 2: track the end-effector path (distal angle spread {spread:.3g} rad)", spread=spread)
        track(ctl, "end-effector path", tool_point, path, 1.0)
        yield  # the statements stay in force after the program ends

    program.__name__ = f"redundant_arm_{cost}"
    return program


def stop_when_unsafe(tool: str, min_manipulability: float = 1e-2, max_speed: float = 50.0):
    """A control program that ends the run at a singular configuration or a runaway.

    Singular: ``det(J J^T)`` of ``tool`` below ``min_manipulability`` (m^6); runaway: a joint
    faster than ``max_speed`` (rad/s), as when minimizing squared torques whips the arm
    (the null-space motion is not damped and grows). The moment is isolated as a control
    event and logged (kind ``control``, data ``stopped_at`` s and ``reason``).
    """

    def program(ctl):
        m = Manipulability(ctl.mech, tool)
        yield ctl.until(lambda: ctl.value(m)[0] < min_manipulability or np.abs(ctl.mech.v).max() > max_speed,
                        label=f"manipulability < {min_manipulability:g} or speed > {max_speed:g}")
        mu, speed = float(ctl.value(m)[0]), float(np.abs(ctl.v).max())
        reason = "singular" if mu < min_manipulability else "runaway"
        ctl.log(f"{reason}: manipulability {mu:.3g} m^6, fastest joint {speed:.3g} rad/s; run stopped",
                stopped_at=ctl.t, reason=reason)
        ctl.stop_simulation()

    program.__name__ = "stop_when_unsafe"
    return program


# ---------------------------------------------------------------- limits
@dataclass
class JointLimits:
    """Joint limits and how they are enforced at the acceleration level.

    Args:
        joints: one-dof joint names.
        q_min, q_max: position limits (k,), rad or m.
        v_max: velocity limits (k,), rad/s or m/s (symmetric).
        tau_max: torque limits (k,), N m or N (symmetric); None: no torque rows.
        position_gain: ``k`` (1/s) of the position barrier
            ``qddot <= k^2 (q_max - q) - 2 k qdot`` (and its mirror image): a critically damped
            approach that can touch the limit but not cross it.
        velocity_horizon: ``h`` (s) of the velocity damper ``qddot <= (v_max - qdot) / h``.
    """

    joints: list
    q_min: np.ndarray
    q_max: np.ndarray
    v_max: np.ndarray
    tau_max: np.ndarray | None = None
    position_gain: float = 20.0
    velocity_horizon: float = 0.02

    @classmethod
    def from_model(cls, mech, joints: Sequence[str] | None = None, velocity_scale: float = 1.0,
                   torque_scale: float = 1.0, **options) -> "JointLimits":
        """The limits the model declares (URDF ``limit`` tags), velocities and torques scaled."""
        joints = list(mech.actuated_joints if joints is None else joints)
        m = mech.model
        iq = [mech.joint_q_slice(j).start for j in joints]
        iv = [mech.joint_v_slice(j).start for j in joints]
        return cls(joints, m.lowerPositionLimit[iq].copy(), m.upperPositionLimit[iq].copy(),
                   velocity_scale * m.velocityLimit[iv], torque_scale * m.effortLimit[iv], **options)

    def violation(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray | None, mech) -> dict[str, float]:
        """Largest excess (>= 0 when violated) of samples q (N, nq), v (N, nv), tau (N, ntau) over the limits."""
        iq = [mech.joint_q_slice(j).start for j in self.joints]
        iv = [mech.joint_v_slice(j).start for j in self.joints]
        out = {"position": float(max((q[:, iq] - self.q_max).max(), (self.q_min - q[:, iq]).max())),
               "velocity": float((np.abs(v[:, iv]) - self.v_max).max())}
        if tau is not None and self.tau_max is not None:
            it = [int(mech.tau_columns(j)[0]) for j in self.joints]
            out["torque"] = float((np.abs(tau[:, it]) - self.tau_max).max())
        return out


def add_joint_limits(ctl, limits: JointLimits, name: str = "limits") -> list[str]:
    """Add the position, velocity and torque limits as QP inequalities; returns the statement names."""
    th = JointAngles(ctl.mech, limits.joints)
    k, h = float(limits.position_gain), float(limits.velocity_horizon)
    if k <= 0 or h <= 0:
        raise ControlkitError(f"add_joint_limits: position_gain ({k} 1/s) and velocity_horizon ({h} s) must be positive")
    a, v, q = acc(th), vel(th), pos(th)
    names = [f"{name}: position max", f"{name}: position min", f"{name}: velocity max", f"{name}: velocity min"]
    ctl.add_inequality(names[0], a + 2 * k * v + k * k * q <= k * k * np.asarray(limits.q_max, float))
    ctl.add_inequality(names[1], a + 2 * k * v + k * k * q >= k * k * np.asarray(limits.q_min, float))
    ctl.add_inequality(names[2], a + v / h <= np.asarray(limits.v_max, float) / h)
    ctl.add_inequality(names[3], a + v / h >= -np.asarray(limits.v_max, float) / h)
    if limits.tau_max is not None:
        for j, tmax in zip(limits.joints, limits.tau_max):
            tau = ctl.torque(j)
            ctl.add_inequality(f"{name}: torque {j}", tau <= float(tmax))
            ctl.add_inequality(f"{name}: torque {j} min", tau >= -float(tmax))
        names += [f"{name}: torque {j}" for j in limits.joints] + [f"{name}: torque {j} min" for j in limits.joints]
    return names


def posture_cost(ctl, name: str, joints: Sequence[str], posture, dt: float = 0.5, weight: float = 1.0) -> JointAngles:
    """Cost ``|qddot - qddot^PD|^2`` pulling ``joints`` toward ``posture`` (k,) rad, 1% in ``dt`` s.

    Placed beside hard task equations it acts only in their null space.
    """
    th = JointAngles(ctl.mech, joints)
    T = pd_time_constant(dt)
    ctl.add_cost(name, acc(th) + (2.0 / T) * vel(th) + (1.0 / T**2) * (pos(th) - np.asarray(posture, float)), weight)
    return th


def tracking_program(tool: str, path: Path, posture=None, *, posture_time: float = 0.5,
                     limits: JointLimits | None = None, orientation: np.ndarray | None = None,
                     orientation_time: float = 0.2, track_time: float = 1.0):
    """End-effector tracking by inverse dynamic control, for real manipulators.

    A control equation makes the origin of ``tool`` follow ``path`` (m); optionally a PD
    equation holds its orientation at ``orientation`` (3, 3) (1% in ``orientation_time`` s).
    A posture cost (``posture`` (nq,) rad, default the configuration at start; 1% in
    ``posture_time`` s) fixes the null space; ``limits`` adds joint position, velocity and
    torque inequalities. ``track_time`` (s) sets the feedback of the tracking equation
    against integration drift (``40 / track_time`` rad/s).
    """
    from controllers.primitives import orient_with_pd

    def program(ctl):
        mech = ctl.mech
        joints = [j for j in mech.actuated_joints if mech.joint_v_slice(j).stop - mech.joint_v_slice(j).start == 1]
        iq = [mech.joint_q_slice(j).start for j in joints]
        target = ctl.q[iq] if posture is None else np.asarray(posture, float)[iq]
        track(ctl, "end-effector path", ctl.point(tool), path, track_time)
        if orientation is not None:
            orient_with_pd(ctl, "end-effector orientation", tool, orientation, orientation_time)
        posture_cost(ctl, "posture", joints, target, posture_time)
        if limits is not None:
            add_joint_limits(ctl, limits)
        yield  # the statements stay in force after the program ends

    program.__name__ = "tracking"
    return program
