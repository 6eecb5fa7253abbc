"""The Simulator's paths with nothing to watch (sim/plain_run.py, the flat RK4 buffers): each gives
the per-step reference path's recording bit for bit, and the loop is the one taken.

Three runs of the same chain are compared: the loop (no sources, timers, hooks or programs), the
per-step path with bare evaluations (a control hook that does nothing forces a step at a time),
and ``evaluation="reference"`` (every stage a full evaluation through the mechanism).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import robots
from controlkit.errors import SimulationError
from controlkit.quantities import ControlTorques
from controlkit.recording import Recording
from sim.integrators import RK4, PinocchioSystem
from sim.plain_run import PLAIN_COUNTS
from sim.simulator import Simulator


def chain_sim(integrator: str = "rk4", dt: float = 1e-3, torque: float | None = None, **options) -> Simulator:
    """A 4-link chain released horizontal; with ``torque`` (N m) held on every joint."""
    built = robots.pendulum_chain(4, 1.0, 1.0, actuated=torque is not None)
    sim = Simulator(built.mechanism, built.q0, built.v0, dt=dt, integrator=integrator, **options)
    if torque is not None:
        sim.equations.assign("held", ControlTorques(built.mechanism), np.full(4, torque))
    return sim


def recorded(sim: Simulator) -> tuple[np.ndarray, ...]:
    rec = sim.recording
    return rec.t, rec.q, rec.v, rec.tau


def same_recordings(a: Simulator, b: Simulator) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(recorded(a), recorded(b)))


@pytest.mark.parametrize("torque", [None, 0.7])
def test_plain_loop_records_what_the_per_step_and_reference_paths_record(torque):
    loop, stepped, reference = chain_sim(torque=torque), chain_sim(torque=torque), chain_sim(torque=torque, evaluation="reference")
    stepped.control_phase.append(lambda sim: None)  # a hook: one step at a time
    before = dict(PLAIN_COUNTS)
    loop.run(0.3)
    looped = PLAIN_COUNTS["loop"] - before["loop"]
    stepped.run(0.3)
    reference.run(0.3)
    assert looped == loop.steps == 300
    assert PLAIN_COUNTS["bare"] - before["bare"] == stepped.steps == 300
    assert same_recordings(loop, stepped) and same_recordings(loop, reference)
    assert loop.mech.times.calls == stepped.mech.times.calls == reference.mech.times.calls == 1 + 4 * 300
    # the mechanism is left at the state reached, solved
    assert np.array_equal(loop.mech.q, loop.q) and np.array_equal(loop.mech.solution.a, reference.mech.solution.a)


def test_plain_loop_in_pieces_with_record_every_and_a_short_last_step():
    whole, pieces = chain_sim(dt=2e-3, record_every=3), chain_sim(dt=2e-3, record_every=3)
    whole.run(2.5037)
    for d in (0.7, 1.1, 0.7037):
        pieces.run(d)
    ref = chain_sim(dt=2e-3, record_every=3, evaluation="reference")
    ref.run(2.5037)
    assert same_recordings(whole, ref)
    assert whole.t == ref.t and whole.recording.t[-1] == ref.t  # the last (short) step recorded
    assert len(pieces.recording) >= len(whole.recording)  # each piece's end is recorded too
    assert np.array_equal(pieces.q, whole.q) or np.abs(pieces.q - whole.q).max() < 1e-12


@pytest.mark.parametrize("integrator", ["dopri5", "abm4", "semi_implicit_euler"])
def test_bare_evaluations_record_what_full_evaluations_record(integrator):
    """Other integrators take the per-step path with bare aba calls; FSAL ends set the mechanism
    from the step's last evaluation instead of solving again."""
    bare, full = chain_sim(integrator, torque=0.3), chain_sim(integrator, torque=0.3, evaluation="reference")
    bare.run(0.2)
    full.run(0.2)
    assert same_recordings(bare, full)
    assert bare.mech.times.calls == full.mech.times.calls
    assert np.array_equal(bare.mech.solution.a, full.mech.solution.a) and bare.mech.solved(bare.equations)


def test_non_finite_state_in_the_loop_stops_where_the_per_step_path_stops():
    errors = []
    for evaluation in ("plan", "reference"):
        sim = chain_sim(torque=1e60, evaluation=evaluation)
        with pytest.raises(SimulationError, match="non-finite") as info:
            sim.run(1.0)
        errors.append((info.value, sim))
    (e_loop, loop), (e_ref, ref) = errors
    assert e_loop.time == e_ref.time and loop.t == ref.t and loop.steps == ref.steps > 0
    assert np.array_equal(e_loop.recording.q[:-1], e_ref.recording.q[:-1])
    assert np.isfinite(loop.q).all() and np.array_equal(loop.q, ref.q)


