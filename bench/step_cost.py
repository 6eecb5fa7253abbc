"""Cost of one derivative evaluation, split into Pinocchio kernels, assembly and solve.

For each model and case, measured in one run:
- ``kernel``: Pinocchio's own time for the kernels the case needs, called directly
  (crba + nonLinearEffects; plus forward kinematics and Jacobians when there are
  constraints or control equations);
- ``total``: controlkit's ``evaluate`` (state, kernels, assembly, solve), and its split;
- ``ratio`` = total / kernel. Target for the determinate case: at most 3;
- ``reference_us``, ``reference_ratio``: the same evaluation by the reference path
  (``EquationSet.evaluation = "reference"``; the total is the plan's, the default).

Two more rows time the whole-body servo of walking part 2 (``controllers.walking_fd``): one
``servo_evaluate`` (its problem solved by ``controllers.servo_solve``; cold QP) on the controller's own
model of the biped, with the equation set the servo
builds (centre-of-mass path, torso orientation, posture costs, planted feet's wrench limits,
torque limits), at the standing state: both feet planted, and one foot planted with the
swing foot's tasks (``track_point``, ``hold_orientation``) in force. Target: at most 300 us
(a 1 kHz servo and the simulation on one core). Their ``reference`` is the same tick by
``controlkit.dynamics.evaluate`` (the problem solved by ``controlkit.solver.solve``).

The kernel and the total are timed in alternating batches (best batch of each), so that
both see the same machine load; ``--repeat N`` takes more batches, and ``--clock cpu``
times the process's CPU time instead of wall time (robust when other jobs share the cores).

Run: ``.venv/bin/python bench/step_cost.py [--repeat N] [--clock cpu]``; writes
bench/results/step_cost.json.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

import controlkit  # noqa: E402,F401  (first: it sets BLAS to one thread before numpy loads)
from bench.common import table, write_json  # noqa: E402
from controlkit.constraints import WeldConstraint  # noqa: E402
from controlkit.dynamics import evaluate  # noqa: E402
from controlkit.equations import EquationSet  # noqa: E402
from controlkit.expressions import acc  # noqa: E402
from controlkit.quantities import ControlTorques, FramePoint  # noqa: E402
from controllers.whole_body import servo_evaluate  # noqa: E402


def models():
    import robots
    out = {"talos": robots.load("talos")}
    try:
        out["biped"] = robots.biped()
    except AttributeError:
        pass
    return out


def _mech(entry):
    return entry[0] if isinstance(entry, tuple) else getattr(entry, "mechanism", entry)


def cases(mech):
    """(name, equation set, needs kinematics) for the benchmark cases."""
    rng = np.random.default_rng(0)
    fwd = EquationSet()
    fwd.assign("torques", ControlTorques(mech), rng.standard_normal(mech.ntau))
    yield "forward dynamics (torques assigned)", fwd, False, []
    feet = [f for f in ("left_sole_link", "right_sole_link", "foot_l", "foot_r") if mech.model.existFrame(f)]
    welded = EquationSet()
    welded.assign("torques", ControlTorques(mech), rng.standard_normal(mech.ntau))
    yield "forward dynamics, feet welded", welded, True, feet
    inv = EquationSet()
    for i, f in enumerate(feet):
        inv.add_equation(f"foot {i}", acc(FramePoint(mech, f)) == 0.0)
    inv.add_cost("torques", ControlTorques(mech), 1e-3)
    yield "inverse dynamics + cost (feet held)", inv, True, []


class _Handle:
    """What the servo's program reads from its controller handle: the measured state and time.

    The servo is driven here without a simulator; its torque assignments go nowhere.
    """

    def __init__(self, mech, q: np.ndarray, v: np.ndarray, t: float = 0.0):
        self.mech, self.q, self.v, self.t = mech, q, v, t

    def assign(self, name, quantity, value) -> None:
        pass


def servo_cases():
    """(name, controller model, equation set, t (s), q, v) for the walking part 2 servo.

    Built as ``controllers.walking_fd.walker`` builds it, from the public API only.
    """
    import robots
    from controlkit.quantities import CenterOfMass, FrameOrientation
    from controllers.biped_model import thesis_biped
    from controllers.walking_fd import WalkPlan, WholeBody
    for one_foot in (False, True):
        built = robots.biped(with_ground=True)
        mech, cm = built.mechanism, robots.biped(with_ground=True).mechanism
        q, v = built.q0.copy(), np.zeros(mech.nv)
        mech.set_state(q, v, check=False)
        cm.set_state(q, v, check=False)
        heels = {s: FramePoint(mech, f"foot_{s}.heel").position(mech).copy() for s in "lr"}
        plan = WalkPlan(heels, CenterOfMass(cm).position(cm).copy(), 4)
        body = WholeBody(cm, thesis_biped(built), plan)
        t = plan.steps[0].lift if one_foot else 0.5
        ctl = _Handle(mech, q, v, t)
        body.plant(ctl, "l")
        body.plant(ctl, "r")
        if one_foot:  # the first step's swing foot is up: its heel and orientation are tasks
            side = plan.steps[0].side
            body.unplant(side)
            heel = heels[side] + np.array([0.0, 0.0, 0.02])
            body.track_point("heel", (f"foot_{side}.heel", None), lambda t, p=heel: (p, np.zeros(3), np.zeros(3)))
            body.hold_orientation("foot", f"foot_{side}", FrameOrientation(cm, f"foot_{side}").position(cm))
        next(body.program(ctl))  # the servo's first tick adds its costs and limits, and solves once
        name = "servo, one foot planted + swing tasks" if one_foot else "servo, both feet planted"
        yield name, cm, body.eqs, t, q, v


def measure_servo(repeat: int = 5, clock=time.perf_counter):
    """Rows for the walking part 2 servo cases (see the module docstring)."""
    rows = []
    for case, cm, eqs, t, q, v in servo_cases():
        m, d = cm.model, cm.model.createData()

        def kernels():
            pin.crba(m, d, q)  # noqa: B023 (timed within this iteration)
            pin.nonLinearEffects(m, d, q, v)  # noqa: B023 (timed within this iteration)
            pin.forwardKinematics(m, d, q, v, np.zeros(m.nv))  # noqa: B023 (timed within this iteration)
            pin.computeJointJacobians(m, d)  # noqa: B023 (timed within this iteration)
            pin.updateFramePlacements(m, d)  # noqa: B023 (timed within this iteration)

        def total():
            servo_evaluate(None, cm, eqs, t, q, v)  # noqa: B023 (timed within this iteration)

        def reference():  # the problem solved by controlkit.solver.solve (the generic path)
            evaluate(cm, eqs, t, q, v)  # noqa: B023 (timed within this iteration)

        rows.append(_row("biped (controller)", case, cm, eqs, kernels, total, repeat, clock, reference))
    return rows


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def best_times(fns, repeat: int, number: int = 200, clock=time.perf_counter) -> list[float]:
    """Best mean time (s) of each function over ``repeat`` rounds of interleaved batches."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = clock()
            for _ in range(number):
                fn()
            best[i] = min(best[i], (clock() - t0) / number)
    return best


