"""Outcome sets of the propagative impact law and the uniqueness theorems (seed 001, sections IV-V)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from controlkit.errors import ControlkitError
from robots.billiards import billiard_balls
from sim.collision import CollisionWorld
from sim.impact import ImpactError, resolve_impact
from sim.impact_outcomes import impact_outcomes, reset_bound, uniqueness

S3 = math.sqrt(3.0)


def two_normals(c: float, M: np.ndarray) -> np.ndarray:
    """Two rows J (2, n) whose normalised inner product under the metric M^-1 is c."""
    L = np.linalg.cholesky(np.linalg.inv(M))  # M^-1 = L L^T: rows x L^-1 ... are orthonormal in the metric
    e1 = np.zeros(len(M)); e1[0] = 1.0
    e2 = np.zeros(len(M)); e2[1] = 1.0
    Linv = np.linalg.inv(L)
    u = e1 @ Linv
    w = (c * e1 + math.sqrt(1 - c * c) * e2) @ Linv
    return np.vstack([u, w])


def random_spd(rng, n):
    A = rng.normal(size=(n, n))
    return A @ A.T + n * np.eye(n)


def test_orthogonal_normals_give_one_outcome_in_two_resets():
    """Theorem 2: orthogonal normals (c = 0) -> the resets commute: both orders, one outcome, two resets."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        M = random_spd(rng, 4)
        J = two_normals(0.0, M)
        v = np.linalg.solve(M, -(np.abs(rng.normal(size=2)) + 0.1) @ J) + 0.0  # both contacts impacting
        v += np.linalg.solve(M, rng.normal(size=4))  # plus a random momentum (may make one contact feasible)
        u = J @ v
        out = resolve_impact(M, J, v, 1.0, outcomes="all")
        assert out.uniqueness.theorem == "Theorem 2" and out.uniqueness.guaranteed_unique
        assert len(out) == 1
        o = out.outcomes[0]
        # each impacting contact reflected once: J v+ = |J v-| (they do not see each other)
        np.testing.assert_allclose(J @ o.v, np.abs(u), atol=1e-12)
        assert len(o.sequence) == int(np.sum(u < 0))
        if np.all(u < 0):
            assert o.count == 2 and len(o.sequence) == 2  # both orders, two resets each
        assert o.kinetic_energy == pytest.approx(out.kinetic_energy_before, rel=1e-12)


def test_inner_product_minus_half_gives_one_outcome():
    """Theorem 3: c = -1/2 (the wedge of feasible momenta is pi/3) -> one outcome for every momentum."""
    rng = np.random.default_rng(1)
    M = random_spd(rng, 5)
    J = two_normals(-0.5, M)
    both = 0
    for _ in range(200):
        v = rng.normal(size=5)
        out = impact_outcomes(M, J, v)
        assert out.uniqueness.theorem == "Theorem 3"
        assert len(out) == 1, [o.v for o in out.outcomes]
        both += out.sequences == 2
    assert both > 20  # many momenta impacted both contacts at once (two different sequences, one outcome)


def test_three_ball_cradle_contacts_are_theorem_3():
    """Newton's cradle of three equal balls: neighbouring contacts at c = -1/2, one outcome (the last ball leaves)."""
    pos = np.array([[0.0, 0.0], [0.1, 0.0], [0.2, 0.0]])
    mech = billiard_balls(pos, radius=0.05, mass=0.3)
    q = pos.ravel()
    v = np.array([1.0, 0, 0, 0, 0, 0])
    mech.set_state(q, v)
    world = CollisionWorld(mech)
    contacts = [c for c in world.contacts(q, v) if c.distance <= 1e-12]
    J = world.jacobian(contacts)
    M, _ = mech.dynamics()
    rep = uniqueness(M, J)
    assert rep.inner_products[0, 1] == pytest.approx(-0.5, abs=1e-12) and rep.theorem == "Theorem 3"
    out = resolve_impact(M, J, v, 1.0, outcomes="all")
    assert len(out) == 1
    np.testing.assert_allclose(out.outcomes[0].v, [0, 0, 0, 0, 1, 0], atol=1e-12)


def plane(c: float):
    """M = I (2, 2) and the unit normals u = (1, 0), v at arccos(c) from it: the plane N of Lemma 3."""
    return np.eye(2), np.array([[1.0, 0.0], [c, math.sqrt(1.0 - c * c)]])


def at(deg: float) -> np.ndarray:
    return np.array([math.cos(math.radians(deg)), math.sin(math.radians(deg))])


def reflection(u: np.ndarray) -> np.ndarray:
    """Gamma(u) of eq. 7a in the plane (M = I): the reflection in the line orthogonal to u."""
    return np.eye(2) - 2.0 * np.outer(u, u) / (u @ u)


