"""The thesis biped walks straight ahead from standing (Fig. 6.5-6.9), by inverse dynamic control.

The walking program is :func:`controllers.walking.walk`; this script sets up the
simulation and reports it like the thesis' Fig. 6.6: heel trajectories, torso position
and orientation, knee and toe angles, knee and ankle torques (all torques are in
``recording.tau``), and an HTML replay with the traces of both heels.

Run: ``controlkit demo walking --seconds 4 --html --plot`` (or this file directly).
:func:`walking_statistics` computes what the acceptance of the walk asks for: steps
taken, heel-strike distances from their targets, heading drift, torso height spread,
constraint errors.
"""
import ctypes
import os

import numpy as np

import robots
from controlkit.quantities import ControlTorque, FrameOrientation, FramePoint, JointAngle
from controllers.gait import gait_with
from controllers.walking import THESIS_GAIT, walk
from controllers.walking_stats import RollPitchYaw, Stack, format_walking_statistics, walking_statistics  # noqa: F401 (bench/walking.py)
from sim.runner import Scenario, run_scenario
from sim.simulator import Simulator


def build(integrator: str = "rk4", dt: float = 0.01, steps: int | None = None, **gait) -> Scenario:
    """The walking scenario.

    Args:
        integrator: integrator name; rk4 with 10 ms steps is accurate here (the stiffest control
            equations have time constants of about 11 ms) and about twice faster than real time.
        dt: integration step (s).
        steps: stop walking after this many steps (default: walk on).
        gait: fields of :class:`controllers.gait.Gait` to change from the thesis' gait
            (``stride=0.4``, ``step_time``, ``clearance``, strike speeds; m, s, m/s).
    """
    gait = gait_with(THESIS_GAIT, **gait)
    _single_threaded_blas()
    built = robots.biped()
    mech = built.mechanism
    record = {
        "left heel": FramePoint(mech, "foot_l.heel"),
        "right heel": FramePoint(mech, "foot_r.heel"),
        "torso position": FramePoint(mech, "torso"),
        "torso roll pitch yaw": RollPitchYaw(FrameOrientation(mech, "torso")),
        "knee angles": Stack("knee angles", [JointAngle(mech, "knee_l"), JointAngle(mech, "knee_r")]),
        "toe angles": Stack("toe angles", [JointAngle(mech, "toe_joint_l"), JointAngle(mech, "toe_joint_r")]),
        "knee torques": Stack("knee torques", [ControlTorque(mech, "knee_l"), ControlTorque(mech, "knee_r")]),
        "ankle pitch torques": Stack("ankle pitch torques", [ControlTorque(mech, "ankle_l"),
                                                              ControlTorque(mech, "ankle_r")], component=1),
        "constraint error": _ConstraintError(),
    }
    # project=True keeps the welds exact (errors ~1e-12) at 10 ms steps
    sim = Simulator(mech, built.q0, built.v0, dt=dt, integrator=integrator, project=True, record=record,
                    rtol=1e-6, atol=1e-8)
    # the shoes' welds are never redundant: skip the per-evaluation rank test of critical forms
    sim.equations.critical_forms = False
    units = {"left heel": "m", "right heel": "m", "torso position": "m", "torso roll pitch yaw": "rad",
             "knee angles": "rad", "toe angles": "rad", "knee torques": "N m", "ankle pitch torques": "N m",
             "constraint error": "m, rad"}
    for name, unit in units.items():
        sim.recording.set_unit(name, unit)
    sim.add_program(lambda ctl: walk(ctl, steps, gait), name="walk")

    panels = [
        ("left heel", 0, "left heel x"), ("right heel", 0, "right heel x"), ("torso position", 0, "torso x"),
        ("left heel", 2, "left heel z"), ("right heel", 2, "right heel z"), ("torso position", 2, "torso z"),
        ("torso roll pitch yaw", 0, "torso roll"), ("torso roll pitch yaw", 1, "torso pitch"),
        ("torso roll pitch yaw", 2, "torso yaw"),
        ("knee angles", 0, "left knee"), ("knee angles", 1, "right knee"), ("torso position", 1, "torso y"),
        ("toe angles", 0, "left toe joint"), ("toe angles", 1, "right toe joint"),
        ("constraint error", 0, "largest constraint error"),
        ("knee torques", 0, "left knee torque"), ("knee torques", 1, "right knee torque"),
        ("ankle pitch torques", 0, "left ankle pitch torque"), ("ankle pitch torques", 1, "right ankle pitch torque"),
    ]
    return Scenario("walking", "the thesis biped walking (Fig. 6.5-6.9)", sim, 20.0,
                    model={"factory": "robots:biped", "kwargs": {}}, panels=panels,
                    html={"traces": {"left heel": "left heel", "right heel": "right heel"}},
                    summary=lambda rec: format_walking_statistics(walking_statistics(rec)))


# ------------------------------------------------------------------ one BLAS thread
def _single_threaded_blas() -> None:
    """Limit the OpenBLAS libraries already loaded (numpy's, scipy's) to one thread.

    The matrices here are tiny (22 x 40); with OpenBLAS's default of one thread per core,
    its threads spin and wait on each other and the walk runs about 5 x slower (scipy's
    triangular solves in the weld projection take 2.5 ms instead of 10 us). Setting
    ``OPENBLAS_NUM_THREADS=1`` before numpy loads does the same; the command line imports
    numpy before this script, hence this call into the loaded libraries (Linux only; a
    no-op elsewhere or when the variable is set).
    """
    if os.environ.get("OPENBLAS_NUM_THREADS") or not os.path.exists("/proc/self/maps"):
        return
    with open("/proc/self/maps") as maps:
        libraries = {line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line}
    for path in libraries:
        lib = ctypes.CDLL(path)
        for symbol in ("openblas_set_num_threads", "scipy_openblas_set_num_threads",
                       "scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_"):
            if hasattr(lib, symbol):
                getattr(lib, symbol)(1)
                break


# ------------------------------------------------------------------ recorded quantities
class _ConstraintError:
    """Largest position error (m or rad) and velocity error of the active constraints."""

    name = "constraint error"

    def position(self, mech):
        cons = list(mech.constraints.values())
        if not cons:
            return np.zeros(2)
        v = mech.v
        return np.array([max(float(np.abs(c.error()).max()) for c in cons),
                         max(float(np.abs(c.jacobian() @ v).max()) for c in cons)])


if __name__ == "__main__":
    run_scenario(build(), out="out", html="out/walking.html", plot="out/walking.png")
