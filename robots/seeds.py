"""The seed models, in one place.

Convention: every seed function returns a :class:`robots.builder.BuiltMechanism`
with fields ``mechanism`` (a :class:`controlkit.mechanism.Mechanism`, already in state
``(q0, v0)``), ``q0`` (nq,), ``v0`` (nv,) and ``info`` (model-specific data: feature
names, coefficients). It unpacks as a pair: ``mech, q0 = robots.four_bar()``.
Loop closures are the mechanism's model constraints, satisfied at q0.

- thesis (1989): :func:`thesis_pendulum_scene`, :func:`thesis_pendulum` (Fig. 2.1-2.3),
  :func:`pendulum_chain`, :func:`four_bar` (Fig. 4.9), :func:`critical_form`
  (Fig. 4.11), :func:`brick_stack` (Fig. 5.7), :func:`friction_block` (Fig. 5.10),
  :func:`biped` (Fig. 6.3), :func:`redundant_arm` (Fig. 6.10);
- seed 001: :func:`newtons_cradle`, :func:`three_spheres` (Fig. 2a);
- seed 002: :func:`three_r_pendulum` (section 6);
- contact tests: :func:`ball_on_ground`, :func:`box_on_ground`, :func:`box_on_slope`.
"""
from .arm import redundant_arm
from .biped import biped
from .linkages import critical_form, four_bar
from .pendulums import THESIS_TO_WORLD, pendulum_chain, thesis_pendulum, thesis_pendulum_scene, three_r_pendulum
from .scenes import (
    ball_on_ground,
    box_on_ground,
    box_on_slope,
    brick_stack,
    friction_block,
    ground_body,
    newtons_cradle,
    three_spheres,
)

SEEDS = {
    "thesis_pendulum_scene": thesis_pendulum_scene,
    "thesis_pendulum": thesis_pendulum,
    "pendulum_chain": pendulum_chain,
    "four_bar": four_bar,
    "critical_form": critical_form,
    "three_r_pendulum": three_r_pendulum,
    "biped": biped,
    "redundant_arm": redundant_arm,
    "newtons_cradle": newtons_cradle,
    "three_spheres": three_spheres,
    "ball_on_ground": ball_on_ground,
    "box_on_ground": box_on_ground,
    "box_on_slope": box_on_slope,
    "brick_stack": brick_stack,
    "friction_block": friction_block,
}
"""Every seed builder by name (each callable with its defaults)."""

__all__ = list(SEEDS) + ["SEEDS", "THESIS_TO_WORLD", "ground_body"]
