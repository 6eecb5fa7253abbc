"""Compile a :class:`robots.definition.Scene` into a Pinocchio model and a Mechanism.

The scene's bodies and joins form a graph. Joins are taken in declaration order
(a nested composite's joins before those of the composite containing it), with all
fixed components connected through the world: a join between two bodies that are
already connected is **cut** (the thesis' "joining two components that are already
connected"). The remaining joins form spanning trees, grown depth first (joins in
declaration order, so each branch's joints are contiguous in q) from every fixed
component (its root body welded to the world, i.e. attached to Pinocchio's
universe), then from every placed free component (a free-flyer root joint, named
``{component}_root`` unless ``Scene.add(joint_name=...)``). A cut join becomes a loop-closure constraint between two OP_FRAMEs
``{hinge}.parent`` and ``{hinge}.child`` that coincide in the declared pose (z axis
along the hinge axis):

- spherical -> :class:`controlkit.constraints.PointConstraint`,
- revolute -> :class:`controlkit.constraints.HingeConstraint`,
- weld -> :class:`controlkit.constraints.WeldConstraint`,
- prismatic -> :class:`controlkit.closures.SliderConstraint`,
- cylindrical -> :class:`controlkit.closures.CylinderConstraint`,
- universal -> :class:`controlkit.closures.UniversalConstraint`,
- free -> nothing (a free hinge constrains nothing).

The Pinocchio model has one BODY frame per body (its dotted path, inertia in the
frame), one OP_FRAME per feature (``body.feature``), one joint (and JOINT frame) per
tree hinge named after the hinge; welded bodies share their parent's joint. Bodies
fixed to the world keep their inertia in their frame only (the universe carries no
dynamics). The collision and visual ``GeometryModel`` hold one object per body,
named after the body; visual objects carry the body colour. Collision pairs are
generated between every two bodies on different joints except bodies joined by a
hinge and bodies inside a common composite declared with ``self_collision=False``.

q0 is the declared pose: every hinge at zero (identity), free roots at their
placement, overridden by ``initial`` hinge values. v0 is zero except the declared
root velocities. By default q0 must close every loop closure to :data:`CLOSURE_TOLERANCE`
(an impossible closure is refused at build, naming it and its gap);
``check_closure=False`` builds an open pose anyway.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import pinocchio as pin

from controlkit.closures import CylinderConstraint, SliderConstraint, UniversalConstraint
from controlkit.constraints import HingeConstraint, PointConstraint, WeldConstraint
from controlkit.errors import ModelError, UnknownNameError
from controlkit.mechanism import Mechanism

from .definition import Body, Scene, resolve_feature
from .hinges import Cylindrical, Free, Prismatic, Revolute, Spherical, Universal, Weld

__all__ = ["BuiltMechanism", "build_scene"]


@dataclass
class BuiltMechanism:
    """A built model: the mechanism, its initial configuration and velocity.

    ``mechanism`` is already in state ``(q0, v0)``. Iterating yields
    ``(mechanism, q0)``, so ``mech, q0 = robots.four_bar()`` works.
    ``info`` carries model-specific data (e.g. friction coefficients, tips).
    """

    mechanism: Mechanism
    q0: np.ndarray
    v0: np.ndarray
    info: dict = field(default_factory=dict)

    def __iter__(self):
        yield self.mechanism
        yield self.q0

    def loop_closure_errors(self, q: np.ndarray | None = None) -> dict[str, float]:
        """Norm of each model constraint's position error at ``q`` (default q0), m/rad."""
        mech = self.mechanism
        saved_q, saved_v = mech.q, mech.v
        mech.set_state(self.q0 if q is None else q)
        try:
            return {n: float(np.linalg.norm(c.error())) for n, c in mech.constraints.items()}
        finally:
            mech.set_state(saved_q, saved_v)


@dataclass
class _FlatBody:
    path: str
    body: Body
    no_self_collision: frozenset  # composite paths with self_collision=False containing the body


@dataclass
class _FlatJoin:
    name: str
    where: str
    parent: str
    parent_feature: str
    pf: pin.SE3
    child: str
    child_feature: str
    cf: pin.SE3
    hinge: object
    R0: pin.SE3


@dataclass
class _Node:
    joint: int
    frame: int
    jMb: pin.SE3
    oMb: pin.SE3
    reached_by: str


