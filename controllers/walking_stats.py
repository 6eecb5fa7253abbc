"""What a walk is judged by: recordable quantities and statistics of walking recordings.

Both walking programs (:mod:`controllers.walking`, inverse dynamics on magnetic shoes, and
:mod:`controllers.walking_fd`, forward dynamics on real contact) log a ``heel strike`` control
event per step with the heel's position and its target; the statistics here read those events
and the recorded quantities. Units: m, s, rad (angles reported in degrees where the key says so).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from controlkit.quantities import ControlTorque, FrameOrientation, FramePoint, JointAngle

__all__ = ["RollPitchYaw", "Stack", "contact_walk_quantities", "contact_walk_units", "contact_walk_panels",
           "servo_time", "heel_strikes", "walking_statistics", "format_walking_statistics",
           "stance_slips", "contact_walking_statistics", "format_contact_walking_statistics"]


# ------------------------------------------------------------------ recorded quantities
class Stack:
    """Several one-dof quantities recorded as one (optionally one component of each)."""

    def __init__(self, name, parts, component=None):
        self.name, self.parts, self.component = name, parts, component

    def position(self, mech):
        vals = [np.atleast_1d(p.position(mech)) for p in self.parts]
        return np.array([v[0 if self.component is None else self.component] for v in vals])


class RollPitchYaw:
    """Roll, pitch and yaw (rad, about x, y, z of the world) of an orientation quantity."""

    name = "roll pitch yaw"

    def __init__(self, orientation):
        self.orientation = orientation

    def position(self, mech):
        return pin.rpy.matrixToRpy(self.orientation.position(mech))


# ------------------------------------------------------------------ statistics
def heel_strikes(rec) -> list:
    """The walking program's ``heel strike`` control events, in time order."""
    return [e for e in rec.events if e.kind == "control" and e.description.endswith("heel strike")]


def _strike_figures(rec) -> dict:
    """Steps, heel-strike errors (m) and heading drift (deg) from the heel-strike events."""
    strikes = heel_strikes(rec)
    errors = [float(np.linalg.norm(np.subtract(e.data["heel"], e.data["target"]))) for e in strikes]
    heading = 0.0
    for foot in sorted({e.data["foot"] for e in strikes}):
        xy = np.array([e.data["heel"][:2] for e in strikes if e.data["foot"] == foot])
        if len(xy) >= 2:
            d = xy[-1] - xy[0]
            heading = max(heading, abs(float(np.degrees(np.arctan2(d[1], d[0])))))
    rpy = rec.quantity("torso roll pitch yaw")
    yaw = float(np.degrees(np.nanmax(np.abs(rpy[:, 2])))) if len(rpy) else 0.0
    return {
        "steps": len(strikes),
        "strike_errors": errors,
        "max_strike_error": max(errors, default=float("nan")),
        "path_heading_deg": heading,
        "max_yaw_deg": yaw,
        "heading_drift_deg": max(heading, yaw),
    }


def _torso_height(rec) -> dict:
    """Mean torso height (m) and the largest distance from it (m) after the first heel strike."""
    strikes = heel_strikes(rec)
    t = rec.t
    z = rec.quantity("torso position")[:, 2]
    after = t >= strikes[0].time if strikes else np.ones(len(t), dtype=bool)
    zs = z[after]
    return {"torso_height_mean": float(zs.mean()), "torso_height_spread": float(np.abs(zs - zs.mean()).max())}


def walking_statistics(rec) -> dict:
    """Acceptance figures of a walk on magnetic shoes (part 1).

    Keys: ``steps`` (heel strikes), ``strike_errors`` (m, heel to target at each strike),
    ``max_strike_error`` (m), ``path_heading_deg`` (largest angle from x of the line through
    one foot's successive strikes), ``max_yaw_deg`` (largest torso yaw), ``heading_drift_deg``
    (the larger of the two), ``torso_height_mean`` (m) and ``torso_height_spread`` (m, largest
    distance from the mean after the first heel strike), ``max_constraint_error`` (m or rad,
    position level) and ``max_constraint_rate_error`` (m/s or rad/s), ``fallbacks`` (events of
    the solver fallback), ``simulated_time`` (s).
    """
    t = rec.t
    cerr = rec.quantity("constraint error")
    return {
        "simulated_time": float(t[-1] - t[0]) if len(t) else 0.0,
        **_strike_figures(rec),
        **_torso_height(rec),
        "max_constraint_error": float(np.nanmax(cerr[:, 0])),
        "max_constraint_rate_error": float(np.nanmax(cerr[:, 1])),
        "fallbacks": len(rec.events_of("fallback")),
    }