def test_theorem_3_both_signs_share_the_braid_relation_but_only_minus_half_is_unique():
    """Seed 001, section V: "Theorem 2 and Theorem 3 guarantee uniqueness of the impact results in the
    cases that the inner product between the two contact manifold normals takes a value of 0 or ±0.5,
    respectively." (The theorem's own statement and proof are not in the seed's text.)

    What holds for both signs: the normals are 60 degrees apart as lines, so the two reflections
    generate the dihedral group of order 6, (Gamma(u) Gamma(v))^3 = I and Gamma(u)Gamma(v)Gamma(u) =
    Gamma(v)Gamma(u)Gamma(v). What differs: with u = Dphi_a, v = Dphi_b (eq. 6: feasible when
    <p, u> >= 0 and <p, v> >= 0) the feasible momenta are a wedge of interior angle arccos(-c):

    c = -1/2 (v at 120 deg, wedge [30, 90] deg, one chamber of the group): a momentum at alpha in
    (210, 270) deg approaches both contacts; u first: 180 - alpha (approaches v), then alpha - 120
    (approaches u), then 300 - alpha, feasible; v first: 420 - alpha (approaches u), then alpha - 240
    (approaches v), then 300 - alpha: one outcome, three resets each way (the braid relation).

    c = +1/2 (v at 60 deg, wedge [-30, 90] deg, two chambers): a momentum at alpha in (150, 210) deg
    approaches both; u first: 180 - alpha, feasible after one reset; v first: 300 - alpha (> 90:
    approaches u), then alpha - 120, feasible: two outcomes, one reset and two. For alpha in (210, 270)
    the mirror image: 300 - alpha (v first, one reset) and alpha - 240 (u first, two). Both conserve
    the energy, and both are minimal sequences: the braid relation never comes into play because no
    minimal sequence reaches length 3. So the +0.5 half of the sentence does not hold for these
    normals; controlkit names Theorem 3 for c = -1/2 only."""
    for c in (-0.5, 0.5):
        _, J = plane(c)
        Gu, Gv = reflection(J[0]), reflection(J[1])
        np.testing.assert_allclose(np.linalg.matrix_power(Gu @ Gv, 3), np.eye(2), atol=1e-15)
        np.testing.assert_allclose(Gu @ Gv @ Gu, Gv @ Gu @ Gv, atol=1e-15)
    M, J = plane(-0.5)
    for alpha in np.linspace(212.0, 268.0, 15):
        out = resolve_impact(M, J, at(alpha), 1.0, outcomes="all")
        assert out.uniqueness.theorem == "Theorem 3" and out.uniqueness.guaranteed_unique
        assert len(out) == 1 and out.sequences == 2  # both orders ...
        o = out.outcomes[0]
        assert len(o.sequence) == 3 and o.count == 2  # ... three resets each, meeting at one momentum
        np.testing.assert_allclose(o.v, at(300.0 - alpha), atol=1e-14)
    M, J = plane(0.5)
    for alpha in list(np.linspace(152.0, 208.0, 15)) + list(np.linspace(212.0, 268.0, 15)):
        out = resolve_impact(M, J, at(alpha), 1.0, outcomes="all")
        assert out.uniqueness.theorem == "none" and not out.uniqueness.guaranteed_unique
        assert out.uniqueness.inner_products[0, 1] == pytest.approx(0.5, abs=1e-15)
        assert len(out) == 2
        got = {len(o.sequence): o.v for o in out.outcomes}
        assert sorted(got) == [1, 2]
        one, two = (180.0 - alpha, alpha - 120.0) if alpha < 210.0 else (300.0 - alpha, alpha - 240.0)
        np.testing.assert_allclose(got[1], at(one), atol=1e-14)
        np.testing.assert_allclose(got[2], at(two), atol=1e-14)
        for o in out.outcomes:
            assert o.kinetic_energy == pytest.approx(out.kinetic_energy_before, rel=1e-14)
    # a point mass dropped into a 120 degree V (walls' normals 60 degrees apart): it leaves off one wall or the other
    out = impact_outcomes(np.eye(2), np.array([[0.0, 1.0], [S3 / 2, 0.5]]), np.array([0.0, -1.0]) + 0.2 * at(200.0))
    assert len(out) == 2


