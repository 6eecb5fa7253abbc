"""The compiled contact rows (sim.contact.row_kernel) against the Python reference
(ContactHinge.reference_rows): gaps, Jacobian rows, drifts and force rows of every hinge met in
short runs of balls, boxes and cylinders, in each friction mode, at states with random velocities
(every drift and centripetal term present)."""
import math

import numpy as np
import pinocchio as pin
import pytest

from robots import scenes
from robots.definition import Body, Scene
from robots.scenes import ground_body
from robots.shapes import cuboid, cylinder
from sim.contact import Mode, enable_contacts, hinge
from sim.simulator import Simulator


def _log_and_board():
    """A board on a lying cylinder on the ground: a cylinder's line on the fixed ground and under
    a moving box."""
    s = Scene("log")
    g, gp = ground_body()
    s.add(g, gp, fixed=True)
    s.add(Body("log", cylinder(0.05, 0.2), mass=1.0), pin.SE3(pin.rpy.rpyToMatrix(math.pi / 2, 0, 0), np.array([0, 0, 0.05])))
    s.add(Body("board", cuboid(0.3, 0.1, 0.02), mass=0.5), (0, 0, 0.11), velocity=(0.05, 0, 0, 0, 0, 0.2))
    return s.build()


def _ball_on_box():
    """A ball on a box on the ground, both moving: a ball's point on a moving face."""
    return scenes.free_bodies([dict(name="box", box=(0.3, 0.3, 0.1), position=(0, 0, 0.05), velocity=(0.1, 0, 0, 0, 0, 0.3)),
                               dict(name="ball", radius=0.04, position=(0.02, 0, 0.14), velocity=(0.2, 0.1, 0, 0, 0, 0))])


def _crossed_boxes():
    """A box lying on an edge across the top edge of a fixed ridge (an edge crossing an edge), and
    a small box on a larger one on the ground (the small box's corners, B's, on A's face)."""
    s = Scene("crossed")
    g, gp = ground_body()
    s.add(g, gp, fixed=True)
    h = 0.1 / math.sqrt(2)
    s.add(Body("ridge", cuboid(0.1, 0.4, 0.1), mass=1.0), pin.SE3(pin.rpy.rpyToMatrix(0, math.pi / 4, 0), np.array([0, 0, 0.3])),
          fixed=True)
    s.add(Body("top", cuboid(0.4, 0.1, 0.1), mass=1.0),
          pin.SE3(pin.rpy.rpyToMatrix(math.pi / 4, 0, 0), np.array([0, 0, 0.3 + 2 * h + 0.001])))
    s.add(Body("base", cuboid(0.3, 0.3, 0.05), mass=1.0), (0.6, 0, 0.025))
    s.add(Body("cap", cuboid(0.1, 0.1, 0.1), mass=1.0), (0.6, 0, 0.101))
    return s.build()


def _tilted_cylinder():
    """A cylinder landing on its rim and tipping onto its cap on a fixed table (rim points)."""
    s = Scene("cylinder")
    s.add(Body("table", cuboid(0.6, 0.6, 0.1), mass=1.0), pin.SE3(np.eye(3), np.array([0, 0, -0.05])), fixed=True)
    tilt = 0.3
    s.add(Body("cyl", cylinder(0.05, 0.1), mass=1.0),
          pin.SE3(pin.rpy.rpyToMatrix(tilt, 0, 0), np.array([0, 0, 0.002 + 0.05 * math.sin(tilt) + 0.05 * math.cos(tilt)])))
    return s.build()


SCENES = {  # name: (built mechanism, seconds, chunk), each checked after every chunk
    "ball column": (lambda: scenes.sphere_column(3), 0.12, 0.02),
    "crossed boxes": (_crossed_boxes, 0.04, 0.02),
    "log and board": (_log_and_board, 0.06, 0.02),
    "ball on box": (_ball_on_box, 0.08, 0.02),
    "tilted cylinder": (_tilted_cylinder, 0.25, 0.025),
}


def _kind(h) -> set:
    """What a hinge's rows exercise (for the coverage assertion)."""
    out = {str(h.mode)}
    if h.balls:
        out.add("ball on ball")
    elif h.points and h.points[0].radius > 0:
        out.add("ball or line" + (" rolling" if h.mode == Mode.STICK else ""))
    if h.joints[1] != 0:
        out.add("moving B")
    out |= {"edge" for p in h.points if p.edges is not None}
    out |= {"point of B" for p in h.points if p.owner == 1 and p.edges is None}
    return out


