"""Billiard balls on a table (seed 001, section VII): racks and the break.

Each ball is a sphere on two prismatic joints (``ballN_x``, ``ballN_y``: the table's plane, no
spin), so q = (x_0, y_0, x_1, y_1, ...) (m) and v likewise (m/s); M is diagonal. Without friction
and with central impacts a ball's spin never changes, so it is left out. There is no gravity (the
table carries the weight).

Racks are built on a lattice with an apex ball on the x axis and the cue ball coming in along +x:

- :func:`triangle_rack` — the triangle of 10 (4 rows) or 15 (5 rows) balls, every neighbour touching;
- :func:`lattice_rack` — rows of a rhombic lattice whose two directions make the angle ``angle``
  (60 degrees is the triangle; 90 degrees is a square lattice turned 45 degrees, a diamond).

Standard pool balls: radius 28.575 mm (2.25 in diameter), mass 0.17 kg.
"""
from __future__ import annotations

import math

import coal
import numpy as np
import pinocchio as pin

from controlkit.errors import ModelError
from controlkit.mechanism import Mechanism

from .builder import BuiltMechanism

RADIUS = 0.028575  # m
MASS = 0.17  # kg

_COLORS = [(0.95, 0.95, 0.92, 1.0), (0.9, 0.75, 0.1, 1.0), (0.1, 0.25, 0.75, 1.0), (0.8, 0.15, 0.1, 1.0),
           (0.35, 0.1, 0.5, 1.0), (0.95, 0.45, 0.1, 1.0), (0.1, 0.5, 0.25, 1.0), (0.5, 0.15, 0.1, 1.0),
           (0.08, 0.08, 0.08, 1.0)]  # the cue ball's white, then pool colours

__all__ = ["RADIUS", "MASS", "billiard_balls", "triangle_rack", "lattice_rack", "break_shot"]


def billiard_balls(positions, radius: float = RADIUS, mass: float = MASS, name: str = "billiards") -> Mechanism:
    """Balls ``ball0``, ``ball1``, ... each on x and y prismatic joints, with sphere geometries.

    Args:
        positions: (n, 2) initial centres (m); only their number matters to the model
            (the joints' zero is the world origin, so ``q0`` is the positions flattened).
        radius: ball radius (m); mass: ball mass (kg).
    """
    n = len(np.atleast_2d(positions))
    if n < 1 or radius <= 0 or mass <= 0:
        raise ModelError(f"billiard_balls: need >= 1 ball, radius > 0 m and mass > 0 kg; got {n}, {radius}, {mass}")
    model = pin.Model()
    model.gravity = pin.Motion.Zero()
    gm = pin.GeometryModel()
    tiny = pin.Inertia(0.0, np.zeros(3), np.zeros((3, 3)))
    for i in range(n):
        jx = model.addJoint(0, pin.JointModelPX(), pin.SE3.Identity(), f"ball{i}_x")
        model.appendBodyToJoint(jx, tiny, pin.SE3.Identity())
        jy = model.addJoint(jx, pin.JointModelPY(), pin.SE3.Identity(), f"ball{i}_y")
        model.appendBodyToJoint(jy, pin.Inertia(mass, np.zeros(3), 0.4 * mass * radius ** 2 * np.eye(3)),
                                pin.SE3.Identity())
        f = model.addBodyFrame(f"ball{i}", jy, pin.SE3.Identity(), 0)
        g = pin.GeometryObject(f"ball{i}", jy, f, pin.SE3.Identity(), coal.Sphere(radius))
        g.meshColor = np.array(_COLORS[0] if i == 0 else _COLORS[1 + (i - 1) % (len(_COLORS) - 1)])
        gm.addGeometryObject(g)
    return Mechanism(model, gm, gm.copy(), name=name, actuated=[])


def lattice_rack(rows: int = 5, angle: float = 60.0, radius: float = RADIUS, gap: float = 0.0,
                 apex: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """Centres (n, 2) of a rack of ``rows`` rows on a rhombic lattice (m).

    The apex ball is at ``apex``; the lattice directions are at ``+-angle/2`` from +x, so ball
    (i, j) (row i, j = 0..i) sits at ``apex + (i - j) a + j b``, ``a``, ``b`` unit vectors times
    the spacing ``2 radius + gap``. ``angle = 60`` is the triangle rack (neighbours in a row touch
    too); ``angle = 90`` a diamond of a square lattice (a row's balls do not touch).
    """
    if rows < 1 or not 0.0 < angle < 180.0 or gap < 0:
        raise ModelError(f"lattice_rack: need rows >= 1, 0 < angle < 180 deg, gap >= 0; got {rows}, {angle}, {gap}")
    s = 2 * radius + gap
    h = math.radians(angle) / 2
    a = s * np.array([math.cos(h), math.sin(h)])
    b = s * np.array([math.cos(h), -math.sin(h)])
    pts = [np.asarray(apex, float) + (i - j) * a + j * b for i in range(rows) for j in range(i + 1)]
    return np.array(pts)


def triangle_rack(rows: int = 5, radius: float = RADIUS, gap: float = 0.0, apex=(0.0, 0.0)) -> np.ndarray:
    """The triangle rack (10 balls for 4 rows, 15 for 5), apex at ``apex``, rows along +x (m)."""
    return lattice_rack(rows, 60.0, radius, gap, apex)


def break_shot(rows: int = 5, angle: float = 60.0, speed: float = 10.0, offset: float = 0.0,
               radius: float = RADIUS, mass: float = MASS, gap: float = 0.0,
               cue_distance: float = 0.0) -> BuiltMechanism:
    """The break: the cue ball ``ball0`` moving +x at ``speed`` (m/s) onto a rack's apex ball.

    Args:
        rows, angle, gap: the rack (:func:`lattice_rack`), apex at the origin.
        speed: cue ball speed (m/s).
        offset: the cue ball's lateral offset (m, +y) from the apex's line; the cue ball touches
            the apex (|offset| < 2 radius) when ``cue_distance`` is 0.
        cue_distance: the cue ball's gap (m) to the apex ball along x (0: touching, the impact
            is at t = 0).
    ``info``: ``balls`` (names, cue first), ``positions`` (n, 2), ``radius``, ``mass``.
    """
    if abs(offset) >= 2 * radius:
        raise ModelError(f"break_shot: |offset| must be below the ball diameter {2 * radius} m, got {offset}")
    rack = lattice_rack(rows, angle, radius, gap)
    cue = np.array([-math.sqrt((2 * radius) ** 2 - offset ** 2) - cue_distance, offset])
    pos = np.vstack([cue, rack])
    mech = billiard_balls(pos, radius, mass)
    v0 = np.zeros(mech.nv)
    v0[0] = speed
    info = {"balls": [f"ball{i}" for i in range(len(pos))], "positions": pos, "radius": radius, "mass": mass,
            "restitution": 1.0}
    q0 = pos.ravel().copy()
    mech.set_state(q0, v0)
    return BuiltMechanism(mech, q0, v0, info)
