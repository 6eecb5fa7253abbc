"""Whole-body QP control for forward dynamics on real contact: the stance of walking part 2.

At its own clock the controller reads the measured state, puts it on *its own model* of the
robot (which may be wrong: a 10% heavier torso) and solves one QP with controlkit's solver.
Unknowns: accelerations, joint torques and each planted foot's contact wrench. Equalities: the
model's motion equations and the planted feet's no-acceleration rows. Inequalities: the
wrenches' unilateral, friction-pyramid and centre-of-pressure limits (:class:`FootContact`) and
the torque limits. Costs: the tasks — the torso's position follows a path and its orientation
is held (PD with feedforward), every actuated joint is pulled toward a posture — and, where the
tasks leave freedom (the internal force between two feet), the least squared torques. The
torques are assigned to the simulated robot and held until the next tick; the simulator
integrates forward dynamics, the feet touching the ground through its own unilateral contacts
with Coulomb friction (``sim.contact``), never welded.

Units: m, s, rad, N, N m. Gains: ``kp`` in 1/s^2, ``kd`` in 1/s.
"""
from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pinocchio as pin

from controlkit.constraints import WeldConstraint
from controlkit.equations import EquationSet, build_problem
from controlkit.errors import ControlkitError
from controlkit.expressions import TimeFunction, acc, orientation_error, pos, vel
from controlkit.friction import FrictionLaw
from controlkit.qp import QPWorkspace
from controlkit.quantities import ConstraintForce, ControlTorques, FrameOrientation, FramePoint, JointAccelerations
from controllers.servo_solve import servo_solve

__all__ = ["FootContact", "StanceGains", "whole_body_stance", "servo_evaluate"]

Path = Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]]


