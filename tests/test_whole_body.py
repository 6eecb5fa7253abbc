"""Forward dynamics on real contact (walking part 2, the stance): a whole-body QP at 1 kHz on the
controller's own model computes the torques; the simulator holds them and resolves the feet's
unilateral contacts with Coulomb friction (mu .8); nothing is welded."""
import numpy as np
import pinocchio as pin
import pytest

import robots
from controlkit.constraints import WeldConstraint
from controlkit.errors import ControlkitError
from controlkit.quantities import FramePoint
from controlkit.studies.compare import SwayPath
from controllers.biped_model import thesis_biped
from controllers.whole_body import FootContact, whole_body_stance
from sim.contact import enable_contacts
from sim.simulator import Simulator

G = 9.81


def _stance(mass_error: float, T: float = 1.0):
    """The biped on its soles (toes held up, as the walking program holds them), its torso
    swaying 2 mm and dipping 4 mm in T s: peak accelerations ~0.3 m/s^2."""
    built = robots.biped(with_ground=True)
    mech = built.mechanism
    q0 = built.q0.copy()
    for joint, angle in thesis_biped(built).held.items():  # the toes held up
        q0[mech.joint_q_slice(joint)] = angle
    ctrl = robots.biped(with_ground=True).mechanism  # the controller's own model
    j = ctrl.model.getJointId("root_joint")  # the torso (with the welded head)
    I = ctrl.model.inertias[j]
    ctrl.model.inertias[j] = pin.Inertia(I.mass * (1 + mass_error), I.lever.copy(), I.inertia * (1 + mass_error))
    path = SwayPath(FramePoint(mech, "torso").position(mech).copy(), 0.0, T, sway=0.002, squat=0.004)
    sim = Simulator(mech, q0, np.zeros(mech.nv), dt=1e-3, integrator="rk4")
    program = whole_body_stance(ctrl, [f.contact(0.8) for f in thesis_biped(built).feet.values()], "torso", path)
    sim.add_program(program, period=1e-3)
    src = enable_contacts(sim, friction=0.8, pairs=[(f"foot_{s}", "ground") for s in "lr"])
    feet0 = [mech.data.oMf[mech.frame_id(f"foot_{s}")].translation.copy() for s in "lr"]
    normals = []
    sim.control_phase.append(lambda s: normals.append(sum(f["normal"] for f in src.pair_forces(s).values())))
    rec = sim.run(T)
    feet1 = [mech.data.oMf[mech.frame_id(f"foot_{s}")].translation.copy() for s in "lr"]
    err = np.abs(rec.q[:, :3] - np.array([path(t)[0] for t in rec.t])).max()
    return rec, err, max(np.linalg.norm(a - b) for a, b in zip(feet0, feet1)), np.array(normals)


class _Stances(dict):
    """Each stance run on first use, so one that raises does not take the other's test with it."""

    def __missing__(self, mass_error):
        self[mass_error] = _stance(mass_error)
        return self[mass_error]


@pytest.fixture(scope="module")
def stances():
    return _Stances()


@pytest.mark.parametrize("mass_error", [0.0, 0.1])
def test_biped_balances_by_forward_dynamics_on_real_contact(stances, mass_error):
    """Exact model, and one whose torso (with the head) is 10% heavier than the simulated one."""
    rec, err, slip, normals = stances[mass_error]
    # each sole rests on its four corners and sticks; nothing changes while the load moves over
    # them (no impact, slip, tipping or lift-off, and no change of which corners are held)
    assert [(e.kind, e.data["points"], e.data["mode"]) for e in rec.events] == [("contact_made", 4, "stick")] * 2
    assert slip < 1e-6  # m: the feet stay where they stand
    if mass_error == 0:
        assert normals[0] == pytest.approx(75.0 * G, rel=1e-6)  # the weight, at rest
    else:  # the first torques expect a heavier torso: it is pushed up
        assert normals[0] > 75.0 * G * (1 + 1e-3)
    assert normals.min() > 0.9 * 75.0 * G
    assert err < 2e-3  # m: the torso on its 4 mm dip (the posture cost's share, StanceGains)


