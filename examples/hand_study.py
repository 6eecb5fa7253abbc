"""The hand design study (thesis Fig. 1.1, 7.2): a 3- or 4-fingered hand grasps a box, a cylinder or a sphere.

Each grasp is the coroutine of :mod:`controllers.grasp` (approach, close until a contact event
on each fingertip, squeeze with 1.5 N per fingertip, lift 8 cm) on :func:`robots.hand.hand`
with contact and Coulomb friction (mu_s 0.8, mu_k 0.6). Values the seeds leave open are
chosen in :mod:`robots.hand` (finger lengths 5, 4, 3 cm; objects of 0.15 kg: a 5 cm cube, a
cylinder of radius 2.5 cm and height 7 cm, a sphere of radius 3 cm).

``controlkit demo hand_study`` runs one grasp (``--set fingers=4 --set obj=sphere``) with
its replay and plots and prints its row of the comparison. Run as a script it runs every
pair (3 and 4 fingers x the objects contact handles) and writes the table (``hand_study.md``)
and a figure of the object's height and the fingertips' normal forces:

    python examples/hand_study.py [--out out] [--needed]

``--needed`` also finds, for each hand and object, the smallest squeeze per fingertip (of
0.25, 0.5, 0.75, 1, 1.5, 2 N) that lifts the object securely (it rises with the palm and
slips less than 5 mm), and the internal force and peak joint torque that takes
(``hand_study_needed.md``).

Columns: held or dropped (the object rose with the palm), fingertip slip (mm: how far the
object moved in the palm's frame during the lift), internal force (N: the fingertips' normal
forces summed at the end of the squeeze; they cancel pairwise, what squeezes the object),
peak finger joint torque (N m, from the squeeze on).

The cylinder stands on its cap (rim points on the table) and the fingertips close on its side
(line or point contacts on the side: :mod:`sim.contact.curved`). ``contact_handles`` asks the
contact module which objects it makes contact hinges on; the study runs those.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from controllers.grasp import grasp_program
from robots.hand import OBJECTS, hand
from sim.contact import enable_contacts
from sim.runner import Scenario
from sim.simulator import Simulator

FRICTION = (0.8, 0.6)
SQUEEZE, LIFT = 1.5, 0.08  # N per fingertip, m
DURATION = 2.4  # s: approach 0.5, close (0.5-0.7 at 0.6 rad/s), squeeze 0.15, lift 0.4, hold 0.3


class _Position:
    def __init__(self, frame: str):
        self.frame, self.name = frame, f"{frame} position"

    def position(self, mech):
        return mech.kinematics().oMf[mech.frame_id(self.frame)].translation.copy()


class _TipForces:
    """Normal force (N) of each distal phalanx on the object, zero when apart."""

    name = "fingertip normal forces"

    def __init__(self, contacts, sim, tips):
        self.contacts, self.sim, self.tips = contacts, sim, tips

    def position(self, mech):
        forces = self.contacts.pair_forces(self.sim)
        out = np.zeros(len(self.tips))
        for k, tip in enumerate(self.tips):
            f = forces.get(f"{tip}/object") or forces.get(f"object/{tip}")
            out[k] = 0.0 if f is None else f["normal"]
        return out


def contact_handles(obj: str) -> bool:
    """Whether :mod:`sim.contact` makes contact hinges on this object's geometry (boxes, cylinders
    and spheres on the phalanges' boxes and the table's half-space)."""
    import coal

    from sim import contact
    shape = {"box": coal.Box, "sphere": coal.Sphere, "cylinder": coal.Cylinder}[obj]
    supported = getattr(getattr(contact, "_Geometry", None), "SUPPORTED_A", (coal.Box, coal.Sphere))
    return issubclass(shape, tuple(supported))


def simulate(fingers: int = 3, obj: str = "box", dt: float = 1e-3, squeeze: float = SQUEEZE):
    """A prepared grasp: (simulator, built hand, phase log)."""
    if obj in OBJECTS and not contact_handles(obj):
        from controlkit.errors import ControlkitError
        raise ControlkitError(f"hand_study: sim.contact makes no contact on a {obj} yet (it handles "
                              f"{', '.join(o for o in OBJECTS if contact_handles(o))}); choose one of those")
    built = hand(fingers, obj)
    sim = Simulator(built.mechanism, built.q0, dt=dt, integrator="rk4")
    contacts = enable_contacts(sim, friction=FRICTION, pairs=built.info["pairs"])
    log: dict = {}
    sim.add_program(grasp_program(built, contacts, squeeze=squeeze, lift=LIFT, log=log), name="grasp")
    sim.record_quantities.update({"object position": _Position("object"), "palm position": _Position("palm"),
                                  "fingertip normal forces": _TipForces(contacts, sim, built.info["tips"])})
    for name, unit in (("object position", "m"), ("palm position", "m"), ("fingertip normal forces", "N")):
        sim.recording.set_unit(name, unit)
    return sim, built, log


def outcome(rec, built, log) -> dict:
    """The study's figures for one grasp from its recording and phase log."""
    t = rec.t
    obj, palm = rec.quantity("object position"), rec.quantity("palm position")
    fn = rec.quantity("fingertip normal forces")
    mech = built.mechanism
    cols = [int(mech.tau_columns(j)[0]) for js in built.info["joints"].values() for j in js]
    lift_t = log.get("lift", np.inf)
    i_squeeze = int(np.searchsorted(t, log.get("squeeze", t[-1])))
    i_lift = int(np.searchsorted(t, lift_t)) if np.isfinite(lift_t) else len(t) - 1
    rel = obj - palm
    rise = float(obj[-1, 2] - obj[0, 2])
    slip = float(np.linalg.norm(rel[-1] - rel[min(i_lift, len(t) - 1)])) * 1e3
    return {
        "fingers": built.info["fingers"], "object": built.info["object"],
        "held": bool(rise > 0.5 * LIFT),
        "rise_mm": rise * 1e3,
        "slip_mm": slip,
        "internal_N": float(fn[max(i_lift - 1, 0)].sum()),
        "peak_torque_Nm": float(np.abs(rec.tau[i_squeeze:, cols]).max(initial=0.0)),
        "touch_s": {k: v for k, v in log.items() if k.startswith("touch")},
    }


