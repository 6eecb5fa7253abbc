"""A contact scene's result does not depend on what ran before it in the process.

coal 3.0.x keeps its box support factor in a function-local static set by the first box query of
the process (sim/coal_state.py): two stacked boxes read -5e-12 m and a normal 4.6e-5 rad off after
an axis-aligned query came first, 0 and exact after a tilted one, and the brick stack of Fig. 5.7
made 809 events in 2 s in a fresh interpreter but 21 after another scene. Importing
``sim.collision`` sets both statics to the exact box first. With ``reproducible=True`` box pairs
also take their distances, normals and witness points from the separating-axis test and every
patch is computed from a contact built from them (sim/collision.py, sim/contact/geometry.py),
independent of coal's box queries altogether. Each run here is a fresh interpreter, so the
process's history is the test's to set.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from contact_cases import in_fresh_interpreter

from robots import scenes
from sim.collision import CollisionWorld, box_separations

_RUN = """
import hashlib
import numpy as np
from robots import scenes
from sim.contact import enable_contacts
from sim.simulator import Simulator
if {prior}:
    # other queries first, after controlkit's import as in any session: two axis-aligned boxes
    # (the query that set coal's factor to 1 + 1e-10 when it came first in the process) and a
    # tilted box's contact patch on a half-space
    import coal, pinocchio as pin
    req = coal.DistanceRequest()
    req.enable_signed_distance = True
    coal.distance(coal.Box(0.1, 0.1, 0.1), coal.Transform3s(np.eye(3), np.array([0.0, 0.0, 0.1])),
                  coal.Box(0.1, 0.1, 0.1), coal.Transform3s(), req, coal.DistanceResult())
    box, ground = coal.Box(0.2, 0.1, 0.06), coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)
    ta = coal.Transform3s(pin.rpy.rpyToMatrix(0.1, 0.2, 0.0), np.array([0.0, 0.0, 0.02]))
    tb = coal.Transform3s(np.eye(3), np.zeros(3))
    res = coal.CollisionResult()
    coal.collide(box, ta, ground, tb, coal.CollisionRequest(), res)
    coal.computeContactPatch(box, ta, ground, tb, res, coal.ContactPatchRequest(), coal.ContactPatchResult())
b = scenes.brick_stack()
sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
src = enable_contacts(sim, friction=(0.6, 0.5), reproducible={reproducible})
rec = sim.run({seconds})
h = hashlib.sha1(np.ascontiguousarray(rec.q).tobytes() + np.ascontiguousarray(rec.v).tobytes())
print(h.hexdigest(), len(rec.events), repr(float(src.world.distances(b.q0)[0])))
"""


def _brick_stack_run(prior: bool, seconds: float, reproducible: bool = True) -> str:
    code = _RUN.format(prior=prior, seconds=seconds, reproducible=reproducible)
    return in_fresh_interpreter(code)


@pytest.mark.parametrize("reproducible", [False, True])
def test_brick_stack_gives_the_same_motion_and_events_after_other_queries_in_the_process(reproducible):
    fresh = _brick_stack_run(False, 0.45, reproducible)
    after = _brick_stack_run(True, 0.45, reproducible)
    assert fresh == after  # q and v of every sample (their hash), the events, the touching distance
    assert fresh.split()[-1] == "0.0"  # the bricks resting on each other touch exactly


def test_coal_reads_box_distances_exactly_once_controlkit_is_imported():
    out = in_fresh_interpreter("from sim import coal_state\nprint(coal_state.box_support_is_exact())")
    assert out.strip() == "True"


def test_touching_boxes_read_exactly_zero_and_their_face_normal():
    b = scenes.brick_stack(n=2)
    world = CollisionWorld(b.mechanism, reproducible=True)
    d = world.distances(b.q0)
    names = world.pair_names()
    k = names.index(("brick_1", "brick_2")) if ("brick_1", "brick_2") in names else names.index(("brick_2", "brick_1"))
    assert d[k] == 0.0  # resting on each other, exactly (coal read -3e-12 m in a fresh process)
    c = world.contacts(b.q0, np.zeros(b.mechanism.nv), which=[k])[0]
    assert abs(abs(c.normal[2]) - 1.0) == 0.0 and c.normal[0] == 0.0 == c.normal[1]


def test_separating_axis_distance_agrees_with_coal_for_overlapping_boxes_and_bounds_it_when_apart():
    # two independent methods: coal's GJK/EPA (well conditioned away from a touch) and the
    # separating-axis test, on random pairs of boxes
    import coal
    rng = np.random.default_rng(5)
    for _ in range(200):
        ha, hb = rng.uniform(0.02, 0.2, 3), rng.uniform(0.02, 0.2, 3)
        Ra, Rb = (pin.rpy.rpyToMatrix(*rng.uniform(-3, 3, 3)) for _ in range(2))
        ta, tb = rng.uniform(-0.2, 0.2, 3), rng.uniform(-0.2, 0.2, 3)
        d, n = box_separations(ha[None], Ra[None], ta[None], hb[None], Rb[None], tb[None])
        req = coal.DistanceRequest()
        req.enable_signed_distance, req.gjk_tolerance, req.epa_tolerance = True, 1e-10, 1e-10
        res = coal.DistanceResult()
        coal.distance(coal.Box(*2 * ha), coal.Transform3s(Ra, ta), coal.Box(*2 * hb), coal.Transform3s(Rb, tb), req, res)
        exact = res.min_distance
        if exact < -1e-6:  # overlapping: the penetration depth and its direction
            assert abs(d[0] - exact) < 1e-8
            assert n[0] @ np.asarray(res.normal) > 1 - 1e-6
        elif exact > 1e-6:  # apart: a positive lower bound
            assert 0.0 < d[0] <= exact + 1e-9
