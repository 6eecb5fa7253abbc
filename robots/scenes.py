"""Impact and contact scenes: free bodies with coal geometry, and grounds.

Every function returns a :class:`robots.builder.BuiltMechanism` (see :mod:`robots.seeds`).
Free bodies get a free-flyer root joint named ``{body}_root``. A ground is a fixed
body whose top surface is at z = 0: a thin box for display and, for collision,
either a ``coal.Halfspace`` (infinite) or the box itself (a finite table).

Scenes without a ground (Newton's cradle, three spheres) have zero gravity by
default, as in seed 001's one-dimensional impact examples.
Material tags (``Mechanism.materials``) name the materials; the coefficients the
papers use are in ``info`` (``restitution``, ``mu_static``, ``mu_kinetic``).
"""
from __future__ import annotations

import itertools
import math
from typing import Sequence

import coal
import numpy as np
import pinocchio as pin

from controlkit.errors import ModelError

from .builder import BuiltMechanism
from .definition import Body, Composite, Scene
from .hinges import Weld
from .shapes import cuboid, sphere

__all__ = [
    "ground_body",
    "newtons_cradle",
    "three_spheres",
    "ball_on_ground",
    "box_on_ground",
    "box_on_slope",
    "brick_stack",
    "friction_block",
    "block_on_block",
    "ball_on_slope",
    "free_bodies",
    "sphere_column",
    "box_row",
    "plank_on_blocks",
    "plank_leaning",
    "stool",
]

_GROUND = (0.5, 0.55, 0.5, 1.0)


def ground_body(
    name: str = "ground",
    size: Sequence[float] = (10.0, 10.0),
    thickness: float = 0.1,
    *,
    halfspace: bool = True,
    material: str = "ground",
    tilt: np.ndarray | None = None,
) -> tuple[Body, pin.SE3]:
    """A ground body and its world placement (top surface through the origin, normal +z).

    Args:
        size: displayed (and, without ``halfspace``, colliding) extent in x and y (m).
        thickness: box thickness (m); the box lies below the surface.
        halfspace: collide as a ``coal.Halfspace`` (infinite) instead of the box.
        tilt: optional 3x3 rotation of the ground about the origin (a slope).
    """
    box = cuboid(size[0], size[1], thickness)
    cg = coal.Halfspace(np.array([0.0, 0.0, 1.0]), thickness / 2) if halfspace else None
    body = Body(name, box, density=1000.0, color=_GROUND, material=material, collision_geometry=cg,
                features={"surface": (0.0, 0.0, thickness / 2)})
    R = np.eye(3) if tilt is None else np.asarray(tilt, dtype=float)
    return body, pin.SE3(R, R @ np.array([0.0, 0.0, -thickness / 2]))


def _ball(name: str, radius: float, mass: float, color, material: str = "steel") -> Body:
    return Body(name, sphere(radius), mass=mass, color=color, material=material)


def newtons_cradle(
    n: int = 5,
    radius: float = 0.05,
    mass: float = 0.2,
    *,
    speed: float = 1.0,
    gap: float | None = None,
    gravity: Sequence[float] = (0.0, 0.0, 0.0),
) -> BuiltMechanism:
    """Newton's cradle: ``n`` balls in a row along x (seed 001), the first one striking.

    Args:
        n: number of balls ``ball_1`` .. ``ball_n`` (>= 2).
        radius: ball radius (m); mass: ball mass (kg).
        speed: initial +x speed of ``ball_1`` (m/s); the others are at rest.
        gap: distance (m) between ``ball_1`` and ``ball_2`` surfaces (default radius/2);
            ``ball_2`` .. ``ball_n`` touch each other, ``ball_2`` at the origin; centres on the x axis.
        gravity: m/s^2 (default none: the balls float, as a 1-D impact test).

    ``info["restitution"] = 1.0`` (elastic, as in the paper).
    """
    if int(n) != n or n < 2:
        raise ModelError(f"newtons_cradle: n must be an integer >= 2, got {n!r}")
    gap = radius / 2 if gap is None else gap
    if gap < 0:
        raise ModelError(f"newtons_cradle: gap must be >= 0 m, got {gap!r}")
    s = Scene("newtons_cradle", gravity=gravity)
    colors = itertools.cycle([(0.75, 0.75, 0.8, 1.0), (0.6, 0.6, 0.7, 1.0)])
    for i in range(1, int(n) + 1):
        x = -2 * radius - gap if i == 1 else 2 * radius * (i - 2)
        vel = (speed, 0, 0, 0, 0, 0) if i == 1 else None
        s.add(_ball(f"ball_{i}", radius, mass, next(colors)), (x, 0.0, 0.0), velocity=vel)
    built = s.build()
    built.info.update(restitution=1.0, balls=[f"ball_{i}" for i in range(1, int(n) + 1)])
    return built