def test_theorem_3_needs_elastic_impacts_and_theorem_2_does_not():
    """Theorem 3 is a result on reflections (e = 1). With e = 0.5 a reset is no reflection: at c = -1/2 some
    momenta have two outcomes (e.g. alpha = 240 deg, on the wedge's axis, gives two mirror images), so the
    report names no theorem; orthogonal normals still commute (Theorem 2) for any e."""
    M, J = plane(-0.5)
    out = resolve_impact(M, J, at(240.0), 0.5, outcomes="all")
    assert len(out) == 2
    assert out.uniqueness.theorem == "none" and not out.uniqueness.guaranteed_unique
    assert "elastic" in out.uniqueness.text
    assert uniqueness(M, J, restitution=[1.0, 1.0]).theorem == "Theorem 3"
    assert uniqueness(M, J, restitution=[1.0, 0.9]).theorem == "none"
    M, J = plane(0.0)
    rng = np.random.default_rng(4)
    for e in (0.0, 0.5, 0.9):
        for _ in range(20):
            out = resolve_impact(M, J, rng.normal(size=2), e, outcomes="all")
            assert out.uniqueness.theorem == "Theorem 2" and len(out) == 1


def billiard_three(theta_deg=30.0, mass=0.17, radius=0.028575):
    """Cue ball A at the origin touching B and C at +-theta from its +x velocity (1 m/s)."""
    t = math.radians(theta_deg)
    d = 2 * radius
    pos = np.array([[0.0, 0.0], [d * math.cos(t), d * math.sin(t)], [d * math.cos(t), -d * math.sin(t)]])
    mech = billiard_balls(pos, radius, mass)
    q = pos.ravel()
    v = np.zeros(6)
    v[0] = 1.0
    mech.set_state(q, v)
    world = CollisionWorld(mech)
    contacts = [c for c in world.contacts(q, v) if c.distance <= 1e-9]
    M, _ = mech.dynamics()
    return mech, M, world.jacobian(contacts), v, contacts


def test_billiard_balls_struck_at_30_degrees_have_two_mirror_outcomes():
    """Equal balls B, C touching the cue ball A at +-30 deg (B and C also touch): c = 0.25 between the
    cue's contacts, and exactly two outcomes, mirror images, as derived by hand:

    reset A-B first: A's velocity component along n_B = (cos 30, sin 30) passes to B:
        B = (sqrt3/2) n_B = (3/4, sqrt3/4), A = (1, 0) - B = (1/4, -sqrt3/4);
    then A approaches C (n_C = (cos 30, -sin 30), A . n_C = sqrt3/4 > 0):
        C = (sqrt3/4) n_C = (3/8, -sqrt3/8), A = (1/4, -sqrt3/4) - C = (-1/8, -sqrt3/8);
    A-B: B . n_B - A . n_B = sqrt3/2 + sqrt3/8 > 0 and B-C separate (3 sqrt3/8): feasible, done.
    Starting with A-C gives the mirror image. Energy 1/16 + 12/16 + 3/16 = 1 (x 1/2 m), momentum (1, 0)."""
    mech, M, J, v, contacts = billiard_three(30.0)
    names = [(c.geom_a, c.geom_b) for c in contacts]
    assert sorted(tuple(sorted(p)) for p in names) == [("ball0", "ball1"), ("ball0", "ball2"), ("ball1", "ball2")]
    ab, ac = names.index(("ball0", "ball1")), names.index(("ball0", "ball2"))
    rep = uniqueness(M, J[[ab, ac]])
    assert rep.inner_products[0, 1] == pytest.approx(0.25, abs=1e-12)
    assert rep.theorem == "none" and not rep.guaranteed_unique and rep.reset_bound == 2
    out = resolve_impact(M, J, v, 1.0, outcomes="all")
    assert len(out) == 2
    first = {o.sequence[0]: o.v for o in out.outcomes}
    expect_b_first = np.array([-1 / 8, -S3 / 8, 3 / 4, S3 / 4, 3 / 8, -S3 / 8])
    expect_c_first = np.array([-1 / 8, S3 / 8, 3 / 8, S3 / 8, 3 / 4, -S3 / 4])
    np.testing.assert_allclose(first[ab], expect_b_first, atol=1e-12)
    np.testing.assert_allclose(first[ac], expect_c_first, atol=1e-12)
    for o in out.outcomes:
        assert len(o.sequence) == 2 and o.count == 1
        assert o.kinetic_energy == pytest.approx(out.kinetic_energy_before, rel=1e-12)
        np.testing.assert_allclose([o.v[0::2].sum(), o.v[1::2].sum()], [1.0, 0.0], atol=1e-12)  # momentum / m
    # the single-outcome law picks one of them
    one = resolve_impact(M, J, v, 1.0)
    assert any(np.allclose(one.v, o.v, atol=1e-12) for o in out.outcomes)


