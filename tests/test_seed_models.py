"""Seed models (thesis, seed 001, seed 002) and URDF robots."""
import math

import coal
import numpy as np
import pinocchio as pin
import pytest

import robots
from controlkit.constraints import HingeConstraint, PointConstraint
from controlkit.errors import ModelError, UnknownNameError
from controlkit.mechanism import Mechanism


def world(mech, frame):
    return mech.kinematics().oMf[mech.frame_id(frame)]


@pytest.mark.parametrize("name", sorted(robots.SEEDS))
def test_every_seed_builds_in_its_declared_state(name):
    built = robots.SEEDS[name]()
    assert isinstance(built, robots.BuiltMechanism)
    mech, q0 = built
    assert isinstance(mech, Mechanism) and q0.shape == (mech.nq,) and built.v0.shape == (mech.nv,)
    assert np.allclose(mech.q, q0) and np.allclose(mech.v, built.v0)
    for n, err in built.loop_closure_errors().items():
        assert err < 1e-9, n
    assert len(mech.collision_model.geometryObjects) == len(mech.bodies())


# ------------------------------------------------------------ seed 002: 3R pendulum
def planar_3r_mass_matrix(q, m, c, l, I):
    """Hand-derived M(q) of a planar 3-link pendulum with relative angles q.

    m_i masses, c_i distances joint i -> COM i, l_i link lengths, I_i inertias about
    the COM for the in-plane rotation axis.
    """
    _, q2, q3 = q
    m1, m2, m3 = m
    c1, c2, c3 = c
    l1, l2, _ = l
    I1, I2, I3 = I
    c2_, c3_, c23 = math.cos(q2), math.cos(q3), math.cos(q2 + q3)
    M11 = (I1 + I2 + I3 + m1 * c1**2 + m2 * (l1**2 + c2**2 + 2 * l1 * c2 * c2_)
           + m3 * (l1**2 + l2**2 + c3**2 + 2 * l1 * l2 * c2_ + 2 * l1 * c3 * c23 + 2 * l2 * c3 * c3_))
    M12 = I2 + I3 + m2 * (c2**2 + l1 * c2 * c2_) + m3 * (l2**2 + c3**2 + l1 * l2 * c2_ + l1 * c3 * c23 + 2 * l2 * c3 * c3_)
    M13 = I3 + m3 * (c3**2 + l1 * c3 * c23 + l2 * c3 * c3_)
    M22 = I2 + I3 + m2 * c2**2 + m3 * (l2**2 + c3**2 + 2 * l2 * c3 * c3_)
    M23 = I3 + m3 * (c3**2 + l2 * c3 * c3_)
    M33 = I3 + m3 * c3**2
    return np.array([[M11, M12, M13], [M12, M22, M23], [M13, M23, M33]])


def test_three_r_pendulum_matches_the_paper_and_the_planar_mass_matrix():
    built = robots.three_r_pendulum()
    mech, q0 = built
    assert np.allclose(q0, [math.pi / 6] * 3)
    assert mech.nv == 3 and mech.ntau == 0
    for i in (1, 2, 3):
        I = mech.model.frames[mech.frame_id(f"link_{i}")].inertia
        assert I.mass == pytest.approx(108.0, rel=1e-12)
        assert np.allclose(sorted(np.diag(I.inertia)), [0.72, 9.36, 9.36], rtol=1e-12)
    for q in (q0, np.array([0.0, 0.0, 0.0]), np.array([0.3, -1.2, 2.0]), np.array([-2.0, 0.7, -0.4])):
        mech.set_state(q)
        M, _ = mech.dynamics()
        expected = planar_3r_mass_matrix(q, [108.0] * 3, [0.5] * 3, [1.0] * 3, [9.36] * 3)
        assert np.allclose(M, expected, rtol=1e-12, atol=1e-9)
    # q = 0 hangs straight down; positive angles swing toward +x
    mech.set_state(np.zeros(3))
    assert np.allclose(world(mech, "link_3.distal").translation, [0, 0, -3.0])
    mech.set_state(np.array([0.1, 0, 0]))
    assert world(mech, "link_3.distal").translation[0] > 0