def _rows(rows) -> str:
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _common_rows(s: dict) -> list:
    return [
        ("steps (heel strikes)", f"{s['steps']} in {s['simulated_time']:.3g} s"),
        ("largest heel-strike error", f"{100 * s['max_strike_error']:.2f} cm from its target"
         if s["steps"] else "- (no heel strike yet)"),
        ("heading drift", f"{s['heading_drift_deg']:.2f} deg (path {s['path_heading_deg']:.2f}, "
                          f"torso yaw {s['max_yaw_deg']:.2f})"),
        ("torso height", f"{s['torso_height_mean']:.3f} m, within {100 * s['torso_height_spread']:.2f} cm "
                         "after the first step"),
    ]


def format_walking_statistics(s: dict) -> str:
    """The figures of :func:`walking_statistics` as readable lines."""
    return _rows(_common_rows(s) + [
        ("largest constraint error", f"{s['max_constraint_error']:.2g} (position), "
                                     f"{s['max_constraint_rate_error']:.2g} (velocity)"),
    ])


def stance_slips(rec, feet: dict[str, str]) -> list[dict]:
    """How far each planted foot slid while it stood: one entry per stance.

    Args:
        rec: the recording; the walking program logs ``planted`` and ``lift-off`` control events
            with the foot's name (a foot standing at the start is planted at the start).
        feet: foot name -> the recorded quantity holding that foot's position (m, (3,)).
    Returns ``[{"foot", "start", "end", "slip"}]`` with ``slip`` the largest horizontal distance
    (m) of the foot from where it stood at the start of the stance.
    """
    t = rec.t
    out = []
    for foot, quantity in feet.items():
        p = rec.quantity(quantity)
        marks = [(e.time, e.description.split(": ", 1)[-1]) for e in rec.events
                 if e.kind == "control" and e.data.get("foot") == foot
                 and e.description.endswith(("planted", "lift-off"))]
        start = t[0] if len(t) else 0.0
        standing = True
        for time, what in marks + [(t[-1] if len(t) else 0.0, "end")]:
            if what in ("lift-off", "end") and standing:
                i0, i1 = np.searchsorted(t, start), np.searchsorted(t, time, side="right")
                if i1 > i0:
                    d = np.linalg.norm(p[i0:i1, :2] - p[i0, :2], axis=1)
                    out.append({"foot": foot, "start": float(start), "end": float(time), "slip": float(d.max())})
                standing = False
            elif what == "planted":
                start, standing = time, True
    return out


def contact_walking_statistics(rec, feet: dict[str, str], fallen_height: float = 0.8) -> dict:
    """Acceptance figures of a walk on real contact (part 2).

    Keys as :func:`walking_statistics` (without the constraint errors) and: ``fell`` (the torso
    came below ``fallen_height`` m), ``max_roll_deg`` and ``max_pitch_deg`` (torso, after the
    first step), ``stances`` (:func:`stance_slips`), ``max_stance_slip`` (m), ``strike_impacts``
    and ``strike_contacts`` (heel strikes followed within 50 ms by an impact, and by a contact
    made, of that foot: its ``geom``, the sole's collision geometry, or else its name), ``events``
    (count per kind).
    """
    t = rec.t
    strikes = heel_strikes(rec)
    rpy = rec.quantity("torso roll pitch yaw")
    after = t >= strikes[0].time if strikes else np.ones(len(t), dtype=bool)
    stances = stance_slips(rec, feet)

    def followed(e, kind):
        return any(x.kind == kind and e.time <= x.time <= e.time + 0.05
                   and any(e.data.get("geom", e.data["foot"]) in pair
                           for pair in x.data.get("pairs", [x.data.get("pair", [])]))
                   for x in rec.events)

    kinds: dict[str, int] = {}
    for e in rec.events:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    z = rec.quantity("torso position")[:, 2]
    return {
        "simulated_time": float(t[-1] - t[0]) if len(t) else 0.0,
        **_strike_figures(rec),
        **_torso_height(rec),
        "fell": bool(len(z) and z.min() < fallen_height),
        "max_roll_deg": float(np.degrees(np.abs(rpy[after, 0]).max())) if after.any() else 0.0,
        "max_pitch_deg": float(np.degrees(np.abs(rpy[after, 1]).max())) if after.any() else 0.0,
        "stances": stances,
        "max_stance_slip": max((s["slip"] for s in stances), default=0.0),
        "strike_impacts": sum(followed(e, "impact") for e in strikes),
        "strike_contacts": sum(followed(e, "contact_made") for e in strikes),
        "events": kinds,
    }


