"""Forward versus inverse dynamic control of one task: a table and overlay plots.

:func:`compare` runs a task (an end-effector trajectory) under

1. ``inverse`` — inverse dynamic control: the task's control equations and costs,
   integrated with the dynamics (solved at every derivative evaluation);
2. ``computed torque`` — direct control at a controller clock (1 kHz, 250 Hz,
   100 Hz by default): ``tau = rnea(q, v, a_d + kp (q_d - q) + kd (v_d - v))`` computed at
   each tick and held until the next, along the joint trajectory mode 1 produced;
3. ``computed torque, model error`` — the same at the fastest clock with a controller
   model whose task-chosen links are heavier (``mass_error``, +10% by default: mass and
   rotational inertia scaled about the same centre of mass);
4. ``joint PD + gravity`` — ``tau = g(q) + K (q_d - q) + D (v_d - v)`` at the fastest clock,
   with the same bandwidth: ``K = m w^2``, ``D = 2 m w``, ``m_j = 1 / (M(q0)^-1)_jj`` the
   joints' effective inertias.

On a mechanism held by constraints (the biped's feet welded to the ground) the forward
controllers use projected inverse dynamics (see :mod:`controllers.forward`): torques that
produce the constraint-consistent accelerations, up to the constraint forces.

Every run reports the end-effector tracking error against the task path (RMS and
max, m), the peak control torque (N m), the mechanical energy spent
``integral |tau . v| dt`` (J) and the controller's computing time per tick (s; for mode 1
a tick is one derivative evaluation: assembly + solve).

Tasks are registered by name in :data:`TASKS` (``redundant_arm``, ``panda_circle``, ``ur5_circle``,
``biped_stance``);
``main(argv)`` is the command line (``controlkit compare TASK [--out DIR]``).
"""
from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pinocchio as pin
from scipy.interpolate import CubicHermiteSpline

from controlkit.constraints import JointLock, WeldConstraint
from controlkit.errors import ControlkitError, UnknownNameError
from controlkit.quantities import FramePoint
from controllers.arm import (
    CirclePath,
    JointLimits,
    PathError,
    SolvedAccelerations,
    redundant_arm_program,
    smooth_ramp,
    tracking_program,
)
from controllers.forward import computed_torque, joint_pd_gravity
from sim.simulator import Simulator

DEFAULT_CLOCKS = (1e-3, 4e-3, 1e-2)  # s: 1 kHz, 250 Hz, 100 Hz


# ------------------------------------------------------------------ tasks
@dataclass
class TaskSetup:
    """One task instance, built fresh for each run.

    Args:
        mech: the simulated mechanism (fixed base, nq == nv).
        q0, v0: initial state (rad, rad/s), on the path's start.
        tool: end-effector frame; path: ``path(t) -> (p, v, a)`` (m, m/s, m/s^2).
        program: the inverse-dynamic control program (mode 1).
        duration: simulated time (s); dt: integration step of mode 1 (s).
        error_joints: joints whose links the model-error controller believes heavier.
        bandwidth: feedback bandwidth w (rad/s) of the joint-space controllers.
        limits: joint limits the task declares (checked and reported), or None.
        prepare: called with every run's simulator before it starts (e.g. to weld feet), or None.
    """

    mech: object
    q0: np.ndarray
    v0: np.ndarray
    tool: str
    path: Callable
    program: Callable
    duration: float
    dt: float = 1e-3
    error_joints: Sequence[str] = ()
    bandwidth: float = 20.0
    limits: JointLimits | None = None
    prepare: Callable | None = None


@dataclass
class Task:
    """A named task: ``build(duration=None) -> TaskSetup``."""

    name: str
    description: str
    build: Callable[..., TaskSetup]


#: the redundant arm's equal-angle start (rad) and its circle (m, s)
ARM_START = (0.3, 0.3, 0.4, 0.4, 0.4)
ARM_CIRCLE = dict(radius=0.25, tilt=math.pi / 4, turns=2.0, duration=3.0)