def test_flat_rk4_buffers_agree_with_the_group_step():
    """RK4 on a flat group (one buffer product for the step's sum) against the group formulation
    (pin.integrate and dIntegrate, a revolute chain's being q + v and the identity): the stage
    rates are identical, the end state within an ulp."""
    model = robots.pendulum_chain(6, 1.0, 1.0).mechanism.model
    data = model.createData()
    tau = np.zeros(model.nv)
    flat = PinocchioSystem(model, lambda t, q, v: pin.aba(model, data, q, v, tau))
    group = flat.with_accel(flat.accel_fn)
    group.flat = False
    rng = np.random.default_rng(3)
    for _ in range(20):
        q, v = rng.uniform(-3, 3, model.nv), rng.uniform(-5, 5, model.nv)
        s1, s2 = RK4().step(flat, 0.0, q, v, 1e-2), RK4().step(group, 0.0, q, v, 1e-2)
        for theta in (0.3, 0.8):
            for x, y in zip(s1.dense(theta), s2.dense(theta)):
                assert np.array_equal(x, y)
        scale = np.abs(q) + 1e-2 * np.abs(v) + 1.0
        assert np.abs(s1.q1 - s2.q1).max() <= 4 * np.finfo(float).eps * scale.max()
        assert np.abs(s1.v1 - s2.v1).max() <= 4 * np.finfo(float).eps * (np.abs(v).max() + 1e-2 * np.abs(s1.a0).max())


def test_recording_rows_reserved_and_committed_read_as_appended():
    appended, written = Recording(2, 2, 1), Recording(2, 2, 1)
    rng = np.random.default_rng(0)
    samples = [(0.1 * k, rng.standard_normal(2), rng.standard_normal(2), rng.standard_normal(1)) for k in range(600)]
    for k, (t, q, v, tau) in enumerate(samples):
        appended.append(t, q, v, tau, {"x": q[:1]} if k < 3 else None)
    written.append(*samples[0][:4], {"x": samples[0][1][:1]})
    for t, q, v, tau in samples[1:3]:
        written.append(t, q, v, tau, {"x": q[:1]})
    for start in range(3, 600, 250):
        chunk = samples[start:start + 250]
        n, T, Q, V, TAU = written.reserve(len(chunk))
        for i, (t, q, v, tau) in enumerate(chunk):
            T[n + i], Q[n + i], V[n + i], TAU[n + i] = t, q, v, tau
        written.commit(len(chunk))
    for name in ("t", "q", "v", "tau"):
        assert np.array_equal(getattr(appended, name), getattr(written, name))
    assert np.array_equal(appended.quantity("x"), written.quantity("x"), equal_nan=True)
    assert np.isnan(written.quantity("x")[3:]).all()
    with pytest.raises(Exception, match="reserved"):
        written.commit(written._cap)


def test_a_contact_guards_end_solve_stands_for_the_steps_end_solve(monkeypatch):
    """A box sliding down a slope under RK4: the contact's force guards solve the statements at each
    step's end, and that solve is the simulator's end solve too (4 evaluations a step, not 5); the
    recording and events equal those of a run that solves the end again."""
    from robots import scenes
    from sim.contact import enable_contacts

    def run():
        b = scenes.box_on_slope(angle=0.6, mu_static=0.5, mu_kinetic=0.4)
        sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-2, integrator="rk4")
        enable_contacts(sim, friction=(0.5, 0.4))
        sim.run(0.1)  # the contact is made
        calls, steps = sim.mech.times.calls, sim.steps
        sim.run(0.3)
        return sim, (sim.mech.times.calls - calls) / (sim.steps - steps)

    taken, per_step = run()
    monkeypatch.setattr(Simulator, "_solution_at_end", lambda self: None)
    again, per_step_again = run()
    assert per_step == 4 and per_step_again == 5
    assert same_recordings(taken, again)
    assert [(e.time, e.kind) for e in taken.recording.events] == [(e.time, e.kind) for e in again.recording.events]


@pytest.mark.parametrize("scene, integrator, seconds", [("slope", "rk4", 0.4), ("row", "semi_implicit_euler", 0.4)])
def test_contact_guards_after_a_control_phase_that_changed_nothing_are_the_step_ends(monkeypatch, scene, integrator,
                                                                                      seconds):
    """After each step's control phase the simulator asks for the guards again; when the statements
    and the solve are the step end's and no slide's onset ended, the contact source returns the step
    end's guards themselves. They equal a fresh evaluation each time, and the run equals one that
    evaluates every guard afresh after every control phase (a box sliding down a slope, whose slide's
    onset ends on the way; 8 boxes landing side by side)."""
    from robots import scenes
    from sim.contact import enable_contacts
    from sim.contact.source import ContactSource

    def run():
        if scene == "slope":
            b = scenes.box_on_slope(angle=0.6, mu_static=0.5, mu_kinetic=0.4)
        else:
            b = scenes.box_row(8)
        sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator=integrator)
        enable_contacts(sim, friction=(0.5, 0.4), restitution=0.0 if scene == "slope" else 0.3)
        sim.run(seconds)
        return sim

    fast = ContactSource.guards_after_control
    seen = {"kept": 0, "fresh": 0}

    def checked(self, sim, t, q, v, before):
        out = fast(self, sim, t, q, v, before)
        if out is before:
            seen["kept"] += 1
            assert np.array_equal(self.guards(sim, t, q, v), before)
        else:
            seen["fresh"] += 1
        return out

    monkeypatch.setattr(ContactSource, "guards_after_control", checked)
    kept = run()
    assert seen["kept"] > 100 and seen["kept"] > seen["fresh"] / 4  # (falling with no contact: no force guards)
    monkeypatch.setattr(ContactSource, "guards_after_control", lambda self, sim, t, q, v, before: self.guards(sim, t, q, v))
    fresh = run()
    assert same_recordings(kept, fresh)
    assert [(e.time, e.kind) for e in kept.recording.events] == [(e.time, e.kind) for e in fresh.recording.events]
