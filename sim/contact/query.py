"""What touches what: the public query of the contact layer.

:func:`contacts_of` (``sim.contact.contacts_of(sim, body)``) lists, for each contact touching a
body, the other body, the region, the support points, the mode and the forces of the last solve.
Each :class:`~sim.contact.ContactSource` answers it for its own pairs
(:meth:`ContactSource.contacts_of`); a controller, which does not import ``sim``, asks the
simulator's event sources that have it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .geometry import Region
from .hinge import ContactHinge, Mode


@dataclass(frozen=True)
class ContactState:
    """One contact touching a body, at the last solve.

    Attributes:
        body, geom: the body's name (its joint's) and its geometry in this contact.
        other, other_geom: the other body's name (``"universe"`` for the fixed world) and geometry.
        region: the support's shape (:class:`~sim.contact.geometry.Region`: vertex, edge, face, point).
        mode: stick, slide or frictionless (:class:`~sim.contact.hinge.Mode`).
        points: the support points (k, 3) (m, world): the held ones, then those dependent on them.
        normal: the contact normal (3,) (world, unit), from the other body into this one.
        normal_forces: the normal force (N) at each support point (k,), as the solve distributes
            it: the held points carry it, the dependent ones 0 (any compressive redistribution over
            the support gives the same motion); a contact riding on another of the same two bodies
            in one plane (:meth:`~sim.contact.hinge_support.HingeSupport.ride`) has only dependent
            points, the other carrying its load. In a linked support (:mod:`sim.contact.linked`: a
            plank across two free blocks) every point's share of the least-squares spread of the
            support's load over all its points, on which its kinetic friction acts.
        force: the whole contact force on this body (3,) (N, world): normal forces and friction.
    """

    body: str
    geom: str
    other: str
    other_geom: str
    region: Region
    mode: Mode
    points: np.ndarray
    normal: np.ndarray
    normal_forces: np.ndarray
    force: np.ndarray

    @property
    def normal_force(self) -> float:
        """The total normal force (N) on the body."""
        return float(self.normal_forces.sum())


def friction_on_a(h: ContactHinge, fn: np.ndarray, ft: np.ndarray) -> np.ndarray:
    """The friction (N, world (3,)) on body A of a hinge whose normal forces are ``fn`` (k,) and
    held tangential forces ``ft`` (2,): the stick rows' force, or kinetic friction while sliding."""
    if h.mode == Mode.STICK:
        return h.tangent_world(ft)
    if h.mode == Mode.SLIDE:
        return h.sliding_friction(fn)
    return np.zeros(3)


def hinge_states(hinges, lam_of, model, body: str) -> list[ContactState]:
    """:class:`ContactState` of every hinge touching ``body`` (a geometry or a body name).

    Args:
        hinges: contact hinges; lam_of: ``lam_of(h)`` its multipliers at the last solve.
        model: the pinocchio model (for the bodies' names).
    """
    out = []
    for h in hinges:
        names = [model.names[j] for j in h.joints]
        side = next((i for i in (0, 1) if body in (h.geoms[i], names[i])), None)
        if side is None:
            continue
        sides = h.sides()
        A, B, n = sides[0]
        support = h.support()
        fn, ft = h.forces(lam_of(h))
        if h.group is not None:  # (its points' share of its linked support's load)
            fn = h.group.normal_forces(h.mech, lam_of, h)
        on_a = fn.sum() * n + friction_on_a(h, fn, ft)
        sign = 1.0 if side == 0 else -1.0
        forces = np.zeros(len(support))
        forces[:len(fn)] = fn
        out.append(ContactState(body=names[side], geom=h.geoms[side], other=names[1 - side],
                                other_geom=h.geoms[1 - side], region=h.region, mode=h.mode,
                                points=h.positions(support, sides), normal=sign * n, normal_forces=forces,
                                force=sign * on_a))
    return out


def contacts_of(sim, body: str) -> list[ContactState]:
    """The contacts touching ``body`` (a geometry name, or a body's: its joint's) in the simulator,
    from every contact source's hinges, with the forces of the simulator's last solve
    (:meth:`sim.simulator.Simulator.contacts_of`)."""
    return sim.contacts_of(body)


def pair_forces(hinges, lam_of, mech) -> dict[str, dict]:
    """Contact forces on A of every hinge at the last solve, by ``"geom_a/geom_b"``.

    Each entry: ``normal`` (N, total), ``friction`` (N, world vector: held by the sticking rows, or
    ``-mu_k f_n u`` while sliding), ``mode``, ``region``, ``points``. A hinge of a linked support
    reports its points' share of the support's spread load. ``lam_of(h)``: hinge h's multipliers.
    """
    out = {}
    for h in hinges:
        fn, ft = h.forces(lam_of(h))
        if h.group is not None:
            fn = h.group.normal_forces(mech, lam_of, h)
        out[h.label] = dict(normal=float(np.add.reduce(fn)), friction=friction_on_a(h, fn, ft), mode=h.mode,
                            region=h.region, points=len(h.support()))
    return out


class ContactForceProbe:
    """Contact force of one pair as a recordable quantity (``Simulator(record={...})``), N: (normal,
    friction x, y, z), zeros while apart. ``source``: its contact source (``pair_forces(sim)``)."""

    def __init__(self, source, sim, key: str):
        self.source, self.sim, self.key, self.name = source, sim, key, f"contact force {key}"

    def position(self, mech) -> np.ndarray:
        forces = self.source.pair_forces(self.sim)
        f = forces.get(self.key)
        if f is None:
            a, b = self.key.split("/")
            f = forces.get(f"{b}/{a}")
        return np.zeros(4) if f is None else np.concatenate([[f["normal"]], f["friction"]])
