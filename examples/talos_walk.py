"""PAL's Talos walks by forward dynamics on real contact, through the thesis biped's walking code.

The same :func:`controllers.walking_fd.walker` as ``examples/walking_fd.py``: the phases of Fig.
6.9 drive a 1 kHz whole-body QP on the controller's own model of the robot (every joint: legs,
torso, arms, head; a posture cost keeps the arms and torso where they stand; the URDF's effort
limits bound the torques), and the simulator holds the torques and integrates the forward
dynamics, the soles touching the ground through unilateral contacts with Coulomb friction
(mu 0.8), no welds. What is Talos' is in :func:`controllers.biped_model.talos_biped` (a few
names; mass, leg length, sole and torque limits read from the model) and :func:`robots.talos.talos`
(the URDF with a box per sole and a ground).

Run: ``controlkit demo talos_walk --seconds 6 --html --plot``; options (``--set NAME=VALUE``):
``steps``, ``mass_error`` (the controller's model off by this share in every link's mass),
``friction``, ``push`` (a lateral push on the base: ``(t0, duration, force)`` s, s, N) and any
:class:`controllers.gait.Gait` field (``stride=0.25``, ``step_time``, ``turn``, ...).
"""
import numpy as np
import pinocchio as pin

from controllers.biped_model import talos_biped
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
from robots.talos import talos
from sim.contact import enable_contacts
from sim.runner import Scenario, run_scenario
from sim.simulator import Simulator

STEPS = 17  # 1.2 s of weight shift, then one step per second: 20 s of walking and standing
MU = 0.8
#: Talos' walk: 0.2 m strides (the thesis biped's demo: 0.15), the default timing
TALOS_GAIT = Gait(stride=0.2)
FEET = {"left_sole_link": "left sole", "right_sole_link": "right sole"}
BASE = "base_link"


def build(integrator: str = "semi_implicit_euler", dt: float = 1e-3, mass_error: float = 0.0,
          steps: int = STEPS, friction: float = MU, push: tuple | None = None, **gait) -> Scenario:
    """The Talos walking scenario.

    Args:
        integrator: integrator name; dt: integration step (s), at most the servo's 1 ms period.
        mass_error: relative error of every link's mass (and inertia) in the controller's model.
        steps: how many steps the walking program plans.
        friction: the ground's Coulomb coefficient (the servo keeps counting on mu 0.8).
        push: ``(t0, duration, force)``: a force (N, along +y, world) on the base from t0 for
            duration (s).
        gait: fields of :class:`controllers.gait.Gait` to change from ``TALOS_GAIT``.
    """
    gait = gait_with(TALOS_GAIT, **gait)
    built = talos(with_ground=True)
    mech = built.mechanism
    model = talos(with_ground=True).mechanism  # the controller's own model of the robot
    if mass_error:
        for j in range(1, model.model.njoints):
            I = model.model.inertias[j]
            model.model.inertias[j] = pin.Inertia(I.mass * (1 + mass_error), I.lever.copy(), I.inertia * (1 + mass_error))
    biped = talos_biped(mech)
    record = contact_walk_quantities(mech, biped, knees=("leg_left_4_joint", "leg_right_4_joint"),
                                     ankle_pitch=("leg_left_5_joint", "leg_right_5_joint"))
    sim = Simulator(mech, built.q0, np.zeros(mech.nv), dt=dt, integrator=integrator, record=record,
                    record_every=max(1, round(0.01 / dt)), external_force=None if push is None else Push(mech, *push))
    servo, plan = walker(sim, biped, model, steps, gait=gait, mu=MU)
    src = enable_contacts(sim, friction=friction, pairs=[(f.geom, "ground") for f in biped.feet.values()])
    for f in biped.feet.values():
        sim.record_quantities[f"{f.frame} contact force"] = src.force_probe(sim, f.geom, "ground")
    for name, unit in contact_walk_units(biped).items():
        sim.recording.set_unit(name, unit)
    panels = contact_walk_panels(biped, "base")
    title = "Talos walking by forward dynamics on real contact (1 kHz QP)"
    if mass_error:
        title += f", the controller's model {mass_error:+.0%} in mass"
    return Scenario("talos_walk", title, sim, 20.0,
                    model={"factory": "robots.talos:talos", "kwargs": {"with_ground": True}}, panels=panels,
                    html={"traces": {"left heel": "left heel", "right heel": "right heel"}},
                    summary=lambda rec: format_contact_walking_statistics(
                        walking_statistics(rec), extra=[("servo (1 kHz QP)", servo_time(servo, rec))]),
                    info={"servo": servo, "plan": plan, "contacts": src, "biped": biped})


class Push:
    """A horizontal force on the base (N, along world y) from ``t0`` for ``duration`` (s): the
    simulator's ``external_force`` (generalized force J^T f at the base origin)."""

    def __init__(self, mech, t0: float, duration: float, force: float):
        self.fid = mech.frame_id(BASE)
        self.t0, self.t1, self.f = float(t0), float(t0) + float(duration), np.array([0.0, float(force), 0.0])

    def __call__(self, t: float, mech) -> np.ndarray:
        if not self.t0 <= t < self.t1:
            return np.zeros(mech.nv)
        return mech.frame_jacobian(self.fid)[:3].T.dot(self.f)


def walking_statistics(rec) -> dict:
    """Acceptance figures of the walk (:func:`controllers.walking_stats.contact_walking_statistics`)."""
    return contact_walking_statistics(rec, FEET, fallen_height=0.8)


if __name__ == "__main__":
    run_scenario(build(), out="out", html="out/talos_walk.html", plot="out/talos_walk.png")
