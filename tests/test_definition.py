"""The definition language: bodies, hinges, composites, scenes and what build() makes of them."""
import math

import coal
import numpy as np
import pinocchio as pin
import pytest

from controlkit.constraints import HingeConstraint, PointConstraint, WeldConstraint
from controlkit.errors import ModelError, UnknownNameError
from controlkit.mechanism import Mechanism
from robots import (
    Body,
    BuiltMechanism,
    Composite,
    Free,
    Prismatic,
    Revolute,
    Scene,
    Spherical,
    Universal,
    Weld,
    cuboid,
    pose,
    sphere,
)


def bar(name, length=1.0, mass=2.0, **kw):
    return Body(name, cuboid(length, 0.1, 0.1), mass=mass, features={"a": (-length / 2, 0, 0), "b": (length / 2, 0, 0)}, **kw)


def world(mech: Mechanism, frame: str) -> pin.SE3:
    return mech.kinematics().oMf[mech.frame_id(frame)]


# ------------------------------------------------------------------ bodies
def test_body_features_center_and_shape_points():
    b = Body("box", cuboid(1, 2, 3), density=10.0, features={"corner": (0.5, 1, 1.5), "tool": pose((0, 0, 1), rpy=(0, 0, 0.5))})
    assert b.mass == pytest.approx(60.0)
    assert set(b.features) == {"center", "top", "bottom", "corner", "tool"}
    assert np.allclose(b.feature("top").translation, [0, 0, 1.5])
    assert np.allclose(b.feature("tool").rotation, pin.rpy.rpyToMatrix(0, 0, 0.5))
    with pytest.raises(ModelError, match="'center' is reserved"):
        Body("x", sphere(1), mass=1, features={"center": (1, 0, 0)})


def test_non_positive_density_is_a_model_error():
    with pytest.raises(ModelError) as e:
        Body("plate", cuboid(1, 1, 0.1), density=-3.0)
    assert "density must be positive" in str(e.value) and "Cuboid" in str(e.value)


def test_non_positive_dimension_is_a_model_error():
    with pytest.raises(ModelError, match="cuboid: z must be positive"):
        Body("plate", cuboid(1, 1, 0.0), density=3.0)


def test_unknown_feature_lists_the_valid_ones():
    c = Composite("c")
    c.add(bar("l1"))
    c.add(bar("l2"))
    with pytest.raises(UnknownNameError) as e:
        c.join("l1", "topback", "l2", "a", Spherical())
    msg = str(e.value)
    assert "unknown feature 'topback'" in msg and "body 'l1'" in msg
    for f in ("a", "b", "center", "top", "bottom"):
        assert f in msg


def test_unknown_feature_path_in_a_nested_composite():
    inner = Composite("arm")
    inner.add(bar("l1"))
    outer = Composite("robot")
    outer.add(inner)
    outer.add(bar("base"))
    with pytest.raises(UnknownNameError, match=r"unknown feature 'l1\.nope' in composite 'arm'.*l1\.a"):
        outer.join("base", "b", "arm", "l1.nope", Revolute())


def test_hinge_joining_a_body_to_itself():
    c = Composite("c")
    c.add(bar("l1"))
    with pytest.raises(ModelError) as e:
        c.join("l1", "a", "l1", "b", Revolute(), name="loop")
    assert "hinge 'loop' in composite 'c' joins body 'l1' to itself" in str(e.value)


def test_duplicate_names_say_what_and_where():
    c = Composite("pendulum")
    c.add(bar("l1"))
    with pytest.raises(ModelError, match="duplicate name 'l1' in composite 'pendulum': a component named 'l1'"):
        c.add(bar("l1"))
    c.add(bar("l2"))
    c.join("l1", "b", "l2", "a", Spherical(name="j1"))
    with pytest.raises(ModelError, match="duplicate name 'j1' in composite 'pendulum': a hinge named 'j1'"):
        c.add(bar("j1"))
    with pytest.raises(ModelError, match="may not contain '.'"):
        Body("a.b", sphere(1), mass=1)


def test_duplicate_frame_name_across_root_joint_and_body():
    s = Scene("s")
    s.add(bar("ball_root"), (0, 0, 0), fixed=True)
    s.add(bar("ball"), (1, 0, 0))
    with pytest.raises(ModelError, match="duplicate name 'ball_root' in scene 's'"):
        s.build()


def test_unplaced_unjoined_component_is_reported():
    s = Scene("s")
    s.add(bar("a"), (0, 0, 0))
    s.add(bar("b"))
    with pytest.raises(ModelError, match=r"bodies \['b'\] are neither placed"):
        s.build()