def arm_circle(p0: np.ndarray, t0: float, radius: float = 0.25, tilt: float = math.pi / 4, turns: float = 2.0,
               duration: float = 3.0) -> CirclePath:
    """The redundant arm's path: a circle through ``p0`` (m) whose centre lies ``radius`` toward the base axis.

    The circle's plane contains the radial direction; its normal is ``tilt`` rad from the
    horizontal tangent toward the vertical (0: a vertical plane through the base axis,
    pi/2: a horizontal plane), so for 0 < tilt < pi/2 the yaw and the pitch joints all move.
    Starts at ``t0`` (s), ``turns`` revolutions in ``duration`` s with a smooth start and stop.
    """
    p0 = np.asarray(p0, float)
    yaw = math.atan2(p0[1], p0[0])
    u = np.array([math.cos(yaw), math.sin(yaw), 0.0])
    side = np.array([-math.sin(yaw), math.cos(yaw), 0.0])
    normal = math.cos(tilt) * side + math.sin(tilt) * np.array([0.0, 0.0, 1.0])
    return CirclePath.through(p0, p0 - radius * u, normal, t0, duration, turns)


def redundant_arm_setup(duration: float | None = None) -> TaskSetup:
    """The redundant arm's tool circle (:data:`ARM_CIRCLE`) from :data:`ARM_START`; ``duration`` (s)
    of the circle, default the circle's own."""
    import robots
    built = robots.redundant_arm(ARM_START)
    mech = built.mechanism
    tool = built.info["tool"]
    p0 = FramePoint(mech, tool).position(mech).copy()
    T = ARM_CIRCLE["duration"] if duration is None else duration
    path = arm_circle(p0, 0.0, **{**ARM_CIRCLE, "duration": T})
    program = redundant_arm_program(tool, ["joint_3", "joint_4", "joint_5"], path, 0.0, "two_phase")
    return TaskSetup(mech, built.q0.copy(), np.zeros(mech.nv), tool, path, program, T, dt=1e-3,
                     error_joints=["joint_5"], bandwidth=20.0)


#: the real manipulators' circle: radius (m) about a centre offset along +y from the start, in
#: the plane normal to x, one turn in ``duration`` s with a smooth start and stop
CIRCLE = dict(radius=0.1, normal=(1.0, 0.0, 0.0), duration=2.0, turns=1.0)
#: per robot: tool frame, start configuration (None: example-robot-data's reference q0, rad)
#: and the joint whose link the model-error controller believes heavier
ROBOT_CIRCLES = {
    "panda": dict(tool="panda_hand_tcp", q0=None, error_joints=["panda_joint7"]),
    "ur5": dict(tool="tool0", q0=(0.0, -1.2, 1.5, -1.9, -1.57, 0.0), error_joints=["wrist_3_joint"]),
}


def circle_setup(robot: str = "panda", duration: float | None = None, posture_offset: dict | None = None,
                 velocity_scale: float = 1.0, torque_scale: float = 1.0, dt: float = 1e-3) -> TaskSetup:
    """A real manipulator's circle task (:data:`ROBOT_CIRCLES`): posture cost, URDF limits as inequalities.

    ``posture_offset`` moves the posture target of joints (``{joint: rad}``), e.g. past a
    limit to see the inequalities work; ``velocity_scale`` and ``torque_scale`` scale the
    URDF's velocity and torque limits. The Panda's gripper starts half open (0.02 m),
    away from its finger limits.
    """
    import robots
    if robot not in ROBOT_CIRCLES:
        raise UnknownNameError("circle robot", robot, list(ROBOT_CIRCLES))
    spec = ROBOT_CIRCLES[robot]
    mech = robots.load(robot)
    q0 = mech.q.copy() if spec["q0"] is None else np.array(spec["q0"], dtype=float)
    for j in ("panda_finger_joint1", "panda_finger_joint2"):
        if mech.model.existJointName(j):
            q0[mech.joint_q_slice(j).start] = 0.02
    mech.set_state(q0)
    tool = spec["tool"]
    p0 = FramePoint(mech, tool).position(mech).copy()
    c = CIRCLE
    T = c["duration"] if duration is None else duration
    path = CirclePath.through(p0, p0 + np.array([0.0, c["radius"], 0.0]), c["normal"], 0.0, T, c["turns"])
    posture = q0.copy()
    for j, dq in (posture_offset or {}).items():
        posture[mech.joint_q_slice(j).start] += dq
    limits = JointLimits.from_model(mech, velocity_scale=velocity_scale, torque_scale=torque_scale)
    program = tracking_program(tool, path, posture, posture_time=0.3, limits=limits)
    return TaskSetup(mech, q0, np.zeros(mech.nv), tool, path, program, T, dt=dt,
                     error_joints=spec["error_joints"], bandwidth=20.0, limits=limits)


