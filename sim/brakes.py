"""Joint brakes: friction that slides, then sticks; the stick is a momentum-consistent joint lock.

A brake on a one-degree-of-freedom joint is off until it is engaged (``Brakes.engage_at``).
Engaged on a moving joint it **slides**: kinetic friction ``-T_k s`` (N m, joint side; a
motor-side brake torque times the gear ratio) with ``s`` the sign of the joint's velocity when
the slide began, added to the simulator's external force. When the joint's velocity reaches
zero (a velocity-kind event, isolated in time) the brake **sticks**: the joint is locked with
the momentum-consistent transition of :func:`sim.locking.lock_joint` (seed 002; the joint's
velocity is zero to the event tolerance there, so the jump is that small residual, taken
consistently). A stuck brake holds while its lock's torque stays within the static capacity
``T_s``; beyond it (an acceleration-kind event) the joint is unlocked and slides again, in the
direction the unbalanced torque drives it.

Each transition is logged: ``brake`` (engaged), ``lock`` (by the locking module), ``stick``,
``slip``.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from controlkit.errors import ModelError

from .events import ACCELERATION, VELOCITY, EventSource
from .locking import lock_joint, lock_name, unlock_joint

__all__ = ["Brakes", "add_brakes"]


class Brakes:
    """Brakes on joints of a simulated mechanism.

    Args:
        sim: the simulator.
        kinetic: ``{joint: T_k}`` sliding friction torque (N m, joint side).
        static: ``{joint: T_s}`` holding capacity (N m); default ``1.25 T_k``.
        formulation: the lock's formulation (``redundant``, ``projected``, ``minimal``).
        tolerance: time tolerance of the stick and slip events (s).
    """

    def __init__(self, sim, kinetic: Mapping[str, float], static: Mapping[str, float] | None = None,
                 formulation: str = "redundant", tolerance: float = 1e-9):
        mech = sim.mech
        self.sim, self.formulation = sim, formulation
        self.kinetic = {j: float(t) for j, t in kinetic.items()}
        self.static = {j: float((static or {}).get(j, 1.25 * t)) for j, t in self.kinetic.items()}
        self.iv = {}
        for j, t in self.kinetic.items():
            vs = mech.joint_v_slice(j)
            if vs.stop - vs.start != 1:
                raise ModelError(f"brake on {j!r}: the joint needs one degree of freedom")
            if not (t > 0 and self.static[j] >= t):
                raise ModelError(f"brake on {j!r}: need 0 < kinetic torque <= static capacity (N m), got {t}, {self.static[j]}")
            self.iv[j] = vs.start
        self.state = {j: "off" for j in self.kinetic}  # off | sliding | stuck
        self.sign = {j: 0.0 for j in self.kinetic}
        self.history: list[tuple[float, str, str]] = []  # (time s, joint, what)
        self._previous = sim.external_force
        sim.external_force = self._force
        self.stick_source = _Stick(self, tolerance)
        self.slip_source = _Slip(self, tolerance)
        sim.add_source(self.stick_source)
        sim.add_source(self.slip_source)

    # ------------------------------------------------------------- forces
    def _force(self, t, mech):
        g = np.zeros(mech.nv) if self._previous is None else np.array(self._previous(t, mech), dtype=float)
        for j, st in self.state.items():
            if st == "sliding":
                g[self.iv[j]] -= self.sign[j] * self.kinetic[j]
        return g

    def sliding(self) -> list[str]:
        """Joints whose brake slides now."""
        return [j for j, s in self.state.items() if s == "sliding"]

    def stuck(self) -> list[str]:
        """Joints whose brake holds now."""
        return [j for j, s in self.state.items() if s == "stuck"]

    def holding_torque(self, joint: str) -> float:
        """The torque (N m) a stuck brake exerts in the last solve."""
        return float(self.sim.mech.solution.lam[lock_name(joint)][0])

    # ------------------------------------------------------------- transitions
    def engage_at(self, t: float, joint: str) -> None:
        """Engage ``joint``'s brake at simulation time t (s)."""
        if joint not in self.kinetic:
            raise ModelError(f"no brake on joint {joint!r}; brakes: {', '.join(self.kinetic)}")
        self.sim.at(t, lambda sim: self._engage(joint))

    def _engage(self, joint: str) -> None:
        sim = self.sim
        if self.state[joint] != "off":
            return
        v = float(sim.v[self.iv[joint]])
        self.history.append((sim.t, joint, "engage"))
        sim.log("brake", f"brake {joint} engaged at {v:.6g} rad/s", joint=joint, velocity=v)
        if v == 0.0:
            self._stick(joint)
        else:
            self.state[joint], self.sign[joint] = "sliding", float(np.sign(v))
            sim.set_state()

    def _stick(self, joint: str) -> None:
        sim = self.sim
        v = float(sim.v[self.iv[joint]])
        lock_joint(sim, joint, formulation=self.formulation)
        self.state[joint], self.sign[joint] = "stuck", 0.0
        sim.solve_now()
        tau = self.holding_torque(joint)
        self.history.append((sim.t, joint, "stick"))
        sim.log("stick", f"brake {joint} sticks (velocity {v:.3g} rad/s, holding {tau:.6g} N m)",
                joint=joint, velocity=v, holding=tau, capacity=self.static[joint])
        if abs(tau) > self.static[joint]:
            self._slip(joint, tau)

    def _slip(self, joint: str, tau: float) -> None:
        sim = self.sim
        unlock_joint(sim, joint)
        # the lock held the joint against the rest of the forces: they drive it the other way
        self.state[joint], self.sign[joint] = "sliding", float(-np.sign(tau))
        self.history.append((sim.t, joint, "slip"))
        sim.log("slip", f"brake {joint} slips (holding {tau:.6g} N m > {self.static[joint]:.6g})",
                joint=joint, holding=tau, capacity=self.static[joint])
        sim.set_state()