def three_spheres(
    radius: float = 0.05,
    mass: float = 1.0,
    *,
    speed: float = 1.0,
    gap: float | None = None,
    angle: float = 0.0,
    gravity: Sequence[float] = (0.0, 0.0, 0.0),
) -> BuiltMechanism:
    """Seed 001 Fig. 2a: spheres ``B`` and ``C`` touching, sphere ``A`` striking ``B``.

    Names ``sphere_a``, ``sphere_b``, ``sphere_c``. ``B`` is at the origin, ``A`` at
    distance ``2 radius + gap`` on -x moving +x at ``speed`` (m/s); ``C`` touches ``B``
    in the x-y plane at ``angle`` (rad) from +x (0: all three collinear).
    Zero gravity by default. ``info["restitution"] = 1.0``.
    """
    gap = radius / 2 if gap is None else gap
    s = Scene("three_spheres", gravity=gravity)
    s.add(_ball("sphere_a", radius, mass, (0.85, 0.3, 0.3, 1.0)), (-2 * radius - gap, 0.0, 0.0), velocity=(speed, 0, 0, 0, 0, 0))
    s.add(_ball("sphere_b", radius, mass, (0.3, 0.6, 0.85, 1.0)), (0.0, 0.0, 0.0))
    s.add(_ball("sphere_c", radius, mass, (0.3, 0.75, 0.4, 1.0)), (2 * radius * math.cos(angle), 2 * radius * math.sin(angle), 0.0))
    built = s.build()
    built.info.update(restitution=1.0)
    return built


def ball_on_ground(radius: float = 0.1, height: float = 1.0, mass: float = 1.0, *, velocity: Sequence[float] | None = None) -> BuiltMechanism:
    """A ``ball`` (radius m, mass kg) with its centre at ``height`` (m) above a half-space ``ground``.

    ``velocity``: optional initial (vx, vy, vz, wx, wy, wz), world axes (m/s, rad/s).
    """
    if height < radius:
        raise ModelError(f"ball_on_ground: height {height} m puts the ball (radius {radius} m) into the ground")
    s = Scene("ball_on_ground")
    g, gp = ground_body()
    s.add(g, gp, fixed=True)
    s.add(_ball("ball", radius, mass, (0.85, 0.35, 0.3, 1.0), material="rubber"), (0.0, 0.0, height), velocity=velocity)
    return s.build()


def _lowest_corner(size: Sequence[float], R: np.ndarray) -> float:
    corners = np.array(list(itertools.product(*[(-d / 2, d / 2) for d in size])))
    return float(np.min(corners @ R.T[:, 2]))


def box_on_ground(
    size: Sequence[float] = (0.2, 0.2, 0.2),
    mass: float = 1.0,
    *,
    height: float = 0.0,
    rpy: Sequence[float] = (0.0, 0.0, 0.0),
    velocity: Sequence[float] | None = None,
) -> BuiltMechanism:
    """A ``box`` (size m, mass kg) whose lowest corner is ``height`` (m) above a half-space ``ground``.

    ``rpy`` orients the box (rad); with the default it rests flat on the ground (q0 in contact).
    """
    R = pin.rpy.rpyToMatrix(*np.asarray(rpy, dtype=float))
    s = Scene("box_on_ground")
    g, gp = ground_body()
    s.add(g, gp, fixed=True)
    z = height - _lowest_corner(size, R)
    s.add(Body("box", cuboid(*size), mass=mass, color=(0.8, 0.6, 0.3, 1.0), material="wood"), pin.SE3(R, np.array([0.0, 0.0, z])), velocity=velocity)
    return s.build()