# ------------------------------------------------------------ thesis Fig. 2.2/2.3
def test_thesis_scene_matches_fig_2_3():
    built = robots.thesis_pendulum_scene()
    mech = built.mechanism
    T = robots.THESIS_TO_WORLD
    thesis = {
        "pendulum.l0": (0, 15, 0),
        "pendulum.l1": (1.5, 14.5, 0),
        "pendulum.l2": (4.5, 14.5, 0),
        "pendulum.l3": (7.5, 14.5, 0),
        "pendulum.ball": (9.75, 14.5, 0),
        "block": (-2, 2.75, 0),
        "ground": (0, -1, 0),
    }
    for body, p in thesis.items():
        assert np.allclose(world(mech, body).translation, T.act(np.array(p, dtype=float))), body
    quarter = T.rotation @ pin.exp3(np.array([0, 0, math.pi / 2]))  # Euler parameters (.707, 0, 0, .707)
    for body in ("pendulum.l1", "pendulum.l2", "pendulum.l3"):
        assert np.allclose(world(mech, body).rotation, quarter)
    # hinges at off-centre features coincide; the ball hangs at botoffmid
    for a, b in (("l0.botback", "l1.topback"), ("l1.botback", "l2.topback"), ("l2.botback", "l3.topback"), ("l3.botoffmid", "ball.center")):
        assert np.allclose(world(mech, f"pendulum.{a}").translation, world(mech, f"pendulum.{b}").translation)
    # z is up: the pendulum is 15 above the origin; the block stands on the ground
    assert world(mech, "pendulum.l0").translation[2] == pytest.approx(15.0)
    block_bottom = world(mech, "block").translation[2] - 3.5
    ground_top = world(mech, "ground").translation[2] + 0.25
    assert block_bottom == pytest.approx(ground_top)
    # masses: density 1, links 1 x 3 x 1, ball of radius .75
    assert mech.model.frames[mech.frame_id("pendulum.l1")].inertia.mass == pytest.approx(3.0)
    assert mech.model.frames[mech.frame_id("pendulum.ball")].inertia.mass == pytest.approx(4 / 3 * math.pi * 0.75**3)
    # ground and l0 fixed, the block free (unactuated), 4 passive ball-and-socket hinges
    assert list(mech.model.names) == ["universe", "pendulum.j1", "pendulum.j2", "pendulum.j3", "pendulum.j4", "block_root"]
    assert mech.ntau == 0
    assert built.info["restitution"][("pendulum.ball", "block")] == 0.7


def test_thesis_pendulum_alone():
    mech, q0 = robots.thesis_pendulum()
    assert mech.bodies() == ["pendulum.l0", "pendulum.l1", "pendulum.l2", "pendulum.l3", "pendulum.ball"]
    assert mech.nv == 12 and mech.nq == 16
    assert len(mech.collision_model.collisionPairs) == 0  # the pendulum does not collide with itself
    com = pin.centerOfMass(mech.model, mech.data, q0)
    m = [3.0, 3.0, 3.0, 4 / 3 * math.pi * 0.75**3]
    xs = [1.5, 4.5, 7.5, 9.75]
    assert com[0] == pytest.approx(sum(mi * xi for mi, xi in zip(m, xs)) / sum(m))
    assert com[2] == pytest.approx(14.5)


@pytest.mark.parametrize("joint", ["revolute", "spherical"])
def test_pendulum_chain_released_horizontal(joint):
    built = robots.pendulum_chain(5, length=1.0, mass=1.0, joint=joint)
    mech = built.mechanism
    assert mech.nv == 5 * (1 if joint == "revolute" else 3)
    assert np.allclose(world(mech, built.info["tip"]).translation, [5.0, 0, 0])
    assert pin.computeTotalMass(mech.model) == pytest.approx(5.0)
    assert np.allclose(pin.centerOfMass(mech.model, mech.data, built.q0), [2.5, 0, 0])


