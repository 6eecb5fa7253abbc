"""Closed-loop linkage seeds: the four-bar (thesis Fig. 4.9, 4.10), the spherical loop (Fig. 4.5),
the critical form (Fig. 4.11) and a slider-crank closed through a prismatic hinge.

Every function returns a :class:`robots.builder.BuiltMechanism` (see :mod:`robots.seeds`).
Both lie in the x-z plane (z up, gravity -z); bars are cuboids along their local x
with features ``a`` (x = -L/2) and ``b`` (x = +L/2).
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from controlkit.errors import ModelError

from .builder import BuiltMechanism
from .definition import Body, Scene
from .hinges import Prismatic, Revolute, Spherical, _align_z
from .shapes import cuboid

__all__ = ["four_bar", "four_bar_free", "spherical_loop", "slider_crank", "critical_form"]

PLANAR_AXIS = np.array([0.0, -1.0, 0.0])


def _in_plane(phi: float) -> np.ndarray:
    """Rotation turning local x to (cos phi, 0, sin phi): phi counterclockwise in x-z (x right, z up)."""
    return pin.exp3(PLANAR_AXIS * phi)


def _bar(name: str, length: float, width: float, density: float, color) -> Body:
    return Body(
        name,
        cuboid(length, width, width),
        density=density,
        features={"a": (-length / 2, 0.0, 0.0), "b": (length / 2, 0.0, 0.0)},
        color=color,
    )


def _four_bar_points(ground: float, crank: float, coupler: float, rocker: float,
                     crank_angle: float) -> tuple[np.ndarray, ...]:
    """Hinge centres A, B, C, D (x, z in m) closing the loop at ``crank_angle`` (rad), elbow up."""
    for n, v in (("ground", ground), ("crank", crank), ("coupler", coupler), ("rocker", rocker)):
        if not (v > 0 and math.isfinite(v)):
            raise ModelError(f"four_bar: {n} length must be positive (m), got {v!r}")
    A = np.array([0.0, 0.0])
    D = np.array([ground, 0.0])
    B = A + crank * np.array([math.cos(crank_angle), math.sin(crank_angle)])
    d = np.linalg.norm(D - B)
    if d > coupler + rocker or d < abs(coupler - rocker) or d == 0:
        raise ModelError(
            f"four_bar: with crank angle {crank_angle} rad the coupler ({coupler} m) and rocker ({rocker} m)"
            f" cannot close the loop (B-D distance {d:.4g} m)"
        )
    # C on the circles |C - B| = coupler, |C - D| = rocker, on the left of B->D (above for the default)
    along = (coupler**2 - rocker**2 + d**2) / (2 * d)
    h = math.sqrt(max(coupler**2 - along**2, 0.0))
    e = (D - B) / d
    C = B + along * e + h * np.array([-e[1], e[0]])
    return A, B, C, D


def four_bar(
    ground: float = 1.0,
    crank: float = 0.4,
    coupler: float = 1.0,
    rocker: float = 0.8,
    crank_angle: float = math.pi / 3,
    *,
    width: float = 0.04,
    density: float = 2700.0,
    actuated: bool = False,
) -> BuiltMechanism:
    """A planar four-bar linkage of pin hinges, ground bar fixed (thesis Fig. 4.9).

    Args:
        ground, crank, coupler, rocker: bar lengths (m) between hinge centres.
        crank_angle: crank angle from the ground bar (rad, counterclockwise in x-z).
        width: bar cross-section side (m); density in kg/m^3.
        actuated: motorise ``hinge_1`` (ground-crank); all hinges are passive otherwise.

    The fixed ``ground`` bar runs from pivot A = (0, 0, 0) to D = (ground, 0, 0).
    Hinges (revolute, axes -y): ``hinge_1`` ground.a-crank.a, ``hinge_2``
    crank.b-coupler.a, ``hinge_3`` coupler.b-rocker.b, ``hinge_4`` ground.b-rocker.a.
    ``hinge_4`` closes the loop: it becomes a ``HingeConstraint`` (5 rows, the thesis'
    dependent pin-hinge equations). The declared pose solves the loop for the given
    crank angle (elbow-up branch: C above the line BD), so q0 satisfies the closure.
    ``info["points"]`` holds A, B, C, D (m).
    """
    A, B, C, D = _four_bar_points(ground, crank, coupler, rocker, crank_angle)
    ang = lambda p, q: math.atan2(q[1] - p[1], q[0] - p[0])  # noqa: E731
    phi_crank, phi_coupler, phi_rocker = ang(A, B), ang(B, C), ang(D, C)

    s = Scene("four_bar", self_collision=False)
    s.add(_bar("ground", ground, width, density, (0.3, 0.3, 0.3, 1.0)), pin.SE3(np.eye(3), np.array([ground / 2, 0, 0])), fixed=True)
    s.add(_bar("crank", crank, width, density, (0.8, 0.4, 0.3, 1.0)))
    s.add(_bar("coupler", coupler, width, density, (0.3, 0.6, 0.8, 1.0)))
    s.add(_bar("rocker", rocker, width, density, (0.4, 0.7, 0.4, 1.0)))
    s.join("ground", "a", "crank", "a", Revolute(PLANAR_AXIS, actuated=actuated), name="hinge_1", rotation=_in_plane(phi_crank))
    s.join("crank", "b", "coupler", "a", Revolute(PLANAR_AXIS, actuated=False), name="hinge_2", rotation=_in_plane(phi_coupler - phi_crank))
    # rocker runs from D (feature a) to C (feature b); the coupler meets it at C
    s.join("coupler", "b", "rocker", "b", Revolute(PLANAR_AXIS, actuated=False), name="hinge_3", rotation=_in_plane(phi_rocker - phi_coupler))
    s.join("ground", "b", "rocker", "a", Revolute(PLANAR_AXIS, actuated=False), name="hinge_4", rotation=_in_plane(phi_rocker))
    built = s.build(check_closure=1e-9)
    to3 = lambda p: np.array([p[0], 0.0, p[1]])  # noqa: E731
    built.info.update(points={"A": to3(A), "B": to3(B), "C": to3(C), "D": to3(D)}, loop_closure="hinge_4")
    return built


def critical_form(
    rod_length: float = 1.0,
    *,
    rod_width: float = 0.04,
    block_size: float = 0.2,
    density: float = 2700.0,
    height: float = 0.0,
) -> BuiltMechanism:
    """Thesis Fig. 4.11, a critical form: two collinear rods between two fixed blocks, spherical hinges.

    ``left`` and ``right`` blocks (cubes of ``block_size`` m) are fixed with their facing
    sides 2 * ``rod_length`` apart along x, at height ``height`` (m). ``rod_1`` and
    ``rod_2`` lie in a straight line between them. Hinges ``hinge_1``
    (left.joint - rod_1.a), ``hinge_2`` (rod_1.b - rod_2.a), ``hinge_3``
    (rod_2.b - right.joint), all spherical and passive; ``hinge_3`` closes the loop as a
    ``PointConstraint``. The configuration is rigid although the acceleration
    equations are only redundant (0 degrees of freedom at a singular point).
    """
    for n, v in (("rod_length", rod_length), ("rod_width", rod_width), ("block_size", block_size)):
        if not (v > 0 and math.isfinite(v)):
            raise ModelError(f"critical_form: {n} must be positive (m), got {v!r}")
    b = block_size
    s = Scene("critical_form", self_collision=False)
    left = Body("left", cuboid(b, b, b), density=density, features={"joint": (b / 2, 0, 0)}, color=(0.2, 0.2, 0.2, 1))
    right = Body("right", cuboid(b, b, b), density=density, features={"joint": (-b / 2, 0, 0)}, color=(0.2, 0.2, 0.2, 1))
    s.add(left, (-b / 2, 0.0, height), fixed=True)
    s.add(right, (2 * rod_length + b / 2, 0.0, height), fixed=True)
    s.add(_bar("rod_1", rod_length, rod_width, density, (0.8, 0.4, 0.3, 1.0)))
    s.add(_bar("rod_2", rod_length, rod_width, density, (0.3, 0.6, 0.8, 1.0)))
    s.join("left", "joint", "rod_1", "a", Spherical(actuated=False), name="hinge_1")
    s.join("rod_1", "b", "rod_2", "a", Spherical(actuated=False), name="hinge_2")
    s.join("rod_2", "b", "right", "joint", Spherical(actuated=False), name="hinge_3")
    return s.build(check_closure=1e-9)


def four_bar_free(
    ground: float = 1.0,
    crank: float = 0.4,
    coupler: float = 1.0,
    rocker: float = 0.4,
    crank_angle: float = math.pi / 3,
    *,
    width: float = 0.04,
    density: float = 2700.0,
) -> BuiltMechanism:
    """The four-bar as the thesis formulates it (Fig. 4.9, 4.10): free bars and four pin-hinge constraints.

    ``crank``, ``coupler`` and ``rocker`` are free bodies (6 coordinates each) placed as
    :func:`four_bar` places them; ``hinge_1`` .. ``hinge_4`` are
    :class:`controlkit.constraints.HingeConstraint` (5 rows each: 20 rows on 18 coordinates).
    Normally 17 rows are independent (1 degree of freedom); with the default parallelogram
    lengths at ``crank_angle = 0`` every bar lies on one line (the bifurcation position of Fig.
    4.10) and only 16 are.
    """
    points = _four_bar_points(ground, crank, coupler, rocker, crank_angle)  # (x, z) in the x-z plane
    P = {k: np.array([x, 0.0, z]) for k, (x, z) in zip("ABCD", points)}
    pin_frame = lambda x: pin.SE3(_align_z(PLANAR_AXIS), np.array([x, 0.0, 0.0]))  # noqa: E731
    s = Scene("four_bar_free", self_collision=False)
    bars = {"ground": ("A", "D"), "crank": ("A", "B"), "coupler": ("B", "C"), "rocker": ("D", "C")}
    for name, (p, q) in bars.items():
        L = float(np.linalg.norm(P[q] - P[p]))
        body = Body(name, cuboid(L, width, width), density=density,
                    features={"a": pin_frame(-L / 2), "b": pin_frame(L / 2)}, color=(0.5, 0.5, 0.6, 1.0))
        phi = math.atan2(P[q][2] - P[p][2], P[q][0] - P[p][0])
        s.add(body, pin.SE3(_in_plane(phi), (P[p] + P[q]) / 2), fixed=(name == "ground"))
    built = s.build()
    mech = built.mechanism
    from controlkit.constraints import HingeConstraint
    for name, a, b in (("hinge_1", "ground.a", "crank.a"), ("hinge_2", "crank.b", "coupler.a"),
                       ("hinge_3", "coupler.b", "rocker.b"), ("hinge_4", "ground.b", "rocker.a")):
        mech.add_constraint(HingeConstraint(name, a, b))
    mech.set_state(built.q0, built.v0)
    built.info.update(points=P)
    return built


def spherical_loop(link: float = 0.6, *, width: float = 0.04, density: float = 2700.0) -> BuiltMechanism:
    """Thesis Fig. 4.5 (first linkage): four links closed by four spherical hinges, one link fixed.

    A square of side ``link`` (m) in the x-z plane: ``base`` fixed along x, ``left`` and
    ``right`` standing up, ``top`` across; hinges ``hinge_1`` (base-left), ``hinge_2``
    (left-top), ``hinge_3`` (top-right), all tree joints, and ``hinge_4`` (right-base), the
    loop closure, a :class:`controlkit.constraints.PointConstraint` (3 independent rows): the
    reaction forces are determinate.
    """
    s = Scene("spherical_loop", self_collision=False)
    s.add(_bar("base", link, width, density, (0.3, 0.3, 0.3, 1.0)), pin.SE3(np.eye(3), np.array([link / 2, 0, 0])), fixed=True)
    for n in ("left", "top", "right"):
        s.add(_bar(n, link, width, density, (0.8, 0.4, 0.3, 1.0)))
    s.join("base", "a", "left", "a", Spherical(actuated=False), name="hinge_1", rotation=_in_plane(math.pi / 2))
    s.join("left", "b", "top", "a", Spherical(actuated=False), name="hinge_2", rotation=_in_plane(-math.pi / 2))
    s.join("top", "b", "right", "b", Spherical(actuated=False), name="hinge_3", rotation=_in_plane(math.pi / 2))
    s.join("base", "b", "right", "a", Spherical(actuated=False), name="hinge_4", rotation=_in_plane(math.pi / 2))
    return s.build(check_closure=1e-9)


def slider_crank(
    crank: float = 0.3,
    rod: float = 1.0,
    crank_angle: float = math.pi / 3,
    *,
    width: float = 0.04,
    block: float = 0.1,
    density: float = 2700.0,
) -> BuiltMechanism:
    """A slider-crank whose loop closes through a prismatic hinge (the block slides along x).

    ``ground`` (fixed, 2 m along x from the origin), ``crank`` (``hinge_1`` at the origin,
    ``crank_angle`` rad from x), ``rod`` (``hinge_2``), ``block`` (a cube of ``block`` m,
    ``hinge_3`` at its centre), all revolute about -y and passive; ``slide`` joins the ground
    to the block with a :class:`robots.hinges.Prismatic` along x: the cut join becomes a
    :class:`controlkit.closures.SliderConstraint`. One degree of freedom.
    """
    Bx, Bz = crank * math.cos(crank_angle), crank * math.sin(crank_angle)
    if abs(Bz) >= rod:
        raise ModelError(f"slider_crank: a rod of {rod} m cannot reach the slide from a crank end {Bz:.3g} m above it")
    Cx = Bx + math.sqrt(rod**2 - Bz**2)
    phi_rod = math.atan2(-Bz, Cx - Bx)
    s = Scene("slider_crank", self_collision=False)
    s.add(Body("ground", cuboid(2.0, width, width), density=density,
               features={"pivot": (-1.0, 0.0, 0.0), "slot": (Cx - 1.0, 0.0, 0.0)}, color=(0.3, 0.3, 0.3, 1.0)),
          pin.SE3(np.eye(3), np.array([1.0, 0.0, 0.0])), fixed=True)
    s.add(_bar("crank", crank, width, density, (0.8, 0.4, 0.3, 1.0)))
    s.add(_bar("rod", rod, width, density, (0.3, 0.6, 0.8, 1.0)))
    s.add(Body("block", cuboid(block, block, block), density=density, features={"pin": (0, 0, 0), "slide": (0, 0, 0)},
               color=(0.4, 0.7, 0.4, 1.0)))
    s.join("ground", "pivot", "crank", "a", Revolute(PLANAR_AXIS, actuated=False), name="hinge_1", rotation=_in_plane(crank_angle))
    s.join("crank", "b", "rod", "a", Revolute(PLANAR_AXIS, actuated=False), name="hinge_2", rotation=_in_plane(phi_rod - crank_angle))
    s.join("rod", "b", "block", "pin", Revolute(PLANAR_AXIS, actuated=False), name="hinge_3", rotation=_in_plane(-phi_rod))
    s.join("ground", "slot", "block", "slide", Prismatic((1.0, 0.0, 0.0), actuated=False), name="slide")
    return s.build(check_closure=1e-9)
