"""Collision geometry: signed distances, witness points, normals, contact Jacobians, pair filters."""
from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin
import pytest

from controlkit.errors import ModelError, UnknownNameError
from controlkit.mechanism import Mechanism
from sim.collision import CollisionWorld, exclude_pairs, exclude_subtree


def _free_body(model, gm, name, shape, mass=1.0, inertia=None):
    j = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), name)
    I = np.diag(inertia) if inertia is not None else 0.01 * np.eye(3)
    model.appendBodyToJoint(j, pin.Inertia(mass, np.zeros(3), I), pin.SE3.Identity())
    f = model.addBodyFrame(name, j, pin.SE3.Identity(), 0)
    gm.addGeometryObject(pin.GeometryObject(name, j, f, pin.SE3.Identity(), shape))
    return j


def _box_mesh(half: float) -> coal.BVHModelOBBRSS:
    pts = np.array([[x, y, z] for x in (-half, half) for y in (-half, half) for z in (-half, half)], float)
    tris = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                     [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    m = coal.BVHModelOBBRSS()
    m.beginModel(len(tris), len(pts))
    m.addVertices(pts)
    m.addTriangles(tris)
    m.endModel()
    return m


def shapes_scene() -> Mechanism:
    """Free-flying sphere, box, cylinder, capsule and mesh over a ground half-space."""
    model, gm = pin.Model(), pin.GeometryModel()
    _free_body(model, gm, "sphere", coal.Sphere(0.1))
    _free_body(model, gm, "box", coal.Box(0.3, 0.2, 0.1))
    _free_body(model, gm, "cylinder", coal.Cylinder(0.05, 0.3))
    _free_body(model, gm, "capsule", coal.Capsule(0.05, 0.2))
    _free_body(model, gm, "mesh", _box_mesh(0.1))
    gm.addGeometryObject(pin.GeometryObject("ground", 0, 0, pin.SE3.Identity(),
                                            coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)))
    return Mechanism(model, gm, None, name="shapes", actuated=[])


def chain_scene() -> Mechanism:
    """A 3-link pendulum (revolute y) with box links, hanging over a ground half-space."""
    model, gm = pin.Model(), pin.GeometryModel()
    parent, place = 0, pin.SE3(np.eye(3), np.array([0.0, 0.0, 2.0]))
    for i in (1, 2, 3):
        j = model.addJoint(parent, pin.JointModelRY(), place, f"joint_{i}")
        model.appendBodyToJoint(j, pin.Inertia(1.0, np.array([0, 0, -0.25]), 0.01 * np.eye(3)), pin.SE3.Identity())
        f = model.addBodyFrame(f"link_{i}", j, pin.SE3.Identity(), 0)
        gm.addGeometryObject(pin.GeometryObject(f"link_{i}", j, f, pin.SE3(np.eye(3), np.array([0, 0, -0.25])),
                                                coal.Box(0.05, 0.05, 0.5)))
        parent, place = j, pin.SE3(np.eye(3), np.array([0.0, 0.0, -0.5]))
    gm.addGeometryObject(pin.GeometryObject("ground", 0, 0, pin.SE3.Identity(),
                                            coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)))
    return Mechanism(model, gm, None, name="chain", actuated=[])


def _state(mech, seed=0):
    rng = np.random.default_rng(seed)
    q = pin.neutral(mech.model)
    for k in range(mech.model.njoints - 1):
        q[7 * k: 7 * k + 3] = [0.6 * k - 1.2, 0.1 * k, 0.3 + 0.12 * k]
        quat = rng.normal(size=4)
        q[7 * k + 3: 7 * k + 7] = quat / np.linalg.norm(quat)
    return q, rng.normal(size=mech.nv)


def test_sphere_distances_points_normals():
    model, gm = pin.Model(), pin.GeometryModel()
    _free_body(model, gm, "a", coal.Sphere(0.1))
    _free_body(model, gm, "b", coal.Sphere(0.2))
    mech = Mechanism(model, gm, None, name="two", actuated=[])
    w = CollisionWorld(mech)
    assert w.pair_names() == [("a", "b")]
    for x, d in [(1.0, 0.7), (0.3, 0.0), (0.25, -0.05)]:
        q = pin.neutral(model)
        q[7] = x
        c = w.contacts(q, np.zeros(12))[0]
        assert c.distance == pytest.approx(d, abs=1e-12)
        np.testing.assert_allclose(c.normal, [1, 0, 0], atol=1e-12)
        np.testing.assert_allclose(c.point_a, [0.1, 0, 0], atol=1e-12)
        np.testing.assert_allclose(c.point_b, [x - 0.2, 0, 0], atol=1e-12)
        # the signed distance is n . (p_b - p_a)
        assert c.normal @ (c.point_b - c.point_a) == pytest.approx(c.distance, abs=1e-12)