# ------------------------------------------------------------------ build
def two_link_scene():
    """base (fixed) -revolute y- l1 -spherical- l2, with l2 also carrying a welded weight."""
    s = Scene("two")
    s.add(Body("base", cuboid(0.2, 0.2, 0.2), mass=5.0, features={"pivot": (0, 0, 0.1)}), pose((0, 0, 1)), fixed=True)
    arm = Composite("arm")
    arm.add(bar("l1", 1.0, 2.0))
    arm.add(bar("l2", 0.5, 1.0))
    arm.add(Body("weight", sphere(0.05), mass=3.0))
    arm.join("l1", "b", "l2", "a", Spherical(name="elbow"))
    arm.join("l2", "b", "weight", "center", Weld(name="glue"))
    s.add(arm)
    s.join("base", "pivot", "arm", "l1.a", Revolute((0, 1, 0), name="shoulder"), rotation=pin.exp3(np.array([0, math.pi / 2, 0])))
    return s


def test_build_names_frames_joints_and_geometry():
    built = two_link_scene().build()
    assert isinstance(built, BuiltMechanism)
    mech, q0 = built  # unpacks as (mechanism, q0)
    assert isinstance(mech, Mechanism)
    assert list(mech.model.names) == ["universe", "shoulder", "arm.elbow"]
    assert mech.bodies() == ["base", "arm.l1", "arm.l2", "arm.weight"]
    assert "arm.l1.a" in mech.features() and "arm.weight.center" in mech.features() and "base.pivot" in mech.features()
    assert mech.actuated_joints == ["shoulder", "arm.elbow"] and mech.ntau == 4
    names = [g.name for g in mech.collision_model.geometryObjects]
    assert names == ["base", "arm.l1", "arm.l2", "arm.weight"]
    assert [g.name for g in mech.visual_model.geometryObjects] == names
    assert isinstance(mech.collision_model.geometryObjects[3].geometry, coal.Sphere)
    assert np.allclose(mech.visual_model.geometryObjects[0].meshColor, Body("x", sphere(1), mass=1).color)
    # the weld shares l2's joint: no joint, same parent joint
    assert mech.model.frames[mech.frame_id("arm.weight")].parentJoint == mech.model.frames[mech.frame_id("arm.l2")].parentJoint
    assert np.allclose(q0, [0, 0, 0, 0, 1]) and np.allclose(mech.q, q0)


def test_declared_pose_features_and_inertia():
    mech, q0 = two_link_scene().build()
    # the shoulder rotation turns l1's x axis from +x to -z: the arm hangs straight down
    assert np.allclose(world(mech, "arm.l1.a").translation, [0, 0, 1.1])
    assert np.allclose(world(mech, "arm.l1").translation, [0, 0, 0.6])
    assert np.allclose(world(mech, "arm.l2").translation, [0, 0, -0.15])
    assert np.allclose(world(mech, "arm.weight").translation, [0, 0, -0.4])
    assert np.allclose(world(mech, "arm.l1.b").translation, world(mech, "arm.l2.a").translation)
    # masses: the fixed base is not part of the moving mass, the welded weight is
    assert pin.computeTotalMass(mech.model) == pytest.approx(2.0 + 1.0 + 3.0)
    com = pin.centerOfMass(mech.model, mech.data, q0)
    assert np.allclose(com, (2.0 * np.array([0, 0, 0.6]) + 1.0 * np.array([0, 0, -0.15]) + 3.0 * np.array([0, 0, -0.4])) / 6.0)
    # inertia of the joint carrying l2 and the weight, about the elbow, in l2's frame
    I_l2 = cuboid(0.5, 0.1, 0.1).inertia(mass=1.0)
    jm = mech.model.frames[mech.frame_id("arm.l2")].placement
    expected = jm.act(I_l2) + (jm * pin.SE3(np.eye(3), np.array([0.25, 0, 0]))).act(sphere(0.05).inertia(mass=3.0))
    assert np.allclose(mech.model.inertias[2].matrix(), expected.matrix())


