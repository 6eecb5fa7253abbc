"""The tailed biped of seed 001 (Fig. 1): where a foot strike with the tail on the ground has one outcome.

When foot 1 strikes the ground while the tail tip touches it, the impact has two contacts. Their
normals' kinetic-metric inner product ``c`` decides whether the propagative law's outcome is unique
for every pre-impact momentum: ``c = 0`` (Theorem 2) or ``c = -1/2`` (Theorem 3). With foot and tail
tip both on the ground the configuration is fixed by the hip angle and the tail angle (the body's
pitch levels the two: :func:`robots.tailed_biped.stance_pose`), so ``c`` is a map over those two
angles (:func:`uniqueness_map`); its zero set, a curve ``tail = T(leg)`` (:func:`unique_tail_angle`),
is the design set. With the hinges free at the impact (finite torques) ``c`` stays small
(|c| < 0.15 here; c = -1/2 is never reached): Theorem 2's curve is the one the robot can use. With
the hinges braked through the impact (``Study(braked=True)``: the robot struck as one rigid body)
c spans [-0.73, 0.98] and both curves exist.

The demo (``controlkit demo tailed_biped``, 10 s) makes the robot bound on foot 1 and its tail:
each period a PD pulse swings the tail tip up off the ground and back down, and it strikes while the
foot rests; the strike propagates into the foot, which leaves the ground and strikes again while the
tail rests. The hips are held (PD), so the four-bar formed with foot and tail down is not fought and
a contact that lands stays down: every impact has one approaching contact and the other resting,
which alone makes its outcome unique for any c (:func:`sim.impact_outcomes.strike_case`). Coulomb
friction (mu 0.8) at feet and tail, plastic impacts (e = 0) by the propagative law.
:func:`strike_report` gives each impact's striking contact, c, case and enumerated outcome count.

    python examples/tailed_biped.py [--map out/tailed_biped_map.png]   (also writes ..._braked.png)
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin
from scipy.interpolate import CubicSpline
from scipy.optimize import brentq

from controlkit.quantities import ControlTorques, FramePoint, JointAngle
from robots.tailed_biped import FRICTION, stance_pose, tailed_biped
from sim.contact import enable_contacts
from sim.impact import resolve_impact
from sim.impact_outcomes import impact_outcomes, strike_case, uniqueness
from sim.runner import Scenario
from sim.simulator import Simulator

TUCK = 0.9  # rad: hip 2 is held this far ahead of hip 1 (the lifted leg), in the map and in the gait


BASE = ("base_x", "base_y", "base_z", "base_yaw", "pitch")  # the body's coordinates (the hinges are the rest)


class Study:
    """Kinematics and mass matrix of the robot for the design study (its own Pinocchio data).

    Args:
        braked: False (default): the hinges are free at the impact (finite torques), the impulse
            turns them; True: they are braked (held) through the impact, which then moves the
            robot as one rigid body: M and J restricted to the body's coordinates (``BASE``).
    """

    def __init__(self, braked: bool = False):
        self.mech = tailed_biped()
        self.model = self.mech.model
        self.data = self.model.createData()
        self.frames = [self.model.getFrameId("foot_1"), self.model.getFrameId("tail_tip")]
        self.braked = braked
        self.columns = np.array([self.model.joints[self.model.getJointId(n)].idx_v for n in BASE]) if braked else None

    def problem(self, q: np.ndarray, frames=None) -> tuple[np.ndarray, np.ndarray]:
        """(M (n, n), J (2, n)): the mass matrix and the vertical-velocity rows of foot 1 and the tail tip;
        n = nv, or the body's 5 coordinates when braked."""
        m, d = self.model, self.data
        pin.computeJointJacobians(m, d, q)
        pin.framesForwardKinematics(m, d, q)
        J = np.array([pin.getFrameJacobian(m, d, f, pin.LOCAL_WORLD_ALIGNED)[2] for f in (frames or self.frames)])
        M = pin.crba(m, d, q)
        M = np.triu(M) + np.triu(M, 1).T
        if self.braked:
            k = self.columns
            return M[np.ix_(k, k)], J[:, k]
        return M, J

    def inner_product(self, leg: float, tail: float, other_leg: float | None = None) -> float:
        """c at the stance pose of (hip angle, tail angle) (rad), hip 2 at ``other_leg`` (default leg + TUCK)."""
        M, J = self.problem(stance_pose(leg, tail, leg + TUCK if other_leg is None else other_leg))
        return float(uniqueness(M, J).inner_products[0, 1])


