"""Steps without anything to watch, in one loop: the Simulator's path when a run has no event
sources, timers, control hooks or programs, and the evaluation is lean (held torques, no
constraints, no external force; :func:`controlkit.dynamics.lean_accel`).

Between two such steps the simulator's per-step machinery (guards, control phase, the solve at
the step's end, the solution object) has nothing to do, so :func:`run_plain` keeps the state in
the integrator's stage buffers and loops over: the step's stages, the finiteness check, the
acceleration at the step's end (one bare ``pin.aba``) and the recording. The arithmetic is the
per-step path's (the same operations in the same order): the recording is bit-identical. The
mechanism is set to the state reached, with its solution, when the loop ends.

Fixed-step RK4 on a flat group (nq == nv, every joint Euclidean) takes it; other integrators
and groups take the per-step path.
"""
from __future__ import annotations

import math
import time as _time

import numpy as np

from controlkit.dynamics import lean_solution
from controlkit.errors import SimulationError

from .integrators import RK4

#: steps per call of :func:`run_plain`: the run loop's progress and stop checks in between
CHUNK = 1000


def run_plain(sim, t_end: float) -> bool:
    """Advance ``sim`` by up to :data:`CHUNK` steps towards t_end (s) when nothing in the run needs
    the per-step path; False (nothing done) otherwise."""
    integ = sim.integrator
    if sim.sources or sim._timers or sim.control_phase or sim.programs is not None or sim._a is None \
            or type(integ) is not RK4:
        return False
    bare = sim._bare_system()
    if bare is None:
        return False
    s = integ.scratch_for(bare, sim.v)
    if s is None:
        return False
    if sim._restart:
        integ.reset()
        sim._restart = False
    wall0 = _time.perf_counter()
    Q0, V0, A0 = s.Q[0], s.V[0], s.A[0]
    Q0[:] = sim.q
    V0[:] = sim.v
    A0[:] = sim._a
    eqs, mech, rec = sim.equations, sim.mech, sim.recording
    accel, advance, append = bare.accel_fn, s.advance, rec.append
    tau = eqs._held[2]
    t, dt, max_step, every, steps = sim.t, sim.dt, sim.max_step, sim.record_every, sim.steps
    last = (sim.q, sim.v, sim._a)
    done = 0
    while t < t_end - 1e-12 and done < CHUNK:
        h = max(min(dt, max_step, t_end - t), 1e-14)  # (Simulator._next_h with nothing to limit it)
        advance(accel, t, h)
        ql, vl = Q0.tolist(), V0.tolist()
        if not math.isfinite(sum(ql) + sum(vl)) and not (np.isfinite(Q0).all() and np.isfinite(V0).all()):
            _stop_at(sim, t, steps, last)
            raise SimulationError(f"t = {t + h:.9g} s: the state became non-finite (NaN/inf) in {integ.name}",
                                  t + h, sim.recording)
        t += h
        steps += 1
        done += 1
        A0[:] = accel(t, Q0, V0)
        last = (ql, vl, A0)
        if not steps % every or t >= t_end - 1e-12:
            append(t, Q0, V0, tau)
    sim.t, sim.q, sim.v, sim._a, sim.steps = t, Q0.copy(), V0.copy(), A0.copy(), steps
    lean_solution(mech, eqs, sim.q, sim.v, sim._a)
    sim._last_tau = tau.copy()
    sim._eq_version = eqs.version
    sim._guards_now = sim._free_since = None
    mech.times.pinocchio += _time.perf_counter() - wall0
    return True


def _stop_at(sim, t: float, steps: int, last) -> None:
    """The simulator at the last finite state (t s, after ``steps`` steps) before a failed step."""
    q, v, a = last
    sim.t, sim.q, sim.v, sim._a, sim.steps = t, np.array(q, dtype=float), np.array(v, dtype=float), None, steps