def _slope_rotation(name: str, angle: float) -> np.ndarray:
    """The rotation (3, 3) by ``angle`` (rad, in [0, pi/2); else a ModelError naming ``name``) about y:
    a slope downhill toward +x, R[:, 2] its normal."""
    if not (0.0 <= angle < math.pi / 2):
        raise ModelError(f"{name}: angle must be in [0, pi/2) rad, got {angle!r}")
    return pin.exp3(np.array([0.0, angle, 0.0]))


def _slope_scene(name: str, angle: float) -> tuple[Scene, np.ndarray]:
    """A scene ``name`` holding a ``slope``: a half-space through the origin inclined by ``angle``
    (rad, in [0, pi/2)) about y, downhill toward +x; and its rotation R (3, 3) (R[:, 2] its normal)."""
    R = _slope_rotation(name, angle)
    s = Scene(name)
    g, gp = ground_body("slope", tilt=R)
    s.add(g, gp, fixed=True)
    return s, R


def box_on_slope(
    angle: float = 0.3,
    size: Sequence[float] = (0.2, 0.2, 0.1),
    mass: float = 1.0,
    *,
    mu_static: float = 0.5,
    mu_kinetic: float = 0.4,
) -> BuiltMechanism:
    """A ``box`` resting on a ``slope`` inclined by ``angle`` (rad) about y, downhill toward +x.

    The slope is a half-space through the origin with normal (sin a, 0, cos a); the box
    (size m, mass kg) rests on it centred over the origin, its faces parallel to the
    slope. ``info``: ``angle``, ``normal``, ``downhill`` (unit vectors), ``mu_static``,
    ``mu_kinetic`` (the box slides if tan(angle) > mu_static).
    """
    s, R = _slope_scene("box_on_slope", angle)
    s.add(Body("box", cuboid(*size), mass=mass, color=(0.8, 0.6, 0.3, 1.0), material="wood"), pin.SE3(R, R @ np.array([0, 0, size[2] / 2])))
    built = s.build()
    built.info.update(angle=angle, normal=R[:, 2].copy(), downhill=R[:, 0].copy(), mu_static=mu_static, mu_kinetic=mu_kinetic)
    return built


def brick_stack(
    n: int = 3,
    size: Sequence[float] = (0.2, 0.1, 0.06),
    density: float = 1900.0,
    *,
    offset: float = 0.35,
    table_size: Sequence[float] = (1.0, 0.6),
) -> BuiltMechanism:
    """Thesis Fig. 5.7: ``n`` bricks stacked on a table, at rest but unstable.

    Bricks ``brick_1`` (bottom) .. ``brick_n`` of ``size`` (m) and ``density`` (kg/m^3);
    each is shifted by ``offset`` brick lengths along +x over the one below, so with
    the defaults the top two overhang the bottom brick (their common COM lies
    0.525 lengths from its centre) and the stack tips. The ``table`` is a finite fixed
    box (top at z = 0, centred at the origin) so contact regions are polygons.
    """
    if int(n) != n or n < 1:
        raise ModelError(f"brick_stack: n must be a positive integer, got {n!r}")
    L, W, Hb = size
    s = Scene("brick_stack")
    t, tp = ground_body("table", table_size, 0.05, halfspace=False, material="wood")
    s.add(t, tp, fixed=True)
    colors = itertools.cycle([(0.7, 0.3, 0.2, 1.0), (0.75, 0.4, 0.25, 1.0)])
    for i in range(int(n)):
        s.add(Body(f"brick_{i + 1}", cuboid(L, W, Hb), density=density, color=next(colors), material="brick"), (i * offset * L, 0.0, (i + 0.5) * Hb))
    built = s.build()
    built.info.update(bricks=[f"brick_{i + 1}" for i in range(int(n))])
    return built


