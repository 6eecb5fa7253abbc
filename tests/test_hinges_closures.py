"""Hinges of thesis 4.3: loop closures through prismatic, universal and cylindrical hinges, the
cylindrical hinge, a rolling disk, and the four-bar's rank in the bifurcation position (Fig. 4.10)
and the spherical loop's determinate forces (Fig. 4.5)."""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

import robots
from controlkit.closures import CylinderConstraint, RollingDisk, SliderConstraint, UniversalConstraint
from controlkit.dynamics import evaluate
from controlkit.equations import EquationSet
from controlkit.mechanism import Mechanism
from robots import Body, Cylindrical, Scene, Spherical, Universal, cuboid, pose
from robots.linkages import four_bar_free, slider_crank, spherical_loop
from sim.simulator import Simulator

G = 9.81


def _rank(J, rtol=1e-9):
    s = np.linalg.svd(J, compute_uv=False)
    return int(np.sum(s > rtol * s[0]))


# ------------------------------------------------------------ Fig. 4.10 and 4.5
def test_four_bar_has_17_independent_rows_of_20_and_16_in_the_bifurcation_position():
    for angle, rank in ((math.pi / 3, 17), (0.0, 16)):
        mech = four_bar_free(crank_angle=angle).mechanism
        J = np.vstack([c.jacobian() for c in mech.constraints.values()])
        assert J.shape == (20, 18)
        assert _rank(J) == rank
    # at the bifurcation the bars lie on one line and two motions start (the parallelogram, the antiparallelogram)
    P = four_bar_free(crank_angle=0.0).info["points"]
    assert max(abs(p[2]) for p in P.values()) < 1e-15


def test_spherical_loop_has_determinate_forces_and_the_pin_loop_does_not():
    built = spherical_loop()
    mech = built.mechanism
    sol = evaluate(mech, EquationSet(), 0.0, built.q0, built.v0)
    J = mech.constraints["hinge_4"].jacobian()
    assert J.shape[0] == 3 and _rank(J) == 3
    assert sol.indeterminate == []
    pin_loop = robots.four_bar()
    sol = evaluate(pin_loop.mechanism, EquationSet(), 0.0, pin_loop.q0, pin_loop.v0)
    assert set(sol.indeterminate) == {"hinge_4.y", "hinge_4.axis_x", "hinge_4.axis_y"}


# ------------------------------------------------------------ rows: Jacobians and drifts
def _free_pair() -> Mechanism:
    """Two free bodies (a box and a disk of radius 0.3 m, local z its axis) under gravity."""
    model = pin.Model()
    for name, I in (("box", pin.Inertia.FromBox(2.0, 0.3, 0.2, 0.1)), ("disk", pin.Inertia.FromCylinder(1.5, 0.3, 0.02))):
        j = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), f"{name}_root")
        model.appendBodyToJoint(j, I, pin.SE3.Identity())
        model.addFrame(pin.Frame(name, j, 0, pin.SE3(pin.exp3(np.array([0.2, -0.1, 0.3])), np.array([0.05, 0.1, -0.02])),
                                 pin.FrameType.OP_FRAME))
        model.addFrame(pin.Frame(f"{name}_centre", j, 0, pin.SE3.Identity(), pin.FrameType.OP_FRAME))
    return Mechanism(model, name="pair", actuated=[])


CONSTRAINTS = {
    "slider": lambda: SliderConstraint("c", "box", "disk"),
    "cylinder": lambda: CylinderConstraint("c", "box", "disk"),
    "universal": lambda: UniversalConstraint("c", "box", "disk", (1, 0, 0), (0, 0.6, 0.8)),
    "rolling": lambda: RollingDisk("c", "disk_centre", 0.3),
}