def _row(model: str, case: str, mech, eqs, kernels, total, repeat: int, clock, reference=None) -> dict:
    """One table row: the kernel, the evaluation by the plan (the default) and by the reference path
    (``EquationSet.evaluation``), timed in interleaved batches; the split (pinocchio, assembly, solve)
    is the mean over one more batch of the plan's evaluations. ``reference``: another reference to time
    instead (the servo's: its problem solved by ``controlkit.solver.solve``)."""
    def reference_path():
        eqs.evaluation = "reference"
        try:
            total()
        finally:
            eqs.evaluation = "plan"

    reference = reference or reference_path

    k, tot, ref = best_times([kernels, total, reference], repeat, clock=clock)
    mech.times.__init__()
    for _ in range(200):
        total()
    T = mech.times
    n = T.calls
    return {"model": model, "case": case, "kernel_us": k * 1e6, "total_us": tot * 1e6,
            "pinocchio_us": T.pinocchio / n * 1e6, "assembly_us": T.assembly / n * 1e6,
            "solve_us": T.solve / n * 1e6, "ratio": tot / k, "reference_us": ref * 1e6, "reference_ratio": ref / k}


def measure(name, mech, repeat: int = 5, clock=time.perf_counter):
    q = pin.neutral(mech.model)
    v = np.random.default_rng(1).standard_normal(mech.nv) * 0.1
    rows = []
    m, d = mech.model, mech.model.createData()
    for case, eqs, kin, welds in cases(mech):
        for c in list(mech.constraints):
            mech.remove_constraint(c)
        mech.set_state(q, v)
        for i, f in enumerate(welds):
            mech.add_constraint(WeldConstraint(f"weld {i}", f))

        def kernels():
            pin.crba(m, d, q)
            pin.nonLinearEffects(m, d, q, v)
            if kin:  # noqa: B023 (timed within this iteration)
                pin.forwardKinematics(m, d, q, v, np.zeros(m.nv))
                pin.computeJointJacobians(m, d)
                pin.updateFramePlacements(m, d)

        def total():
            evaluate(mech, eqs, 0.0, q, v)  # noqa: B023 (timed within this iteration)

        rows.append(_row(name, case, mech, eqs, kernels, total, repeat, clock))
    for c in list(mech.constraints):
        mech.remove_constraint(c)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="batches of 200 calls per timing (best is kept)")
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall", help="wall time or process CPU time")
    args = ap.parse_args()
    rows = []
    for name, entry in models().items():
        rows += measure(name, _mech(entry), args.repeat, CLOCKS[args.clock])
    rows += measure_servo(args.repeat, CLOCKS[args.clock])
    print(table(rows, ["model", "case", "kernel_us", "total_us", "pinocchio_us", "assembly_us", "solve_us", "ratio",
                       "reference_us", "reference_ratio"]))
    path = write_json("step_cost", {"rows": rows, "clock": args.clock, "repeat": args.repeat,
                                    "target": "ratio <= 3 for the determinate case; servo total <= 300 us"})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
