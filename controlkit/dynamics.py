"""One derivative evaluation: set the state, assemble the equations, solve them.

This is the function the integrators call (through the simulator) at every
stage; it records where the time goes in ``mech.times``.
"""
from __future__ import annotations

import time as _time
from typing import Callable

import numpy as np
import pinocchio as pin

from .equations import EquationSet, _constraint_rows, build_problem
from .expressions import Const
from .solver import Solution, delassus_solve, solve


def _held_torques(mech, eqs: EquationSet) -> np.ndarray | None:
    """The torque vector when the statements are only constant torque assignments, else None.

    Programs' direct assignments are held constants (zero-order hold), so forward
    dynamic control needs no assembly at all; the vector is cached per statement version.
    """
    if eqs.equations or eqs.costs or eqs.inequalities:
        return None
    cache = getattr(eqs, "_held", None)
    if cache is not None and cache[0] == eqs.version and cache[1] is mech:
        return cache[2]
    tau = np.zeros(mech.ntau)
    seen = None if len(eqs.assignments) == 1 else np.zeros(mech.ntau, dtype=bool)  # (one: no overlap)
    for asg in eqs.assignments.values():
        held = _held_value(mech, asg)
        if held is None or (seen is not None and seen[held[0]].any()):
            eqs._held = (eqs.version, mech, None, None)  # let the general path report the conflict
            return None
        c, val = held
        if seen is not None:
            seen[c] = True
        tau[c] = val
    gen = np.zeros(mech.nv)
    if mech.ntau:
        gen[mech.tau_index] += tau
    eqs._held = (eqs.version, mech, tau, gen)
    return tau


def _held_value(mech, asg) -> tuple[np.ndarray, np.ndarray | float] | None:
    """(torque columns, value) of a constant torque assignment; None when it is not one, or when
    its value's size does not fit (the general path reports that)."""
    cols = getattr(asg.quantity, "tau_columns_of", None)
    if cols is None or not isinstance(asg.value, Const):
        return None
    c = cols(mech)
    val = asg.value.value
    if val.size == len(c):
        return c, val
    return (c, val[0]) if val.size == 1 else None


def _lean(mech, tau: np.ndarray, gen_tau: np.ndarray, f_ext: np.ndarray | None) -> Solution:
    """The lean path: no constraints, torques known -> ``a = aba(q, v, S^T tau + f_ext)``.

    One articulated-body pass solves ``M a + h = S^T tau + f_ext`` without forming M; it
    leaves the mechanism's cached mass matrix and kinematics stale (they are recomputed
    on demand at this state, as ``aba`` does not fill them). ``gen_tau`` is S^T tau (nv,).
    """
    gen = gen_tau if f_ext is None else _with_external(gen_tau, f_ext, mech)
    a = pin.aba(mech.model, mech.data, mech.q, mech.v, gen)
    mech.kernels_overwritten()  # aba left real accelerations where the kinematics keep the drift
    return Solution(np.concatenate((a, tau)) if tau.size else a, a, tau, {}, "lean")


def _with_external(gen_tau: np.ndarray, f_ext: np.ndarray, mech) -> np.ndarray:
    """f_ext + S^T tau (nv,), summed as ``f_ext`` with the torques added at their columns."""
    gen = np.array(f_ext, dtype=float)
    if mech.ntau:
        gen[mech.tau_index] += gen_tau[mech.tau_index]
    return gen


def lean_accel(mech, eqs: EquationSet) -> Callable[[float, np.ndarray, np.ndarray], np.ndarray] | None:
    """The evaluation of the lean case as a bare function ``a(t, q, v)`` (nv,), or None.

    When the statements are constant torque assignments only and the mechanism has no
    constraints, one evaluation is ``pin.aba(q, v, S^T tau)`` (no external force): this returns
    that call with S^T tau bound, the same arithmetic as :func:`evaluate`'s lean path. It
    leaves the mechanism alone: its state, ``solution`` and caches are not set, and Pinocchio's
    data is overwritten (the caller calls ``mech.kernels_overwritten()`` before reading the
    mechanism again). Calls count in ``mech.times.calls``; q and v are read during the call only.
    The function is valid until the statements or the constraints change; its ``aba_args`` are
    (model, data, gen), the call being ``pin.aba(model, data, q, v, gen)``.
    """
    if mech.constraints:
        return None
    tau = _held_torques(mech, eqs)
    if tau is None:
        return None
    model, data, gen, aba, T = mech.model, mech.data, eqs._held[3], pin.aba, mech.times

    def accel(t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        T.calls += 1
        return aba(model, data, q, v, gen)

    accel.aba_args = (model, data, gen)  # (a loop calling aba itself counts its calls in mech.times)
    return accel


def lean_solution(mech, eqs: EquationSet, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> Solution:
    """Set the mechanism to (q, v) with ``a`` (nv,), a bare evaluation of :func:`lean_accel` there, as
    its solution: what :func:`evaluate` leaves at that state (state, solution, ``solved_for``),
    without evaluating again. The statements must be the ones ``lean_accel`` took."""
    tau = eqs._held[2]
    mech.set_state(q, v, check=False)
    mech.kernels_overwritten()
    sol = Solution(np.concatenate((a, tau)) if tau.size else a, a, tau, {}, "lean")
    mech.solution, mech.problem = sol, None
    mech.solved_for = (mech.state_version, id(eqs), eqs.version)
    return sol


def _held_on_constraints(mech, eqs: EquationSet, tau: np.ndarray, f_ext: np.ndarray | None, t0: float):
    """Held torques on ideal constraints (a simulation under a servo, every step): the Delassus solve
    straight from the constraint rows, without assembling a problem; None when the general path is
    needed (non-ideal forces, a constraint bounding its own forces, dependent rows)."""
    T = mech.times
    h = mech.bias_forces()
    Mi = mech.mass_inverse()
    mech.kinematics()
    t1 = _time.perf_counter()
    cons, Jc, Jf, rhs, _, layout = _constraint_rows(mech, eqs, None)
    if Jf is not None or _bounds_own_forces(cons):
        return None
    t2 = _time.perf_counter()
    sol = delassus_solve(Jc, rhs, mech.S, h if f_ext is None else h - f_ext, Mi, tau, layout,
                         mech.cache.setdefault("solver_factors", {}))
    if sol is None:
        return None
    t3 = _time.perf_counter()
    T.pinocchio += t1 - t0
    T.assembly += t2 - t1
    T.solve += t3 - t2
    T.calls += 1
    return sol


def _bounds_own_forces(cons) -> bool:
    """Whether a constraint bounds its own forces (a controlled contact): the general path then."""
    for c in cons:  # (twice per step: a loop, no generator object)
        if c.force_inequalities() is not None:
            return True
    return False


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
    tau = _held_torques(mech, eqs)
    if tau is not None and not mech.constraints:
        sol = _lean(mech, tau, eqs._held[3], f_ext)
        T.pinocchio += _time.perf_counter() - t0
        T.calls += 1
        mech.solution, mech.problem = sol, None
        mech.solved_for = (mech.state_version, id(eqs), eqs.version)
        return sol
    if tau is not None:
        sol = _held_on_constraints(mech, eqs, tau, f_ext, t0)
        if sol is not None:
            mech.solution, mech.problem = sol, None
            mech.solved_for = (mech.state_version, id(eqs), eqs.version)
            return sol
    mech.bias_forces()
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
    mech.solved_for = (mech.state_version, id(eqs), eqs.version)
    return sol