def uniqueness_map(legs, tails, study: Study | None = None) -> np.ndarray:
    """c over the grid (len(legs), len(tails)) of hip and tail angles (rad)."""
    study = study or Study()
    return np.array([[study.inner_product(a, b) for b in tails] for a in legs])


def unique_tail_angle(leg: float, study: Study | None = None, bracket=(-0.3, 1.2), c: float = 0.0) -> float:
    """The tail angle T(leg) (rad) in ``bracket`` where the strike's inner product is ``c`` (0: Theorem 2,
    -1/2: Theorem 3), by Brent's method."""
    study = study or Study()
    return brentq(lambda t: study.inner_product(leg, t) - c, *bracket, xtol=1e-14)


def outcome_count(leg: float, tail: float, samples: int = 50, seed: int = 0, study: Study | None = None) -> int:
    """The largest number of distinct propagative outcomes over random momenta striking both contacts."""
    study = study or Study()
    M, J = study.problem(stance_pose(leg, tail, leg + TUCK))
    rng = np.random.default_rng(seed)
    worst = 0
    for _ in range(samples):
        lam = -rng.uniform(0.2, 1.0, 2)  # both normal velocities negative: both contacts strike
        v = np.linalg.lstsq(J, lam, rcond=None)[0] + 0.3 * (np.eye(len(M)) - np.linalg.pinv(J) @ J) @ rng.normal(size=len(M))
        worst = max(worst, len(impact_outcomes(M, J, v)))
    return worst


def design_curve(study: Study | None = None, hips=None) -> CubicSpline:
    """Theorem 2's curve inverted: hip angle as a function of the tail angle, hip = H(tail) (rad), a cubic
    spline through T(hip) at ``hips`` (default -0.5..0.5 rad, 21 points)."""
    study = study or Study()
    hips = np.linspace(-0.5, 0.5, 21) if hips is None else np.asarray(hips)
    tails = np.array([unique_tail_angle(h, study) for h in hips])
    if np.any(np.diff(tails) <= 0):
        raise ValueError("design_curve: T(hip) is not increasing over the hips given")
    return CubicSpline(tails, hips)


