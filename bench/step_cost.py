"""Cost of one derivative evaluation, split into Pinocchio kernels, assembly and solve.

For each model and case, measured in one run:
- ``kernel``: Pinocchio's own time for the kernels the case needs, called directly
  (crba + nonLinearEffects; plus forward kinematics and Jacobians when there are
  constraints or control equations);
- ``total``: controlkit's ``evaluate`` (state, kernels, assembly, solve), and its split;
- ``ratio`` = total / kernel. Target for the determinate case: at most 3.

Run: ``.venv/bin/python bench/step_cost.py``; writes bench/results/step_cost.json.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import best_time, table, write_json  # noqa: E402
from controlkit.constraints import WeldConstraint  # noqa: E402
from controlkit.dynamics import evaluate  # noqa: E402
from controlkit.equations import EquationSet  # noqa: E402
from controlkit.expressions import acc  # noqa: E402
from controlkit.quantities import ControlTorques, FramePoint  # noqa: E402


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


def measure(name, mech):
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
            if kin:
                pin.forwardKinematics(m, d, q, v, np.zeros(m.nv))
                pin.computeJointJacobians(m, d)
                pin.updateFramePlacements(m, d)

        k = best_time(kernels)
        mech.times.__init__()
        tot = best_time(lambda: evaluate(mech, eqs, 0.0, q, v))
        T = mech.times
        n = T.calls
        rows.append({"model": name, "case": case, "kernel_us": k * 1e6, "total_us": tot * 1e6,
                     "pinocchio_us": T.pinocchio / n * 1e6, "assembly_us": T.assembly / n * 1e6,
                     "solve_us": T.solve / n * 1e6, "ratio": tot / k})
    for c in list(mech.constraints):
        mech.remove_constraint(c)
    return rows


def main():
    rows = []
    for name, entry in models().items():
        rows += measure(name, _mech(entry))
    print(table(rows, ["model", "case", "kernel_us", "total_us", "pinocchio_us", "assembly_us", "solve_us", "ratio"]))
    path = write_json("step_cost", {"rows": rows, "target": "ratio <= 3 for the determinate case"})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