def panda_setup(duration: float | None = None, **options) -> TaskSetup:
    """The Panda circle task (see :func:`circle_setup`)."""
    return circle_setup("panda", duration, **options)


def ur5_setup(duration: float | None = None, **options) -> TaskSetup:
    """The UR5 circle task (see :func:`circle_setup`)."""
    return circle_setup("ur5", duration, **options)


@dataclass
class SwayPath:
    """A point sways sideways and dips, and comes back to rest where it started.

    ``p(t) = p0 + sway sin(phi) y - squat (1 - cos phi) / 2 z``, ``phi = 2 pi cycles ramp((t - t0) / duration)``
    (quintic ramp: at rest at both ends); sway and squat in m, times in s.
    """

    p0: np.ndarray
    t0: float
    duration: float
    sway: float = 0.03
    squat: float = 0.04
    cycles: float = 1.0

    def __post_init__(self):
        self.p0 = np.asarray(self.p0, dtype=float)
        if self.duration <= 0:
            raise ControlkitError(f"SwayPath: duration must be positive, got {self.duration} s")

    def __call__(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s, ds, dds = smooth_ramp((t - self.t0) / self.duration)
        k = 2 * math.pi * self.cycles
        phi, w, al = k * s, k * ds / self.duration, k * dds / self.duration**2
        y, z = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0])
        d1 = self.sway * math.cos(phi) * y - 0.5 * self.squat * math.sin(phi) * z
        d2 = -self.sway * math.sin(phi) * y - 0.5 * self.squat * math.cos(phi) * z
        p = self.p0 + self.sway * math.sin(phi) * y - 0.5 * self.squat * (1 - math.cos(phi)) * z
        return p, d1 * w, d2 * w * w + d1 * al


#: the biped's stance task: the torso sways (m) and dips (m) once in ``duration`` s
BIPED_SWAY = dict(sway=0.03, squat=0.04, duration=1.5)


def biped_stance_program(tool: str, path: Callable):
    """Inverse dynamic control of the biped standing on welded feet: ``tool`` (the torso) follows ``path``.

    Control equations: the torso's origin tracks the path, its orientation is held (PD,
    exact from the start), and each knee is kept pointing forward (the PD of
    :func:`controllers.walking.keep_knee_forward`, fixing each leg's swivel about its
    hip-ankle line). With both feet welded and the toe joints held (8 free degrees of
    freedom) these 3 + 3 + 2 equations fix the accelerations; the 16 torques, redundant
    in the closed chain, are the least squared ones.
    """
    from controllers.primitives import orient_with_pd, track
    from controllers.walking import Leg, keep_knee_forward

    def program(ctl):
        R0 = ctl.value(ctl.orientation("torso"))
        track(ctl, "torso path", ctl.point(tool), path, 1.0)
        orient_with_pd(ctl, "torso upright", "torso", R0, 0.5)
        keep_knee_forward(ctl, Leg("l"))
        keep_knee_forward(ctl, Leg("r"))
        yield  # the statements stay in force after the program ends

    program.__name__ = "biped_stance"
    return program