def plot_map(path, legs=None, tails=None, braked: bool = False) -> Path:
    """The design study's map: c over (hip angle, tail angle) with Theorem 2's curve c = 0 (solid) and,
    where the map reaches it (braked hinges), Theorem 3's c = -1/2 (dashed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    legs = np.linspace(-0.8, 0.8, 33) if legs is None else legs
    tails = np.linspace(-0.6, 1.2, 37) if tails is None else tails
    C = uniqueness_map(legs, tails, Study(braked=braked))
    fig, ax = plt.subplots(figsize=(6, 4.5))
    lim = float(np.abs(C).max())
    im = ax.pcolormesh(np.degrees(tails), np.degrees(legs), C, cmap="RdBu_r", vmin=-lim, vmax=lim, shading="auto")
    ax.contour(np.degrees(tails), np.degrees(legs), C, levels=[0.0], colors="k", linewidths=2)
    if C.min() < -0.5 < C.max():
        ax.contour(np.degrees(tails), np.degrees(legs), C, levels=[-0.5], colors="k", linewidths=2, linestyles="--")
    fig.colorbar(im, ax=ax, label="c = <u_foot, u_tail>_g / (|u_foot| |u_tail|)")
    ax.set_xlabel("tail angle at impact (deg)")
    ax.set_ylabel("hip angle at impact (deg)")
    ax.set_title(("hinges braked" if braked else "hinges free") + " at the strike: one outcome on the curves\n"
                 "(solid: Theorem 2, dashed: Theorem 3)", fontsize=9)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


GAINS = {"hip_1": (4000.0, 12.0), "hip_2": (4000.0, 12.0), "tail_joint": (300.0, 8.0)}  # N m/rad, N m s/rad


def tail_schedule(t: float, rest: float, lift: float, period: float, pulse: float) -> float:
    """The tail angle target (rad): a ``pulse``-second sin^2 bump of ``lift`` at the start of each period
    (a negative lift swings the tail tip up relative to the body: pushing on the ground it throws the
    body nose-up about the tip, and the foot leaves the ground), then ``rest`` held while the body
    falls back, so the foot strikes with the tail at ``rest``."""
    tau = t % period
    return rest + (lift * math.sin(math.pi * tau / pulse) ** 2 if tau < pulse else 0.0)


def build(hip: float = 0.0, lift: float = -0.35, period: float = 1.0, pulse: float = 0.2, restitution: float = 0.0,
          dt: float = 1e-3, integrator: str = "rk4") -> Scenario:
    """The robot on foot 1 and its tail, bounding in place: the tail lifts the body, the foot strikes again.

    The hips are held (PD) at fixed angles, so whenever both foot 1 and the tail tip are down the
    leg, body and tail form a four-bar the hips do not fight: a contact that lands stays down, and
    the other one rests while it does. Every impact then has one approaching contact and the other
    resting (:func:`sim.impact_outcomes.strike_case`): one minimal reset sequence, one outcome.

    Args:
        hip: hip 1's angle (rad), held by its PD (hip 2 at hip + TUCK); the tail's resting angle is T(hip).
        lift: the tail's extra angle at the top of its pulse (rad); period: one bound (s); pulse: the tail
            pulse's duration (s).
        restitution: e of the foot and tail impacts (the propagative law); dt: step (s).
    """
    study = Study()
    rest = unique_tail_angle(hip, study)
    mech = tailed_biped()
    q0 = stance_pose(hip, rest, hip + TUCK)
    record = {"body": FramePoint(mech, "body"), "foot 1": FramePoint(mech, "foot_1"),
              "tail tip": FramePoint(mech, "tail_tip"), "pitch": JointAngle(mech, "pitch"),
              "hip 1": JointAngle(mech, "hip_1"), "tail angle": JointAngle(mech, "tail_joint")}
    sim = Simulator(mech, q0, np.zeros(mech.nv), dt=dt, integrator=integrator, record=record)
    for name in record:
        sim.recording.set_unit(name, "m" if name in ("body", "foot 1", "tail tip") else "rad")
    joints = [mech.model.getJointId(n) for n in GAINS]
    iq = [mech.model.joints[j].idx_q for j in joints]
    iv = [mech.model.joints[j].idx_v for j in joints]
    kp = np.array([g[0] for g in GAINS.values()])
    kd = np.array([g[1] for g in GAINS.values()])

    def pd(s):
        target = np.array([hip, hip + TUCK, tail_schedule(s.t, rest, lift, period, pulse)])
        s.equations.assign("hip and tail PD", ControlTorques(s.mech), kp * (target - s.q[iq]) - kd * s.v[iv])
    pd(sim)  # torques assigned before the contacts are made: the hinges are then plain (forward dynamics)
    sim.control_phase.append(pd)
    contacts = enable_contacts(sim, friction=(FRICTION, FRICTION), restitution=restitution, law="propagative",
                               pairs=[("foot_1", "ground"), ("foot_2", "ground"), ("tail_tip", "ground")])

    def summary(rec):
        rep = strike_report(rec, study, restitution)
        cases = {r.case for r in rep}
        return (f"{len(rep)} impacts, outcomes per impact {sorted({r.outcomes for r in rep})}, cases {sorted(cases)}, "
                f"c in [{min((r.c for r in rep), default=0):.4f}, {max((r.c for r in rep), default=0):.4f}]; "
                f"rest tail angle T({hip:.3f}) = {rest:.4f} rad")

    return Scenario("tailed_biped", "tailed biped bounding on foot and tail (seed 001 Fig. 1)", sim, 10.0,
                    model={"factory": "robots.tailed_biped:tailed_biped", "kwargs": {}}, summary=summary,
                    panels=[("body", 2, "body height"), ("foot 1", 2, "foot 1 height"), ("tail tip", 2, "tail tip height"),
                            ("pitch", 0, "body pitch"), ("hip 1", 0, "hip 1"), ("tail angle", 0, "tail angle")],
                    info={"contacts": contacts, "rest_tail": rest, "study": study, "restitution": restitution})


@dataclass
class Strike:
    """One impact of the bounding gait, seen with both contacts (foot 1, tail tip).

    Attributes:
        time: s. striking: the approaching contacts' names. c: the normals' kinetic-metric inner
        product at the impact. normal_velocities: (foot 1, tail tip) before the impact, m/s.
        case: :func:`sim.impact_outcomes.strike_case`'s case. outcomes: distinct outcomes of the
        propagative law (every minimal sequence, ``resolve_impact(outcomes="all")``). longest: the
        longest minimal sequence.
    """

    time: float
    striking: tuple[str, ...]
    c: float
    normal_velocities: tuple[float, float]
    case: str
    outcomes: int
    longest: int


def strike_report(rec, study: Study | None = None, restitution: float = 0.0) -> list[Strike]:
    """Every impact of foot 1 or the tail tip: the enumerated outcomes of the propagative law for the
    impact's own pre-impact velocity, with both contacts (foot 1 and the tail tip) in the contact set,
    and the reason (:func:`sim.impact_outcomes.strike_case`)."""
    study = study or Study()
    names = ("foot_1", "tail_tip")
    out = []
    for ev in rec.events_of("impact"):
        pairs = {g for p in ev.data.get("pairs", []) for g in p}
        if not pairs & set(names):
            continue
        i = int(np.searchsorted(rec.t, ev.time))
        q = rec.q[min(i, len(rec.t) - 1)]
        M, J = study.problem(q)  # foot 1 and the tail tip at the impact's configuration
        v = np.asarray(ev.data["v_before"])
        u = J @ v
        res = resolve_impact(M, J, v, restitution, outcomes="all")
        case = strike_case(M, J, v, restitution)
        out.append(Strike(ev.time, tuple(names[k] for k in case.approaching), float(res.uniqueness.inner_products[0, 1]),
                          (float(u[0]), float(u[1])), case.case, len(res), res.longest))
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--map", default="out/tailed_biped_map.png")
    args = p.parse_args(argv)
    study = Study()
    for leg in (-0.4, 0.0, 0.2, 0.4):
        t = unique_tail_angle(leg, study)
        print(f"hip {math.degrees(leg):+6.1f} deg: unique at tail {math.degrees(t):6.2f} deg "
              f"(c = {study.inner_product(leg, t):.1e}); outcomes there {outcome_count(leg, t, study=study)}, "
              f"at tail 1.2 rad {outcome_count(leg, 1.2, study=study)}")
    braked = Study(braked=True)
    t2 = unique_tail_angle(0.0, braked, bracket=(0.4, 1.0))
    t3 = unique_tail_angle(0.0, braked, bracket=(-0.3, 0.3), c=-0.5)
    print(f"hinges braked, hip 0: Theorem 2 at tail {math.degrees(t2):.2f} deg, Theorem 3 at tail "
          f"{math.degrees(t3):.2f} deg; outcomes there {outcome_count(0.0, t2, study=braked)}, "
          f"{outcome_count(0.0, t3, study=braked)}, at tail 0.3 rad {outcome_count(0.0, 0.3, study=braked)}")
    print(f"wrote {plot_map(args.map)}")
    print(f"wrote {plot_map(Path(args.map).with_name(Path(args.map).stem + '_braked.png'), braked=True)}")


if __name__ == "__main__":
    main()
