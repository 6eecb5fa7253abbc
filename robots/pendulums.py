"""Pendulum seed models: the thesis' example scene (Fig. 2.1-2.3), chains, the 3R pendulum.

Every function returns a :class:`robots.builder.BuiltMechanism` (see :mod:`robots.seeds`).

The thesis uses y up; we use z up (gravity -z). Thesis coordinates map to ours by
the rotation ``THESIS_TO_WORLD`` = +90 deg about x: ``(x, y, z)_thesis ->
(x, -z, y)``. Body definitions keep the thesis' local axes (a link's height runs
along its local y), so only the world placements are mapped; a link standing
upright in the thesis stands upright here.

Planar models (3R pendulum, chains) move in the x-z plane with hinge axes along
-y, so positive angles are counterclockwise seen with x to the right and z up.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pinocchio as pin

from controlkit.errors import ModelError

from .builder import BuiltMechanism
from .definition import Body, Composite, Scene, pose
from .hinges import Revolute, Spherical
from .shapes import cuboid, sphere

__all__ = [
    "THESIS_TO_WORLD",
    "thesis_link",
    "thesis_ball",
    "thesis_pendulum_composite",
    "thesis_pendulum_scene",
    "thesis_pendulum",
    "pendulum_chain",
    "three_r_pendulum",
    "free_link_chain",
]

THESIS_TO_WORLD = pin.SE3(pin.exp3(np.array([math.pi / 2, 0.0, 0.0])), np.zeros(3))
"""Placement mapping thesis coordinates (y up) to controlkit's (z up)."""

PLANAR_AXIS = (0.0, -1.0, 0.0)


def _thesis_pose(x: float, y: float, z: float, quat_wxyz: Sequence[float] = (1.0, 0.0, 0.0, 0.0)) -> pin.SE3:
    w, qx, qy, qz = quat_wxyz
    return THESIS_TO_WORLD * pin.SE3(pin.Quaternion(w, qx, qy, qz).normalized().matrix(), np.array([x, y, z], dtype=float))


def thesis_link(name: str, thickness: float, height: float, rho: float, color=(0.55, 0.6, 0.75, 1.0)) -> Body:
    """The thesis' primitive ``link(thickness, height, rho)``: cuboid (t, h, t), density rho (kg/m^3).

    Features (Fig. 2.2, local frame, height along y): ``topback (0, h/2, -t/2)``,
    ``botback (0, -h/2, -t/2)``, ``botoffmid (0, -h/2 - .75 t, 0)``.
    """
    t, h = thickness, height
    return Body(
        name,
        cuboid(t, h, t),
        density=rho,
        features={"topback": (0.0, h / 2, -t / 2), "botback": (0.0, -h / 2, -t / 2), "botoffmid": (0.0, -h / 2 - 0.75 * t, 0.0)},
        color=color,
    )


def thesis_ball(name: str, radius: float, rho: float, color=(0.85, 0.35, 0.3, 1.0)) -> Body:
    """The thesis' primitive ``ball(radius, rho)``: a sphere of density rho (kg/m^3)."""
    return Body(name, sphere(radius), density=rho, color=color)


def thesis_pendulum_composite(
    thickness: float = 1.0, link_height: float = 3.0, density: float = 1.0, *, actuated: bool = False, name: str = "pendulum"
) -> Composite:
    """The thesis' composite ``pendulum(thickness, linkheight, rho)`` of Fig. 2.2.

    Links ``l0`` (t x t x t) and ``l1``..``l3`` (t x linkheight x t), a ``ball`` of
    radius .75 t, ball-and-socket hinges ``j1``..``j3`` at ``botback``/``topback`` and
    ``j4`` at ``l3.botoffmid``/``ball.center``. The declared pose is Fig. 2.3's: ``l1``
    is turned +90 deg about the local z axis so the chain hangs out horizontally
    along +x from ``l0``. Collisions inside the pendulum are off (as in the thesis).
    """
    p = Composite(name, self_collision=False)
    p.add(thesis_link("l0", thickness, thickness, density))
    for i in (1, 2, 3):
        p.add(thesis_link(f"l{i}", thickness, link_height, density))
    p.add(thesis_ball("ball", 0.75 * thickness, density))
    quarter = pin.exp3(np.array([0.0, 0.0, math.pi / 2]))
    p.join("l0", "botback", "l1", "topback", Spherical(name="j1", actuated=actuated), rotation=quarter)
    p.join("l1", "botback", "l2", "topback", Spherical(name="j2", actuated=actuated))
    p.join("l2", "botback", "l3", "topback", Spherical(name="j3", actuated=actuated))
    p.join("l3", "botoffmid", "ball", "center", Spherical(name="j4", actuated=actuated))
    return p


