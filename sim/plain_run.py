"""The Simulator's per-step path when there is nothing to watch.

- :func:`plain_step`: one step without event sources (no guards to evaluate, compare or keep);
  in the lean case (held torques, no constraints, no external force;
  :func:`controlkit.dynamics.lean_accel`) the integrator's evaluations are bare ``pin.aba`` calls
  (:func:`bare_system`).
- :func:`run_plain`: a run with no event sources, timers, control hooks, programs or recorded
  quantities, lean, under fixed-step RK4 on a flat group (nq == nv, every joint Euclidean): the
  state stays in the integrator's stage buffers and one loop does the step's stages, the
  finiteness check, the acceleration at the step's end (one bare ``pin.aba``) and the recording,
  written straight into the recording's arrays. The mechanism is set to the state reached, with
  its solution, when the loop returns.

Both do the per-step path's operations in its order: recordings are bit-identical to it.
"""
from __future__ import annotations

import math
import time as _time

import numpy as np
import pinocchio as pin

from controlkit.dynamics import lean_accel, lean_solution
from controlkit.errors import SimulationError

from .integrators import _RK4_WEIGHTS, RK4, PinocchioSystem

#: at most this many steps per call of :func:`run_plain` (the run loop's progress and stop checks in between)
CHUNK = 1000

#: steps taken by each path since import: ``loop`` (:func:`run_plain`), ``bare`` (:func:`plain_step`
#: with bare evaluations) — tests assert which path a run took
PLAIN_COUNTS = {"loop": 0, "bare": 0}


def bare_system(sim) -> PinocchioSystem | None:
    """The system whose evaluations are bare ``pin.aba`` calls on the held torques
    (:func:`controlkit.dynamics.lean_accel`), when the lean case holds with the fast paths on,
    no external force, no fallback and an integrator that needs only ``accel``; else None."""
    if sim.mech.constraints or sim.external_force is not None or sim._fallback_active or \
            sim.evaluation != "plan" or not sim.integrator.bare_ok:
        return None
    eqs = sim.equations
    cached = sim._bare
    if cached[0] is eqs and cached[1] == eqs.version:
        return cached[2]
    fn = lean_accel(sim.mech, eqs)
    with_accel = getattr(sim.system, "with_accel", None)  # (a system of the user's own: its evaluations)
    system = None if fn is None or with_accel is None else with_accel(fn, borrows=True)
    sim._bare = (eqs, eqs.version, system)
    return system


def plain_step(sim, h: float, t_end: float) -> None:
    """``Simulator._one_step`` without event sources (h s, the run ending at t_end s).

    With a bare system the mechanism is set to the step's end after it: by the end's solve or,
    when the method ends on an evaluation there (FSAL), from that evaluation
    (:func:`controlkit.dynamics.lean_solution`)."""
    bare = bare_system(sim)
    if bare is None:
        step = sim._attempt(h)
        sim._accept(step)
    else:
        t0 = _time.perf_counter()
        step = sim._attempt(h, system=bare)
        sim.mech.kernels_overwritten()  # the bare calls ran aba on its data
        sim.mech.times.pinocchio += _time.perf_counter() - t0
        sim._accept(step)
        PLAIN_COUNTS["bare"] += 1
        if sim._a is not None:
            lean_solution(sim.mech, sim.equations, step.q1, step.v1, sim._a)
    sim._run_due_timers()
    sim._control()
    if sim._a is None or sim.equations.version != sim._eq_version or not sim.mech.state_is(sim.q, sim.v):
        sim.solve_now()
    sim._guards_now = None
    sim._record(force=sim.t >= t_end - 1e-12)


def run_plain(sim, t_end: float) -> bool:
    """Advance ``sim`` by up to :data:`CHUNK` RK4 steps towards t_end (s) in one loop when nothing
    in the run needs the per-step path; False (nothing done) otherwise."""
    integ = sim.integrator
    if sim.sources or sim._timers or sim.control_phase or sim.programs is not None or sim._a is None \
            or sim.record_quantities or type(integ) is not RK4:
        return False
    bare = bare_system(sim)
    pair = None if bare is None else integ.scratch_pair(bare, sim.v)
    if pair is None:
        return False
    if sim._restart:
        integ.reset()
        sim._restart = False
    wall0 = _time.perf_counter()
    cur, nxt = pair
    cur.Q[0][:] = sim.q
    cur.V[0][:] = sim.v
    cur.A[0][:] = sim._a
    t, steps, every = sim.t, sim.steps, sim.record_every
    dt = max(min(sim.dt, sim.max_step), 1e-14)
    bound = min(CHUNK, int((t_end - t) / dt) + 2)
    rec = sim.recording
    n0, T_rec, Q_rec, V_rec, tau_rec = rec.reserve(bound // every + 2)
    n = n0
    model, data, gen = bare.accel_fn.aba_args
    aba, isfinite = pin.aba, math.isfinite
    h_w = h0 = h2 = wts = None
    done, failed = 0, False
    saved = np.seterr(over="ignore", invalid="ignore")  # (the finiteness check's product may overflow)
    try:
        while t < t_end - 1e-12 and done < CHUNK:
            h = dt if t_end - t >= dt else max(min(sim.dt, sim.max_step, t_end - t), 1e-14)  # (Simulator._next_h)
            if h != h_w:
                h_w, h0, h2, wts = h, np.array(h), np.array(0.5 * h), _RK4_WEIGHTS * (h / 6.0)
            cur.step_aba(aba, model, data, gen, h0, h2, wts, nxt)
            Q1, V1 = nxt.Q[0], nxt.V[0]
            # (one product over every coordinate is finite only if they all are; overflow -> exact check)
            if not isfinite(Q1.dot(V1)) and not (np.isfinite(Q1).all() and np.isfinite(V1).all()):
                failed = True
                raise SimulationError(f"t = {t + h:.9g} s: the state became non-finite (NaN/inf) in {integ.name}",
                                      t + h, sim.recording)
            nxt.A[0][...] = aba(model, data, Q1, V1, gen)
            t += h
            steps += 1
            done += 1
            if not steps % every or t >= t_end - 1e-12:
                T_rec[n] = t
                Q_rec[n] = Q1
                V_rec[n] = V1
                n += 1
            cur, nxt = nxt, cur
    finally:
        np.seterr(**saved)
        if rec.ntau:
            tau_rec[n0:n] = eqs_tau(sim)
        rec.commit(n - n0)
        sim.mech.times.calls += 4 * done + 3 * failed
        PLAIN_COUNTS["loop"] += done
        # the simulator at the last step completed (cur's row 0); the mechanism there, solved, or
        # after a non-finite step at its last stage (the last state evaluated, as the per-step path leaves it)
        sim.t, sim.q, sim.v, sim._a, sim.steps = t, cur.Q[0].copy(), cur.V[0].copy(), cur.A[0].copy(), steps
        eqs = sim.equations
        if failed:
            sim.mech.set_state(cur.Q[3].copy(), cur.V[3].copy(), check=False)
            sim.mech.kernels_overwritten()
        else:
            lean_solution(sim.mech, eqs, sim.q, sim.v, sim._a)
        sim._last_tau = eqs_tau(sim).copy()
        sim._eq_version = eqs.version
        sim._guards_now = sim._free_since = None
        sim.mech.times.pinocchio += _time.perf_counter() - wall0
    return True


def eqs_tau(sim) -> np.ndarray:
    """The held torques (ntau,) of the lean statements in force."""
    return sim.equations._held[2]
