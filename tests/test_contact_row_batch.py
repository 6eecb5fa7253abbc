"""The batched compiled rows (sim.contact.row_batch): one numba call per contact source and state
builds every compiled hinge's rows, bit for bit the rows of one call per hinge."""
import numpy as np

from robots import scenes
from sim.contact import enable_contacts, hinge, row_batch, row_kernel
from sim.simulator import Simulator


def test_a_ball_columns_rows_come_from_one_call_per_state_equal_to_one_call_per_hinge():
    b = scenes.sphere_column(4)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    src = enable_contacts(sim, friction=(0.5, 0.4))
    before = dict(row_batch.BATCH_COUNTS)
    sim.run(0.2)
    calls = row_batch.BATCH_COUNTS["calls"] - before["calls"]
    filled = row_batch.BATCH_COUNTS["hinges"] - before["hinges"]
    assert calls > 100 and filled >= 3 * calls  # the column's contacts share each call
    hinges = [h for h in src.hinges.values() if h.points]
    assert len(hinges) >= 3 and all(h.batch is src.row_batch for h in hinges)
    rng = np.random.default_rng(3)
    for _ in range(3):  # at moving states: every velocity and drift term present
        sim.mech.set_state(sim.q, sim.v + rng.normal(scale=0.3, size=sim.mech.nv), check=False)
        batched = [h.rows() for h in hinges]
        assert all(h._cache is rows for h, rows in zip(hinges, batched))
        for h, rows in zip(hinges, batched):
            single = row_kernel.rows_of(h)
            for x, y in zip(rows, single):
                assert x.shape == y.shape and np.array_equal(x, y)
    assert hinge.COMPILED_ROWS == "all"  # (the default: every hinge but linked supports and carriers)


def test_the_assembly_reads_the_batchs_stacked_rows_equal_to_each_hinges_terms():
    b = scenes.sphere_column(4)
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
    src = enable_contacts(sim, friction=(0.5, 0.4))
    sim.run(0.2)
    mech = sim.mech
    mech.set_state(sim.q, sim.v + np.random.default_rng(5).normal(scale=0.3, size=mech.nv), check=False)
    from controlkit.constraint_rows import _constraint_plan, _constraint_rows
    plan = _constraint_plan(mech, mech.constraints)
    assert plan.stacked is src.row_batch
    _, Jc, _, rhs, _, _ = _constraint_rows(mech, sim.equations, None)
    stacked = src.row_batch.stacked_terms(plan.cons, plan.rows)
    assert stacked is not None and Jc is stacked[1]  # the assembly took the stacked arrays
    terms = [c.terms() for c in plan.cons]
    assert np.array_equal(Jc, np.vstack([t[1] for t in terms]))
    assert np.array_equal(stacked[0], np.concatenate([t[0] for t in terms]))
    assert np.array_equal(stacked[2], np.concatenate([t[2] for t in terms]))
    v = mech.v
    expected = -sim.equations.kv * (Jc @ v) - np.concatenate([t[2] for t in terms]) \
        - sim.equations.kp * np.concatenate([t[0] for t in terms])
    assert np.allclose(rhs, expected, rtol=1e-12, atol=1e-12)
    # a detached hinge (the support LCP's) has no rows: the assembly stacks the hinges one by one
    plan.cons[0].detach()
    try:
        plan = _constraint_plan(mech, mech.constraints)
        assert src.row_batch.stacked_terms(plan.cons, plan.rows) is None
        _, Jc2, _, _, _, _ = _constraint_rows(mech, sim.equations, None)
        assert np.array_equal(Jc2, Jc[len(terms[0][0]):])
    finally:
        plan.cons[0].attach()
