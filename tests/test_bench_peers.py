"""The controlkit side of bench/peers.py: its scenes give the physics the report claims.

Needs neither MuJoCo nor PyBullet, and times nothing: the checks are the energy ratios
and velocities of the impact scenes, the chain's energy conservation, the MuJoCo
restitution mapping's arithmetic and the work-precision interpolation.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import peers  # noqa: E402


@pytest.mark.parametrize("rate", [60.0, 6000.0])
@pytest.mark.parametrize("phase", [0.1, 0.9])
@pytest.mark.parametrize("e", [1.0, 0.5, 0.0])
def test_three_spheres_keep_or_lose_energy_as_the_propagative_law_says(e, phase, rate):
    speed = 2.0
    r = peers.three_sphere_case(e, speed, rate, phase)
    assert r.impacts == 1
    assert r.ke_ratio <= 1 + 1e-12
    expect = np.array(peers.textbook_three_spheres(e)) * speed
    np.testing.assert_allclose(r.v, expect, atol=1e-12 if e == 1.0 else 1e-8)
    if e == 1.0:
        assert r.ke_ratio == pytest.approx(1.0, abs=1e-12)


def test_textbook_outcomes():
    assert peers.textbook_three_spheres(1.0) == [0.0, 0.0, 1.0]
    np.testing.assert_allclose(peers.textbook_three_spheres(0.0), [1 / 3] * 3, atol=1e-12)
    np.testing.assert_allclose(peers.textbook_three_spheres(0.5), [13 / 64, 15 / 64, 9 / 16], atol=1e-15)


@pytest.mark.parametrize("rate,phase", [(60.0, 0.5), (600.0, 0.1), (6000.0, 0.9)])
def test_cradle_sends_on_only_the_last_ball(rate, phase):
    r = peers.cradle_case(rate, phase)
    np.testing.assert_allclose(r.v, [0, 0, 0, 0, peers.CRADLE_SPEED], atol=1e-12)
    assert r.ke_ratio == pytest.approx(1.0, abs=1e-12)


def test_row_scene_matches_the_seed():
    built = peers.cradle_built(600.0, 0.5)
    scene = peers.row_scene(built)
    assert scene.names == [f"ball_{i}" for i in range(1, 6)]
    assert scene.masses == [peers.CRADLE_MASS] * 5
    gap = scene.x[1] - scene.x[0] - 2 * peers.RADIUS
    assert gap / scene.speed == pytest.approx(peers.contact_time(600.0, 0.5), rel=1e-12)


def test_chain_conserves_energy_in_the_simulator_and_the_core():
    sim = peers.controlkit_chain("dopri5", 1e-9)
    core = peers.controlkit_chain_core("dopri5", 1e-9)
    assert sim["energy_error"] < 1e-8 and core["energy_error"] < 1e-8
    assert sim["steps"] == core["steps"]  # same integrator, same steps: the Simulator adds no drift
    rough = peers.controlkit_chain("semi_implicit_euler", 1e-3)
    assert 1e-3 < rough["energy_error"] < 1.0


def test_mujoco_restitution_mapping_rebounds_with_e():
    for e in (0.9, 0.5, 0.1):
        c = peers.mujoco_contact(e, 1e-3)
        z = c["zeta"]
        assert math.exp(-z * math.pi / math.sqrt(1 - z * z)) == pytest.approx(e, rel=1e-12)
        assert c["b_per_s"] == pytest.approx(2 * z * math.sqrt(c["k_per_s2"]), rel=1e-12)
    assert peers.mujoco_contact(1.0, 1e-3)["b_per_s"] == 0.0
    assert peers.mujoco_contact(0.0, 1e-3)["zeta"] == 1.0
    xml = peers.mujoco_row_xml(peers.row_scene(peers.cradle_built(60.0, 0.5)), 0.5, 1 / 60)
    assert xml.count("<freejoint/>") == 5 and 'condim="1"' in xml


def test_cost_interpolates_log_log_between_points():
    pts = [(1.0, 1e-4), (10.0, 1e-8)]
    assert peers.cost_at(pts, 1e-6) == pytest.approx(math.sqrt(10.0))
    assert peers.cost_at(pts, 1e-3) == 1.0
    assert peers.cost_at(pts, 1e-9) is None


def test_dop853_on_the_chain_conserves_energy_in_fewer_steps():
    tight = peers.controlkit_chain("dop853", 1e-9)
    dopri = peers.controlkit_chain("dopri5", 1e-9)
    assert tight["energy_error"] < 1e-8
    assert tight["steps"] < dopri["steps"] / 2
    assert tight["evaluations"] < dopri["evaluations"]


def _dense_error(h: float) -> float:
    """Largest q error of one dop853 step's dense output from horizontal, against tight integrations."""
    import pinocchio as pin

    from sim.integrators import DormandPrince853, PinocchioSystem, advance

    built = peers.chain_built()
    model = built.mechanism.model
    data, tau = model.createData(), np.zeros(model.nv)
    system = PinocchioSystem(model, lambda t, q, v: pin.aba(model, data, q, v, tau))
    step = DormandPrince853(rtol=1.0, atol=1.0).step(system, 0.0, built.q0, built.v0, h)
    worst = 0.0
    for theta in (0.25, 0.5, 0.8):
        q, _ = step.dense(theta)
        qr, _, _ = advance(DormandPrince853(rtol=1e-14, atol=1e-14), system, 0.0, built.q0, built.v0, h * theta, 1e-3)
        worst = max(worst, float(np.max(np.abs(q - qr))))
    return worst


def test_dop853_dense_output_on_the_chain_is_high_order():
    coarse, fine = _dense_error(0.05), _dense_error(0.025)
    assert coarse < 1e-8
    assert fine < coarse / 2 ** 6  # 7th-order interpolant: local error ~ h^8
