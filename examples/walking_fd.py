"""The thesis biped walks by forward dynamics on real contact: a 1 kHz whole-body QP, no welds.

The walking program is :func:`controllers.walking_fd.walk` (the phases of Fig. 6.9) driving the
whole-body servo :class:`controllers.walking_fd.WholeBody`, which computes the joint torques from
its own model of the robot at 1 kHz; the simulator holds them between ticks and integrates the
forward dynamics, the soles touching the ground through unilateral contacts with Coulomb
friction (mu 0.8): heel strikes are impacts and contact events, lift-offs are contacts broken.

Run: ``controlkit demo walking_fd --seconds 6 --html --plot`` (or this file directly).
``build(mass_error=0.1)`` (``--set mass_error=0.1``) makes the controller's model of the torso
10% heavier than the robot; the gait's fields are options too (``--set stride=0.2``,
:class:`controllers.gait.Gait`).
:func:`walking_statistics` computes what the acceptance asks for: steps, heel-strike errors,
heading drift, torso height and orientation, how far each standing foot slid, and whether the
heel strikes were impacts and contacts.
"""
import numpy as np
import pinocchio as pin

import robots
from controlkit.quantities import ControlTorque, FrameOrientation, FramePoint, JointAngle
from controllers.biped_model import thesis_biped
from controllers.gait import Gait, gait_with
from controllers.walking_fd import walker
from controllers.walking_stats import RollPitchYaw, Stack, contact_walking_statistics, format_contact_walking_statistics
from sim.contact import enable_contacts
from sim.runner import Scenario, run_scenario
from sim.simulator import Simulator

STEPS = 17  # 1.2 s of weight shift, then one step per second: 20 s of walking and standing
FEET = {"foot_l": "left sole", "foot_r": "right sole"}
MU = 0.8


def build(integrator: str = "semi_implicit_euler", dt: float = 1e-3, mass_error: float = 0.0,
          steps: int = STEPS, mu: float = MU, **gait) -> Scenario:
    """The walking scenario.

    Args:
        integrator: integrator name; dt: integration step (s), at most the servo's 1 ms period.
            Semi-implicit Euler at 1 ms, as the servo's clock: the torques change every step, and
            rk4's three more evaluations per step change the walk by less than a millimetre
            (tests/test_walking_fd.py compares them).
        mass_error: relative error of the controller's model of the torso's mass (and inertia).
        steps: how many steps the walking program plans.
        mu: the soles' friction coefficient on the ground (static and kinetic); the servo's
            friction pyramid keeps its own 0.8.
        gait: fields of :class:`controllers.gait.Gait` to change (``stride=0.2``, ``step_time=0.5``,
            ``double_support``, ``clearance``, ``com_height``, ...; m, s).
    """
    gait = gait_with(Gait(), **gait)
    built = robots.biped(with_ground=True)
    mech = built.mechanism
    model = robots.biped(with_ground=True).mechanism  # the controller's own model of the robot
    if mass_error:
        j = model.model.getJointId("root_joint")
        I = model.model.inertias[j]
        model.model.inertias[j] = pin.Inertia(I.mass * (1 + mass_error), I.lever.copy(), I.inertia * (1 + mass_error))
    record = {
        "left heel": FramePoint(mech, "foot_l.heel"),
        "right heel": FramePoint(mech, "foot_r.heel"),
        "left sole": FramePoint(mech, "foot_l"),
        "right sole": FramePoint(mech, "foot_r"),
        "torso position": FramePoint(mech, "torso"),
        "torso roll pitch yaw": RollPitchYaw(FrameOrientation(mech, "torso")),
        "knee angles": Stack("knee angles", [JointAngle(mech, "knee_l"), JointAngle(mech, "knee_r")]),
        "knee torques": Stack("knee torques", [ControlTorque(mech, "knee_l"), ControlTorque(mech, "knee_r")]),
        "ankle pitch torques": Stack("ankle pitch torques", [ControlTorque(mech, "ankle_l"),
                                                             ControlTorque(mech, "ankle_r")], component=1),
    }
    # recorded every 10 ms (events and the last step always): the servo runs every 1 ms
    sim = Simulator(mech, built.q0, np.zeros(mech.nv), dt=dt, integrator=integrator, record=record,
                    record_every=max(1, round(0.01 / dt)))
    servo, plan = walker(sim, thesis_biped(built), model, steps, gait=gait, mu=MU)
    src = enable_contacts(sim, friction=mu, pairs=[(foot, "ground") for foot in FEET])
    for foot in FEET:
        sim.record_quantities[f"{foot} contact force"] = src.force_probe(sim, foot, "ground")
    units = {"left heel": "m", "right heel": "m", "left sole": "m", "right sole": "m", "torso position": "m",
             "torso roll pitch yaw": "rad", "knee angles": "rad", "knee torques": "N m",
             "ankle pitch torques": "N m", "foot_l contact force": "N", "foot_r contact force": "N"}
    for name, unit in units.items():
        sim.recording.set_unit(name, unit)
    panels = [
        ("left heel", 0, "left heel x"), ("right heel", 0, "right heel x"), ("torso position", 0, "torso x"),
        ("left heel", 2, "left heel z"), ("right heel", 2, "right heel z"), ("torso position", 2, "torso z"),
        ("torso roll pitch yaw", 0, "torso roll"), ("torso roll pitch yaw", 1, "torso pitch"),
        ("torso position", 1, "torso y"),
        ("foot_l contact force", 0, "left sole normal force"), ("foot_r contact force", 0, "right sole normal force"),
        ("knee angles", 0, "left knee"),
        ("knee torques", 0, "left knee torque"), ("knee torques", 1, "right knee torque"),
        ("ankle pitch torques", 0, "left ankle pitch torque"),
    ]
    title = "the thesis biped walking by forward dynamics on real contact (1 kHz QP)"
    if mass_error:
        title += f", the controller's torso model {mass_error:+.0%} in mass"
    return Scenario("walking_fd", title,
                    sim, 20.0, model={"factory": "robots:biped", "kwargs": {"with_ground": True}}, panels=panels,
                    html={"traces": {"left heel": "left heel", "right heel": "right heel"}},
                    summary=lambda rec: format_contact_walking_statistics(
                        walking_statistics(rec), extra=[("servo (1 kHz QP)", servo_time(servo, rec))]),
                    info={"servo": servo, "plan": plan, "contacts": src})


def walking_statistics(rec) -> dict:
    """Acceptance figures of the walk (:func:`controllers.walking_stats.contact_walking_statistics`)."""
    return contact_walking_statistics(rec, FEET)


def metrics(rec) -> dict:
    """One walk as a sweep's row (``controlkit sweep walking_fd``): fell, steps, worst heel-strike
    error (m), worst stance slip (m), torso roll and pitch (deg), heading drift (deg)."""
    s = walking_statistics(rec)
    return {k: s[k] for k in ("fell", "steps", "max_strike_error", "max_stance_slip", "max_roll_deg",
                              "max_pitch_deg", "heading_drift_deg", "torso_height_mean")}


def servo_time(servo, rec) -> str:
    """The servo's own solves (on its model: not in the run's solve/assembly/kernel lines), in words."""
    wall = servo.cm.times.total
    share = wall / rec.stats["wall_time"] if rec.stats.get("wall_time") else 0.0
    return f"{servo.solves} solves, {1e6 * wall / max(servo.solves, 1):.0f} us each, {wall:.3f} s ({share:.0%} of wall time)"


if __name__ == "__main__":
    run_scenario(build(), out="out", html="out/walking_fd.html", plot="out/walking_fd.png")
