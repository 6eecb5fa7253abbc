"""Coulomb's law in one object (controlkit.friction.FrictionLaw): coefficients, the static test,
the kinetic directions, the impact cone and the friction pyramids."""
import math

import numpy as np
import pinocchio as pin
import pytest

import robots
from controllers.whole_body import FootContact
from sim.contact import FrictionLaw, FrictionTable


def test_friction_law_looks_up_a_pair_by_its_materials_in_either_order():
    law = FrictionLaw((0.5, 0.4), {("wood", "steel"): (0.9, 0.6)}, {"box": "wood", "floor": "steel"})
    assert law("box", "floor") == law("floor", "box") == (0.9, 0.6)
    assert law.coefficients("box", "table") == (0.5, 0.4)
    assert FrictionTable is FrictionLaw  # the table's name still builds the same object
    assert FrictionLaw.make(0.7)("a", "b") == (0.7, 0.7)
    assert FrictionLaw.make({"default": 0.3, ("a", "b"): (0.8, 0.5)})("b", "a") == (0.8, 0.5)
    assert FrictionLaw.make(law) is law


def test_pyramid_rows_are_the_whole_body_controllers_friction_rows_on_a_tilted_foot():
    """The planted foot's friction rows (FootContact builds them with FrictionLaw.pyramid_rows in the
    foot's axes, then maps them to the world force block) equal FrictionLaw.pyramid_rows on the foot's
    world normal and tangents, in its order."""
    mech = robots.biped().mechanism
    pin.seed(2)  # Pinocchio's generator is process-wide: seed it so the foot is the same in any test order
    q = pin.randomConfiguration(mech.model, -np.ones(mech.nq), np.ones(mech.nq))
    mech.set_state(q, np.zeros(mech.nv))
    mech.kinematics()
    foot = FootContact("f", "foot_l", 0.1, 0.05, 0.02, 0.8)
    foot.bind(mech)
    C, _ = foot.force_inequalities()
    R = mech.data.oMf[mech.frame_id("foot_l")].rotation
    assert abs(R[2, 2]) < 0.99  # a tilted foot: the rows are not the world axes'
    rows = FrictionLaw.pyramid_rows(R[:, 2], R[:, :2].T, 0.8)
    # FootContact's friction limits: +fx, +fy (rows 1, 2) and -fx, -fy (rows 6, 7), no moment part
    np.testing.assert_allclose(C[[1, 2, 6, 7], 3:], 0.0, atol=1e-12)
    np.testing.assert_allclose(rows, C[[1, 2, 6, 7], :3], atol=1e-12)


def test_forces_inside_the_pyramids_are_inside_coulombs_cone():
    rng = np.random.default_rng(3)
    n = np.array([0.0, 0.0, 1.0])
    T = np.eye(3)[:2]
    mu = 0.7
    R = FrictionLaw.pyramid_rows(n, T, mu)
    inside = 0
    for _ in range(2000):
        f = rng.normal(size=3) * np.array([1.0, 1.0, 0.5]) + np.array([0.0, 0.0, 1.0])
        if np.all(R @ f <= 0.0):
            inside += 1
            assert math.hypot(f[0], f[1]) <= mu * f[2] + 1e-12
            assert max(abs(f[0]), abs(f[1])) <= mu / math.sqrt(2) * f[2] + 1e-12
    assert inside > 100  # (the sample reaches into the pyramid)
    # the controlled hinge's pyramid on its multipliers: |f_t1| + |f_t2| <= mu sum(lam_n)
    C = FrictionLaw.multiplier_pyramid(3, 2, 6, mu)
    assert C.shape == (4, 6) and np.all(C[:, 5] == 0.0)
    for _ in range(500):
        lam = rng.normal(size=6)
        lam[:3] = np.abs(lam[:3])
        assert bool(np.all(C @ lam <= 1e-12)) == (abs(lam[3]) + abs(lam[4]) <= mu * lam[:3].sum() + 1e-12)


def test_static_test_of_the_friction_pass_is_the_slip_guards_zero_crossing():
    mu = 0.5
    fn = np.array([10.0, 20.0])
    on_cone = np.array([9.0, 12.0])  # |ft| = 15 = mu sum(fn)
    assert FrictionLaw.static_margin(mu, fn.tolist(), on_cone) == pytest.approx(0.0, abs=1e-12)
    assert FrictionLaw.slips(mu, fn, on_cone)
    assert not FrictionLaw.slips(mu, fn, 0.99 * on_cone)
    assert FrictionLaw.static_margin(mu, fn.tolist(), 0.99 * on_cone) == pytest.approx(0.15)
    assert FrictionLaw.slips(mu, fn, 1.01 * on_cone)
    # the direction a slipping contact takes: against the static friction it held
    np.testing.assert_allclose(FrictionLaw.slip_direction(np.array([3.0, -4.0, 0.0])), [-0.6, 0.8, 0.0])


def test_kinetic_directions_follow_each_points_tangential_velocity_and_the_contacts_at_rest():
    k = np.array([0.0, 0.0, 1.0])
    u = np.array([1.0, 0.0, 0.0])
    dv = np.array([[0.0, 2.0, 5.0],  # fast, along y (its normal part does not count)
                   [0.0, 0.0, 0.0]])  # at rest (the centre of a turn): the contact's direction
    d = FrictionLaw.slide_directions(dv, k, u)
    np.testing.assert_allclose(d[0], [0.0, 1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(d[1], u)
    fn = np.array([4.0, 6.0])
    np.testing.assert_allclose(FrictionLaw.kinetic_force(fn, d, 0.25), -0.25 * (4.0 * d[0] + 6.0 * d[1]))
    np.testing.assert_allclose(FrictionLaw.kinetic_force(fn, u, 0.25), [-2.5, 0.0, 0.0])
    J = np.array([[1.0, 2.0]])
    D = np.array([[0.5, -1.0]])
    np.testing.assert_allclose(FrictionLaw.kinetic_rows(J, D, 0.4), [[0.8, 2.4]])


def test_impact_cone_test_admits_round_off_only():
    assert not FrictionLaw.outside_cone(np.array([0.3, 0.4]), 1.0, 0.5)  # |pt| = mu pn: on the cone
    assert FrictionLaw.outside_cone(np.array([0.3, 0.4 + 1e-6]), 1.0, 0.5)
    assert not FrictionLaw.outside_cone(np.zeros(2), 0.0, 0.5)