class _Stick(EventSource):
    """Velocity events: a sliding brake's joint velocity reaches zero."""

    name, kind = "brake stick", VELOCITY

    def __init__(self, brakes: Brakes, tolerance: float):
        self.brakes, self.tolerance = brakes, tolerance

    def guards(self, sim, t, q, v):
        b = self.brakes
        return np.array([b.sign[j] * v[b.iv[j]] for j in b.sliding()])

    def handle(self, sim, t, fired):
        joints = self.brakes.sliding()
        for i in np.asarray(fired, dtype=int):
            self.brakes._stick(joints[i])

    def active(self):
        return bool(self.brakes.sliding())


class _Slip(EventSource):
    """Acceleration events: a stuck brake's holding torque reaches its static capacity."""

    name, kind = "brake slip", ACCELERATION

    def __init__(self, brakes: Brakes, tolerance: float):
        self.brakes, self.tolerance = brakes, tolerance

    def guards(self, sim, t, q, v):
        b = self.brakes
        stuck = b.stuck()
        if not stuck:
            return np.zeros(0)
        sim.accelerations_at(t, q, v)
        return np.array([b.static[j] - abs(b.holding_torque(j)) for j in stuck])

    def handle(self, sim, t, fired):
        b = self.brakes
        stuck = b.stuck()
        sim.accelerations_at(t, sim.q, sim.v)
        torques = {j: b.holding_torque(j) for j in stuck}
        for i in np.asarray(fired, dtype=int):
            b._slip(stuck[i], torques[stuck[i]])

    def active(self):
        return bool(self.brakes.stuck())


def add_brakes(sim, kinetic: Mapping[str, float], static: Mapping[str, float] | None = None,
               formulation: str = "redundant", tolerance: float = 1e-9) -> Brakes:
    """Put brakes on joints of a simulated mechanism (see :class:`Brakes`)."""
    return Brakes(sim, kinetic, static, formulation, tolerance)
