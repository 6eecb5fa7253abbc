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
from controllers.biped_model import thesis_biped
from controllers.gait import Gait, gait_with
from controllers.walking_fd import walker
from controllers.walking_stats import (
    contact_walk_panels,
    contact_walk_quantities,
    contact_walk_units,
    contact_walking_statistics,
    format_contact_walking_statistics,
    servo_time,
)
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
    biped = thesis_biped(built)
    record = contact_walk_quantities(mech, biped, knees=("knee_l", "knee_r"), ankle_pitch=("ankle_l", "ankle_r"),
                                     ankle_component=1)
    # recorded every 10 ms (events and the last step always): the servo runs every 1 ms
    sim = Simulator(mech, built.q0, np.zeros(mech.nv), dt=dt, integrator=integrator, record=record,
                    record_every=max(1, round(0.01 / dt)))
    servo, plan = walker(sim, biped, model, steps, gait=gait, mu=MU)
    src = enable_contacts(sim, friction=mu, pairs=[(f.geom, "ground") for f in biped.feet.values()])
    for f in biped.feet.values():
        sim.record_quantities[f"{f.frame} contact force"] = src.force_probe(sim, f.geom, "ground")
    for name, unit in contact_walk_units(biped).items():
        sim.recording.set_unit(name, unit)
    panels = contact_walk_panels(biped, "torso")
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


if __name__ == "__main__":
    run_scenario(build(), out="out", html="out/walking_fd.html", plot="out/walking_fd.png")
