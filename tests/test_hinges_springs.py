"""Spring-damper and breakable hinges (thesis 4.3)."""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from controlkit.mechanism import Mechanism
from robots.pendulums import free_link_chain
from sim.breakable import add_breakable
from sim.simulator import Simulator
from sim.springs import SpringDamper, TorsionSpring, add_springs

G = 9.81


def slider(mass: float = 2.0) -> Mechanism:
    """A block of ``mass`` kg on a horizontal prismatic joint along x (gravity across it)."""
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelPX(), pin.SE3.Identity(), "slide")
    model.appendBodyToJoint(j, pin.Inertia.FromBox(mass, 0.1, 0.1, 0.1), pin.SE3.Identity())
    model.addFrame(pin.Frame("block", j, 0, pin.SE3.Identity(), pin.FrameType.OP_FRAME))
    return Mechanism(model, name="slider", actuated=[])


def turntable(inertia: float = 0.3) -> Mechanism:
    """A wheel of ``inertia`` kg m^2 about a vertical revolute axis."""
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "turn")
    model.appendBodyToJoint(j, pin.Inertia(1.0, np.zeros(3), np.diag([1.0, 1.0, inertia])), pin.SE3.Identity())
    return Mechanism(model, name="turntable", actuated=[])


def _crossings(t, x):
    """Times (s) where x goes from - to + (linear interpolation)."""
    i = np.flatnonzero((x[:-1] < 0) & (x[1:] >= 0))
    return t[i] - x[i] * (t[i + 1] - t[i]) / (x[i + 1] - x[i])


def _peaks(x):
    i = np.flatnonzero((x[1:-1] > x[:-2]) & (x[1:-1] >= x[2:])) + 1
    return x[i]


def test_linear_spring_oscillates_with_period_two_pi_sqrt_m_over_k():
    m, k = 2.0, 50.0
    mech = slider(m)
    # anchor 1 m behind the block, rest length 1 m: released 5 cm out of equilibrium
    sim = Simulator(mech, np.array([0.05]), dt=1e-3, integrator="rk4")
    add_springs(sim, SpringDamper(mech, "block", stiffness=k, rest_length=1.0, anchor=(-1.0, 0.0, 0.0)))
    rec = sim.run(5.0)
    T = np.diff(_crossings(rec.t, rec.q[:, 0]))
    assert len(T) >= 3
    assert np.max(np.abs(T / (2 * math.pi * math.sqrt(m / k)) - 1)) < 1e-6


def test_damped_spring_decays_by_the_logarithmic_decrement():
    m, k, c = 2.0, 50.0, 1.2
    mech = slider(m)
    sim = Simulator(mech, np.array([0.05]), dt=1e-3, integrator="rk4")
    add_springs(sim, SpringDamper(mech, "block", stiffness=k, damping=c, rest_length=1.0, anchor=(-1.0, 0.0, 0.0)))
    rec = sim.run(5.0)
    wd = math.sqrt(k / m - (c / (2 * m)) ** 2)
    T = np.diff(_crossings(rec.t, rec.q[:, 0]))
    assert np.max(np.abs(T / (2 * math.pi / wd) - 1)) < 1e-5
    peaks = _peaks(rec.q[:, 0])
    assert len(peaks) >= 3
    decrement = np.log(peaks[:-1] / peaks[1:])
    assert np.max(np.abs(decrement / (c / (2 * m) * 2 * math.pi / wd) - 1)) < 1e-3


def test_torsion_spring_period_and_energy():
    inertia, k = 0.3, 12.0
    mech = turntable(inertia)
    spring = TorsionSpring(mech, "turn", stiffness=k, rest=0.2)
    sim = Simulator(mech, np.array([0.5]), dt=1e-3, integrator="rk4")
    add_springs(sim, spring)
    rec = sim.run(3.0)
    T = np.diff(_crossings(rec.t, rec.q[:, 0] - 0.2))
    assert np.max(np.abs(T / (2 * math.pi * math.sqrt(inertia / k)) - 1)) < 1e-6
    energy = 0.5 * inertia * rec.v[:, 0] ** 2 + 0.5 * k * (rec.q[:, 0] - 0.2) ** 2
    assert np.ptp(energy) / energy[0] < 1e-8


# ---------------------------------------------------------------- breakable hinges
STRENGTHS = {"hinge_1": 120.0, "hinge_2": 60.0, "hinge_3": 50.0, "hinge_4": 70.0}
PULL = 100.0  # N/s: the downward pull on the bottom link grows at this rate


def _pulled_chain():
    built = free_link_chain(4, link_mass=1.0)
    mech = built.mechanism
    bottom = mech.frame_id("link_4.b")

    def pull(t, mech):
        return mech.frame_jacobian(bottom)[:3].T @ np.array([0.0, 0.0, -PULL * t])

    sim = Simulator(mech, built.q0, built.v0, dt=1e-3, integrator="rk4", external_force=pull)
    src = add_breakable(sim, STRENGTHS)
    return mech, sim, src


def test_the_weakest_link_of_a_pulled_chain_breaks_first_at_its_strength():
    mech, sim, src = _pulled_chain()
    sim.run(0.35)
    # quasi-static: hinge i carries the pull plus the weight of the links below it
    margins = {f"hinge_{i}": STRENGTHS[f"hinge_{i}"] - (5 - i) * G for i in range(1, 5)}
    first = min(margins, key=margins.get)
    assert first == "hinge_3" == min(STRENGTHS, key=STRENGTHS.get)
    assert [b[1] for b in src.broken] == ["hinge_3"]
    t_break, _, force = src.broken[0]
    assert t_break == pytest.approx(margins[first] / PULL, abs=2e-9)
    assert force == pytest.approx(STRENGTHS["hinge_3"], rel=1e-6)
    assert "hinge_3" not in mech.constraints and "hinge_2" in mech.constraints
    ev = sim.recording.events_of("break")[0]
    assert np.array_equal(ev.data["v_before"], ev.data["v_after"])  # no impulse: momentum continuous


def test_after_the_break_the_lower_links_fall_under_gravity_and_the_pull():
    mech, sim, src = _pulled_chain()
    sim.run(0.33)
    t = sim.t
    sim.solve_now()
    a = mech.solution.a
    # links 3 and 4 (2 kg, still pinned together) fall at g + F / 2 kg; links 1, 2 stay
    for link in ("link_3", "link_4"):
        fid = mech.frame_id(link)
        az = mech.frame_jacobian(fid)[2] @ a + mech.frame_drift(fid)[2]
        assert az == pytest.approx(-(G + PULL * t / 2.0), rel=1e-9)
    upper = mech.frame_jacobian(mech.frame_id("link_1"))[:3] @ a
    assert np.max(np.abs(upper)) < 1e-9