def weld_feet(sim: Simulator) -> None:
    """The biped's magnetic shoes on both feet: each foot welded where it stands, its toe joint held."""
    sim.equations.critical_forms = False  # the welds are never redundant: skip the rank test per evaluation
    for side in ("l", "r"):
        sim.add_constraint(WeldConstraint(f"{side}-shoe", f"foot_{side}"), impulsive=False)
        sim.add_constraint(JointLock(f"{side}-toe-shoe", f"toe_joint_{side}"), impulsive=False)


def biped_stance_setup(duration: float | None = None, dt: float = 2e-3, **path_options) -> TaskSetup:
    """The thesis biped standing on both (welded) feet, its torso swaying and dipping (:data:`BIPED_SWAY`).

    ``path_options`` override the ``sway`` (m), ``squat`` (m) or ``cycles`` of :class:`SwayPath`;
    ``duration`` (s) the path's; ``dt`` (s) is mode 1's RK4 step. The model-error controller
    believes the torso (with the welded head: the free-flyer's body) heavier.
    """
    import robots
    built = robots.biped()
    mech = built.mechanism
    tool = "torso"
    p0 = FramePoint(mech, tool).position(mech).copy()
    opts = {**BIPED_SWAY, **path_options}
    T = opts.pop("duration")
    T = T if duration is None else duration
    path = SwayPath(p0, 0.0, T, **opts)
    return TaskSetup(mech, built.q0.copy(), np.zeros(mech.nv), tool, path, biped_stance_program(tool, path), T,
                     dt=dt, error_joints=["root_joint"], bandwidth=20.0, prepare=weld_feet)


TASKS: dict[str, Task] = {
    "redundant_arm": Task("redundant_arm", "thesis redundant arm: tilted circle, equal distal angles (two-phase cost)",
                          redundant_arm_setup),
    "panda_circle": Task("panda_circle", "Panda: end-effector circle, posture cost, joint limits as QP inequalities",
                         panda_setup),
    "ur5_circle": Task("ur5_circle", "UR5: end-effector circle, posture cost, joint limits as QP inequalities",
                       ur5_setup),
    "biped_stance": Task("biped_stance", "thesis biped on welded feet: the torso sways and dips (stance)",
                         biped_stance_setup),
}


def get_task(name: str) -> Task:
    """A registered task by name (UnknownNameError lists the names)."""
    if name not in TASKS:
        raise UnknownNameError("comparison task", name, list(TASKS))
    return TASKS[name]


# --------------------------------------------------------------- helpers
def heavier_model(model: pin.Model, joints: Sequence[str], mass_error: float) -> pin.Model:
    """A copy of ``model`` whose links on ``joints`` are ``1 + mass_error`` times heavier (same COM)."""
    m = pin.Model(model)
    for j in joints:
        if not m.existJointName(j):
            raise UnknownNameError("joint", j, list(m.names)[1:])
        jid = m.getJointId(j)
        I = m.inertias[jid]
        f = 1.0 + mass_error
        m.inertias[jid] = pin.Inertia(I.mass * f, I.lever.copy(), I.inertia * f)
    return m