# ------------------------------------------------------------ closed loops
def test_four_bar_q0_satisfies_its_loop_closure_and_has_one_dof():
    built = robots.four_bar()
    mech = built.mechanism
    c = mech.constraints["hinge_4"]
    assert isinstance(c, HingeConstraint)
    assert np.linalg.norm(c.error()) < 1e-12
    pts = built.info["points"]
    assert np.allclose(world(mech, "crank.b").translation, pts["B"])
    assert np.allclose(world(mech, "coupler.b").translation, pts["C"])
    assert np.allclose(world(mech, "rocker.a").translation, pts["D"])
    assert np.linalg.norm(pts["C"] - pts["D"]) == pytest.approx(0.8)
    # the thesis' point: 5 closure rows, only 2 independent; 3 joints - 2 = 1 degree of freedom
    J = c.jacobian()
    assert J.shape == (5, 3) and np.linalg.matrix_rank(J, tol=1e-9) == 2


def test_critical_form_is_collinear_and_closed_by_a_point_constraint():
    mech, q0 = robots.critical_form()
    c = mech.constraints["hinge_3"]
    assert isinstance(c, PointConstraint) and np.linalg.norm(c.error()) < 1e-12
    pts = [world(mech, f).translation for f in ("left.joint", "rod_1.b", "rod_2.b", "right.joint")]
    assert np.allclose([p[1:] for p in pts], 0) and np.allclose([p[0] for p in pts], [0, 1, 2, 2])
    # redundant acceleration equations: the 3 rows have rank 2 in the collinear pose
    assert np.linalg.matrix_rank(c.jacobian(), tol=1e-9) == 2
    assert mech.ntau == 0


# ------------------------------------------------------------ biped and arm
def test_biped_dofs_names_and_standing_pose():
    built = robots.biped()
    mech, q0 = built
    assert mech.nv == 6 + 16 and mech.ntau == 16
    assert mech.model.names[1] == "root_joint" and "root_joint" not in mech.actuated_joints
    for side in ("l", "r"):
        for j, nv in ((f"hip_{side}", 3), (f"knee_{side}", 1), (f"ankle_{side}", 3), (f"toe_joint_{side}", 1)):
            assert j in mech.actuated_joints
            sl = mech.joint_v_slice(j)
            assert sl.stop - sl.start == nv
        for b in (f"thigh_{side}", f"shank_{side}", f"foot_{side}", f"toe_{side}"):
            assert b in mech.bodies()
        # feet flat on z = 0: heels and toe tips on the floor, feet level
        assert world(mech, f"foot_{side}.heel").translation[2] == pytest.approx(0.0, abs=1e-12)
        assert world(mech, f"toe_{side}.tip").translation[2] == pytest.approx(0.0, abs=1e-12)
        assert np.allclose(world(mech, f"foot_{side}").rotation, np.eye(3))
        # ankle below the hip, knee bent forward
        hip, knee, ankle = (world(mech, f).translation for f in (f"torso.hip_{side}", f"thigh_{side}.knee", f"foot_{side}.ankle"))
        assert ankle[0] == pytest.approx(hip[0], abs=1e-12) and knee[0] > hip[0] + 0.02
        assert mech.q[mech.joint_q_slice(f"knee_{side}")][0] == pytest.approx(0.2)
    assert "torso.center" in mech.features()
    assert world(mech, "torso.hip_l").translation[1] > 0 > world(mech, "torso.hip_r").translation[1]
    # about 1.8 m tall (top of the head), 75 kg, COM near hip height like a person
    head_top = world(mech, "head").translation[2] + mech.collision_model.geometryObjects[mech.collision_model.getGeometryId("head")].geometry.radius
    assert 1.78 < head_top <= 1.8
    assert pin.computeTotalMass(mech.model) == pytest.approx(75.0)
    com = pin.centerOfMass(mech.model, mech.data, q0)
    assert 0.95 < com[2] < 1.1
    straight = robots.biped(knee_angle=0.0).mechanism
    assert world(straight, "head").translation[2] + 0.061 * 1.8 == pytest.approx(1.8)