def format_contact_walking_statistics(s: dict, extra: tuple[tuple[str, str], ...] | list = ()) -> str:
    """The figures of :func:`contact_walking_statistics` as readable lines, then the ``extra``
    (label, text) rows aligned with them."""
    return _rows(_common_rows(s) + [
        ("torso orientation", f"roll within {s['max_roll_deg']:.2f} deg, pitch within {s['max_pitch_deg']:.2f} deg"),
        ("fell", "yes" if s["fell"] else "no"),
        ("largest slip of a standing foot", f"{1000 * s['max_stance_slip']:.2f} mm over {len(s['stances'])} stances"),
        ("heel strikes", f"{s['strike_impacts']} with an impact, {s['strike_contacts']} with a contact made"),
        ("events", ", ".join(f"{k} {v}" for k, v in sorted(s["events"].items()))),
        *extra,
    ])


# ------------------------------------------------------------------ a contact walk's records
def contact_walk_quantities(mech, biped, knees: tuple[str, str], ankle_pitch: tuple[str, str],
                            ankle_component: int | None = None) -> dict:
    """The quantities a walk on contact records (both demos of walking part 2): heels, soles
    (m), the torso frame's position (m) and roll, pitch, yaw (rad), the knees' angles (rad) and
    torques, and the ankles' pitch torques (N m).

    Args:
        mech: the simulated mechanism; biped: its :class:`~controllers.biped_model.Biped`.
        knees, ankle_pitch: the left and right joints; ankle_component: the pitch's component of
            a multi-dof ankle's torque (None: one-dof joints).
    """
    feet, torso = biped.feet, biped.torso
    return {
        "left heel": FramePoint(mech, *feet["l"].heel),
        "right heel": FramePoint(mech, *feet["r"].heel),
        "left sole": FramePoint(mech, feet["l"].frame),
        "right sole": FramePoint(mech, feet["r"].frame),
        "torso position": FramePoint(mech, torso),
        "torso roll pitch yaw": RollPitchYaw(FrameOrientation(mech, torso)),
        "knee angles": Stack("knee angles", [JointAngle(mech, j) for j in knees]),
        "knee torques": Stack("knee torques", [ControlTorque(mech, j) for j in knees]),
        "ankle pitch torques": Stack("ankle pitch torques", [ControlTorque(mech, j) for j in ankle_pitch],
                                     component=ankle_component),
    }


def contact_walk_units(biped) -> dict[str, str]:
    """Units of :func:`contact_walk_quantities` and of each sole's ``"<frame> contact force"`` (N)."""
    units = {"left heel": "m", "right heel": "m", "left sole": "m", "right sole": "m", "torso position": "m",
             "torso roll pitch yaw": "rad", "knee angles": "rad", "knee torques": "N m", "ankle pitch torques": "N m"}
    units.update({f"{biped.feet[s].frame} contact force": "N" for s in "lr"})
    return units


def contact_walk_panels(biped, body: str = "torso") -> list:
    """The plot panels of a walk on contact; ``body`` names the torso frame in the labels."""
    force = {s: f"{biped.feet[s].frame} contact force" for s in "lr"}
    return [
        ("left heel", 0, "left heel x"), ("right heel", 0, "right heel x"), ("torso position", 0, f"{body} x"),
        ("left heel", 2, "left heel z"), ("right heel", 2, "right heel z"), ("torso position", 2, f"{body} z"),
        ("torso roll pitch yaw", 0, f"{body} roll"), ("torso roll pitch yaw", 1, f"{body} pitch"),
        ("torso position", 1, f"{body} y"),
        (force["l"], 0, "left sole normal force"), (force["r"], 0, "right sole normal force"),
        ("knee angles", 0, "left knee"),
        ("knee torques", 0, "left knee torque"), ("knee torques", 1, "right knee torque"),
        ("ankle pitch torques", 0, "left ankle pitch torque"),
    ]


def servo_time(servo, rec) -> str:
    """The servo's own solves (on its model: not in the run's solve/assembly/kernel lines), in words."""
    wall = servo.cm.times.total
    share = wall / rec.stats["wall_time"] if rec.stats.get("wall_time") else 0.0
    return f"{servo.solves} solves, {1e6 * wall / max(servo.solves, 1):.0f} us each, {wall:.3f} s ({share:.0%} of wall time)"