def friction_block(
    mass: float = 48.0,
    size: Sequence[float] = (0.4, 0.4, 0.3),
    *,
    mu_static: float = 0.9,
    mu_kinetic: float = 0.6,
) -> BuiltMechanism:
    """Thesis Fig. 5.10: a 48 kg ``block`` resting on a ``table`` (half-space), to be pushed along +x.

    The thesis: static / kinetic friction .9 / .6, normal force m g = 470.88 N; after
    1 s a force growing exponentially pushes in x, the block starts sliding near 2.7 s,
    the force is constant from 3.25 s and removed at 3.75 s; the block stops near 5.6 s.
    ``info``: ``mu_static``, ``mu_kinetic``, ``push_direction`` (+x), ``push_point``
    (the feature ``block.center``).
    """
    s = Scene("friction_block")
    g, gp = ground_body("table", material="table")
    s.add(g, gp, fixed=True)
    s.add(Body("block", cuboid(*size), mass=mass, color=(0.6, 0.45, 0.3, 1.0), material="block"), (0.0, 0.0, size[2] / 2))
    built = s.build()
    built.info.update(mu_static=mu_static, mu_kinetic=mu_kinetic, push_direction=np.array([1.0, 0.0, 0.0]), push_point="block.center")
    return built



def block_on_block(
    speed: float = 1.2,
    small: Sequence[float] = (0.1, 0.1, 0.1),
    large: Sequence[float] = (0.6, 0.4, 0.2),
    mass: float = 1.0,
    *,
    mu_static: float = 0.3,
    mu_kinetic: float = 0.2,
) -> BuiltMechanism:
    """Thesis Fig. 5.6: a ``small`` block sliding along +x across a fixed ``large`` one, off its end.

    The large block (size m) is fixed with its top face at z = 0, centred at the origin; the
    small one (size m, mass kg) rests on it centred over the origin, moving at ``speed`` (m/s).
    With the defaults it slides (face contact), tips over the far edge (edge contact) and falls
    off (contact broken). ``info``: ``mu_static``, ``mu_kinetic``, ``edge_x`` (m, the far edge).
    """
    if not speed >= 0:
        raise ModelError(f"block_on_block: speed must be >= 0 m/s, got {speed!r}")
    s = Scene("block_on_block")
    t, tp = ground_body("large", large[:2], large[2], halfspace=False, material="wood")
    s.add(t, tp, fixed=True)
    s.add(Body("small", cuboid(*small), mass=mass, color=(0.8, 0.6, 0.3, 1.0), material="wood"),
          (0.0, 0.0, small[2] / 2), velocity=[float(speed), 0.0, 0.0, 0.0, 0.0, 0.0])
    built = s.build()
    built.info.update(mu_static=mu_static, mu_kinetic=mu_kinetic, edge_x=large[0] / 2)
    return built


def ball_on_slope(
    angle: float = 0.3,
    radius: float = 0.1,
    mass: float = 1.0,
) -> BuiltMechanism:
    """A ``ball`` (radius m, mass kg) resting on a ``slope`` inclined by ``angle`` (rad) about y.

    The slope is a half-space through the origin with normal (sin a, 0, cos a), downhill
    toward +x; the ball touches it above the origin, at rest. ``info``: ``angle``, ``normal``,
    ``downhill`` (unit vectors). A solid ball rolls without slipping, accelerating at
    5/7 g sin(a), while tan(a) <= 7/2 mu_static; it slides otherwise.
    """
    s, R = _slope_scene("ball_on_slope", angle)
    s.add(_ball("ball", radius, mass, (0.85, 0.35, 0.3, 1.0), material="rubber"), R @ np.array([0.0, 0.0, radius]))
    built = s.build()
    built.info.update(angle=angle, normal=R[:, 2].copy(), downhill=R[:, 0].copy())
    return built


