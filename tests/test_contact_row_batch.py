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
    assert hinge.COMPILED_ROWS == "balls"
