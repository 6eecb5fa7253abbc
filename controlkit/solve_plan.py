"""The evaluation plan's solves (``EquationSet.evaluation == "plan"``, the default), beside
:mod:`controlkit.solver`'s reference path, which they must agree with (tests/test_evaluation_plan.py).

:func:`kernel_solve`: a problem of the common inverse-dynamics form (control equations or costs,
the constraints' rows, the default; nothing assigned, no inequalities or regularizations) in one
compiled call (:func:`controlkit.solve_kernel.lstsq_kernel`). Every other problem, and every problem
the kernel hands back, is solved by the reference path, unchanged.
"""
from __future__ import annotations

import numpy as np

from .linalg import RANK_TOL
from .problem import Problem
from .solver import RESIDUAL_TOL, Solution, _multipliers

#: how often the plan path solved a whole problem in the compiled kernel (``kernel``) and how often the
#: kernel handed a problem back to the reference (``kernel_declined``)
PLAN_COUNTS = {"kernel": 0, "kernel_declined": 0}


def _arg(A: np.ndarray | None, m: int, n: int | None = None) -> np.ndarray:
    """A as the kernel takes it: a writable C-ordered float array ((m, n), or (m,) when n is None; zeros
    for None). One array type for every argument, so numba compiles the kernel once."""
    if A is None:
        return np.zeros((m, n) if n is not None else m)
    # (eleven arguments per evaluation: one flags object, and the dtype compared by identity)
    if A.dtype is _F64 and A.flags.carray:  # C-contiguous, aligned and writable
        return A
    return np.array(A, dtype=np.float64, order="C")


_F64 = np.dtype(np.float64)


_KERNEL: list = []


def _load_kernel():
    """:func:`controlkit.solve_kernel.lstsq_kernel` (numba: imported, and compiled or loaded, on first use)."""
    from .solve_kernel import lstsq_kernel
    _KERNEL.append(lstsq_kernel)
    return lstsq_kernel


def _only_constraints(spans) -> bool:
    """Whether every equality row is a constraint's (no control equation or assignment row)."""
    for _, kind, _, _ in spans:
        if kind != "constraint":
            return False
    return True


def kernel_solve(p: Problem) -> Solution | None:
    """The plan's compiled solve (:func:`controlkit.solve_kernel.lstsq_kernel`) of a problem of its form
    (control equations or costs, the constraints' rows, the default; nothing assigned, no inequalities or
    regularizations); None when the problem has another form or the kernel hands it back (the reference
    path then solves it)."""
    if p.ineq_rows.spans or p.fixed or not p.default_cost or p.mass_inverse is None or \
            (p.reg_rows is not None and p.reg_rows.spans):
        return None
    if not p.cost_rows.spans and _only_constraints(p.eq_rows.spans):
        # no control statement: forward dynamics on constraints (contacts) stays the reference's, whose
        # rounding the contact scenes' event sequences are pinned to (a toppled brick stack settles,
        # or rocks on a vertex, by the last bits of its sliding-friction solves)
        return None
    kernel = _KERNEL[0] if _KERNEL else _load_kernel()
    L = p.layout
    nv, nw, nt = L.nv, L.nx - L.nv, L.ntau
    er, cr = p.eq_rows, p.cost_rows
    me, mc = len(er), len(cr)
    G = p.Jc if p.Jf is None else p.Jf
    ok, x, N, PN, pmax, used_costs = kernel(
        _arg(p.mass_inverse(), nv, nv), _arg(p.S, nt, nv), _arg(G, len(G), nv), _arg(p.bias, nv),
        _arg(er.Aa, me, nv), _arg(er.Aw, me, nw), _arg(er.b, me), _arg(cr.Aa, mc, nv), _arg(cr.Aw, mc, nw),
        _arg(cr.weight, mc), _arg(cr.b, mc), RANK_TOL, RESIDUAL_TOL)
    if not ok:
        PLAN_COUNTS["kernel_declined"] += 1
        return None
    PLAN_COUNTS["kernel"] += 1
    indet: list[str] = []
    if N.shape[1]:
        for k in np.flatnonzero(np.abs(N).max(axis=1) > 1e-8).tolist():
            if k >= nt:
                indet.append(p.lam_labels[k - nt])
    sol = Solution(x, x[:nv], x[nv:nv + nt], _multipliers(x, L), "lstsq" if used_costs else "direct",
                   int(N.shape[1]), indet)
    if PN.shape[1] and np.abs(PN).max() > 1e-9 * max(1.0, pmax):
        sol.undetermined = PN
    return sol