def _flatten(component, prefix: str, groups: frozenset, bodies: dict, joins: list) -> None:
    if isinstance(component, Body):
        bodies[prefix + component.name] = _FlatBody(prefix + component.name, component, groups)
        return
    inner = "" if isinstance(component, Scene) else prefix + component.name + "."
    g = groups if component.self_collision else groups | {inner or component.name}
    for c in component.components.values():
        _flatten(c, inner, g, bodies, joins)
    where = f"{component.kind} {component.name!r}"
    for j in component.joins:
        pb, pf = resolve_feature(component.components[j.parent], j.parent_feature)
        cb, cf = resolve_feature(component.components[j.child], j.child_feature)
        joins.append(
            _FlatJoin(
                inner + j.name, where, inner + pb, j.parent_feature.rpartition(".")[2], pf,
                inner + cb, j.child_feature.rpartition(".")[2], cf, j.hinge, pin.SE3(j.rotation, np.zeros(3)),
            )
        )


def _root_body(component, prefix: str = "") -> str:
    if isinstance(component, Body):
        return prefix + component.name
    return prefix + component.name + "." + component.root_body()


class _Builder:
    def __init__(self, scene: Scene):
        self.scene = scene
        self.model = pin.Model()
        self.model.name = scene.name
        self.model.gravity = pin.Motion(np.concatenate([scene.gravity, np.zeros(3)]))
        self.collision = pin.GeometryModel()
        self.visual = pin.GeometryModel()
        self.bodies: dict[str, _FlatBody] = {}
        self.joins: list[_FlatJoin] = []
        _flatten(scene, "", frozenset(), self.bodies, self.joins)
        self.nodes: dict[str, _Node] = {}
        self.used: set[int] = set()
        self.cuts: list[int] = self._find_cuts()
        self.adj: dict[str, list[int]] = {p: [] for p in self.bodies}
        for k, j in enumerate(self.joins):
            if k not in self.cuts:
                self.adj[j.parent].append(k)
                self.adj[j.child].append(k)
        self.tree_joins: dict[str, tuple[_FlatJoin, bool, int]] = {}  # name -> (join, reversed, joint id)
        self.roots: list[tuple[int, pin.SE3, np.ndarray | None]] = []  # free roots: joint id, placement, velocity
        self.frame_owner: dict[str, str] = {}

    def _find_cuts(self) -> list[int]:
        parent = {p: p for p in self.bodies}
        parent[None] = None  # the world

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for pl in self.scene.placements.values():
            if pl.fixed:
                parent[find(_root_body(self.scene.components[pl.name]))] = None
        cuts = []
        for k, j in enumerate(self.joins):
            a, b = find(j.parent), find(j.child)
            if a == b:
                cuts.append(k)
            elif a is None:
                parent[b] = None
            else:
                parent[a] = b
        return cuts

    # --------------------------------------------------------------- frames
    def _add_frame(self, frame: pin.Frame, what: str, append_inertia: bool = False) -> int:
        if frame.name in self.frame_owner:
            raise ModelError(
                f"duplicate name {frame.name!r} in scene {self.scene.name!r}: used by {self.frame_owner[frame.name]} and by {what}"
            )
        self.frame_owner[frame.name] = what
        return self.model.addFrame(frame, append_inertia)

    def _add_body(self, path: str, joint: int, parent_frame: int, jMb: pin.SE3, oMb: pin.SE3, reached_by: str) -> None:
        fb = self.bodies[path]
        body = fb.body
        inertia = body.inertia.copy()
        fid = self._add_frame(
            pin.Frame(path, joint, parent_frame, jMb, pin.FrameType.BODY, inertia), f"body {path!r}", append_inertia=joint != 0
        )
        for fname, M in body.features.items():
            self._add_frame(pin.Frame(f"{path}.{fname}", joint, fid, jMb * M, pin.FrameType.OP_FRAME), f"feature {fname!r} of body {path!r}")
        shape = body.shape
        cgeom = body.collision_geometry if body.collision_geometry is not None else shape.geometry()
        cplace = body.collision_placement if body.collision_geometry is not None else shape.geometry_placement()
        self.collision.addGeometryObject(pin.GeometryObject(path, joint, fid, jMb * cplace, cgeom))
        vis = pin.GeometryObject(path, joint, fid, jMb * shape.geometry_placement(), shape.geometry())
        vis.meshColor = body.color.copy()
        vis.overrideMaterial = True
        self.visual.addGeometryObject(vis)
        self.nodes[path] = _Node(joint, fid, jMb, oMb, reached_by)

    # ----------------------------------------------------------------- tree
    def _grow(self, start: str) -> None:
        """Depth first along the tree joins, in declaration order (each branch's joints contiguous)."""
        stack = [iter(self.adj[start])]
        at = [start]
        while stack:
            k = next(stack[-1], None)
            if k is None:
                stack.pop()
                at.pop()
                continue
            if k in self.used:
                continue
            self.used.add(k)
            u, j = at[-1], self.joins[k]
            other = j.child if j.parent == u else j.parent
            if other in self.nodes:  # a placed free root reached through a hinge: reported by grow_all
                continue
            self._attach(j, reversed_=(j.child == u))
            stack.append(iter(self.adj[other]))
            at.append(other)

    def _attach(self, j: _FlatJoin, reversed_: bool) -> None:
        h = j.hinge
        known, new = (j.child, j.parent) if reversed_ else (j.parent, j.child)
        n = self.nodes[known]
        if reversed_:
            near, far = j.cf * j.R0.inverse(), j.pf.inverse()  # known-body side, new-body side
        else:
            near, far = j.pf, j.R0 * j.cf.inverse()
        oMb = n.oMb * near * far
        reached = f"hinge {j.name!r} ({j.where})"
        if isinstance(h, Weld):
            self._add_body(new, n.joint, n.frame, n.jMb * near * far, oMb, reached)
            return
        A = pin.SE3(h.alignment(), np.zeros(3))
        jm = h.joint_model(reversed_)
        if j.name in self.frame_owner:
            raise ModelError(f"duplicate name {j.name!r} in scene {self.scene.name!r}: used by {self.frame_owner[j.name]} and by {reached}")
        jid = self.model.addJoint(n.joint, jm, n.jMb * near * A, j.name)
        jf = self._add_joint_frame(jid, n.frame, reached)
        self.tree_joins[j.name] = (j, reversed_, jid)
        self._add_body(new, jid, jf, A.inverse() * far, oMb, reached)

    def _add_joint_frame(self, jid: int, parent_frame: int, what: str) -> int:
        name = self.model.names[jid]
        self.frame_owner[name] = f"joint {name!r} of {what}"
        return self.model.addJointFrame(jid, parent_frame)

    def _root(self, pl, path: str) -> None:
        if pl.fixed:
            self._add_body(path, 0, 0, pl.placement, pl.placement, f"fixed placement of {pl.name!r}")
            return
        jname = pl.joint_name or f"{pl.name}_root"
        if jname in self.frame_owner:
            raise ModelError(f"duplicate name {jname!r} in scene {self.scene.name!r}: used by {self.frame_owner[jname]} and by the root joint of {pl.name!r}")
        jid = self.model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), jname)
        jf = self._add_joint_frame(jid, 0, f"free placement of {pl.name!r}")
        self._add_body(path, jid, jf, pin.SE3.Identity(), pl.placement, f"free placement of {pl.name!r}")
        self.roots.append((jid, pl.placement, pl.velocity))

    def grow_all(self) -> None:
        placed = list(self.scene.placements.values())
        fixed = [pl for pl in placed if pl.fixed]
        free = [pl for pl in placed if not pl.fixed]
        for pl in fixed:
            self._root(pl, _root_body(self.scene.components[pl.name]))
        for pl in fixed:
            self._grow(_root_body(self.scene.components[pl.name]))
        for pl in free:
            path = _root_body(self.scene.components[pl.name])
            if path in self.nodes:
                raise ModelError(
                    f"scene {self.scene.name!r}: component {pl.name!r} is placed in the world but {self.nodes[path].reached_by}"
                    f" already places it; remove its placement or that hinge"
                )
            self._root(pl, path)
            self._grow(path)
        missing = [p for p in self.bodies if p not in self.nodes]
        if missing:
            raise ModelError(
                f"scene {self.scene.name!r}: bodies {missing} are neither placed in the world nor joined to a placed"
                f" component; give their component a placement in Scene.add or join it"
            )

    # ---------------------------------------------------------- loop closures
    def closures(self) -> list:
        out = []
        for k in self.cuts:
            j = self.joins[k]
            h = j.hinge
            if isinstance(h, Free):
                continue
            np_, nc = self.nodes[j.parent], self.nodes[j.child]
            if np_.joint == nc.joint:
                raise ModelError(
                    f"hinge {j.name!r} ({j.where}) closes a loop between {j.parent!r} and {j.child!r}, which are rigidly"
                    f" attached to each other (or both fixed to the world)"
                )
            A = pin.SE3(h.alignment(), np.zeros(3))
            fa, fb = f"{j.name}.parent", f"{j.name}.child"
            self._add_frame(pin.Frame(fa, np_.joint, np_.frame, np_.jMb * j.pf * A, pin.FrameType.OP_FRAME), f"loop closure {j.name!r}")
            self._add_frame(
                pin.Frame(fb, nc.joint, nc.frame, nc.jMb * j.cf * j.R0.inverse() * A, pin.FrameType.OP_FRAME),
                f"loop closure {j.name!r}",
            )
            if isinstance(h, Universal):
                out.append(UniversalConstraint(j.name, fa, fb, h.axis1, h.axis2))
                continue
            cls = {Spherical: PointConstraint, Revolute: HingeConstraint, Weld: WeldConstraint,
                   Prismatic: SliderConstraint, Cylindrical: CylinderConstraint}[type(h)]
            out.append(cls(j.name, fa, fb))
        return out

    # -------------------------------------------------------- collision pairs
    def collision_pairs(self) -> None:
        joined = {frozenset((j.parent, j.child)) for j in self.joins}
        objs = self.collision.geometryObjects
        for a in range(len(objs)):
            for b in range(a + 1, len(objs)):
                pa, pb = objs[a].name, objs[b].name
                if objs[a].parentJoint == objs[b].parentJoint or frozenset((pa, pb)) in joined:
                    continue
                if self.bodies[pa].no_self_collision & self.bodies[pb].no_self_collision:
                    continue
                self.collision.addCollisionPair(pin.CollisionPair(a, b))

    # ------------------------------------------------------------ q0 and v0
    def initial_state(self, initial: Mapping[str, object] | None) -> tuple[np.ndarray, np.ndarray]:
        m = self.model
        q0 = pin.neutral(m)
        v0 = np.zeros(m.nv)
        for jid, M, vel in self.roots:
            jm = m.joints[jid]
            q0[jm.idx_q : jm.idx_q + 7] = pin.SE3ToXYZQUAT(M)
            if vel is not None:
                R = M.rotation
                v0[jm.idx_v : jm.idx_v + 6] = np.concatenate([R.T @ vel[:3], R.T @ vel[3:]])
        cut_names = {self.joins[k].name for k in self.cuts}
        for name, value in (initial or {}).items():
            if name not in self.tree_joins:
                if name in cut_names:
                    raise ModelError(f"initial value for hinge {name!r}: it closes a loop and has no coordinate of its own")
                raise UnknownNameError("hinge", name, self.tree_joins, f"scene {self.scene.name!r}")
            j, rev, jid = self.tree_joins[name]
            jm = m.joints[jid]
            q0[jm.idx_q : jm.idx_q + jm.nq] = j.hinge.coordinates(value, rev)
        return q0, v0

    def actuated(self) -> list[str]:
        names = [(jid, n) for n, (j, _, jid) in self.tree_joins.items() if j.hinge.actuated and j.hinge.nv > 0]
        return [n for _, n in sorted(names)]

    def materials(self) -> dict[str, str]:
        return {p: b.body.material for p, b in self.bodies.items() if b.body.material is not None}