def thesis_pendulum_scene(
    thickness: float = 1.0,
    link_height: float = 3.0,
    density: float = 1.0,
    *,
    block_x: float = -2.0,
    actuated: bool = False,
) -> BuiltMechanism:
    """The thesis' example scene ``test`` (Fig. 2.1-2.3): pendulum, tall block, ground.

    Thesis placements (y up), mapped by :data:`THESIS_TO_WORLD`:

    - ``pendulum.l0`` fixed at (0, 15, 0); the rest of the pendulum follows from the
      declared pose: ``l1``, ``l2``, ``l3`` at (1.5 | 4.5 | 7.5, 14.5, 0) and the ball at
      (9.75, 14.5, 0), all turned 90 deg about z (Fig. 2.3) -> world (x, 0, 14.5).
    - ``block`` = ``link(1.5, 7, 1)`` (a 1.5 x 7 x 1.5 cuboid), free, at thesis
      (block_x, 2.75, 0). The OCR garbles x (``--H2``); -2 puts the block just past
      the bottom of the swing, so the ball (hanging 9.75 below the pivot at x = 0)
      hits the block's face at x = block_x + .75 shortly after passing the bottom,
      about 1.5 s after release (Fig. 2.1). y = 2.75 stands it on the ground.
    - ``ground`` = ``link(20, .5, 1)`` (20 x .5 x 20), fixed at thesis (0, -1, 0):
      its top face (y = -.75) touches the block's bottom face. A finite box, so the
      block can slide off it as in the thesis.

    Info: ``restitution`` {("pendulum.ball", "block"): .7, ("block", "ground"): 0.0}.
    The pendulum's hinges are passive unless ``actuated``.
    """
    s = Scene("thesis_pendulum_scene")
    s.add(thesis_link("block", 1.5, 7.0, 1.0, color=(0.8, 0.7, 0.4, 1.0)), _thesis_pose(block_x, 2.75, 0.0))
    s.add(thesis_link("ground", 20.0, 0.5, 1.0, color=(0.45, 0.5, 0.45, 1.0)), _thesis_pose(0.0, -1.0, 0.0), fixed=True)
    s.add(thesis_pendulum_composite(thickness, link_height, density, actuated=actuated), _thesis_pose(0.0, 15.0, 0.0), fixed=True)
    built = s.build()
    built.info.update(
        restitution={("pendulum.ball", "block"): 0.7, ("block", "ground"): 0.0},
        thesis_to_world=THESIS_TO_WORLD,
        fixed=["ground", "pendulum.l0"],
    )
    return built


def thesis_pendulum(
    thickness: float = 1.0, link_height: float = 3.0, density: float = 1.0, *, actuated: bool = False
) -> BuiltMechanism:
    """The thesis pendulum alone (no block, no ground), ``l0`` fixed at world (0, 0, 15), released horizontal.

    Same model as in :func:`thesis_pendulum_scene`; for energy-conservation tests.
    """
    s = Scene("thesis_pendulum")
    s.add(thesis_pendulum_composite(thickness, link_height, density, actuated=actuated), _thesis_pose(0.0, 15.0, 0.0), fixed=True)
    built = s.build()
    built.info.update(thesis_to_world=THESIS_TO_WORLD, fixed=["pendulum.l0"])
    return built


def pendulum_chain(
    n_links: int = 5,
    length: float = 1.0,
    mass: float = 1.0,
    *,
    joint: str = "revolute",
    width: float = 0.05,
    pivot: Sequence[float] = (0.0, 0.0, 0.0),
    actuated: bool = False,
) -> BuiltMechanism:
    """A chain of ``n_links`` uniform bars hanging from a fixed ``anchor``, released horizontal.

    Args:
        n_links: number of links ``link_1`` .. ``link_n``.
        length: link length (m); links are ``length x width x width`` cuboids along x.
        mass: mass of each link (kg).
        joint: ``"revolute"`` (axes -y, the chain swings in the x-z plane) or
            ``"spherical"``; hinges ``joint_1`` .. ``joint_n``, passive unless ``actuated``.
        width: link cross-section side (m).
        pivot: world position of the first hinge (m).

    Declared pose (q0): every link along +x from the pivot (horizontal). Features
    ``link_i.start`` / ``link_i.end``; ``info["tip"] = "link_n.end"``.
    """
    if int(n_links) != n_links or n_links < 1:
        raise ModelError(f"pendulum_chain: n_links must be a positive integer, got {n_links!r}")
    if joint not in ("revolute", "spherical"):
        raise ModelError(f"pendulum_chain: joint must be 'revolute' or 'spherical', got {joint!r}")
    s = Scene("pendulum_chain", self_collision=False)
    s.add(Body("anchor", cuboid(width, width, width), mass=1.0, features={"pivot": (0, 0, 0)}, color=(0.3, 0.3, 0.3, 1)), pivot, fixed=True)
    parent, pfeat = "anchor", "pivot"
    for i in range(1, int(n_links) + 1):
        link = Body(f"link_{i}", cuboid(length, width, width), mass=mass, features={"start": (-length / 2, 0, 0), "end": (length / 2, 0, 0)})
        s.add(link)
        h = Revolute(PLANAR_AXIS, actuated=actuated) if joint == "revolute" else Spherical(actuated=actuated)
        s.join(parent, pfeat, link.name, "start", h, name=f"joint_{i}")
        parent, pfeat = link.name, "end"
    built = s.build()
    built.info.update(tip=f"link_{int(n_links)}.end")
    return built