@pytest.mark.parametrize("kind", list(CONSTRAINTS))
def test_closure_rows_jacobian_and_drift_match_finite_differences(kind):
    mech = _free_pair()
    rng = np.random.default_rng(7)
    pin.seed(7)
    q = pin.randomConfiguration(mech.model, -np.ones(mech.nq), np.ones(mech.nq))
    v = rng.standard_normal(mech.nv)
    c = CONSTRAINTS[kind]()
    mech.set_state(q, v)
    mech.add_constraint(c)
    J, drift = c.jacobian().copy(), c.drift().copy()
    eps = 1e-6

    def at(t):
        mech.set_state(mech.integrate(q, t * v), v)  # a = 0 along this path
        return c.error().copy(), c.jacobian() @ v

    (e1, Jv1), (e0, Jv0) = at(eps), at(-eps)
    if kind == "rolling":  # only the height row is a position; the others are the material point's velocity
        assert abs((e1[2] - e0[2]) / (2 * eps) - J[2] @ v) < 1e-7
        fid = mech.frame_id("disk_centre")
        mech.set_state(q, v)
        r0 = mech.kinematics().oMf[fid].actInv(c.contact_point())
        pts = []
        for t in (eps, -eps):
            mech.set_state(mech.integrate(q, t * v), v)
            pts.append(mech.kinematics().oMf[fid].act(r0))
        assert np.allclose((pts[0] - pts[1]) / (2 * eps), J @ v, atol=1e-7)
    else:
        assert np.allclose((e1 - e0) / (2 * eps), J @ v, atol=1e-7)
    assert np.allclose((Jv1 - Jv0) / (2 * eps), drift, atol=1e-6)


# ------------------------------------------------------------ simulations
def _energy_run(built, duration, v0=None, dt=1e-3):
    mech = built.mechanism
    sim = Simulator(mech, built.q0, built.v0 if v0 is None else v0, dt=dt, integrator="rk4")
    rec = sim.run(duration)
    E = []
    for q, v in zip(rec.q, rec.v):
        mech.set_state(q, v)
        E.append(mech.energy())
    closure = max(built.loop_closure_errors(q) [n] for q in rec.q[::50] for n in mech.constraints)
    return np.array(E), closure, rec


def test_slider_crank_closed_through_a_prismatic_hinge_conserves_energy():
    built = slider_crank()
    assert isinstance(built.mechanism.constraints["slide"], SliderConstraint)
    E, closure, rec = _energy_run(built, 1.0)
    assert np.ptp(rec.q[:, 0]) > 1.0  # the crank swings
    assert np.ptp(E) < 1e-6 * np.max(np.abs(E - E.min()) + 1.0)
    assert closure < 1e-8


def _ring(closing):
    """Four bars in a square (x-z plane), the first fixed, spherical hinges, closed by ``closing``."""
    s = Scene("ring", self_collision=False)
    ry = lambda a: pin.exp3(np.array([0, -a, 0]))  # noqa: E731
    bar = lambda n: Body(n, cuboid(1.0, 0.05, 0.05), density=1000.0, features={"a": (-0.5, 0, 0), "b": (0.5, 0, 0)})  # noqa: E731
    s.add(bar("b0"), pose((0.5, 0, 0)), fixed=True)
    for i in (1, 2, 3):
        s.add(bar(f"b{i}"))
        s.join(f"b{i - 1}", "b", f"b{i}", "a", Spherical(actuated=False), rotation=ry(math.pi / 2), name=f"h{i}")
    s.join("b3", "b", "b0", "a", closing, rotation=ry(math.pi / 2), name="close")
    return s.build(check_closure=1e-12)


@pytest.mark.parametrize("closing,cls", [(Universal((0, 1, 0), (1, 0, 0), actuated=False), UniversalConstraint),
                                         (Cylindrical((0, 1, 0), actuated=False), CylinderConstraint)],
                         ids=["universal", "cylindrical"])