CLOSURE_TOLERANCE = 1e-6  # m, rad: a loop closure's largest error at q0 that building accepts by default


def build_scene(scene: Scene, initial: Mapping[str, object] | None = None,
                check_closure: float | bool | None = True) -> BuiltMechanism:
    """Compile a scene (see the module docstring); returns a :class:`BuiltMechanism`.

    ``check_closure``: True (default) checks the loop closures at q0 against
    :data:`CLOSURE_TOLERANCE`, a number against that tolerance (m, rad); False or None does not check.
    """
    if not isinstance(scene, Scene):
        raise ModelError(f"build_scene expects a robots.definition.Scene, got {type(scene).__name__}")
    if not scene.components:
        raise ModelError(f"scene {scene.name!r} has no components")
    b = _Builder(scene)
    b.grow_all()
    constraints = b.closures()
    b.collision_pairs()
    q0, v0 = b.initial_state(initial)
    mech = Mechanism(
        b.model, b.collision, b.visual, name=scene.name, actuated=b.actuated(), constraints=constraints, materials=b.materials()
    )
    mech.set_state(q0, v0)
    built = BuiltMechanism(mech, q0, v0)
    if check_closure is not None and check_closure is not False:
        tol = CLOSURE_TOLERANCE if check_closure is True else check_closure
        try:
            tol = float(tol)
        except (TypeError, ValueError):
            tol = math.nan
        if not tol >= 0.0:
            raise ModelError(f"scene {scene.name!r}: check_closure must be True, False or a tolerance >= 0 (m, rad),"
                             f" got {check_closure!r}")
        bad = {n: e for n, e in built.loop_closure_errors().items() if not e <= tol}
        if bad:
            gaps = "; ".join(f"{n!r} ({mech.constraints[n].describe()}) is open by {e:.4g}" for n, e in bad.items())
            raise ModelError(
                f"scene {scene.name!r}: the declared pose does not satisfy loop closures: {gaps} (m or rad; tolerance"
                f" {tol:g}). Check the join's features, rotations and the initial hinge values; a closure that"
                f" cannot close is impossible. Scene.build(check_closure=False) builds it anyway"
            )
    return built