def _agree(h, seen: set, rng) -> None:
    """Kernel and reference rows of h at its state with a random velocity: gaps within 1e-12 m,
    the other terms within 1e-12 of their largest entry (or of 1)."""
    mech = h.mech
    mech.set_state(mech.q.copy(), rng.normal(size=mech.nv), check=False)
    ref = h.reference_rows()
    mine = h.kernel_rows()
    assert mine is not None, h.describe()
    for name, a, b in zip(("gaps", "J", "drift", "G"), ref, mine):
        assert a.shape == b.shape, (h.describe(), name)
        scale = 1.0 if name == "gaps" else max(1.0, float(np.abs(a).max(initial=0.0)))
        assert np.abs(a - b).max(initial=0.0) <= 1e-12 * scale, (h.describe(), name, np.abs(a - b).max())
    seen |= _kind(h)


def _modes(h, rng):
    """Each friction mode in turn on h (its state restored after): sticking at the support's
    centroid, sliding along a tangent, at a slide's onset along it (its blend speed comparable
    with the random slips), frictionless."""
    mode, slide_dir, anchor, onset = h.mode, h.slide_dir, h._anchor_a, h.onset_speed
    A, B, n = h.sides()[0]
    t = np.cross(n, rng.normal(size=3))
    for m in (Mode.STICK, Mode.SLIDE, "onset", Mode.FRICTIONLESS):
        if m == Mode.STICK:
            h.stick()
        elif m == Mode.SLIDE:
            h.slide(t / np.linalg.norm(t))
        elif m == "onset":
            h.slide(t / np.linalg.norm(t), onset_speed=0.5)  # m/s
        else:
            h.mode = m
            h.invalidate()
        yield
    h.mode, h.slide_dir, h._anchor_a, h.onset_speed = mode, slide_dir, anchor, onset
    h.invalidate()


@pytest.fixture
def reference_rows():
    """Runs drive on the reference rows (the kernel is only compared)."""
    old = hinge.COMPILED_ROWS
    hinge.COMPILED_ROWS = "none"
    yield
    hinge.COMPILED_ROWS = old


def test_compiled_rows_equal_the_reference_on_balls_boxes_and_cylinders_in_every_mode(reference_rows):
    rng = np.random.default_rng(7)
    seen: set = set()
    for build, seconds, chunk in SCENES.values():
        b = build()
        sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
        src = enable_contacts(sim, friction=(0.5, 0.4))
        for _ in range(round(seconds / chunk)):
            sim.run(chunk)
            q, v = sim.q.copy(), sim.v.copy()
            for h in list(src.hinges.values()):
                if not h.points or h.detached:
                    continue
                _agree(h, seen, rng)  # its own mode
                for _ in _modes(h, rng):
                    _agree(h, seen, rng)
            sim.mech.set_state(q, v, check=False)
    # every kind of row the kernel builds was met
    assert {"stick", "slide", "frictionless", "ball on ball", "ball or line rolling", "moving B", "edge",
            "point of B"} <= seen, seen


def test_a_ball_column_takes_the_compiled_rows_and_keeps_the_reference_events():
    """The default (``COMPILED_ROWS = "balls"``) builds a ball column's rows in the kernel; the
    run has the reference run's events and states to rounding."""
    runs = {}
    for which in ("balls", "none"):
        old = hinge.COMPILED_ROWS
        hinge.COMPILED_ROWS = which
        try:
            before = dict(hinge.ROW_COUNTS)
            b = scenes.sphere_column(4)
            sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3, integrator="rk4")
            enable_contacts(sim, friction=(0.5, 0.4))
            rec = sim.run(0.2)
            runs[which] = ([(e.kind, e.time) for e in rec.events], np.asarray(rec.q),
                           {k: hinge.ROW_COUNTS[k] - before[k] for k in before})
        finally:
            hinge.COMPILED_ROWS = old
    assert runs["balls"][2]["kernel"] > 100 and runs["balls"][2]["reference"] == 0
    assert runs["none"][2]["kernel"] == 0
    assert [k for k, _ in runs["balls"][0]] == [k for k, _ in runs["none"][0]] and runs["none"][0]
    assert np.abs(np.array([t for _, t in runs["balls"][0]]) - [t for _, t in runs["none"][0]]).max() <= 1e-9
    assert np.abs(runs["balls"][1] - runs["none"][1]).max() <= 1e-9