@dataclass
class Reference:
    """A trajectory (configurations, rad/s, rad/s^2) interpolated from samples by cubic Hermite splines.

    Velocities and accelerations are splined componentwise. Configurations too when
    ``model`` is None or has one coordinate per degree of freedom; otherwise (free-flyers,
    spherical joints) on the configuration group: between samples ``q_k`` and ``q_k+1``,
    ``q(t) = q_k (+) delta(t)`` with ``delta`` the cubic Hermite from 0 (rate ``v_k``) to
    ``difference(q_k, q_k+1)`` (rate ``v_k+1`` carried into ``q_k``'s chart).
    """

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    model: pin.Model | None = None

    def __post_init__(self):
        t, keep = np.unique(self.t[::-1], return_index=True)  # the last sample of repeated times
        idx = len(self.t) - 1 - keep
        self.t, self.q, self.v, self.a = t, self.q[idx], self.v[idx], self.a[idx]
        self._group = self.model is not None and self.model.nq != self.model.nv
        if self._group:
            m, n = self.model, len(self.t)
            self._dq = np.array([pin.difference(m, self.q[k], self.q[k + 1]) for k in range(n - 1)])
            self._v1 = np.array([pin.dDifference(m, self.q[k], self.q[k + 1], pin.ARG1) @ self.v[k + 1]
                                 for k in range(n - 1)])
        else:
            self._q = CubicHermiteSpline(self.t, self.q, self.v, axis=0)
        self._v = CubicHermiteSpline(self.t, self.v, self.a, axis=0)
        self._a = self._v.derivative()

    def _clip(self, t: float) -> float:
        return min(max(t, self.t[0]), self.t[-1])

    def q_des(self, t: float) -> np.ndarray:
        """The configuration at ``t`` (s), held at the ends."""
        t = self._clip(t)
        if not self._group:
            return self._q(t)
        k = min(max(int(np.searchsorted(self.t, t, side="right")) - 1, 0), len(self.t) - 2)
        h = self.t[k + 1] - self.t[k]
        s = (t - self.t[k]) / h
        delta = ((s**3 - 2 * s**2 + s) * h * self.v[k] + (3 * s**2 - 2 * s**3) * self._dq[k]
                 + (s**3 - s**2) * h * self._v1[k])
        return pin.integrate(self.model, self.q[k], delta)

    def v_des(self, t: float) -> np.ndarray:
        """The velocity (nv,) at ``t`` (s)."""
        return self._v(self._clip(t))

    def a_des(self, t: float) -> np.ndarray:
        """The acceleration (nv,) at ``t`` (s)."""
        return self._a(self._clip(t))


def timed(fn: Callable, ticks: list) -> Callable:
    """Wrap a generator control program so the wall time (s) of each of its ticks is appended to ``ticks``."""

    def program(ctl):
        gen = fn(ctl)
        while True:
            t0 = time.perf_counter()
            try:
                req = gen.send(None)
            except StopIteration:
                return
            ticks.append(time.perf_counter() - t0)
            yield req

    program.__name__ = getattr(fn, "__name__", "program")
    return program


@dataclass
class Row:
    """One run of the comparison (SI units; ``clock`` s or None for continuous)."""

    mode: str
    label: str
    clock: float | None
    rms_error: float
    max_error: float
    peak_torque: float
    energy: float
    solve_time: float
    recording: object = field(repr=False, default=None)
    limit_violation: dict | None = None
    power: np.ndarray | None = field(repr=False, default=None)  # W: |tau . v| of the actuated joints per sample

    def as_dict(self) -> dict:
        """The row's numbers, without the recording."""
        return {k: getattr(self, k) for k in ("mode", "label", "clock", "rms_error", "max_error", "peak_torque",
                                              "energy", "solve_time", "limit_violation")}


def make_row(mode: str, label: str, clock, rec, setup: TaskSetup, solve_time: float) -> Row:
    """A table row from one run's recording: tracking error (m), peak torque (N m), energy spent (J);
    ``clock`` the controller period (s, None under inverse dynamics), ``solve_time`` (s) per tick."""
    err = rec.quantity("tracking error")[:, 0]
    t, tau, v = rec.t, rec.tau, rec.v[:, setup.mech.tau_index]
    power = np.abs(np.einsum("ij,ij->i", tau, v))
    energy = float(np.sum(0.5 * (power[1:] + power[:-1]) * np.diff(t))) if len(t) > 1 else 0.0
    viol = setup.limits.violation(rec.q, rec.v, rec.tau, setup.mech) if setup.limits is not None else None
    return Row(mode, label, clock, float(np.sqrt(np.mean(err**2))), float(err.max()),
               float(np.abs(tau).max()), energy, solve_time, rec, viol, power)