def test_initial_values_and_velocity():
    s = two_link_scene()
    built = s.build(initial={"shoulder": 0.3, "arm.elbow": np.array([0.0, 0.0, 0.2])})
    mech = built.mechanism
    pb = world(mech, "base.pivot")
    l1 = world(mech, "arm.l1.a")
    expected = pb * pin.SE3(pin.exp3(np.array([0, 0.3, 0])), np.zeros(3)) * pin.SE3(pin.exp3(np.array([0, math.pi / 2, 0])), np.zeros(3))
    assert np.allclose(l1.homogeneous, expected.homogeneous)
    rel = world(mech, "arm.l1.b").inverse() * world(mech, "arm.l2.a")
    assert np.allclose(rel.rotation, pin.exp3(np.array([0, 0, 0.2])))
    with pytest.raises(UnknownNameError, match="unknown hinge 'wrist'"):
        s.build(initial={"wrist": 0.1})

    sc = Scene("fly")
    R = pin.exp3(np.array([0.0, 0.0, math.pi / 2]))
    sc.add(bar("b"), pin.SE3(R, np.array([1.0, 2.0, 3.0])), velocity=(1, 0, 0, 0, 0, 2))
    b = sc.build()
    assert np.allclose(b.q0[:3], [1, 2, 3])
    v = b.mechanism.frame_velocity(b.mechanism.frame_id("b"))
    assert np.allclose(v.linear, [1, 0, 0]) and np.allclose(v.angular, [0, 0, 2])
    assert b.mechanism.actuated_joints == [] and list(b.mechanism.model.names) == ["universe", "b_root"]


HINGES = [
    (lambda: Revolute((0, 1, 1)), 0.4, lambda v: pin.exp3(0.4 * np.array([0, 1, 1]) / math.sqrt(2))),
    (lambda: Prismatic((1, 0, 0)), 0.25, None),
    (lambda: Universal((0, 0, 1), (1, 0, 0)), [0.3, -0.5], lambda v: pin.exp3(np.array([0, 0, 0.3])) @ pin.exp3(np.array([-0.5, 0, 0]))),
    (lambda: Spherical(), np.array([0.1, -0.2, 0.3]), lambda v: pin.exp3(v)),
    (lambda: Free(), pin.SE3(pin.exp3(np.array([0.2, 0.1, 0])), np.array([0.1, 0.2, 0.3])), None),
]


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reversed"])
@pytest.mark.parametrize("make,value,rot", HINGES, ids=["revolute", "prismatic", "universal", "spherical", "free"])
def test_hinge_motion_in_either_tree_direction(make, value, rot, reverse):
    """F_child = F_parent * J(value) * R0 whichever body the tree reaches first."""
    s = Scene("h")
    R0 = pin.exp3(np.array([0.0, 0.0, 0.7]))
    parent, child = bar("p"), bar("c")
    # the placed body is the tree root: placing the child makes the builder traverse the join backwards
    s.add(parent, None if reverse else pose((0, 0, 1), rpy=(0.1, 0.2, 0.3)), fixed=not reverse and True)
    s.add(child, pose((0.5, 0.5, 1)) if reverse else None)
    h = make()
    s.join("p", "b", "c", "a", h, rotation=R0, name="hinge")
    mech, _ = s.build(initial={"hinge": value})
    Fp, Fc = world(mech, "p.b"), world(mech, "c.a")
    if isinstance(h, Prismatic):
        J = pin.SE3(np.eye(3), np.array([value, 0, 0]))
    elif isinstance(h, Free):
        J = value
    else:
        J = pin.SE3(rot(value), np.zeros(3))
    expected = Fp * J * pin.SE3(R0, np.zeros(3))
    assert np.allclose(Fc.homogeneous, expected.homogeneous, atol=1e-12)
    if reverse and isinstance(h, Revolute):
        assert mech.q[mech.joint_q_slice("hinge")][0] == pytest.approx(-0.4)


# ------------------------------------------------------------ loop closures
def ring(hinge_factory, n=4, closing=None):
    """A square ring of n = 4 bars in the x-z plane, first bar fixed; the last join closes the loop."""
    s = Scene("ring")
    ry = lambda a: pin.exp3(np.array([0, -a, 0]))  # noqa: E731  local x -> (cos a, 0, sin a)
    s.add(bar("b0"), pose((0.5, 0, 0)), fixed=True)
    for i in range(1, n):
        s.add(bar(f"b{i}"))
    for i in range(1, n):
        s.join(f"b{i - 1}", "b", f"b{i}", "a", hinge_factory(), rotation=ry(math.pi / 2), name=f"h{i}")
    s.join(f"b{n - 1}", "b", "b0", "a", (closing or hinge_factory)(), rotation=ry(math.pi / 2), name="close")
    return s


