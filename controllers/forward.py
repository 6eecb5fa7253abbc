"""Forward dynamic control: programs that compute joint torques at their own clock.

Both controllers read the measured state at each tick, compute torques with
the controller's own model (which may differ from the simulated one, to study
model error) and assign them; the simulator holds them until the next tick.

- :func:`joint_pd_gravity`: ``tau = g(q) + Kp (q_d - q) + Kd (v_d - v)``;
- :func:`computed_torque`: ``tau = rnea(q, v, a_d + Kp (q_d - q) + Kd (v_d - v))``.

Trajectories are callables of time returning arrays in the model's tangent
space (nv,), rad and rad/s; use them on fixed-base arms (nq == nv).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pinocchio as pin

from controlkit.errors import ControlkitError
from controlkit.quantities import ControlTorques

Trajectory = Callable[[float], np.ndarray]


def _controller_model(ctl, model: pin.Model | None) -> pin.Model:
    model = ctl.mech.model if model is None else model
    if model.nv != ctl.mech.nv or ctl.mech.ntau != ctl.mech.nv:
        raise ControlkitError(f"program {ctl.name!r}: these controllers need a fully actuated model with the "
                              f"mechanism's nv = {ctl.mech.nv} (got nv = {model.nv}, ntau = {ctl.mech.ntau})")
    return model


def joint_pd_gravity(q_des: Trajectory, kp, kd, v_des: Trajectory | None = None,
                     model: pin.Model | None = None):
    """A control program: joint-space PD with gravity compensation.

    Args:
        q_des, v_des: desired joint positions (rad) and velocities (rad/s) as functions of t (s).
        kp, kd: gains, scalars or (nv,) (N m / rad, N m s / rad).
        model: the controller's model (default the simulated one).
    """

    def program(ctl):
        m = _controller_model(ctl, model)
        data = m.createData()
        tau = ControlTorques(ctl.mech)
        while True:
            q, v, t = ctl.q, ctl.v, ctl.t
            vd = v_des(t) if v_des is not None else np.zeros(m.nv)
            u = pin.computeGeneralizedGravity(m, data, q) + kp * (q_des(t) - q) + kd * (vd - v)
            ctl.assign("joint pd", tau, u)
            yield

    program.__name__ = "joint_pd_gravity"
    return program


def computed_torque(q_des: Trajectory, v_des: Trajectory, a_des: Trajectory, kp, kd,
                    model: pin.Model | None = None):
    """A control program: computed torque through the controller model's inverse dynamics (rnea).

    Args:
        q_des, v_des, a_des: desired joint trajectory (rad, rad/s, rad/s^2) as functions of t (s).
        kp, kd: feedback gains (1/s^2, 1/s), scalars or (nv,).
        model: the controller's model (default the simulated one).
    """

    def program(ctl):
        m = _controller_model(ctl, model)
        data = m.createData()
        tau = ControlTorques(ctl.mech)
        while True:
            q, v, t = ctl.q, ctl.v, ctl.t
            a = a_des(t) + kp * (q_des(t) - q) + kd * (v_des(t) - v)
            ctl.assign("computed torque", tau, pin.rnea(m, data, q, v, a))
            yield

    program.__name__ = "computed_torque"
    return program
