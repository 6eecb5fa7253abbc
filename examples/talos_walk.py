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

from controlkit.quantities import ControlTorque, FrameOrientation, FramePoint, JointAngle
from controllers.biped_model import talos_biped
from controllers.gait import Gait, gait_with
from controllers.walking_fd import walker
from controllers.walking_stats import RollPitchYaw, Stack, contact_walking_statistics, format_contact_walking_statistics
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
    feet = biped.feet
    record = {
        "left heel": FramePoint(mech, *feet["l"].heel),
        "right heel": FramePoint(mech, *feet["r"].heel),
        "left sole": FramePoint(mech, feet["l"].frame),
        "right sole": FramePoint(mech, feet["r"].frame),
        "torso position": FramePoint(mech, BASE),
        "torso roll pitch yaw": RollPitchYaw(FrameOrientation(mech, BASE)),
        "knee angles": Stack("knee angles", [JointAngle(mech, "leg_left_4_joint"), JointAngle(mech, "leg_right_4_joint")]),
        "knee torques": Stack("knee torques", [ControlTorque(mech, "leg_left_4_joint"),
                                               ControlTorque(mech, "leg_right_4_joint")]),
        "ankle pitch torques": Stack("ankle pitch torques", [ControlTorque(mech, "leg_left_5_joint"),
                                                             ControlTorque(mech, "leg_right_5_joint")]),
    }
    sim = Simulator(mech, built.q0, np.zeros(mech.nv), dt=dt, integrator=integrator, record=record,
                    record_every=max(1, round(0.01 / dt)), external_force=None if push is None else Push(mech, *push))
    servo, plan = walker(sim, biped, model, steps, gait=gait, mu=MU)
    src = enable_contacts(sim, friction=friction, pairs=[(f.geom, "ground") for f in feet.values()])
    for f in feet.values():
        sim.record_quantities[f"{f.frame} contact force"] = src.force_probe(sim, f.geom, "ground")
    units = {"left heel": "m", "right heel": "m", "left sole": "m", "right sole": "m", "torso position": "m",
             "torso roll pitch yaw": "rad", "knee angles": "rad", "knee torques": "N m",
             "ankle pitch torques": "N m", "left_sole_link contact force": "N", "right_sole_link contact force": "N"}
    for name, unit in units.items():
        sim.recording.set_unit(name, unit)
    panels = [
        ("left heel", 0, "left heel x"), ("right heel", 0, "right heel x"), ("torso position", 0, "base x"),
        ("left heel", 2, "left heel z"), ("right heel", 2, "right heel z"), ("torso position", 2, "base z"),
        ("torso roll pitch yaw", 0, "base roll"), ("torso roll pitch yaw", 1, "base pitch"),
        ("torso position", 1, "base y"),
        ("left_sole_link contact force", 0, "left sole normal force"),
        ("right_sole_link contact force", 0, "right sole normal force"),
        ("knee angles", 0, "left knee"),
        ("knee torques", 0, "left knee torque"), ("knee torques", 1, "right knee torque"),
        ("ankle pitch torques", 0, "left ankle pitch torque"),
    ]
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


def servo_time(servo, rec) -> str:
    """The servo's own solves (on its model: not in the run's solve/assembly/kernel lines), in words."""
    wall = servo.cm.times.total
    share = wall / rec.stats["wall_time"] if rec.stats.get("wall_time") else 0.0
    return f"{servo.solves} solves, {1e6 * wall / max(servo.solves, 1):.0f} us each, {wall:.3f} s ({share:.0%} of wall time)"


if __name__ == "__main__":
    run_scenario(build(), out="out", html="out/talos_walk.html", plot="out/talos_walk.png")