def row(o: dict) -> str:
    """One markdown table row."""
    return (f"| {o['fingers']} | {o['object']} | {'held' if o['held'] else 'dropped'} | {o['rise_mm']:.1f} |"
            f" {o['slip_mm']:.2f} | {o['internal_N']:.2f} | {o['peak_torque_Nm']:.4f} |")


HEADER = ("| fingers | object | result | rise (mm) | fingertip slip (mm) | internal force (N) | peak joint torque (N m) |\n"
          "| --- | --- | --- | --- | --- | --- | --- |")


def build(fingers: int = 3, obj: str = "box", dt: float = 1e-3) -> Scenario:
    """One grasp of the study (see the module docstring)."""
    sim, built, log = simulate(fingers, obj, dt)
    panels = [("object position", 2, "object height"), ("palm position", 2, "palm height"),
              ("fingertip normal forces", None, "fingertip normal forces")]
    return Scenario("hand_study", f"hand study: {fingers} fingers grasp a {obj} (thesis Fig. 1.1)", sim, DURATION,
                    model={"factory": "robots.hand:hand", "kwargs": {"fingers": fingers, "obj": obj}}, panels=panels,
                    summary=lambda rec: HEADER + "\n" + row(outcome(rec, built, log)))


def study(out: Path, objects=None, hands=(3, 4), dt: float = 1e-3) -> list[dict]:
    """Run every grasp; write ``hand_study.md`` and ``hand_study.png`` into ``out``.

    ``objects``: default every object of :data:`robots.hand.OBJECTS` that contact handles."""
    from controlkit.errors import ControlkitError
    objects = [o for o in OBJECTS if contact_handles(o)] if objects is None else list(objects)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results, rows = [], []
    fig, axes = plt.subplots(2, len(objects), figsize=(4.5 * len(objects), 7), sharex=True)
    axes = np.asarray(axes).reshape(2, len(objects))
    for c, obj in enumerate(objects):
        for n in hands:
            sim, built, log = simulate(n, obj, dt)
            wall = time.perf_counter()
            try:
                rec = sim.run(DURATION)
            except ControlkitError as exc:  # the contact solve could not go on: a row saying so
                rows.append(f"| {n} | {obj} | run stopped: {str(exc).splitlines()[0][:100]} | | | | |")
                print(rows[-1], flush=True)
                continue
            o = outcome(rec, built, log)
            rows.append(row(o))
            o["wall_s"] = time.perf_counter() - wall
            results.append(o)
            print(row(o), f"({o['wall_s']:.0f} s wall)", flush=True)
            axes[0, c].plot(rec.t, rec.quantity("object position")[:, 2] * 100, label=f"{n} fingers")
            axes[1, c].plot(rec.t, rec.quantity("fingertip normal forces").sum(axis=1), label=f"{n} fingers")
        axes[0, c].set_title(obj)
        axes[0, c].set_ylabel("object height [cm]")
        axes[1, c].set_ylabel("sum of fingertip normal forces [N]")
        axes[1, c].set_xlabel("t [s]")
        axes[0, c].legend(fontsize=8)
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "hand_study.png", dpi=110)
    plt.close(fig)
    (out / "hand_study.md").write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    return results


