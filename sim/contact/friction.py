"""Coulomb's law of the contact layer: the coefficients per pair of materials and each sliding
point's friction direction."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from controlkit.errors import ControlkitError


# ------------------------------------------------------------------ friction
class FrictionTable:
    """Static and kinetic Coulomb coefficients (dimensionless) per pair of materials.

    Args:
        default: ``(mu_static, mu_kinetic)`` for pairs not in the table.
        pairs: ``{(material_a, material_b): (mu_static, mu_kinetic)}`` (order-free).
        materials: geometry name -> material name (usually ``mech.materials``).
    """

    def __init__(self, default=(0.5, 0.4), pairs: Mapping | None = None, materials: Mapping[str, str] | None = None):
        self.default = _check_mu(default, "default")
        self.pairs = {frozenset(k): _check_mu(m, f"{k}") for k, m in (pairs or {}).items()}
        self.materials = dict(materials or {})

    def __call__(self, geom_a: str, geom_b: str) -> tuple[float, float]:
        key = frozenset((self.materials.get(geom_a, geom_a), self.materials.get(geom_b, geom_b)))
        return self.pairs.get(key, self.default)

    @classmethod
    def make(cls, spec, materials: Mapping[str, str] | None = None) -> "FrictionTable":
        """From ``(mu_s, mu_k)``, one mu for both, 0 (frictionless), a dict with an optional
        ``"default"`` entry, or a table."""
        if isinstance(spec, FrictionTable):
            if materials and not spec.materials:
                spec.materials = dict(materials)
            return spec
        if spec is None:
            return cls(materials=materials)
        if isinstance(spec, Mapping):
            spec = dict(spec)
            default = spec.pop("default", (0.5, 0.4))
            return cls(default, spec, materials)
        return cls(spec, materials=materials)


def _check_mu(m, what: str) -> tuple[float, float]:
    try:
        if isinstance(m, (str, bytes)):
            raise TypeError
        ms, mk = (float(m), float(m)) if np.isscalar(m) else (float(m[0]), float(m[1]))
    except (TypeError, ValueError, IndexError):
        raise ControlkitError(f"friction {what}: expected a number mu or a pair (mu_static, mu_kinetic), "
                              f"got {m!r}") from None
    if not (np.isfinite(ms) and np.isfinite(mk)) or ms < 0 or mk < 0 or mk > ms + 1e-12:
        raise ControlkitError(f"friction {what}: need finite 0 <= mu_kinetic <= mu_static, got ({ms}, {mk})")
    return ms, mk


#: m/s: a support point slower than this (relative to the other body) takes the contact's
#: sliding direction for its friction; a faster one its own (see _point_slide_directions)
POINT_SLIDE_SPEED = 1e-6


def _point_slide_directions(dv: np.ndarray, k: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Each sliding point's friction direction (k, 3), unit: its own tangential velocity relative
    to the other body (dv (k, 3), m/s, normal k).

    Coulomb's law holds at every point of a sliding contact, so a sole that slides and turns
    about its normal meets a friction moment too; one direction for the whole contact (its
    centroid's) would leave the turn free. A point at rest (the centre of a turn) has no direction
    of its own: blended with the contact's direction u over ``POINT_SLIDE_SPEED``, it takes u's.
    """
    dvt = dv - np.outer(dv.dot(k), k)
    d = dvt + POINT_SLIDE_SPEED * u
    return d / np.sqrt(np.einsum("ij,ij->i", d, d))[:, None]
