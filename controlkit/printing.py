"""Readable printout of the active equation set (the thesis' Fig. 4.4).

Grouped per body (its motion equations: the rows of ``M a + h = S^T tau + J^T lam``
that belong to the joint carrying it) and per hinge (tree hinges are satisfied by
construction of the generalized coordinates; loop closures, welds, locks and
contact hinges contribute acceleration equations), then the control equations,
assignments, costs, regularizations and inequalities by name.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from .equations import EquationSet

_KIND = {
    "JointModelSpherical": "ball-and-socket", "JointModelSphericalZYX": "ball-and-socket",
    "JointModelFreeFlyer": "free", "JointModelPlanar": "planar", "JointModelTranslation": "translation",
    "JointModelUniversal": "universal",
}


def _joint_kind(jm) -> str:
    name = jm.shortname()
    if name in _KIND:
        return _KIND[name]
    if "Prismatic" in name:
        return "prismatic"
    if "Revolute" in name or name.startswith("JointModelR"):
        return "pin"
    return name.replace("JointModel", "").lower()


def format_equations(mech, eqs: EquationSet | None = None) -> str:
    """The equation set of a mechanism as text, grouped per body and per hinge.

    Args:
        mech: the mechanism.
        eqs: the control statements (optional).
    """
    m = mech.model
    cons = list(mech.constraints.values())
    lines = [f"EQUATIONS OF {mech.name.upper()}", "", "BODIES (motion equations)"]
    bodies_by_joint: dict[int, list[str]] = {}
    for f in m.frames:
        if f.type == pin.FrameType.BODY and f.parentJoint > 0:
            bodies_by_joint.setdefault(f.parentJoint, []).append(f.name)
    act = set(mech.actuated_joints)
    for f in m.frames:
        if f.type == pin.FrameType.BODY and f.parentJoint == 0 and f.name != "universe":
            lines.append(f"  Body {f.name}  [fixed in the world: no motion equations]")
    for j in range(1, m.njoints):
        jm, jname = m.joints[j], m.names[j]
        vs = f"a[{jm.idx_v}:{jm.idx_v + jm.nv}]"
        forces = []
        if jname in act:
            forces.append(f"tau_{jname}")
        for c in cons:
            J = c.jacobian()[:, jm.idx_v:jm.idx_v + jm.nv]
            if np.abs(J).max(initial=0.0) > 0:
                forces.append(f"J_{c.name}^T lam_{c.name}")
        rhs = " + ".join(forces) if forces else "0"
        for body in bodies_by_joint.get(j, [f"(joint {jname})"]):
            lines.append(f"  Body {body}  [hinge {jname}, {jm.nv} dof, {vs}]")
            lines.append(f"    M[{jname},:] a + h[{jname}] = {rhs}")
    lines += ["", "HINGES"]
    for j in range(1, m.njoints):
        jm, jname = m.joints[j], m.names[j]
        parent = m.names[m.parents[j]]
        lines.append(f"  Hinge {jname} ({_joint_kind(jm)}, {parent} -> {jname}): "
                     f"tree hinge, held by the generalized coordinates ({jm.nv} dof"
                     f"{', actuated' if jname in act else ''})")
    for c in cons:
        lines.append(f"  Hinge {c.name} ({c.describe()}): {c.size} rows "
                     f"[{', '.join(c.row_labels())}]")
        lines.append(f"    J_{c.name} a + Jdot_{c.name} v = -(kv J_{c.name} v + kp phi_{c.name})")
    if eqs is not None and not eqs.is_empty():
        for title, d in (("CONTROL EQUATIONS", eqs.equations), ("ASSIGNMENTS", eqs.assignments),
                         ("COSTS", eqs.costs), ("REGULARIZATIONS (where the costs leave freedom)", eqs.regularizations),
                         ("INEQUALITIES", eqs.inequalities)):
            if d:
                lines += ["", title]
                lines += [f"  {name}: {stmt.describe()}" for name, stmt in d.items()]
    return "\n".join(lines)