def test_spatial_loops_closed_through_universal_and_cylindrical_hinges_conserve_energy(closing, cls):
    built = _ring(closing)
    mech = built.mechanism
    assert isinstance(mech.constraints["close"], cls)
    J = mech.constraints["close"].jacobian()
    N = np.linalg.svd(J)[2][_rank(J):].T  # admissible velocities
    v0 = N @ np.random.default_rng(1).standard_normal(N.shape[1])
    E, closure, rec = _energy_run(built, 1.0, v0=v0)
    assert np.ptp(E) < 1e-6 * (abs(E[0]) + 1.0)
    assert closure < 1e-7


def test_cylindrical_hinge_slides_under_gravity_and_spins_freely():
    s = Scene("cyl")
    s.add(Body("post", cuboid(0.1, 0.1, 1.0), density=1000.0, features={"axis": (0, 0, 0.5)}), pose((0, 0, 0.5)), fixed=True)
    s.add(Body("sleeve", cuboid(0.3, 0.2, 0.1), mass=2.0, features={"hole": (0, 0, 0)}))
    s.join("post", "axis", "sleeve", "hole", Cylindrical((0, 0, 1), actuated=False), name="cyl")
    built = s.build(initial={"cyl": (0.2, 0.1)})
    mech = built.mechanism
    assert (mech.nq, mech.nv) == (2, 2)
    sim = Simulator(mech, built.q0, np.array([0.0, 3.0]), dt=1e-3, integrator="rk4")
    sim.run(0.5)
    assert sim.q[0] == pytest.approx(0.2 - G * 0.5**2 / 2, abs=1e-12)
    assert sim.q[1] == pytest.approx(0.1 + 3.0 * 0.5, abs=1e-12)


def _rolling_disk(lean=0.25, spin=8.0, yaw_rate=0.5, radius=0.3, mass=1.5):
    """A thin disk (local z its axis) rolling on z = 0, leaning by ``lean`` rad, with consistent velocity."""
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "disk_root")
    model.appendBodyToJoint(j, pin.Inertia.FromCylinder(mass, radius, 0.01), pin.SE3.Identity())
    model.addFrame(pin.Frame("disk", j, 0, pin.SE3.Identity(), pin.FrameType.OP_FRAME))
    mech = Mechanism(model, name="rolling_disk", actuated=[])
    R = pin.exp3(np.array([lean, 0.0, 0.0])) @ pin.exp3(np.array([-math.pi / 2, 0.0, 0.0]))  # axis along y, leaning
    c = RollingDisk("roll", "disk", radius)
    q = np.concatenate([[0.0, 0.0, 1.0], pin.Quaternion(R).coeffs()])
    mech.set_state(q)
    mech.add_constraint(c)
    q[2] -= c.contact_point()[2]  # down onto the plane
    mech.set_state(q)
    w = spin * R[:, 2] + np.array([0.0, 0.0, yaw_rate])
    r = c.contact_point() - q[:3]
    vc = -np.cross(w, r)
    v = np.concatenate([R.T @ vc, R.T @ w])
    return mech, c, q, v


def test_rolling_disk_rolls_without_slipping_and_conserves_energy():
    mech, c, q, v = _rolling_disk()
    sim = Simulator(mech, q, v, dt=1e-3, integrator="rk4")
    rec = sim.run(2.0)
    E, slip, height = [], [], []
    for qk, vk in zip(rec.q, rec.v):
        mech.set_state(qk, vk)
        E.append(mech.energy())
        slip.append(np.linalg.norm(c.jacobian() @ vk))
        height.append(abs(c.contact_point()[2]))
    E = np.array(E)
    assert np.linalg.norm(rec.q[-1, :2] - rec.q[0, :2]) > 1.0  # it rolled somewhere
    assert np.ptp(E) / abs(E[0]) < 1e-7
    assert max(slip) < 1e-8 and max(height) < 1e-9
    # it neither fell nor stood up: the lean stays bounded away from flat
    mech.set_state(rec.q[-1])
    assert abs(mech.kinematics().oMf[mech.frame_id("disk")].rotation[2, 2]) < 0.9
