"""The billiards break (seed 001, section VII): outcome sets of racks, unique rack geometries, the demo."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robots.billiards import break_shot, lattice_rack
from sim.impact_outcomes import impact_outcomes, sample_outcomes
from sim.runner import load_script, run_scenario

EX = load_script(Path(__file__).resolve().parents[1] / "examples" / "billiards.py")


def check_outcomes(out, built, J):
    """Every outcome: energy and momentum as before (e = 1) to 1e-12, and no contact still approaching."""
    m = built.info["mass"]
    p0 = m * np.array([built.v0[0::2].sum(), built.v0[1::2].sum()])
    for o in out.outcomes:
        assert o.kinetic_energy == pytest.approx(out.kinetic_energy_before, rel=1e-12, abs=1e-15)
        np.testing.assert_allclose(m * np.array([o.v[0::2].sum(), o.v[1::2].sum()]), p0, rtol=0, atol=1e-12)
        assert np.all(J @ o.v >= -1e-9)


def mirrored(v: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The velocity field mirrored in the x axis (ball i -> the ball at its mirror position)."""
    out = np.empty_like(v).reshape(-1, 2)
    vv = v.reshape(-1, 2)
    for i, (x, y) in enumerate(pos):
        j = int(np.argmin(np.hypot(pos[:, 0] - x, pos[:, 1] + y)))
        out[j] = (vv[i, 0], -vv[i, 1])
    return out.ravel()


def test_six_ball_triangle_break_has_a_mirror_symmetric_outcome_set():
    """Three rows: every minimal sequence enumerated; more than one outcome; the set is closed under the
    rack's mirror symmetry (the law has no preferred side), each outcome conserves energy and momentum."""
    built = break_shot(rows=3, angle=60.0, speed=2.0)
    M, J, v, contacts = EX.contact_problem(built)
    assert len(contacts) == 10  # cue-apex and the triangle's 9 touching pairs
    out = impact_outcomes(M, J, v)
    assert out.exhaustive and len(out) > 1 and not out.uniqueness.guaranteed_unique
    check_outcomes(out, built, J)
    pos = built.info["positions"]
    for o in out.outcomes:
        w = mirrored(o.v, pos)
        assert any(np.allclose(w, o2.v, atol=1e-12) for o2 in out.outcomes)


def test_fifteen_ball_break_sampled_outcomes_conserve_energy_and_momentum():
    """The 15-ball rack: its outcome tree is too large to enumerate (millions of intermediate momenta);
    200 random minimal sequences give distinct outcomes, each exact in energy and momentum."""
    built = break_shot(rows=5, angle=60.0, speed=8.0)
    M, J, v, contacts = EX.contact_problem(built)
    assert len(contacts) == 31
    out = sample_outcomes(M, J, v, samples=200, seed=1)
    assert not out.exhaustive and len(out) > 100
    check_outcomes(out, built, J)


def test_diamond_rack_has_one_outcome_derived_by_hand():
    """A rack on a square lattice (90 deg diamond), cue ball on its axis: the normals are orthogonal or
    collinear. By hand: the apex takes the cue ball's (1, 0) = (a + b)/sqrt2 (a, b the lattice's unit
    directions, orthogonal), passes the a-part down the a-line and the b-part down the b-line (orthogonal
    resets do not mix), so only the two far corner balls move, at (1/2, +-1/2) times the speed."""
    speed = 3.0
    built = break_shot(rows=5, angle=90.0, speed=speed)
    M, J, v, _ = EX.contact_problem(built)
    out = impact_outcomes(M, J, v)
    assert len(out) == 1 and out.exhaustive
    check_outcomes(out, built, J)
    expect = np.zeros_like(v).reshape(-1, 2)
    rack = lattice_rack(5, 90.0, built.info["radius"])
    corners = [int(np.argmax(rack[:, 1])), int(np.argmin(rack[:, 1]))]  # (4, 0) along a, (4, 4) along b
    expect[1 + corners[0]] = (speed / 2, speed / 2)
    expect[1 + corners[1]] = (speed / 2, -speed / 2)
    np.testing.assert_allclose(out.outcomes[0].v, expect.ravel(), atol=1e-12)


def test_rack_scan_finds_the_square_lattice_unique():
    """Among rack lattices of 60..120 deg (3 rows, every order enumerated), only 90 deg has one outcome."""
    scan = EX.rack_scan()
    assert {a for a, n in scan.items() if n == 1} == {90.0}
    assert scan[60.0] > 1


def test_break_demo_runs_with_the_variational_integrator(tmp_path):
    scn = EX.build(rows=4, speed=2.0, cue_distance=0.01, dt=2e-3)
    rec = run_scenario(scn, seconds=0.05, quiet=True, save=False)
    (ev,) = rec.events_of("impact")
    assert ev.data["kinetic_energy_after"] == pytest.approx(ev.data["kinetic_energy_before"], rel=1e-12)
    ke = rec.quantity("kinetic energy")[:, 0]
    assert np.abs(ke - ke[0]).max() <= 1e-12 * ke[0]
    out, built = EX.break_outcomes(rows=3)
    path = EX.plot_outcomes(out, built, tmp_path / "outcomes.png")
    assert path.stat().st_size > 10_000
