"""Spring-damper hinges (thesis 4.3: "a hinge representing a simple spring imposes
f_hinge = k (c1 - c2)"): force elements between two bodies or on one joint.

- :class:`SpringDamper` — linear: between two frame points (or a frame point and a fixed
  world point), force ``k (L - L0) + c dL/dt`` along the line joining them (N);
- :class:`TorsionSpring` — torsional: on a one-degree-of-freedom joint, torque
  ``-k (q - q0) - c dq/dt`` (N m, or N for a prismatic joint).

Each element gives its generalized force (nv,) at the mechanism's state;
:func:`add_springs` adds the elements' sum to the simulator's external force (keeping any
external force already there), so they enter the motion equations of every derivative
evaluation like gravity does.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from controlkit.errors import ModelError

__all__ = ["SpringDamper", "TorsionSpring", "add_springs"]


class SpringDamper:
    """A linear spring-damper between two points.

    Args:
        mech: the mechanism.
        frame_a: frame (body or feature) whose origin is the first end.
        frame_b: the second end's frame, or None for the fixed world point ``anchor``.
        stiffness: k (N/m); damping: c (N s/m); rest_length: L0 (m).
        anchor: world point (3,) m, when ``frame_b`` is None.
    """

    def __init__(self, mech, frame_a: str, frame_b: str | None = None, *, stiffness: float,
                 damping: float = 0.0, rest_length: float = 0.0, anchor: Sequence[float] | None = None):
        if stiffness < 0 or damping < 0 or rest_length < 0:
            raise ModelError(f"spring {frame_a!r}-{frame_b or 'world'}: stiffness (N/m), damping (N s/m) and rest"
                             f" length (m) must be non-negative, got {stiffness}, {damping}, {rest_length}")
        if frame_b is None and anchor is None:
            raise ModelError(f"spring on {frame_a!r}: give frame_b or a world anchor point (m)")
        self.fa = mech.frame_id(frame_a)
        self.fb = None if frame_b is None else mech.frame_id(frame_b)
        self.anchor = None if anchor is None else np.asarray(anchor, dtype=float).reshape(3)
        self.k, self.c, self.L0 = float(stiffness), float(damping), float(rest_length)
        self.name = f"spring {frame_a}-{frame_b or 'world'}"

    def _ends(self, mech):
        d = mech.kinematics()
        Ja = mech.frame_jacobian(self.fa).reshape(6, mech.nv)[:3]
        pa, va = d.oMf[self.fa].translation, Ja @ mech.v
        if self.fb is None:
            return pa, va, Ja, self.anchor, np.zeros(3), None
        Jb = mech.frame_jacobian(self.fb).reshape(6, mech.nv)[:3]
        return pa, va, Ja, d.oMf[self.fb].translation, Jb @ mech.v, Jb

    def force(self, mech) -> np.ndarray:
        """The force (3,) N the spring exerts on end a (world axes); -force acts on end b."""
        pa, va, _, pb, vb, _ = self._ends(mech)
        d, dd = pb - pa, vb - va
        if self.L0 == 0.0:  # a zero-length spring: the vector form, defined at d = 0 too
            return self.k * d + self.c * dd
        L = np.linalg.norm(d)
        if L < 1e-12:
            raise ModelError(f"{self.name}: both ends coincide; its direction is undefined (give rest_length=0)")
        u = d / L
        return (self.k * (L - self.L0) + self.c * (u @ dd)) * u

    def generalized_force(self, mech) -> np.ndarray:
        """Generalized force (nv,) N / N m at the mechanism's state."""
        f = self.force(mech)
        _, _, Ja, _, _, Jb = self._ends(mech)
        g = Ja.T @ f
        return g if Jb is None else g - Jb.T @ f

    def energy(self, mech) -> float:
        """Potential energy stored (J)."""
        pa, _, _, pb, _, _ = self._ends(mech)
        L = np.linalg.norm(pb - pa)
        return 0.5 * self.k * (L - self.L0) ** 2


class TorsionSpring:
    """A torsional (or, on a prismatic joint, linear) spring-damper on one joint.

    Args:
        mech: the mechanism; joint: a one-degree-of-freedom joint's name.
        stiffness: k (N m/rad, or N/m); damping: c (N m s/rad, or N s/m); rest: q0 (rad or m).
    """

    def __init__(self, mech, joint: str, *, stiffness: float, damping: float = 0.0, rest: float = 0.0):
        vs, qs = mech.joint_v_slice(joint), mech.joint_q_slice(joint)
        if vs.stop - vs.start != 1 or qs.stop - qs.start != 1:
            raise ModelError(f"torsion spring on {joint!r}: the joint needs one coordinate (a revolute or prismatic"
                             f" joint); it has {qs.stop - qs.start}")
        if stiffness < 0 or damping < 0:
            raise ModelError(f"torsion spring on {joint!r}: stiffness and damping must be non-negative")
        self.iq, self.iv = qs.start, vs.start
        self.k, self.c, self.rest = float(stiffness), float(damping), float(rest)
        self.name = f"torsion spring {joint}"

    def generalized_force(self, mech) -> np.ndarray:
        """Generalized force (nv,) at the mechanism's state."""
        g = np.zeros(mech.nv)
        g[self.iv] = -self.k * (mech.q[self.iq] - self.rest) - self.c * mech.v[self.iv]
        return g

    def energy(self, mech) -> float:
        """Potential energy stored (J)."""
        return 0.5 * self.k * (mech.q[self.iq] - self.rest) ** 2


def add_springs(sim, *elements) -> None:
    """Add spring-damper elements to a simulator: their forces join its external force.

    The simulator sets the state before calling the external force, so each element reads
    the state it is evaluated at.
    """
    previous = sim.external_force
    elements = list(elements)

    def force(t, mech):
        g = np.zeros(mech.nv) if previous is None else np.array(previous(t, mech), dtype=float)
        for e in elements:
            g += e.generalized_force(mech)
        return g

    sim.external_force = force
    sim.springs.extend(elements)
    sim.set_state()  # the accelerations at the current state change