def test_biped_with_ground():
    mech, _ = robots.biped(with_ground=True)
    g = mech.collision_model.geometryObjects[mech.collision_model.getGeometryId("ground")]
    assert isinstance(g.geometry, coal.Halfspace) and mech.nv == 22


def test_redundant_arm():
    built = robots.redundant_arm(angles=(0, 0, 0, 0, 0))
    mech = built.mechanism
    assert mech.nv == 5 and mech.ntau == 5
    assert np.allclose(world(mech, "link_4.tool").translation, [0, 0, 0.1 + 0.2 + 4 * 0.4])
    # yaw about z, four pitch joints with parallel horizontal axes
    J = mech.frame_jacobian(mech.frame_id("link_4.tool"))
    assert np.allclose(J[3:, 0], [0, 0, 1])
    for k in range(1, 5):
        assert np.allclose(J[3:, k], [0, 1, 0])
    mech.set_state(np.array([0.7, 0.3, 0.2, 0.1, 0.4]))
    axes = [mech.kinematics().oMi[mech.joint_id(f"joint_{k}")].rotation[:, 2] for k in range(2, 6)]
    for a in axes:
        assert abs(a[2]) < 1e-12 and np.allclose(a, axes[0])
    assert np.allclose(robots.redundant_arm().q0, [0.0, 0.5, 0.4, 0.3, 0.2])


# ------------------------------------------------------------ impact and contact scenes
def test_newtons_cradle():
    built = robots.newtons_cradle(5, radius=0.05, mass=0.2, speed=1.5)
    mech = built.mechanism
    xs = [world(mech, f"ball_{i}").translation[0] for i in range(1, 6)]
    assert np.allclose(np.diff(xs[1:]), 0.1)  # balls 2..5 touch
    assert xs[1] - xs[0] == pytest.approx(0.1 + 0.025)
    assert np.allclose(mech.frame_velocity(mech.frame_id("ball_1")).linear, [1.5, 0, 0])
    assert np.allclose(mech.frame_velocity(mech.frame_id("ball_2")).vector, 0)
    assert np.allclose(mech.model.gravity.linear, 0)
    assert all(isinstance(g.geometry, coal.Sphere) for g in mech.collision_model.geometryObjects)
    assert pin.computeTotalMass(mech.model) == pytest.approx(1.0)


def test_three_spheres():
    mech, q0 = robots.three_spheres(radius=0.1, angle=0.5)
    a, b, c = (world(mech, f"sphere_{k}").translation for k in "abc")
    assert np.linalg.norm(c - b) == pytest.approx(0.2) and np.linalg.norm(b - a) > 0.2
    assert np.allclose(c, [0.2 * math.cos(0.5), 0.2 * math.sin(0.5), 0])
    assert mech.frame_velocity(mech.frame_id("sphere_a")).linear[0] == pytest.approx(1.0)


def _distance(mech, a, b):
    gm, gd = mech.collision_model, mech.collision_model.createData()
    pin.updateGeometryPlacements(mech.model, mech.data, gm, gd, mech.q)
    ia, ib = gm.getGeometryId(a), gm.getGeometryId(b)
    req, res = coal.DistanceRequest(), coal.DistanceResult()
    return coal.distance(gm.geometryObjects[ia].geometry, gd.oMg[ia], gm.geometryObjects[ib].geometry, gd.oMg[ib], req, res)


def test_ball_and_box_on_ground():
    mech, _ = robots.ball_on_ground(radius=0.1, height=1.0)
    assert isinstance(mech.collision_model.geometryObjects[0].geometry, coal.Halfspace)
    assert _distance(mech, "ball", "ground") == pytest.approx(0.9)
    mech, _ = robots.box_on_ground(size=(0.2, 0.3, 0.4), height=0.05, rpy=(0.3, 0.2, 0.1))
    assert _distance(mech, "box", "ground") == pytest.approx(0.05, abs=1e-9)
    mech, _ = robots.box_on_ground()
    assert world(mech, "box.bottom").translation[2] == pytest.approx(0.0)
    with pytest.raises(ModelError, match="into the ground"):
        robots.ball_on_ground(radius=0.5, height=0.2)