def free_bodies(
    bodies: Sequence[dict],
    *,
    ground: bool = True,
    gravity: Sequence[float] = (0.0, 0.0, -9.81),
    name: str = "free_bodies",
) -> BuiltMechanism:
    """Boxes and balls, each on its own free-flyer, optionally over a half-space ``ground`` (top at z = 0).

    Args:
        bodies: one dict per body: ``name``; ``box`` (x, y, z sizes, m) or ``radius`` (m, a ball);
            ``mass`` (kg, default 1); ``position`` (m, world, of the centre); ``rpy`` (rad, default 0);
            ``velocity`` (vx, vy, vz, wx, wy, wz, world axes, m/s and rad/s; default at rest);
            ``material`` (default ``"wood"`` for boxes, ``"steel"`` for balls).
        ground: add the half-space ground.
        gravity: m/s^2.
    """
    s = Scene(name, gravity=gravity)
    if ground:
        g, gp = ground_body()
        s.add(g, gp, fixed=True)
    colors = itertools.cycle([(0.8, 0.6, 0.3, 1.0), (0.6, 0.45, 0.3, 1.0), (0.75, 0.75, 0.8, 1.0)])
    for spec in bodies:
        spec = dict(spec)
        bname = spec.pop("name")
        mass = float(spec.pop("mass", 1.0))
        pos = np.asarray(spec.pop("position"), dtype=float)
        R = pin.rpy.rpyToMatrix(*np.asarray(spec.pop("rpy", (0.0, 0.0, 0.0)), dtype=float))
        vel = spec.pop("velocity", None)
        if "radius" in spec:
            body = _ball(bname, float(spec.pop("radius")), mass, next(colors), material=spec.pop("material", "steel"))
        elif "box" in spec:
            body = Body(bname, cuboid(*spec.pop("box")), mass=mass, color=next(colors), material=spec.pop("material", "wood"))
        else:
            raise ModelError(f"free_bodies: body {bname!r} needs a 'box' size or a 'radius'")
        if spec:
            raise ModelError(f"free_bodies: body {bname!r}: unknown keys {sorted(spec)} (valid: name, box, radius, "
                             f"mass, position, rpy, velocity, material)")
        s.add(body, pin.SE3(R, pos), velocity=vel)
    return s.build()


def sphere_column(n: int = 12, radius: float = 0.05, mass: float = 0.5, *, drop: float = 0.01) -> BuiltMechanism:
    """``n`` balls ``ball_1`` (bottom) .. ``ball_n`` stacked touching on the z axis, the lowest
    ``drop`` (m) above a half-space ``ground``; radius m, mass kg each."""
    if int(n) != n or n < 1:
        raise ModelError(f"sphere_column: n must be a positive integer, got {n!r}")
    return free_bodies([dict(name=f"ball_{i + 1}", radius=radius, mass=mass,
                             position=(0.0, 0.0, drop + radius * (2 * i + 1))) for i in range(int(n))],
                       name="sphere_column")


def box_row(n: int = 12, size: Sequence[float] = (0.1, 0.1, 0.1), mass: float = 1.0, *, drop: float = 0.05,
            spacing: float = 0.02) -> BuiltMechanism:
    """``n`` boxes ``box_1`` .. ``box_n`` side by side along x, ``spacing`` (m) apart, their bottoms
    ``drop`` (m) above a half-space ``ground``; size m, mass kg each."""
    if int(n) != n or n < 1:
        raise ModelError(f"box_row: n must be a positive integer, got {n!r}")
    pitch = size[0] + spacing
    return free_bodies([dict(name=f"box_{i + 1}", box=size, mass=mass,
                             position=(pitch * (i - (n - 1) / 2), 0.0, drop + size[2] / 2)) for i in range(int(n))],
                       name="box_row")