def three_r_pendulum(
    q: Sequence[float] = (math.pi / 6, math.pi / 6, math.pi / 6),
    *,
    link_length: float = 1.0,
    section: float = 0.2,
    density: float = 2700.0,
    actuated: bool = False,
) -> BuiltMechanism:
    """The planar 3R pendulum of seed 002, section 6 (joint-locking example).

    Solid aluminium links (density 2700 kg/m^3), ``link_length`` 1 m, square section
    0.2 x 0.2 m: 108 kg each, principal inertias 0.72 (long axis) and 9.36 kg m^2 about
    the COM. Revolute hinges ``joint_1`` (fixed ``base`` to ``link_1``), ``joint_2``,
    ``joint_3`` at the link ends, axes parallel to -y (horizontal), passive unless
    ``actuated``. Links are cuboids along their local z; at q = 0 every link hangs
    straight down from the pivot at the world origin; ``q_i`` are relative angles
    (rad), positive counterclockwise in the x-z plane (x right, z up). q0 = ``q``,
    by default the paper's release configuration (pi/6, pi/6, pi/6).

    Features: ``link_i.proximal`` (joint i), ``link_i.distal``; ``info["tip"]``.
    """
    qv = np.asarray(q, dtype=float).reshape(-1)
    if qv.shape != (3,):
        raise ModelError(f"three_r_pendulum: q must be 3 angles (rad), got {q!r}")
    L, a = link_length, section
    s = Scene("three_r_pendulum", self_collision=False)
    s.add(Body("base", cuboid(a, a, a), mass=1.0, features={"pivot": (0, 0, 0)}, color=(0.3, 0.3, 0.3, 1)), (0, 0, 0), fixed=True)
    parent, pfeat = "base", "pivot"
    for i in (1, 2, 3):
        s.add(Body(f"link_{i}", cuboid(a, a, L), density=density, features={"proximal": (0, 0, L / 2), "distal": (0, 0, -L / 2)}))
        s.join(parent, pfeat, f"link_{i}", "proximal", Revolute(PLANAR_AXIS, actuated=actuated), name=f"joint_{i}")
        parent, pfeat = f"link_{i}", "distal"
    built = s.build(initial={f"joint_{i + 1}": qv[i] for i in range(3)})
    built.info.update(tip="link_3.distal", link_mass=density * a * a * L)
    return built


def free_link_chain(
    n: int = 4,
    link_length: float = 0.25,
    link_mass: float = 1.0,
    *,
    width: float = 0.03,
    top: Sequence[float] = (0.0, 0.0, 1.5),
) -> BuiltMechanism:
    """A chain hanging straight down from a fixed ceiling block, its links free bodies (thesis 4.3).

    Each link is a free body (a cuboid of ``width`` x ``width`` x ``link_length`` m, mass
    ``link_mass`` kg, features ``a`` at its top and ``b`` at its bottom) and every hinge is a
    :class:`controlkit.constraints.PointConstraint` whose reaction force the solve returns,
    as in the thesis' formulation: ``hinge_1`` joins ``ceiling.joint`` to ``link_1.a``,
    ``hinge_i`` joins ``link_{i-1}.b`` to ``link_i.a``. ``top`` (m) is the suspension point.
    """
    from controlkit.constraints import PointConstraint

    if n < 1 or not (link_length > 0 and link_mass > 0 and width > 0):
        raise ModelError(f"free_link_chain: need n >= 1 links of positive length (m), mass (kg) and width (m); got"
                         f" n={n!r}, {link_length!r}, {link_mass!r}, {width!r}")
    top = np.asarray(top, dtype=float)
    s = Scene("free_link_chain", self_collision=False)
    s.add(Body("ceiling", cuboid(0.1, 0.1, 0.05), density=1000.0, features={"joint": (0.0, 0.0, -0.025)}),
          pose(top + np.array([0.0, 0.0, 0.025])), fixed=True)
    for i in range(1, n + 1):
        link = Body(f"link_{i}", cuboid(width, width, link_length), mass=link_mass,
                    features={"a": (0.0, 0.0, link_length / 2), "b": (0.0, 0.0, -link_length / 2)})
        s.add(link, pose(top - np.array([0.0, 0.0, (i - 0.5) * link_length])))
    built = s.build()
    mech = built.mechanism
    mech.add_constraint(PointConstraint("hinge_1", "ceiling.joint", "link_1.a"))
    for i in range(2, n + 1):
        mech.add_constraint(PointConstraint(f"hinge_{i}", f"link_{i - 1}.b", f"link_{i}.a"))
    mech.set_state(built.q0, built.v0)
    built.info.update(links=[f"link_{i}" for i in range(1, n + 1)], hinges=[f"hinge_{i}" for i in range(1, n + 1)])
    return built
