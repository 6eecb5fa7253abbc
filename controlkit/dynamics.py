"""One derivative evaluation: set the state, assemble the equations, solve them.

This is the function the integrators call (through the simulator) at every
stage; it records where the time goes in ``mech.times``.
"""
from __future__ import annotations

import time as _time

import numpy as np

from .equations import EquationSet, build_problem
from .solver import Solution, solve


def evaluate(mech, eqs: EquationSet, t: float, q: np.ndarray, v: np.ndarray,
             f_ext: np.ndarray | None = None, check: bool = False) -> Solution:
    """Solve for accelerations, torques and constraint forces at (t, q, v).

    Args:
        mech: the mechanism; its state is set to (q, v) and ``mech.solution`` to the result.
        eqs: the control statements in force.
        t: simulation time (s).
        q: configuration (nq,); v: velocity (nv,).
        f_ext: generalized external force (nv,), N / N m.
        check: validate sizes and finiteness of q and v.
    """
    T = mech.times
    t0 = _time.perf_counter()
    mech.set_state(q, v, check=check)
    M, h = mech.dynamics()
    if not mech.constraints and eqs.is_empty():
        # lean path: nothing but the motion equations, passive joints -> M a = f_ext - h
        t1 = _time.perf_counter()
        rhs = -h if f_ext is None else f_ext - h
        a = mech.mass_solve(rhs)
        sol = Solution(np.concatenate([a, np.zeros(mech.ntau)]), a, np.zeros(mech.ntau), {}, "lean")
        t2 = t3 = _time.perf_counter()
        p = None
    else:
        if mech.constraints:
            mech.kinematics()
        t1 = _time.perf_counter()
        p = build_problem(mech, eqs, t, f_ext)
        t2 = _time.perf_counter()
        sol = solve(p)
        t3 = _time.perf_counter()
    T.pinocchio += t1 - t0
    T.assembly += t2 - t1
    T.solve += t3 - t2
    T.calls += 1
    mech.solution = sol
    mech.problem = p
    return sol