def _block(name: str, size: Sequence[float], mass: float | None) -> tuple[Body, bool]:
    """A wooden box ``name`` of ``size`` (x, y, z; m) and whether it is fixed: fixed to the world
    (a ground body without a half-space) when ``mass`` is None, else a free body of ``mass`` kg."""
    if mass is None:
        return ground_body(name, size[:2], size[2], halfspace=False, material="wood")[0], True
    return Body(name, cuboid(*size), mass=mass, color=(0.55, 0.55, 0.6, 1.0), material="wood"), False


def plank_on_blocks(
    angle: float = 0.0,
    offset: float = 0.0,
    *,
    plank: Sequence[float] = (0.8, 0.1, 0.02),
    mass: float = 2.0,
    block: Sequence[float] = (0.2, 0.2, 0.1),
    span: float = 0.6,
    block_mass: float | None = None,
    right_first: bool = False,
) -> BuiltMechanism:
    """A ``plank`` laid flat across two blocks, ``left`` and ``right``.

    The blocks (``block`` m: x, y extent and height) have their top faces at z = 0, their centres
    ``span`` (m) apart along x; the plank (size m, mass kg) rests on both, its centre ``offset`` (m)
    along +x from the middle. With ``block_mass`` None the blocks are fixed to the world (one body
    resting on two contacts with the same body, in one plane); with a mass (kg) they are free bodies
    resting on a ``ground`` half-space at z = -block height (the plank's two contacts are with two
    different bodies). The whole scene is inclined by ``angle`` (rad, in [0, pi/2)) about y, downhill
    toward +x, as :func:`box_on_slope`. ``right_first``: add the right block first (the same scene,
    its bodies in another order). ``info``: ``angle``, ``normal``, ``downhill`` (unit vectors).
    """
    R = _slope_rotation("plank_on_blocks", angle)
    if not abs(offset) < (plank[0] - span + block[0]) / 2:  # (it overlaps both blocks' tops)
        raise ModelError(f"plank_on_blocks: a plank {plank[0]!r} m long at offset {offset!r} m does not rest on "
                         f"both blocks ({block[0]!r} m wide, {span!r} m apart)")
    if block_mass is not None and not block_mass > 0:
        raise ModelError(f"plank_on_blocks: block_mass must be a positive mass (kg) or None, got {block_mass!r}")
    s = Scene("plank_on_blocks")
    if block_mass is not None:
        g, _ = ground_body(tilt=R)
        s.add(g, pin.SE3(R, R @ np.array([0.0, 0.0, -0.05 - block[2]])), fixed=True)
    sides = (("left", -span / 2), ("right", span / 2))
    for name, x in sides[::-1] if right_first else sides:
        b, fixed = _block(name, block, block_mass)
        s.add(b, pin.SE3(R, R @ np.array([x, 0.0, -block[2] / 2])), fixed=fixed)
    s.add(Body("plank", cuboid(*plank), mass=mass, color=(0.8, 0.6, 0.3, 1.0), material="wood"),
          pin.SE3(R, R @ np.array([offset, 0.0, plank[2] / 2])))
    built = s.build()
    built.info.update(angle=angle, normal=R[:, 2].copy(), downhill=R[:, 0].copy())
    return built