@pytest.mark.parametrize(
    "factory,cls,size",
    [(lambda: Spherical(), PointConstraint, 3), (lambda: Revolute((0, 1, 0)), HingeConstraint, 5), (lambda: Weld(), WeldConstraint, 6)],
    ids=["spherical", "revolute", "weld"],
)
def test_closing_a_loop_adds_the_matching_constraint(factory, cls, size):
    built = ring(lambda: Revolute((0, 1, 0)), closing=factory).build()
    mech = built.mechanism
    assert list(mech.constraints) == ["close"]
    c = mech.constraints["close"]
    assert isinstance(c, cls) and c.size == size
    assert (c.frame_a, c.frame_b) == ("close.parent", "close.child")
    assert built.loop_closure_errors()["close"] < 1e-12
    assert not mech.model.existJointName("close")


def test_revolute_loop_closure_frames_follow_the_hinge_axis():
    mech = ring(lambda: Revolute((0, 1, 0))).build(initial={"h1": 0.2, "h2": -0.3}, check_closure=False).mechanism
    # at q0 with a bent linkage the closure frames are apart, but each keeps its z on the hinge axis (world y)
    for f in ("close.parent", "close.child"):
        assert np.allclose(world(mech, f).rotation[:, 2], [0, 1, 0])


def test_prismatic_universal_and_cylindrical_hinges_close_loops():
    from controlkit.closures import CylinderConstraint, SliderConstraint, UniversalConstraint
    from robots.hinges import Cylindrical
    for factory, cls, size in ((lambda: Prismatic((1, 0, 0)), SliderConstraint, 5),
                               (lambda: Universal((0, 1, 0), (1, 0, 0)), UniversalConstraint, 4),
                               (lambda: Cylindrical((1, 0, 0)), CylinderConstraint, 4)):
        built = ring(lambda: Revolute((0, 1, 0)), closing=factory).build()
        c = built.mechanism.constraints["close"]
        assert isinstance(c, cls) and c.size == size
        assert built.loop_closure_errors()["close"] < 1e-12


def test_loop_through_two_fixed_components():
    s = Scene("bridge")
    s.add(bar("left"), pose((-0.5, 0, 0)), fixed=True)
    s.add(bar("right"), pose((1.5, 0, 0)), fixed=True)
    s.add(bar("mid"))
    s.join("left", "b", "mid", "a", Spherical(name="h1"))
    s.join("mid", "b", "right", "a", Spherical(name="h2"))
    built = s.build(check_closure=1e-12)
    assert list(built.mechanism.constraints) == ["h2"]


def test_check_closure_reports_an_inconsistent_declared_pose():
    s = ring(lambda: Spherical())
    s.components["b0"].features["a"] = pin.SE3(np.eye(3), np.array([-0.6, 0, 0]))  # the ring no longer closes
    with pytest.raises(ModelError, match="does not satisfy loop closures"):
        s.build(check_closure=1e-6)


def test_placed_component_reached_by_a_hinge_is_a_conflict():
    s = Scene("s")
    s.add(bar("a"), pose((0, 0, 0)), fixed=True)
    s.add(bar("b"), pose((1, 0, 0)))
    s.join("a", "b", "b", "a", Revolute())
    with pytest.raises(ModelError, match="component 'b' is placed in the world but hinge 'a_to_b'"):
        s.build()


# ------------------------------------------------------------ collision pairs
def test_collision_pairs_skip_joined_and_self_collision_free_bodies():
    s = Scene("pairs")
    chain = Composite("chain", self_collision=False)
    for i in range(3):
        chain.add(bar(f"l{i}"))
    chain.join("l0", "b", "l1", "a", Revolute())
    chain.join("l1", "b", "l2", "a", Revolute())
    s.add(chain, pose((0, 0, 1)), fixed=True)
    s.add(Body("ball", sphere(0.1), mass=1.0, material="rubber"), pose((0, 0, 3)))
    s.add(bar("free1"), pose((0, 0, 5)))
    mech, _ = s.build()
    gm = mech.collision_model
    pairs = {frozenset((gm.geometryObjects[p.first].name, gm.geometryObjects[p.second].name)) for p in gm.collisionPairs}
    assert frozenset(("chain.l0", "chain.l2")) not in pairs  # inside a self_collision=False composite
    assert frozenset(("chain.l0", "ball")) in pairs and frozenset(("ball", "free1")) in pairs
    assert mech.materials == {"ball": "rubber"}


def test_collision_geometry_override():
    s = Scene("g")
    ground = Body("ground", cuboid(4, 4, 0.1), mass=1.0, collision_geometry=coal.Halfspace(np.array([0, 0, 1.0]), 0.05))
    s.add(ground, pose((0, 0, -0.05)), fixed=True)
    mech, _ = s.build()
    assert isinstance(mech.collision_model.geometryObjects[0].geometry, coal.Halfspace)
    assert isinstance(mech.visual_model.geometryObjects[0].geometry, coal.Box)