def test_foot_contact_bounds_the_wrench_to_the_sole():
    built = robots.biped()
    mech = built.mechanism
    c = FootContact("f", "foot_l", 0.1, 0.05, 0.02, 0.8)
    c.bind(mech)
    C, d = c.force_inequalities()
    R = mech.data.oMf[mech.frame_id("foot_l")].rotation
    o = mech.data.oMf[mech.frame_id("foot_l")].translation

    def wrench(f, p):  # force f (world) at sole point p (foot axes from the sole centre) -> (f, m at origin)
        x = o + R @ (np.array([0.0, 0.0, -0.02]) + p)
        return np.concatenate([f, np.cross(x - o, f)])

    inside = wrench(np.array([10.0, -5.0, 100.0]), np.array([0.09, -0.04, 0.0]))
    outside = wrench(np.array([0.0, 0.0, 100.0]), np.array([0.11, 0.0, 0.0]))  # past the toe end
    pulling = wrench(np.array([0.0, 0.0, -1.0]), np.zeros(3))
    slipping = wrench(np.array([70.0, 0.0, 100.0]), np.zeros(3))  # beyond mu / sqrt 2
    assert np.all(C @ inside <= d + 1e-9)
    for w in (outside, pulling, slipping):
        assert np.any(C @ w > d + 1e-9)
    with pytest.raises(ControlkitError):
        FootContact("f", "foot_l", -0.1, 0.05, 0.02, 0.8)
    assert isinstance(c, WeldConstraint)
    # a tilted, turned foot: the rows are the template's on [R^T f; R^T (m - r x f)], r = R (0, 0, -depth)
    pin.seed(2)  # Pinocchio's generator is process-wide: the same foot in any test order
    q = pin.randomConfiguration(mech.model, -np.ones(mech.nq), np.ones(mech.nq))
    mech.set_state(q, np.zeros(mech.nv))
    R = mech.kinematics().oMf[mech.frame_id("foot_l")].rotation
    r = R @ np.array([0.0, 0.0, -0.02])
    skew = np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])
    T = np.block([[R.T, np.zeros((3, 3))], [-R.T @ skew, R.T]])
    C, d = c.force_inequalities()
    np.testing.assert_allclose(C, c._template() @ T, rtol=0, atol=1e-12)


def test_the_kept_inequality_layout_gives_the_rows_assembled_afresh():
    """The stacked inequality rows (the feet's force limits, then the torque limits) are laid out
    once and refilled at each state: equal to a fresh assembly at new states and after a foot is lifted."""
    from controlkit.equations import EquationSet, build_problem
    from controlkit.quantities import ControlTorques
    built = robots.biped()
    mech = built.mechanism
    feet = [FootContact(f"stance {f['frame']}", f["frame"], f["half_length"], f["half_width"], f["sole_depth"], f["mu"])
            for f in (foot.contact(0.8) for foot in thesis_biped(built).feet.values())]
    for c in feet:
        c.bind(mech)
        mech.constraints[c.name] = c
    eqs = EquationSet()
    eqs.add_inequality("torque limit", ControlTorques(mech) <= 50.0)
    rng = np.random.default_rng(4)
    pin.seed(4)

    def assembled(fresh: bool):
        if fresh:
            eqs.cache["plan"][3].inequalities.ineq_layout = None
        return build_problem(mech, eqs, 0.0).ineq_rows

    for lifted in (False, True):
        if lifted:
            del mech.constraints[feet[1].name]
        for _ in range(2):
            mech.set_state(pin.randomConfiguration(mech.model, -np.ones(mech.nq), np.ones(mech.nq)),
                           rng.standard_normal(mech.nv))
            kept, fresh = assembled(False), assembled(True)
            np.testing.assert_array_equal(kept.Aw, fresh.Aw)
            np.testing.assert_array_equal(kept.b, fresh.b)
            planted = feet[:1] if lifted else feet
            assert [s[0] for s in kept.spans] == [f"{c.name} (unilateral)" for c in planted] + ["torque limit"]
            k, layout = 0, build_problem(mech, eqs, 0.0).layout
            for c in planted:
                C, d = c.force_inequalities()
                cols = layout.lam[c.name]
                np.testing.assert_array_equal(kept.Aw[k:k + len(d), cols.start - mech.nv:cols.stop - mech.nv], C)
                np.testing.assert_array_equal(kept.b[k:k + len(d)], d)
                k += len(d)
            np.testing.assert_array_equal(kept.b[k:], 50.0)
