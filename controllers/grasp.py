"""A grasp written as a control program (thesis 7.2, Fig. 1.1): approach, close, squeeze, lift.

:func:`grasp_program` returns a coroutine for :meth:`sim.simulator.Simulator.add_program`
driving a :func:`robots.hand.hand` by torques assigned at every tick (the fingers are
torque-controlled, so what they press with is what the program says, not what a stiff
position loop would make of the contact):

1. **approach** — the palm's slider is servoed (PD with the hand's weight fed forward) down to
   the height where straight fingers reach the object's mid-height, fingers held open;
2. **close** — each finger's first hinge turns inward at a damped rate, the other two held
   straight, until a contact event on that finger's distal phalanx (the contact source makes
   its hinge at the isolated event time; the program sees it at its next tick); a finger that
   touched keeps pressing lightly while the others close;
3. **squeeze** — every finger's joint torques become ``J_tip^T f``: the tip pushes with
   ``squeeze`` newtons along ``n``, the horizontal direction from its tip to the object's
   axis, and across ``n`` an impedance (100 N/m, 1 N s/m) holds the tip where it was in the
   palm's frame when the squeeze began; held ``settle`` seconds;
4. **lift** — the palm rises by ``lift`` metres on a quintic path, the squeeze torques kept,
   then holds ``hold`` seconds.

The phases' start times are written to ``log`` (``{phase: t}``), and a ``grasp`` event is
logged at each.
"""
from __future__ import annotations

import numpy as np

from controlkit.quantities import ControlTorques

__all__ = ["grasp_program", "Grasp", "Quintic01"]

G = 9.81


def Quintic01(s: float) -> float:
    """The quintic blend 10 s^3 - 15 s^4 + 6 s^5 of s clipped to [0, 1] (0 -> 0, 1 -> 1, flat ends)."""
    s = min(max(s, 0.0), 1.0)
    return s**3 * (10 - 15 * s + 6 * s * s)