def task_simulator(setup: TaskSetup, dt: float) -> Simulator:
    """An rk4 simulator of the task's mechanism at step ``dt`` (s), recording the tool's tracking error (m)."""
    mech = setup.mech
    sim = Simulator(mech, setup.q0, setup.v0, dt=dt, integrator="rk4")
    tool = FramePoint(mech, setup.tool)
    sim.record_quantities.update({"tracking error": PathError(tool, setup.path, lambda: sim.t), "tool": tool,
                                  "a": SolvedAccelerations(mech)})
    for name, unit in (("tracking error", "m"), ("tool", "m"), ("a", "rad/s^2")):
        sim.recording.set_unit(name, unit)
    if setup.prepare is not None:
        setup.prepare(sim)
    return sim


def clock_label(clock: float) -> str:
    """A controller period (s) as its rate, ``"250 Hz"``."""
    return f"{1.0 / clock:g} Hz"


# ---------------------------------------------------------------- compare
def inverse_run(task: Task, duration: float | None = None) -> tuple[Row, Reference, TaskSetup]:
    """Mode 1: run ``task`` under inverse dynamic control (its own program, at its own step).

    Returns the row, the run as the :class:`Reference` the forward modes track, and the setup.
    """
    setup = task.build(duration)
    sim = task_simulator(setup, setup.dt)
    sim.add_program(setup.program)
    rec = sim.run(setup.duration)
    per_eval = (rec.stats["assembly_time"] + rec.stats["solve_time"]) / max(rec.stats["evaluations"], 1)
    row = make_row("inverse", "inverse dynamic control", None, rec, setup, per_eval)
    return row, Reference(rec.t, rec.q, rec.v, rec.quantity("a"), model=setup.mech.model), setup


def compare(task: str | Task, *, clocks: Sequence[float] = DEFAULT_CLOCKS, mass_error: float = 0.1,
            bandwidth: float | None = None, duration: float | None = None, forward_dt: float = 1e-3,
            out: str | Path | None = None, quiet: bool = False) -> list[Row]:
    """Run ``task`` under the four modes; print the table and write the overlay plot.

    Args:
        task: a :data:`TASKS` name or a :class:`Task`.
        clocks: controller periods (s) of mode 2; the first is used for modes 3 and 4.
        mass_error: relative mass error of the model-error controller's chosen links.
        bandwidth: joint-space feedback bandwidth (rad/s); default the task's.
        duration: simulated time (s); default the task's.
        forward_dt: integration step (s) of the forward-control runs (at most the fastest clock).
        out: folder for ``compare_<task>.png``; None: no plot.
        quiet: do not print the table.
    Returns:
        the rows, mode 1 first (each with its recording).
    """
    task = get_task(task) if isinstance(task, str) else task
    if not clocks:
        raise ControlkitError("compare: give at least one controller clock")
    if min(clocks) < forward_dt - 1e-15:
        raise ControlkitError(f"compare: forward_dt ({forward_dt} s) must not exceed the fastest clock ({min(clocks)} s)")
    first, ref, setup = inverse_run(task, duration)
    rows: list[Row] = [first]
    w = setup.bandwidth if bandwidth is None else bandwidth
    kp, kd = w * w, 2.0 * w

    def forward(label: str, mode: str, clock: float, make_program) -> None:
        s = task.build(duration)
        sim = task_simulator(s, forward_dt)
        ticks: list[float] = []
        sim.add_program(timed(make_program(s), ticks), period=clock)
        r = sim.run(s.duration)
        rows.append(make_row(mode, label, clock, r, s, float(np.mean(ticks)) if ticks else 0.0))

    for clock in clocks:
        forward(f"computed torque {clock_label(clock)}", "computed torque", clock,
                lambda s: computed_torque(ref.q_des, ref.v_des, ref.a_des, kp, kd))
    fast = clocks[0]
    forward(f"computed torque {clock_label(fast)}, +{100 * mass_error:g}% mass", "model error", fast,
            lambda s: computed_torque(ref.q_des, ref.v_des, ref.a_des, kp, kd,
                                      model=heavier_model(s.mech.model, s.error_joints, mass_error)))

    def pd(s):
        M = pin.crba(s.mech.model, s.mech.model.createData(), s.q0)
        m = 1.0 / np.diag(np.linalg.inv(M))[s.mech.tau_index]  # each actuated coordinate's effective inertia
        return joint_pd_gravity(ref.q_des, m * kp, m * kd, v_des=ref.v_des)

    forward(f"joint PD + gravity {clock_label(fast)}", "joint PD", fast, pd)
    if not quiet:
        print(format_table(rows, task.name))
    if out is not None:
        path = plot_comparison(rows, Path(out) / f"compare_{task.name}.png", title=task.description)
        if not quiet:
            print(f"wrote {path}")
    return rows