def test_halfspace_and_box_signed_distance():
    mech = shapes_scene()
    w = CollisionWorld(mech, pairs=[("sphere", "ground"), ("box", "ground"), ("sphere", "box")])
    q = pin.neutral(mech.model)
    q[2] = 0.08  # sphere 2 cm into the ground
    q[7:10] = [0.0, 0.0, 0.5]  # box (0.1 high) 0.45 above the ground, 0.27 above the sphere's top
    d = w.distances(q)
    np.testing.assert_allclose(d, [-0.02, 0.45, 0.5 - 0.05 - 0.08 - 0.1], atol=1e-9)
    cs = w.contacts(q)
    np.testing.assert_allclose(cs[0].normal, [0, 0, -1], atol=1e-12)  # from the sphere into the ground
    np.testing.assert_allclose(cs[2].normal, [0, 0, 1], atol=1e-9)  # from the sphere up to the box


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_normal_jacobian_matches_finite_differences(seed):
    """J_n v equals the rate of the signed distance, for every kind of shape (rotating bodies)."""
    mech = shapes_scene()
    w = CollisionWorld(mech)
    q, v = _state(mech, seed)
    cs = w.contacts(q, v)
    eps = 1e-6
    dp = w.distances(pin.integrate(mech.model, q, eps * v))
    dm = w.distances(pin.integrate(mech.model, q, -eps * v))
    rate = (dp - dm) / (2 * eps)
    for c in cs:
        assert c.jacobian.shape == (mech.nv,)
        # GJK/EPA run to 1e-10 m: the central difference is good to ~1e-5 m/s
        assert c.normal_velocity == pytest.approx(rate[c.index], abs=2e-5), c.describe()
    assert w.jacobian(cs).shape == (len(cs), mech.nv)


def test_jacobian_of_hinged_chain_uses_joint_jacobians():
    mech = chain_scene()
    w = CollisionWorld(mech)
    q, v = np.array([0.3, -0.4, 0.5]), np.array([0.7, -1.1, 0.9])
    eps = 1e-7
    rate = (w.distances(q + eps * v) - w.distances(q - eps * v)) / (2 * eps)
    for c in w.contacts(q, v):
        assert c.normal_velocity == pytest.approx(rate[c.index], abs=1e-6)


def test_default_filter_drops_hinged_neighbours():
    w = CollisionWorld(chain_scene())
    names = {frozenset(p) for p in w.pair_names()}
    assert frozenset(("link_1", "link_2")) not in names  # hinged to each other
    assert frozenset(("link_2", "link_3")) not in names
    assert frozenset(("link_1", "link_3")) in names
    assert frozenset(("link_3", "ground")) in names
    assert frozenset(("link_1", "ground")) in names  # hinged to the world, still hits world geometry


def test_collision_pairs_of_the_model_are_the_default():
    mech = chain_scene()
    gm = mech.collision_model
    gm.addCollisionPair(pin.CollisionPair(gm.getGeometryId("link_3"), gm.getGeometryId("ground")))
    assert CollisionWorld(mech).pair_names() == [("link_3", "ground")]


def test_subtree_and_pair_filters():
    mech = chain_scene()
    w = CollisionWorld(mech, filter=exclude_subtree(mech.model, "joint_1"))
    assert w.pair_names() == [("link_1", "ground"), ("link_2", "ground"), ("link_3", "ground")]
    w2 = CollisionWorld(mech, filter=exclude_pairs([("ground", "link_3")]))
    assert frozenset(("link_3", "ground")) not in {frozenset(p) for p in w2.pair_names()}


def test_pairs_by_body_name_and_errors():
    mech = shapes_scene()
    w = CollisionWorld(mech, pairs=[("sphere", "universe")])
    assert w.pair_names() == [("sphere", "ground")]
    with pytest.raises(UnknownNameError, match="unknown geometry or body 'sphre'.*Did you mean 'sphere'"):
        CollisionWorld(mech, pairs=[("sphre", "ground")])
    with pytest.raises(ModelError, match="no collision pair left"):
        CollisionWorld(mech, pairs=[("sphere", "ground")], filter=lambda a, b: False)
    with pytest.raises(ModelError, match="has no collision geometry"):
        CollisionWorld(Mechanism(pin.buildSampleModelManipulator(), name="bare"))


def test_world_does_not_disturb_the_mechanism_state():
    mech = shapes_scene()
    q, v = _state(mech)
    mech.set_state(q, v)
    version = mech.state_version
    w = CollisionWorld(mech)
    w.distances(pin.neutral(mech.model))
    w.contacts(q + 0.0, v)
    assert mech.state_version == version
    np.testing.assert_array_equal(mech.q, q)