def _skew(r: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


class FootContact(WeldConstraint):
    """A planted foot in the controller's model: held still, its wrench within what the ground gives.

    Args:
        name: constraint name.
        frame: the foot's frame (its sole is the frame's local -z face).
        half_length, half_width: the sole rectangle's half sizes along the frame's x and y (m).
        sole_depth: depth of the sole below the frame origin (m).
        mu: friction coefficient; the pyramid uses mu / sqrt(2) (inside Coulomb's cone).
        min_force: least normal force (N) the foot must carry.
        max_force: most normal force (N) it may carry (default unbounded); a program may change
            ``max_force`` between solves to load or unload the foot gradually.

    The weld's multiplier is the ground's wrench on the foot (force, moment about the frame
    origin, world axes). :meth:`force_inequalities` bounds it in the foot's axes at the sole
    centre: ``f_z >= min_force``, ``|f_x|, |f_y| <= mu' f_z``, the centre of pressure inside the
    sole (``|m_y| <= half_length f_z``, ``|m_x| <= half_width f_z``) and the torsion
    ``|m_z| <= mu' min(half sizes) f_z``, and ``f_z <= max_force`` when that is finite.
    """

    def __init__(self, name: str, frame: str, half_length: float, half_width: float, sole_depth: float,
                 mu: float, min_force: float = 0.0, max_force: float = math.inf):
        super().__init__(name, frame)
        if not (half_length > 0 and half_width > 0 and sole_depth >= 0 and mu > 0 and min_force >= 0):
            raise ControlkitError(f"FootContact {name!r}: sizes (m) and mu must be positive, got "
                                  f"{half_length}, {half_width}, {sole_depth}, {mu}, min_force {min_force}")
        self.a, self.b, self.depth, self.mu = half_length, half_width, sole_depth, mu / math.sqrt(2.0)
        self.mu_coulomb = mu  # Coulomb's coefficient; the pyramid's mu' = mu / sqrt(2) is inside its cone
        self.min_force, self.max_force = min_force, max_force
        self.load = math.nan  # N: the normal force at the last solve (the servo sets it)
        self.nominal_load = 0.0  # N: a foot's share when the feet share the weight evenly

    def force_inequalities(self):
        Rt = self._placements()[0].rotation.T
        # foot-axes force f_l = R^T f and moment at the sole centre m_l = R^T (m - r x f), with
        # r = R r_l (r_l = (0, 0, -depth)) and R^T [r]x = [r_l]x R^T: the limits K [f_l; m_l] are
        # [K_f - K_m [r_l]x, K_m] blockdiag(R^T, R^T), two constant (k, 3) blocks times R^T
        B = self._blocks()  # (2k, 3): row 2i is limit i's force block, row 2i + 1 its moment block
        k = len(B) // 2
        finite = math.isfinite(self.max_force)
        C = np.empty((k + finite, 6))
        np.dot(B, Rt, out=C[:k].reshape(2 * k, 3))  # (a contiguous view: row i is [force, moment])
        d = np.zeros(k + finite)
        d[0] = -self.min_force
        if finite:
            C[k, :3] = Rt[2]  # the foot-axes normal force
            C[k, 3:] = 0.0
            d[-1] = self.max_force
        return C, d

    def _blocks(self) -> np.ndarray:
        """``[K_f - K_m [r_l]x, K_m]`` of :meth:`_template` ``K = [K_f, K_m]`` (constant), each limit's
        two (3,) blocks in consecutive rows: (2k, 3)."""
        B = self.__dict__.get("_B")
        if B is None:
            K = self._template()
            force = K[:, :3] - K[:, 3:] @ _skew(np.array([0.0, 0.0, -self.depth]))
            B = self._B = np.stack([force, K[:, 3:]], axis=1).reshape(-1, 3)
        return B

    def _template(self) -> np.ndarray:
        """K (11, 6): the limits' rows on the foot-axes wrench [f_l; m_l] (constant)."""
        K = self.__dict__.get("_K")
        if K is None:
            fx, fy, fz, mx, my, mz = np.eye(6)
            a, b, mu = self.a, self.b, self.mu
            # the force's friction pyramid, |f_x|, |f_y| <= mu' f_z (Coulomb's law, controlkit.friction)
            pyramid = FrictionLaw.pyramid_rows(fz[:3], np.eye(3)[:2], self.mu_coulomb)  # +x, +y, -x, -y
            rows = [-fz]
            for k, s in enumerate((1.0, -1.0)):
                fr = [np.concatenate([pyramid[2 * k + i], np.zeros(3)]) for i in (0, 1)]
                rows += [fr[0], fr[1], s * my - a * fz, s * mx - b * fz, s * mz - mu * min(a, b) * fz]
            K = self._K = np.array(rows)
        return K

    def sole_wrench(self, mech):
        """The ground's wrench on the foot at the sole centre, for the foot flat: an expression
        (6,) (force N, moment N m, world axes); its moment's x and y are zero when the centre of
        pressure is mid-sole. Regularized with :meth:`share_weights`."""
        d = self.depth
        # m_sole = m_origin - r x f with r = (0, 0, -depth) from the frame origin to the sole centre
        P = np.eye(6)
        P[3, 1], P[4, 0] = -d, d
        return P @ ConstraintForce(mech, self.name)

    def share_weights(self, weights: np.ndarray) -> np.ndarray:
        """The :meth:`sole_wrench` regularization's weights (6,) for this solve: ``weights`` with the
        tangential force and moment rows divided by the foot's share of the load at the last solve
        (``load / nominal_load``, set by the servo; 1 until then, at least 5%). It then shares a
        horizontal force or a moment between feet in proportion to their loads: equal friction use
        and equal centre-of-pressure offsets. Equal shares would put a lightly loaded foot's centre
        of pressure at its sole's edge and its friction at the cone (a foot unloading before it
        lifts carried as much sideways force as the other: it rocked, and slid with a wrong model)."""
        k = 1.0
        if math.isfinite(self.load) and self.nominal_load > 0:
            k = 1.0 / max(self.load / self.nominal_load, 0.05)
        f0, f1, f2, m0, m1, m2 = weights  # (six numbers, every tick: one array)
        return np.array([f0 * k, f1 * k, f2, m0 * k, m1 * k, m2 * k])


def servo_evaluate(workspace: QPWorkspace | None, mech, eqs: EquationSet, t: float, q: np.ndarray, v: np.ndarray):
    """One servo tick's solve: what :func:`controlkit.dynamics.evaluate` does for ``eqs`` on ``mech`` at
    time ``t`` (s), configuration q (nq,) and velocity v (nv,) — the state set, the problem built and
    solved, ``mech.solution``, ``mech.problem`` and ``mech.times`` updated — with the problem solved
    by :func:`controllers.servo_solve.servo_solve` (well conditioned; the same QP) and its QP
    warm-started from ``workspace`` when given (the servo's own, kept from tick to tick: the rows
    active at the last tick are tried first, :class:`controlkit.qp.QPWorkspace`). Returns the Solution."""
    T = mech.times
    t0 = _time.perf_counter()
    mech.set_state(q, v, check=False)
    mech.bias_forces()
    if mech.constraints:
        mech.kinematics()
    t1 = _time.perf_counter()
    p = build_problem(mech, eqs, t)
    t2 = _time.perf_counter()
    sol = servo_solve(p, workspace)
    t3 = _time.perf_counter()
    T.pinocchio += t1 - t0
    T.assembly += t2 - t1
    T.solve += t3 - t2
    T.calls += 1
    mech.solution, mech.problem = sol, p
    mech.solved_for = (mech.state_version, id(eqs), eqs.version)
    return sol


def note_loads(sol, feet) -> None:
    """After a solve: each planted :class:`FootContact` remembers its normal force (N)."""
    for c in feet:
        c.load = float(sol.lam[c.name][2])


@dataclass
class StanceGains:
    """Task gains and weights of :func:`whole_body_stance` (kp 1/s^2, kd 1/s; weights unitless)."""

    torso_kp: float = 400.0
    torso_kd: float = 40.0
    torso_weight: float = 10.0
    orientation_kp: float = 400.0
    orientation_kd: float = 40.0
    orientation_weight: float = 10.0
    # the posture fixes what the tasks leave free (each leg's swivel about its hip-ankle line);
    # lighter, it lets the swivel drift until the feet roll; this heavy, it costs the torso task
    # about 1 mm on a 4 mm dip (the dip bends the knees 0.05 rad away from the posture)
    posture_kp: float = 100.0
    posture_kd: float = 20.0
    posture_weight: float = 0.1
    # what the tasks leave free (how two feet share the load, internal forces) is chosen by a
    # regularization on each planted foot's wrench at its sole centre: it never bends the tasks,
    # only these weights' ratios matter. Moments cost far more than forces, so a roll or pitch
    # moment is carried by moving load between the feet and the centres of pressure stay near
    # mid-sole (the least squared torques would put them at the soles' edges, a foot about to tip)
    wrench_weights: tuple = (1.0, 1.0, 1.0, 50.0, 50.0, 50.0)  # per N, N, N, N m, N m, N m


def _stance_equations(cm, planted: list, torso: str, path: Path, g: StanceGains, torque_limit: float,
                      ref: dict) -> EquationSet:
    """The stance servo's statements on the controller's model ``cm``: each planted foot's wrench
    shared by load, the torso's path and uprightness, the posture pull to ``ref["a"]`` (updated
    each tick) as costs, and the torque bounds (N m)."""
    eqs = EquationSet(kp=0.0, kv=0.0, critical_forms=False)  # feet: no acceleration, no pull-back
    weight = float(np.sum([i.mass for i in cm.model.inertias])) * float(-cm.model.gravity.linear[2])
    for c in planted:
        c.nominal_load = weight / len(planted)
        eqs.add_regularization(f"{c.name} wrench", c.sole_wrench(cm), c.share_weights(g.wrench_weights))
    p, o = FramePoint(cm, torso), FrameOrientation(cm, torso)
    R0 = o.position(cm)

    def torso_ref(t):
        pd, vd, ad = path(t)
        return ad + g.torso_kd * vd + g.torso_kp * pd

    eqs.add_cost("torso path", acc(p) + g.torso_kd * vel(p) + g.torso_kp * pos(p) - TimeFunction(torso_ref, "torso path"),
                 g.torso_weight)
    eqs.add_cost("torso upright", acc(o) + g.orientation_kd * vel(o) + g.orientation_kp * orientation_error(o, R0),
                 g.orientation_weight)
    joints = JointAccelerations(cm)  # every joint but the free flyer
    eqs.add_cost("posture", joints - TimeFunction(lambda t: ref["a"][joints.v_index], "posture"), g.posture_weight)
    tau = ControlTorques(cm)
    eqs.add_inequality("torque limit", tau <= torque_limit)
    eqs.add_inequality("torque limit (negative)", tau >= -torque_limit)
    return eqs


def whole_body_stance(model_mech, feet: Sequence[dict], torso: str, path: Path, *, torque_limit: float = 300.0,
                      gains: StanceGains | None = None, posture: np.ndarray | None = None):
    """A control program: both feet planted, the torso's origin follows ``path``, held upright.

    Args:
        model_mech: the controller's :class:`~controlkit.mechanism.Mechanism` of the robot (a
            separate instance, possibly with wrong masses); the program adds its feet to it.
        feet: one dict per planted foot: ``frame``, ``half_length``, ``half_width``,
            ``sole_depth`` (m), ``mu``.
        torso: the torso's frame; ``path(t) -> (p, v, a)`` its origin's reference (m, m/s, m/s^2).
        torque_limit: |tau| bound (N m) on every actuated coordinate.
        gains: task gains and weights; posture: the configuration (nq,) the joints are pulled to
            (default the state at the first tick).
    Each tick records the solve in ``program.last`` (the controller model's Solution); its QP is
    warm-started from the last tick's active rows (``program.qp``, a :class:`~controlkit.qp.QPWorkspace`).
    """
    g = gains or StanceGains()
    cm = model_mech

    def program(ctl):
        q0 = ctl.q.copy() if posture is None else np.asarray(posture, dtype=float)
        cm.set_state(ctl.q, ctl.v, check=False)
        for f in feet:
            c = FootContact(f"stance {f['frame']}", f["frame"], f["half_length"], f["half_width"],
                            f["sole_depth"], f["mu"])
            c.bind(cm)
            cm.constraints[c.name] = c
        planted = [c for c in cm.constraints.values() if isinstance(c, FootContact)]
        ref = {"a": np.zeros(cm.nv)}
        eqs = _stance_equations(cm, planted, torso, path, g, torque_limit, ref)
        model = cm.model
        out = ControlTorques(ctl.mech)
        while True:
            q, v = ctl.q, ctl.v
            ref["a"] = g.posture_kp * pin.difference(model, q, q0) - g.posture_kd * v
            for c in planted:
                eqs.set_weight(f"{c.name} wrench", c.share_weights(g.wrench_weights))
            sol = servo_evaluate(program.qp, cm, eqs, ctl.t, q, v)
            note_loads(sol, planted)
            program.last = sol
            ctl.assign("whole-body torques", out, sol.tau)
            yield

    program.__name__ = "whole_body_stance"
    program.last = None
    program.qp = QPWorkspace()
    return program