@pytest.mark.parametrize("c", [-0.95, -0.9, -0.8, -0.7071067811865476, -0.6, -0.5, -0.3, 0.0, 0.25, 0.6, 0.9])
def test_two_contact_sequences_stay_within_theorem_1s_bound(c):
    """Theorem 1: a two-contact minimal sequence ends after at most ceil(pi / arccos(-c)) resets; the
    bound is reached by some momentum."""
    rng = np.random.default_rng(2)
    M = random_spd(rng, 3)
    J = two_normals(c, M)
    bound = reset_bound(c)
    assert uniqueness(M, J).reset_bound == bound
    longest = 0
    for _ in range(400):
        out = impact_outcomes(M, J, rng.normal(size=3))
        longest = max(longest, out.longest)
        for o in out.outcomes:
            assert len(o.sequence) <= bound
            assert o.kinetic_energy == pytest.approx(out.kinetic_energy_before, rel=1e-10)
            assert np.all(J @ o.v >= -1e-9)
    assert longest == bound


def test_dihedral_wedges_are_unique_and_others_are_not():
    """The outcome is unique for all momenta exactly when pi / theta is an integer (theta = arccos(-c)):
    c = -cos(pi/4) (m = 4) is unique, c = -0.6 is not."""
    rng = np.random.default_rng(3)
    M = random_spd(rng, 3)
    for c, unique in ((-math.cos(math.pi / 4), True), (-math.cos(math.pi / 5), True), (-0.6, False)):
        J = two_normals(c, M)
        counts = {len(impact_outcomes(M, J, rng.normal(size=3))) for _ in range(300)}
        assert (counts == {1}) == unique, (c, counts)
        assert uniqueness(M, J).guaranteed_unique == unique


def test_outcome_enumeration_errors():
    M = np.eye(2)
    J = np.array([[1.0, 0.0], [-0.999, 0.0447]])
    J[1] /= np.linalg.norm(J[1])
    with pytest.raises(ImpactError, match="max_resets"):
        impact_outcomes(M, J, np.array([-1.0, -0.01]), max_resets=3)
    with pytest.raises(ControlkitError, match="outcomes must be"):
        resolve_impact(M, J, np.array([-1.0, 0.0]), 1.0, law="simultaneous", outcomes="all")
    with pytest.raises(ControlkitError, match="collinear"):
        reset_bound(1.0)


@pytest.mark.parametrize("c", [0.3, 0.05, -0.05, -0.3, -0.5])
@pytest.mark.parametrize("e", [1.0, 0.0])
def test_one_approaching_contact_with_the_other_resting_has_one_outcome_for_any_c(c, e):
    """One contact infeasible, the other resting (<p, u_b>_g = 0): the first reset is forced; for c >= 0 it
    leaves the resting contact separating (one reset, no impulse on it), for c < 0 it makes it infeasible and
    every later reset is forced too (the contact just reset is feasible). One outcome either way."""
    from sim.impact_outcomes import ONE_FORCED, ONE_SEPARATING, strike_case
    rng = np.random.default_rng(3)
    M = random_spd(rng, 4)
    J = two_normals(c, M)
    for _ in range(20):
        v = np.linalg.lstsq(J, [-rng.uniform(0.1, 1.0), 0.0], rcond=None)[0]
        v += (np.eye(4) - np.linalg.pinv(J) @ J) @ rng.normal(size=4)  # any tangential part
        out = resolve_impact(M, J, v, e, outcomes="all")
        case = strike_case(M, J, v, e)
        assert len(out) == 1 and case.unique and case.approaching == (0,)
        o = out.outcomes[0]
        if c > 0:
            assert case.case == ONE_SEPARATING and o.sequence == (0,) and o.impulses[1] == 0.0
            assert (J @ o.v)[1] > 0  # the resting contact leaves
        else:
            assert case.case == ONE_FORCED and len(o.sequence) >= 2 and o.impulses[1] > 0
        assert np.all(J @ o.v >= -1e-9)


def test_a_resting_contact_approaching_at_a_micrometre_per_second_splits_the_outcome():
    """The single-striker case needs the resting contact's <p, u_b>_g >= 0 exactly (to the enumerator's
    1e-9 m/s): at -1e-6 m/s both contacts are infeasible, both orders are minimal, and with c = 0.3 they end
    1e-6-close but apart (two outcomes); the case then defers to the theorems (none applies)."""
    from sim.impact_outcomes import strike_case
    M = np.eye(2)
    J = two_normals(0.3, M)
    v = np.linalg.solve(J, [-0.5, -1e-6])
    out = resolve_impact(M, J, v, 1.0, outcomes="all")
    assert len(out) == 2
    dv = out.outcomes[0].v - out.outcomes[1].v
    assert 1e-7 < math.sqrt(dv @ M @ dv) < 1e-5
    case = strike_case(M, J, v, 1.0)
    assert case.case == "several approaching contacts" and not case.unique and case.approaching == (0, 1)