def _sphere_and_slab(x: float):
    """A free sphere (radius 1 cm) at the origin and a fixed slab 1 cm thick whose centre is at x (m)."""
    model, gm = pin.Model(), pin.GeometryModel()
    _free_body(model, gm, "ball", coal.Sphere(0.01))
    gm.addGeometryObject(pin.GeometryObject("slab", 0, 0, pin.SE3(np.eye(3), np.array([x, 0, 0])),
                                            coal.Box(0.01, 1.0, 1.0)))
    return model, CollisionWorld(Mechanism(model, gm, None, name="ball", actuated=[]))


def test_time_to_contact_bounds_the_step():
    model, w = _sphere_and_slab(0.55)
    assert w.thickness[0] == pytest.approx(0.015)
    q, v = pin.neutral(model), np.zeros(6)
    v[0] = 100.0
    # distance 0.535 m, closing at 100 m/s: half of (0.535 + 0.015) / 100
    assert w.time_to_contact(q, v) == pytest.approx(0.5 * 0.55 / 100)
    assert w.time_to_contact(q, -v) == np.inf  # moving away


def test_a_pair_leaving_contact_from_touching_gets_a_step_that_separates_it():
    # a sphere touching the slab (distance 0 to coal's precision) and leaving at 0.1 m/s: the step
    # ends once it is 1 um apart, not at once (zero-length steps would never separate it)
    model, w = _sphere_and_slab(0.015)
    q, v = pin.neutral(model), np.zeros(6)
    v[0] = -0.1
    assert abs(w.distances(q)[0]) < 1e-12
    assert w.time_to_contact(q, v) == pytest.approx(2 * 1e-6 / 0.1)
    q[0] = -0.002  # 2 mm apart: nothing to bound
    assert w.time_to_contact(q, v) == np.inf
    q[0] = 0.003  # 3 mm deep and leaving: apart again after 2 * 3 mm / 0.1 m/s
    assert w.time_to_contact(q, v) == pytest.approx(2 * 0.003 / 0.1)


_EDGE_ON_FACE = """
import numpy as np
from robots import scenes
from sim.collision import CollisionWorld, box_separations
b = scenes.brick_stack()
# the brick stack at 0.52 s from offset 1.4e-12 m: brick 2's edge rests on brick 1's top face
q = np.array({q!r})
w = CollisionWorld(b.mechanism)
k = [tuple(x) for x in w.names].index(("brick_1", "brick_2"))
d = w.distances(q)[k]
ia, ib = w.pair_indices[k]
Ma, Mb = w.gdata.oMg[ia], w.gdata.oMg[ib]
h = np.array([[0.1, 0.05, 0.03]])
sat, axis = box_separations(h, Ma.rotation[None], Ma.translation[None], h, Mb.rotation[None], Mb.translation[None])
c = w.contacts(q, which=[k], jacobians=False)[0]
print(d, sat[0], c.distance, float(c.normal @ axis[0]), float(np.linalg.norm(c.point_a - c.point_b)))
"""
_EDGE_ON_FACE_Q = [
    1.4384625153364229e-12, 1.3595271124153917e-17, 0.03, -3.494335441909118e-16, -1.508526495438999e-16,
    2.0204598604557113e-18, 1.0, 0.11409393751450823, -2.3197583712127917e-14, 0.087349947176673,
    3.2750632745091623e-15, 0.34275742527208924, -9.375592674095635e-15, 0.9394239444579046,
    0.23107177708422608, -5.68178853470019e-16, 0.0808468775574944, 2.7901792589644513e-15,
    0.29278013983883205, -9.593574232632238e-15, 0.956179789430813]


def test_an_edge_resting_on_a_face_reads_the_separating_axis_distance_in_a_fresh_interpreter():
    # brick 2's edge on brick 1's face (the brick stack at 0.52 s from offset 1.4e-12 m): with coal's
    # box support factor left to the process's first query (1 + 1e-10 after an axis-aligned one,
    # sim.coal_state), pinocchio's computeDistance returned coal's failure value, -1.8e308 m, here in
    # a fresh interpreter; the distance and the contact record now agree with the separating-axis
    # test (two independent methods)
    from contact_cases import in_fresh_interpreter

    d, sat, contact, along, apart = (float(x) for x in in_fresh_interpreter(_EDGE_ON_FACE.format(q=_EDGE_ON_FACE_Q)).split())
    assert abs(sat) < 1e-9  # touching
    assert d == pytest.approx(sat, abs=1e-12)
    # the record: that distance, witness points that touch, and a normal along the test's axis
    # (to GJK's resolution of a direction between points 1.3e-10 m apart)
    assert contact == pytest.approx(sat, abs=1e-12) and along > 1 - 1e-6 and apart < 1e-9