def test_box_rests_on_slope():
    built = robots.box_on_slope(angle=0.4)
    mech = built.mechanism
    n = built.info["normal"]
    assert np.allclose(n, [math.sin(0.4), 0, math.cos(0.4)])
    bottom = world(mech, "box.bottom")
    assert n @ bottom.translation == pytest.approx(0.0, abs=1e-12)
    assert np.allclose(bottom.rotation[:, 2], n)
    assert abs(_distance(mech, "box", "slope")) < 1e-9
    assert built.info["downhill"][2] < 0


def test_brick_stack_is_unstable_and_friction_block():
    built = robots.brick_stack()
    mech = built.mechanism
    x = [world(mech, f"brick_{i}").translation for i in (1, 2, 3)]
    assert np.allclose([p[2] for p in x], [0.03, 0.09, 0.15])
    assert (x[1][0] + x[2][0]) / 2 - x[0][0] > 0.5 * 0.2  # the top two overhang the bottom brick
    assert isinstance(mech.collision_model.geometryObjects[mech.collision_model.getGeometryId("table")].geometry, coal.Box)
    assert world(mech, "table.surface").translation[2] == pytest.approx(0.0)

    fb = robots.friction_block()
    m = fb.mechanism
    assert pin.computeTotalMass(m.model) == pytest.approx(48.0)
    assert 48.0 * 9.81 == pytest.approx(470.88)
    assert (fb.info["mu_static"], fb.info["mu_kinetic"]) == (0.9, 0.6)
    assert world(m, "block.bottom").translation[2] == pytest.approx(0.0)
    assert m.materials == {"table": "table", "block": "block"}


# ------------------------------------------------------------ URDF robots
@pytest.mark.parametrize("name,nv,floating", [("talos", 38, True), ("ur5", 6, False), ("panda", 9, False), ("solo12", 18, True)])
def test_load_example_robot_data(name, nv, floating):
    mech = robots.load(name)
    assert isinstance(mech, Mechanism) and mech.nv == nv
    assert mech.ntau == (nv - 6 if floating else nv)
    if floating:
        assert mech.model.names[1] == "root_joint" and "root_joint" not in mech.actuated_joints
    assert len(mech.collision_model.geometryObjects) > 0
    assert np.all(np.isfinite(mech.q))


def test_load_unknown_robot_lists_valid_names():
    with pytest.raises(UnknownNameError) as e:
        robots.load("talso")
    assert "unknown robot 'talso' in example-robot-data. Did you mean 'talos'" in str(e.value)
    assert "Valid robot names: a1," in str(e.value)
    assert {"talos", "ur5", "panda", "solo12"} <= set(e.value.valid) == set(robots.robot_names())


def test_malformed_urdf_is_a_model_error_with_the_path(tmp_path):
    path = tmp_path / "broken.urdf"
    path.write_text('<robot name="broken"><link name="a"><joint name="j" type="revolute"></robot')
    with pytest.raises(ModelError) as e:
        robots.from_urdf(path)
    assert str(path) in str(e.value) and "could not load URDF" in str(e.value)


def test_missing_urdf_is_a_model_error_with_the_path(tmp_path):
    path = tmp_path / "nowhere.urdf"
    with pytest.raises(ModelError, match="URDF file not found") as e:
        robots.from_urdf(path)
    assert str(path) in str(e.value)


def test_from_urdf_with_free_flyer(tmp_path):
    path = tmp_path / "two.urdf"
    path.write_text(
        """<robot name="two">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
  <link name="arm"><inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
</robot>"""
    )
    mech = robots.from_urdf(path, free_flyer=True)
    assert mech.name == "two" and mech.nv == 7 and mech.actuated_joints == ["j1"]
    assert pin.computeTotalMass(mech.model) == pytest.approx(3.0)
    fixed = robots.from_urdf(str(path))
    assert fixed.nv == 1 and fixed.ntau == 1