NEEDED_LEVELS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)  # N per fingertip, tried in turn
SECURE_SLIP_MM = 5.0  # a grasp is secure when the object rises with the palm and slips less than this


def secure(o: dict) -> bool:
    """Whether a grasp's outcome is secure: risen with the palm (90 %), slipped under 5 mm."""
    return o["rise_mm"] > 0.9 * LIFT * 1e3 and o["slip_mm"] < SECURE_SLIP_MM


def needed(fingers: int, obj: str, levels=NEEDED_LEVELS, dt: float = 1e-3) -> dict:
    """The smallest squeeze per fingertip (of ``levels``, N) giving a secure grasp, with its outcome
    (``squeeze_N`` None if none does); ``failed`` lists the levels whose run stopped with an error."""
    from controlkit.errors import ControlkitError
    failed = []
    for f in levels:
        sim, built, log = simulate(fingers, obj, dt, squeeze=f)
        try:
            o = outcome(sim.run(DURATION), built, log)
        except ControlkitError as exc:  # a run the contact solve could not finish: say so, try the next level
            failed.append(f"{f} N: {str(exc).splitlines()[0][:80]}")
            continue
        if secure(o):
            o["squeeze_N"], o["failed"] = f, failed
            return o
    return {"squeeze_N": None, "failed": failed}


def needed_table(out: Path, objects=None, hands=(3, 4)) -> str:
    """The squeeze each hand needs for each object (markdown), written to ``hand_study_needed.md``."""
    objects = [o for o in OBJECTS if contact_handles(o)] if objects is None else list(objects)
    lines = ["| fingers | object | squeeze needed (N per fingertip) | internal force (N) | peak joint torque (N m) |",
             "| --- | --- | --- | --- | --- |"]
    for obj in objects:
        for n in hands:
            o = needed(n, obj)
            if o["squeeze_N"] is None:
                lines.append(f"| {n} | {obj} | none of {', '.join(map(str, NEEDED_LEVELS))} | - | - |")
            else:
                lines.append(f"| {n} | {obj} | {o['squeeze_N']:.2f} | {o['internal_N']:.2f} | {o['peak_torque_Nm']:.4f} |")
            print(lines[-1], *(f"  (run failed at {m})" for m in o["failed"]), sep="\n", flush=True)
    text = "\n".join(lines) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "hand_study_needed.md").write_text(text)
    return text


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out", help="output folder")
    p.add_argument("--needed", action="store_true",
                   help="also find the smallest squeeze each hand needs for a secure grasp (several runs each)")
    args = p.parse_args(argv)
    study(Path(args.out))
    print(f"wrote {Path(args.out) / 'hand_study.md'} and {Path(args.out) / 'hand_study.png'}")
    if args.needed:
        needed_table(Path(args.out))
        print(f"wrote {Path(args.out) / 'hand_study_needed.md'}")


if __name__ == "__main__":
    main()