def plank_leaning(
    height: float = 0.1,
    *,
    reach: float = 0.5,
    plank: Sequence[float] = (0.8, 0.1, 0.02),
    mass: float = 2.0,
    box_width: float = 0.2,
    box_yaw: float = 0.0,
    box_mass: float | None = None,
    speed: float = 0.0,
) -> BuiltMechanism:
    """A ``plank`` leaning from a half-space ``ground`` onto the top edge of a ``box``.

    The box (``box_width`` m square, ``height`` m tall, turned ``box_yaw`` rad about z) has the point
    of its top nearest the plank's foot at x = 0; the plank (size m, mass kg) has its lower bottom
    edge on the ground at x = -``reach`` (m) and its bottom face on that point: on the box's edge,
    or on its corner when the box is turned. With ``box_mass`` None the box is fixed to the world,
    else (kg) free on the ground. ``speed`` (m/s): the plank's initial velocity along its length,
    up the incline when positive. ``info``: ``angle`` (rad), ``up`` (unit vector along the plank).
    """
    if not (height > 0 and reach > 0 and box_width > 0):
        raise ModelError(f"plank_leaning: height, reach and box_width must be positive (m), got {height!r}, "
                         f"{reach!r}, {box_width!r}")
    if not plank[0] > math.hypot(height, reach):
        raise ModelError(f"plank_leaning: a plank {plank[0]!r} m long does not reach the box's edge "
                         f"{math.hypot(height, reach):.4g} m from its foot")
    if box_mass is not None and not box_mass > 0:
        raise ModelError(f"plank_leaning: box_mass must be a positive mass (kg) or None, got {box_mass!r}")
    angle = math.atan2(height, reach)
    up, normal = np.array([math.cos(angle), 0.0, math.sin(angle)]), np.array([-math.sin(angle), 0.0, math.cos(angle)])
    s = Scene("plank_leaning")
    g, gp = ground_body()
    s.add(g, gp, fixed=True)
    Rb = pin.rpy.rpyToMatrix(0.0, 0.0, box_yaw)
    near = max(-(Rb @ np.array([sx, sy, 0.0]))[0] for sx in (-1, 1) for sy in (-1, 1)) * box_width / 2
    b, fixed = _block("box", (box_width, box_width, height), box_mass)
    s.add(b, pin.SE3(Rb, np.array([near, 0.0, height / 2])), fixed=fixed)
    centre = np.array([-reach, 0.0, 0.0]) + plank[0] / 2 * up + plank[2] / 2 * normal
    s.add(Body("plank", cuboid(*plank), mass=mass, color=(0.8, 0.6, 0.3, 1.0), material="wood"),
          pin.SE3(pin.rpy.rpyToMatrix(0.0, -angle, 0.0), centre),
          velocity=tuple(speed * up) + (0.0, 0.0, 0.0) if speed else None)
    built = s.build()
    built.info.update(angle=angle, up=up)
    return built


def stool(
    seat: Sequence[float] = (0.4, 0.4, 0.04),
    leg: Sequence[float] = (0.04, 0.3),
    mass: float = 2.0,
    leg_mass: float = 0.3,
    *,
    height: float = 0.0,
    velocity: Sequence[float] | None = None,
) -> BuiltMechanism:
    """A ``stool`` on a half-space ``ground``: one rigid body with five collision boxes, a ``seat``
    (size m, mass kg) and four legs ``leg1`` .. ``leg4`` (square section ``leg[0]`` m, length
    ``leg[1]`` m, ``leg_mass`` kg each) welded under its corners; its feet ``height`` (m) above the
    ground, moving at ``velocity`` (vx, vy, vz, wx, wy, wz; m/s, rad/s). Bodies ``stool.seat``,
    ``stool.leg1`` ..; joint ``stool_root``.
    """
    w, length = leg
    inset = (np.asarray(seat[:2], dtype=float) - w) / 2
    c = Composite("stool", self_collision=False)
    corners = [(1, 1), (1, -1), (-1, 1), (-1, -1)]
    c.add(Body("seat", cuboid(*seat), mass=mass, color=(0.8, 0.6, 0.3, 1.0), material="wood",
               features={f"leg{i + 1}": (sx * inset[0], sy * inset[1], -seat[2] / 2) for i, (sx, sy) in enumerate(corners)}))
    for i in range(4):
        c.add(Body(f"leg{i + 1}", cuboid(w, w, length), mass=leg_mass, color=(0.7, 0.5, 0.25, 1.0), material="wood",
                   features={"top": (0.0, 0.0, length / 2)}))
        c.join("seat", f"leg{i + 1}", f"leg{i + 1}", "top", Weld())
    s = Scene("stool")
    g, gp = ground_body()
    s.add(g, gp, fixed=True)
    s.add(c, (0.0, 0.0, height + length + seat[2] / 2), velocity=velocity, joint_name="stool_root")
    return s.build()
