"""A grasp written as a control program (thesis 7.2, Fig. 1.1): approach, close, squeeze, lift.

:func:`grasp_program` returns a coroutine for :meth:`sim.simulator.Simulator.add_program`
driving a :func:`robots.hand.hand` by torques assigned at every tick (the fingers are
torque-controlled, so what they press with is what the program says, not what a stiff
position loop would make of the contact):

1. **approach** — the palm's slider is servoed (PD with the hand's weight fed forward) down to
   the height where straight fingers reach the object's mid-height, fingers held open;
2. **close** — each finger's first hinge turns inward at a damped rate, the other two held
   straight, until a contact event on that finger's distal phalanx (``ctl.until`` on the
   contact source's hinges: isolated in time like any event); a finger that touched keeps
   pressing lightly while the others close;
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

__all__ = ["grasp_program", "Quintic01"]

G = 9.81


def Quintic01(s: float) -> float:
    """The quintic blend 10 s^3 - 15 s^4 + 6 s^5 of s clipped to [0, 1] (0 -> 0, 1 -> 1, flat ends)."""
    s = min(max(s, 0.0), 1.0)
    return s**3 * (10 - 15 * s + 6 * s * s)


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
        log: dict receiving the phase start times (s) and the fingers' touch times.
    """
    mech, info = built.mechanism, built.info
    log = {} if log is None else log
    fingers = info["joints"]
    iv = {j: mech.joint_v_slice(j).start for js in fingers.values() for j in js}
    iq = {j: mech.joint_q_slice(j).start for js in fingers.values() for j in js}
    tcol = {j: int(mech.tau_columns(j)[0]) for js in fingers.values() for j in js}
    lift_q, lift_v, lift_tau = mech.joint_q_slice("lift").start, mech.joint_v_slice("lift").start, int(mech.tau_columns("lift")[0])
    obj_v = mech.joint_v_slice("object_root")
    hand_mass = sum(mech.model.inertias[k].mass for k in range(1, mech.model.njoints)
                    if k < mech.model.joints[mech.joint_id("object_root")].id)
    obj_mass = mech.model.inertias[mech.joint_id("object_root")].mass
    tip_frames = {i: mech.frame_id(info["tips"][i] + ".bottom") for i in fingers}
    obj_frame = mech.frame_id("object")
    state = {"lift_target": 0.0, "carry": 0.0, "mode": {i: "open" for i in fingers}}
    KP_LIFT, KD_LIFT = 400.0, 30.0
    KP_F, KD_F = 0.6, 0.02  # finger joint PD (N m/rad, N m s/rad)
    K_TIP, D_TIP = 100.0, 1.0  # fingertip impedance across the squeeze direction (N/m, N s/m)
    palm_frame = mech.frame_id("palm")

    def touching(i) -> bool:
        tip = info["tips"][i]
        return any(h.label in (f"{tip}/object", f"object/{tip}") for h in contacts.hinges.values())

    def torques(ctl):
        q, v = ctl.q, ctl.v
        tau = np.zeros(mech.ntau)
        tau[lift_tau] = ((hand_mass + state["carry"]) * G + KP_LIFT * (state["lift_target"] - q[lift_q])
                         - KD_LIFT * v[lift_v])
        mech.set_state(q, v)
        for i, js in fingers.items():
            mode = state["mode"][i]
            if mode == "squeeze":
                d = mech.kinematics()
                p = d.oMf[tip_frames[i]].translation
                c = d.oMf[obj_frame].translation
                n = np.array([c[0] - p[0], c[1] - p[1], 0.0])
                n /= max(np.linalg.norm(n), 1e-9)
                J = mech.frame_jacobian(tip_frames[i])[:3]
                # force along n; across n an impedance holding the tip where it was in the palm's frame
                ref = d.oMf[palm_frame].translation + state["tip_offset"][i]
                P = np.eye(3) - np.outer(n, n)
                f = squeeze * n + P @ (K_TIP * (ref - p) - D_TIP * (J @ v))
                for j in js:
                    tau[tcol[j]] = J[:, iv[j]] @ f - KD_F * v[iv[j]]
                continue
            # open / closing / touched: j2, j3 straight; j1 open, closing at a rate, or pressing lightly
            for j in js[1:]:
                tau[tcol[j]] = -KP_F * q[iq[j]] - KD_F * v[iv[j]]
            j1 = js[0]
            if mode == "open":
                tau[tcol[j1]] = KP_F * (-0.35 - q[iq[j1]]) - KD_F * v[iv[j1]]
            elif mode == "closing":
                tau[tcol[j1]] = 0.05 * (close_rate - v[iv[j1]])
            else:
                tau[tcol[j1]] = 0.02 - KD_F * v[iv[j1]]
        return tau

    def phase(ctl, name):
        log[name] = ctl.t
        ctl.log(f"grasp: {name}", phase=name)

    def program(ctl):
        all_tau = ControlTorques(mech)
        ctl.assign("grasp torques", all_tau, torques(ctl))
        phase(ctl, "approach")
        while ctl.t < log["approach"] + approach_time:
            ctl.assign("grasp torques", all_tau, torques(ctl))
            yield
        phase(ctl, "close")
        for i in fingers:
            state["mode"][i] = "closing"
        t_close = ctl.t
        while any(m == "closing" for m in state["mode"].values()) and ctl.t < t_close + 1.0:
            for i in fingers:
                if state["mode"][i] == "closing" and touching(i):
                    state["mode"][i] = "touched"
                    log[f"touch {i}"] = ctl.t
            ctl.assign("grasp torques", all_tau, torques(ctl))
            yield
        phase(ctl, "squeeze")
        mech.set_state(ctl.q, ctl.v)
        d = mech.kinematics()
        state["tip_offset"] = {i: d.oMf[tip_frames[i]].translation - d.oMf[palm_frame].translation for i in fingers}
        for i in fingers:
            state["mode"][i] = "squeeze"
        t0 = ctl.t
        while ctl.t < t0 + settle:
            ctl.assign("grasp torques", all_tau, torques(ctl))
            yield
        phase(ctl, "lift")
        t0 = ctl.t
        state["carry"] = obj_mass
        while ctl.t < t0 + lift_time + hold:
            state["lift_target"] = lift * Quintic01((ctl.t - t0) / lift_time)
            ctl.assign("grasp torques", all_tau, torques(ctl))
            yield
        phase(ctl, "done")
        log["object velocity"] = ctl.v[obj_v].copy()

    return program