def format_table(rows: Sequence[Row], title: str = "") -> str:
    """The comparison as a fixed-width text table.

    With limits declared by the task, the last column is the largest excess of any sample
    over any joint limit (negative: the smallest margin; rad, rad/s or N m).
    """
    head = ["mode", "RMS error [m]", "max error [m]", "peak |tau| [N m]", "energy [J]", "solve/tick [us]"]
    limits = any(r.limit_violation for r in rows)
    if limits:
        head.append("limit excess")
    body = []
    for r in rows:
        cells = [r.label, f"{r.rms_error:.3e}", f"{r.max_error:.3e}", f"{r.peak_torque:.3f}", f"{r.energy:.4f}",
                 f"{1e6 * r.solve_time:.1f}"]
        if limits:
            cells.append(f"{max(r.limit_violation.values()):+.2e}" if r.limit_violation else "-")
        body.append(cells)
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]

    def line(cells):
        return "  ".join(c.ljust(wd) if i == 0 else c.rjust(wd) for i, (c, wd) in enumerate(zip(cells, widths)))

    out = [f"compare {title}".rstrip(), line(head), "  ".join("-" * wd for wd in widths)]
    out += [line(b) for b in body]
    return "\n".join(out)


def plot_comparison(rows: Sequence[Row], path: str | Path, title: str | None = None) -> Path:
    """Overlay plots of every run: tracking error (log), torque norm and power against time; PNG or SVG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
    fig = Figure(figsize=(13, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax_err, ax_tau, ax_pow = fig.subplots(1, 3)
    for r in rows:
        rec = r.recording
        err = np.maximum(rec.quantity("tracking error")[:, 0], 1e-16)
        ax_err.semilogy(rec.t, err, lw=1.0, label=r.label)
        ax_tau.plot(rec.t, np.linalg.norm(rec.tau, axis=1), lw=1.0, label=r.label)
        ax_pow.plot(rec.t, r.power, lw=1.0, label=r.label)
    for ax, lab in ((ax_err, "end-effector error [m]"), (ax_tau, "|tau| [N m]"), (ax_pow, "|tau . v| [W]")):
        ax.set_xlabel("t [s]")
        ax.set_ylabel(lab)
        ax.grid(True, lw=0.4, alpha=0.5)
    ax_err.legend(fontsize=7, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``controlkit compare TASK [--out DIR] [--duration S] [--mass-error F]``: print the table, write the plot."""
    p = argparse.ArgumentParser(prog="controlkit compare", description="forward versus inverse dynamic control of a task")
    p.add_argument("task", choices=sorted(TASKS), help="the task")
    p.add_argument("--out", default="out", help="folder for the overlay plot (default out)")
    p.add_argument("--duration", type=float, default=None, help="simulated time (s)")
    p.add_argument("--mass-error", type=float, default=0.1, help="relative mass error of the model-error controller")
    p.add_argument("--clocks", type=float, nargs="+", default=list(DEFAULT_CLOCKS),
                   help="controller periods (s) of the computed-torque runs")
    args = p.parse_args(argv)
    compare(args.task, clocks=args.clocks, mass_error=args.mass_error, duration=args.duration, out=args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
