"""What the simulator notes about a run besides its samples: the warning when the control statements
leave motion to the default (least squared torques) and it speeds up, and the partial recording a
failed run's error carries."""
from __future__ import annotations

import numpy as np

from controlkit.errors import ControlkitError


def watch_undetermined(sim) -> None:
    """Warn once (an ``undetermined`` event) when the statements leave directions of motion to
    the default (least squared torques) and the velocity along them grows: a task that fixes
    fewer directions than the robot has, with nothing else to hold the rest (a wrist spinning
    up under a tool-position task)."""
    sol = sim.mech.solution
    U = getattr(sol, "undetermined", None)
    if U is None or sim._free_warned:
        sim._free_since = None
        return
    V, sv, _ = np.linalg.svd(U, full_matrices=False)
    V = V[:, sv > 1e-9 * max(1.0, float(sv[0]) if sv.size else 0.0)]
    if not V.shape[1]:
        return
    speed = float(np.linalg.norm(V.T.dot(sim.v)))
    if sim._free_since is None:
        sim._free_since = (sim.t, speed)
        return
    t0, s0 = sim._free_since
    if speed <= 2.0 * s0 + sim.FREE_SPEED:
        return
    sim._free_warned = True
    joints = sim.mech.joint_shares(V)
    names = ", ".join(f"{n} ({w:.2f})" for n, w in joints)
    sim.log("undetermined",
            f"the control statements leave {V.shape[1]} direction(s) of motion to the default (least squared "
            f"torques) and the velocity along them grew from {s0:.3g} at t = {t0:.6g} s to {speed:.3g} (rad/s, m/s); "
            f"free joints (share): {names}. Add equations or costs for them, or declare uncontrolled joints "
            f"actuated=False", joints=[n for n, _ in joints], directions=int(V.shape[1]), speed=speed)


def keep_partial(sim, exc: ControlkitError) -> None:
    """Attach the recording, up to and including the state where the run failed, to the error."""
    mech = sim.mech
    failed_q, failed_v = mech.q, mech.v  # the state last evaluated: where a solve failed
    t_fail = exc.time
    if t_fail is None:
        problem = getattr(exc, "problem", None)
        t_fail = getattr(problem, "time", None)
    _record_reached_state(sim)
    rec = sim.recording
    if t_fail is not None and t_fail > sim.t and failed_q is not sim.q and \
            failed_q.shape == sim.q.shape and np.isfinite(failed_q).all() and np.isfinite(failed_v).all():
        rec.append(t_fail, failed_q, failed_v, sim._last_tau)  # a trial state inside the failed step
    exc.recording = rec
    if exc.time is None:
        exc.time = sim.t if t_fail is None else t_fail

def _record_reached_state(sim) -> None:
    """Keep the last integrated state in the recording when a run stops on an error."""
    rec = sim.recording
    if len(rec) == 0 or rec.last_time() < sim.t:
        rec.append(sim.t, sim.q, sim.v, sim._last_tau)