class Grasp:
    """The grasp of one built hand: its gains, its state, the torques of each phase and the program.

    Args: see :func:`grasp_program`.
    """

    KP_LIFT, KD_LIFT = 400.0, 30.0  # the slider's PD (N/m, N s/m)
    KP_F, KD_F = 0.6, 0.02  # finger joint PD (N m/rad, N m s/rad)
    K_TIP, D_TIP = 100.0, 1.0  # fingertip impedance across the squeeze direction (N/m, N s/m)
    OPEN = -0.35  # the open hand's first hinges (rad)

    def __init__(self, built, contacts, *, squeeze: float = 1.5, lift: float = 0.08, close_rate: float = 0.6,
                 settle: float = 0.15, lift_time: float = 0.4, hold: float = 0.3, approach_time: float = 0.5,
                 log: dict | None = None):
        mech, info = built.mechanism, built.info
        self.mech, self.info, self.contacts = mech, info, contacts
        self.squeeze, self.lift, self.close_rate = squeeze, lift, close_rate
        self.settle, self.lift_time, self.hold, self.approach_time = settle, lift_time, hold, approach_time
        self.log = {} if log is None else log
        self.fingers = info["joints"]
        joints = [j for js in self.fingers.values() for j in js]
        self.iv = {j: mech.joint_v_slice(j).start for j in joints}
        self.iq = {j: mech.joint_q_slice(j).start for j in joints}
        self.tcol = {j: int(mech.tau_columns(j)[0]) for j in joints}
        self.lift_q, self.lift_v = mech.joint_q_slice("lift").start, mech.joint_v_slice("lift").start
        self.lift_tau = int(mech.tau_columns("lift")[0])
        obj_joint = mech.joint_id("object_root")
        self.hand_mass = sum(mech.model.inertias[k].mass for k in range(1, obj_joint))
        self.obj_mass = mech.model.inertias[obj_joint].mass
        self.tip_frames = {i: mech.frame_id(info["tips"][i] + ".bottom") for i in self.fingers}
        self.obj_frame, self.palm_frame = mech.frame_id("object"), mech.frame_id("palm")
        self.lift_target, self.carry = 0.0, 0.0
        self.mode = {i: "open" for i in self.fingers}  # open | closing | touched | squeeze
        self.tip_offset: dict = {}

    def touching(self, i) -> bool:
        """Whether finger i's distal phalanx has a contact hinge with the object."""
        tip = self.info["tips"][i]
        return any(h.label in (f"{tip}/object", f"object/{tip}") for h in self.contacts.hinges.values())

    def _squeeze_torques(self, i, js, v, tau) -> None:
        mech = self.mech
        d = mech.kinematics()
        p = d.oMf[self.tip_frames[i]].translation
        c = d.oMf[self.obj_frame].translation
        n = np.array([c[0] - p[0], c[1] - p[1], 0.0])
        n /= max(np.linalg.norm(n), 1e-9)
        J = mech.frame_jacobian(self.tip_frames[i])[:3]
        # force along n; across n an impedance holding the tip where it was in the palm's frame
        ref = d.oMf[self.palm_frame].translation + self.tip_offset[i]
        P = np.eye(3) - np.outer(n, n)
        f = self.squeeze * n + P @ (self.K_TIP * (ref - p) - self.D_TIP * (J @ v))
        for j in js:
            tau[self.tcol[j]] = J[:, self.iv[j]] @ f - self.KD_F * v[self.iv[j]]

    def torques(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """All torques (ntau,) for the current phase at state (q, v)."""
        tau = np.zeros(self.mech.ntau)
        tau[self.lift_tau] = ((self.hand_mass + self.carry) * G + self.KP_LIFT * (self.lift_target - q[self.lift_q])
                              - self.KD_LIFT * v[self.lift_v])
        self.mech.set_state(q, v)
        kp, kd, iq, iv, tc = self.KP_F, self.KD_F, self.iq, self.iv, self.tcol
        for i, js in self.fingers.items():
            mode = self.mode[i]
            if mode == "squeeze":
                self._squeeze_torques(i, js, v, tau)
                continue
            for j in js[1:]:  # open, closing or touched: the outer two hinges held straight
                tau[tc[j]] = -kp * q[iq[j]] - kd * v[iv[j]]
            j1 = js[0]
            if mode == "open":
                tau[tc[j1]] = kp * (self.OPEN - q[iq[j1]]) - kd * v[iv[j1]]
            elif mode == "closing":  # a damped rate
                tau[tc[j1]] = 0.05 * (self.close_rate - v[iv[j1]])
            else:  # touched: press lightly while the others close
                tau[tc[j1]] = 0.02 - kd * v[iv[j1]]
        return tau

    def _phase(self, ctl, name: str) -> None:
        self.log[name] = ctl.t
        ctl.log(f"grasp: {name}", phase=name)

    def program(self, ctl):
        """The coroutine: approach, close, squeeze, lift (torques assigned at every tick)."""
        all_tau = ControlTorques(self.mech)

        def tick():
            ctl.assign("grasp torques", all_tau, self.torques(ctl.q, ctl.v))

        tick()
        self._phase(ctl, "approach")
        while ctl.t < self.log["approach"] + self.approach_time:
            tick()
            yield
        self._phase(ctl, "close")
        self.mode = {i: "closing" for i in self.fingers}
        while "closing" in self.mode.values() and ctl.t < self.log["close"] + 1.0:
            for i in self.fingers:
                if self.mode[i] == "closing" and self.touching(i):  # the contact event came since the last tick
                    self.mode[i] = "touched"
                    self.log[f"touch {i}"] = ctl.t
            tick()
            yield
        self._phase(ctl, "squeeze")
        self.mech.set_state(ctl.q, ctl.v)
        d = self.mech.kinematics()
        self.tip_offset = {i: d.oMf[f].translation - d.oMf[self.palm_frame].translation for i, f in self.tip_frames.items()}
        self.mode = {i: "squeeze" for i in self.fingers}
        while ctl.t < self.log["squeeze"] + self.settle:
            tick()
            yield
        self._phase(ctl, "lift")
        self.carry = self.obj_mass
        while ctl.t < self.log["lift"] + self.lift_time + self.hold:
            self.lift_target = self.lift * Quintic01((ctl.t - self.log["lift"]) / self.lift_time)
            tick()
            yield
        self._phase(ctl, "done")


def grasp_program(built, contacts, *, squeeze: float = 1.5, lift: float = 0.08, close_rate: float = 0.6,
                  settle: float = 0.15, lift_time: float = 0.4, hold: float = 0.3, approach_time: float = 0.5,
                  log: dict | None = None):
    """The grasp coroutine for a built hand (see the module docstring).

    Args:
        built: :func:`robots.hand.hand`'s result (``info`` names the joints and tips).
        contacts: the :class:`sim.contact.ContactSource` watching the hand and object.
        squeeze: normal force per fingertip (N).
        lift: how far the palm rises (m); lift_time: over how long (s).
        close_rate: the closing rate of each finger's first hinge (rad/s).
        settle: squeeze duration before lifting (s); hold: holding time after the lift (s);
            approach_time: how long the palm is given to come down (s).
        log: dict receiving the phase start times (s) and each finger's touch time (``touch i``).
    """
    return Grasp(built, contacts, squeeze=squeeze, lift=lift, close_rate=close_rate, settle=settle,
                 lift_time=lift_time, hold=hold, approach_time=approach_time, log=log).program
