"""Initial positioning (thesis 2.3, 7.2): assemble a rough configuration onto closures and placements."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import robots
from controlkit.assemble import AssemblyError, assemble, linearize
from controlkit.expressions import orientation_error, pos
from controlkit.quantities import CenterOfMass, FrameOrientation, FramePoint, JointAngle

Z = np.array([[0.0, 0.0, 1.0]])
TILT = np.eye(3)[:2]  # roll and pitch rows of an orientation error (yaw left free)


def test_four_bar_perturbed_by_0_2_rad_returns_to_its_closure():
    built = robots.four_bar()
    mech, q0 = built
    q = q0.copy()
    q[mech.joint_q_slice("hinge_2")] += 0.2
    assert built.loop_closure_errors(q)["hinge_4"] > 0.05
    res = assemble(mech, q)
    assert built.loop_closure_errors(res.q)["hinge_4"] < 1e-12
    assert np.array_equal(mech.q, q0)  # the mechanism's own state is untouched
    # the minimum-norm projection stays near the rough configuration: closer than q0 is
    assert res.distance < np.linalg.norm(mech.difference(q0, q))


def test_four_bar_with_its_crank_angle_stated_returns_exactly_to_the_declared_pose():
    built = robots.four_bar()
    mech, q0 = built
    q = q0 + np.array([0.15, -0.2, 0.1])
    crank = JointAngle(mech, "hinge_1")
    res = assemble(mech, q, {"crank": pos(crank) == q0[0]})
    # one degree of freedom: the crank angle and the branch fix the rest
    assert np.max(np.abs(res.q - q0)) < 1e-10
    assert res.residuals["crank"] < 1e-12


def _biped_statements(mech, torso_height):
    st = {}
    for side in ("l", "r"):
        st[f"heel_{side} on the floor"] = Z @ pos(FramePoint(mech, f"foot_{side}.heel")) == 0.0
        st[f"foot_{side} flat"] = TILT @ orientation_error(FrameOrientation(mech, f"foot_{side}"), np.eye(3)) == 0
        st[f"toe_{side} flat"] = TILT @ orientation_error(FrameOrientation(mech, f"toe_{side}"), np.eye(3)) == 0
    st["torso height"] = Z @ pos(FramePoint(mech, "torso.center")) == torso_height
    return st


def _sole_corner_heights(mech, q):
    """z (m) of the bottom corners of both feet's and toes' boxes at q."""
    model, data = mech.model, mech.model.createData()
    pin.framesForwardKinematics(model, data, q)
    zs = []
    objs = {g.name: g for g in mech.collision_model.geometryObjects}
    for name in ("foot_l", "foot_r", "toe_l", "toe_r"):
        go = objs[name]
        half = np.asarray(go.geometry.halfSide)
        oMj = data.oMi[go.parentJoint] * go.placement
        for sx in (-1, 1):
            for sy in (-1, 1):
                zs.append((oMj.act(np.array([sx, sy, -1.0]) * half))[2])
    return np.array(zs)


def test_biped_soles_flat_on_the_floor_with_its_torso_at_a_given_height():
    built = robots.biped()
    mech, q0 = built
    rng = np.random.default_rng(3)
    q = mech.integrate(q0, 0.08 * rng.standard_normal(mech.nv))  # a rough sketch: every joint off
    q[2] += 0.05
    h = float(FramePoint(mech, "torso.center").position(mech)[2]) - 0.03  # crouch 3 cm below the model's pose
    res = assemble(mech, q, _biped_statements(mech, h))
    corners = _sole_corner_heights(mech, res.q)
    assert corners.shape == (16,)
    assert np.max(np.abs(corners)) < 1e-9
    mech.set_state(res.q)
    assert abs(FramePoint(mech, "torso.center").position(mech)[2] - h) < 1e-9
    mech.set_state(q0)


def test_a_torso_higher_than_the_legs_reach_is_named_with_the_statements_it_fights():
    mech, q0 = robots.biped()
    st = _biped_statements(mech, 2.5)  # straight legs put the torso centre near 1.2 m
    with pytest.raises(AssemblyError) as err:
        assemble(mech, q0, st)
    assert "torso height" in err.value.conflicting
    assert "torso height" in str(err.value)
    # the feet are what holds the torso down: at least one foot statement is named with it
    assert any(n.startswith("heel_") for n in err.value.conflicting)
    # statements not involved are satisfied at the least-squares point
    assert all(err.value.residuals[f"toe_{s} flat"] < 1e-9 for s in "lr")


def test_two_contradicting_joint_angles_are_both_named():
    mech, q0 = robots.four_bar()
    crank = JointAngle(mech, "hinge_1")
    with pytest.raises(AssemblyError) as err:
        assemble(mech, q0, {"crank at 1.0": pos(crank) == 1.0, "crank at 1.2": pos(crank) == 1.2})
    assert set(err.value.conflicting) == {"crank at 1.0", "crank at 1.2"}


def test_a_velocity_statement_is_refused_as_a_placement():
    mech, q0 = robots.four_bar()
    from controlkit.expressions import vel
    with pytest.raises(AssemblyError, match="position"):
        assemble(mech, q0, {"crank moving": vel(JointAngle(mech, "hinge_1")) == 1.0})


def test_linearize_matches_finite_differences_of_a_tilted_foot_and_the_com():
    mech, q0 = robots.biped()
    rng = np.random.default_rng(0)
    q = mech.integrate(q0, 0.3 * rng.standard_normal(mech.nv))
    R = pin.exp3(np.array([0.1, -0.2, 0.3]))
    expr = orientation_error(FrameOrientation(mech, "foot_l"), R) + 0.5 * pos(CenterOfMass(mech))
    mech.set_state(q)
    v, J = linearize(expr, mech)
    eps = 1e-7
    for k in range(mech.nv):
        dq = np.zeros(mech.nv)
        dq[k] = eps
        mech.set_state(mech.integrate(q, dq))
        vp, _ = linearize(expr, mech)
        assert np.allclose((vp - v) / eps, J[:, k], atol=1e-5)
    mech.set_state(q0)


def test_redundant_arm_tool_placed_at_a_pose_and_out_of_reach_named():
    mech, q0 = robots.redundant_arm()
    tool = FramePoint(mech, "link_4.tool")
    target = np.array([0.9, 0.3, 0.8])
    # five joints, six rows: the pose is reachable when it lies in the arm's yawed plane
    R = pin.exp3(np.array([0.0, 0.0, np.arctan2(target[1], target[0])])) @ pin.exp3(np.array([0.0, 1.2, 0.0]))
    st = {"tool at the point": pos(tool) == target,
          "tool orientation": orientation_error(FrameOrientation(mech, "link_4.tool"), R) == 0}
    res = assemble(mech, q0, st)
    mech.set_state(res.q)
    assert np.max(np.abs(tool.position(mech) - target)) < 1e-12
    assert np.max(np.abs(pin.log3(FrameOrientation(mech, "link_4.tool").position(mech) @ R.T))) < 1e-12
    mech.set_state(q0)
    with pytest.raises(AssemblyError) as err:
        assemble(mech, q0, {"tool far away": pos(tool) == np.array([3.0, 0.0, 0.5])})
    assert err.value.conflicting == ["tool far away"]


def test_talos_assembles_into_a_double_support_stance_with_both_soles_flat_on_the_floor():
    """A rough Talos (every joint and the base off) placed with both soles flat at z = 0, 0.2 m
    apart sideways, the base 3 cm lower than half-sitting: the statements hold to 1e-9."""
    from robots.talos import talos
    built = talos()
    mech, q0 = built.mechanism, built.q0
    soles = built.info["soles"]
    mech.set_state(q0)
    base_z = float(FramePoint(mech, "base_link").position()[2])
    rng = np.random.default_rng(7)
    q = mech.integrate(q0, 0.03 * rng.standard_normal(mech.nv))
    Y = np.array([[0.0, 1.0, 0.0]])
    st = {"base height": Z @ pos(FramePoint(mech, "base_link")) == base_z - 0.03}
    for side, sign in (("l", 1.0), ("r", -1.0)):
        st[f"{soles[side]} on the floor"] = Z @ pos(FramePoint(mech, soles[side])) == 0.0
        st[f"{soles[side]} flat"] = TILT @ orientation_error(FrameOrientation(mech, soles[side]), np.eye(3)) == 0
        st[f"{soles[side]} sideways"] = Y @ pos(FramePoint(mech, soles[side])) == sign * 0.1
    res = assemble(mech, q, st)
    mech.set_state(res.q)
    for side, sign in (("l", 1.0), ("r", -1.0)):
        M = mech.frame_placement(soles[side])
        assert abs(M.translation[2]) < 1e-9 and abs(M.translation[1] - sign * 0.1) < 1e-9
        assert np.linalg.norm(M.rotation[2] - np.array([0.0, 0.0, 1.0])) < 1e-9  # the sole's normal is up
    assert abs(FramePoint(mech, "base_link").position()[2] - (base_z - 0.03)) < 1e-9
    assert res.distance < 1.0  # near the rough sketch, not a far-away solution
    mech.set_state(q0)
