"""Coulomb's law, in one object: :class:`FrictionLaw`.

Every Coulomb computation of the contact layer (:mod:`sim.contact`) and of the whole-body
controller's feet (:class:`controllers.whole_body.FootContact`) goes through it: the coefficients of a pair of
geometries (per pair of materials), the static test (the slip guard and the friction pass), the
kinetic friction's direction at each sliding point and its force rows, the impact's friction cone,
and the friction pyramids (the controlled hinges' and the whole-body controller's).
"""
from __future__ import annotations

import itertools
import math
from typing import Mapping

import numpy as np

from controlkit.errors import ControlkitError

#: m/s: a support point slower than this (relative to the other body) takes the contact's
#: sliding direction for its friction; a faster one its own (see FrictionLaw.slide_directions)
POINT_SLIDE_SPEED = 1e-6
#: dimensionless: the friction pass's relative band on the static test: a sticking contact whose
#: friction is within this fraction of ``mu_s f_n`` below the cone slides (the slip guard fires at
#: the cone; the band keeps a handled slip event from repeating on round-off)
STATIC_BAND = 1e-9
#: N: the same test's absolute band (a contact with no load slides on any friction above it)
STATIC_FLOOR = 1e-12
#: dimensionless: an impact's tangential impulse may exceed ``mu_s`` times its normal impulse by
#: this fraction (round-off of the impact solve) before it counts as outside the cone
CONE_BAND = 1e-9
#: N s: the cone test's absolute band (an impulse of no normal impulse at all)
CONE_FLOOR = 1e-12
#: dimensionless: mu_kinetic may exceed mu_static by round-off (a pair given as two equal floats)
MU_SLACK = 1e-12
#: default ``(mu_static, mu_kinetic)`` of pairs a table does not name
DEFAULT_MU = (0.5, 0.4)


class FrictionLaw:
    """Coulomb's law: static and kinetic coefficients (dimensionless) per pair of materials, and
    the law's tests, directions and rows.

    Args:
        default: ``(mu_static, mu_kinetic)`` for pairs not in the table.
        pairs: ``{(material_a, material_b): (mu_static, mu_kinetic)}`` (order-free).
        materials: geometry name -> material name (usually ``mech.materials``).

    Calling it with two geometry names gives their ``(mu_static, mu_kinetic)``. The other methods
    take the pair's coefficients as arguments (a hinge keeps its own).
    """

    def __init__(self, default=DEFAULT_MU, pairs: Mapping | None = None, materials: Mapping[str, str] | None = None):
        self.default = _check_mu(default, "default")
        self.pairs = {frozenset(k): _check_mu(m, f"{k}") for k, m in (pairs or {}).items()}
        self.materials = dict(materials or {})

    # ----------------------------------------------------------- coefficients
    def __call__(self, geom_a: str, geom_b: str) -> tuple[float, float]:
        """``(mu_static, mu_kinetic)`` of two geometries (by their materials; order-free)."""
        key = frozenset((self.materials.get(geom_a, geom_a), self.materials.get(geom_b, geom_b)))
        return self.pairs.get(key, self.default)

    coefficients = __call__

    @classmethod
    def make(cls, spec, materials: Mapping[str, str] | None = None) -> "FrictionLaw":
        """From ``(mu_s, mu_k)``, one mu for both, 0 (frictionless), a dict with an optional
        ``"default"`` entry, or a law (given materials fill in a law that has none)."""
        if isinstance(spec, FrictionLaw):
            if materials and not spec.materials:
                spec.materials = dict(materials)
            return spec
        if spec is None:
            return cls(materials=materials)
        if isinstance(spec, Mapping):
            spec = dict(spec)
            default = spec.pop("default", DEFAULT_MU)
            return cls(default, spec, materials)
        return cls(spec, materials=materials)

    # ------------------------------------------------------------ static law
    @staticmethod
    def static_margin(mu_s: float, fn: list[float], ft: np.ndarray) -> float:
        """``mu_s sum(fn) - |ft|`` (N): how far a sticking contact's friction ``ft`` (2,) (N) lies
        inside Coulomb's cone over its normal forces ``fn`` (N, a list of floats); the slip guard
        (it slides at <= 0)."""
        return mu_s * sum(fn) - math.hypot(*ft.tolist())

    @staticmethod
    def slips(mu_s: float, fn: np.ndarray, ft: np.ndarray) -> bool:
        """Whether a sticking contact slides: the static test of :meth:`static_margin` at
        ``<= 0`` within a band of round-off (``STATIC_BAND``, ``STATIC_FLOOR``), so the friction
        pass, run where the slip guard fired, does not see the contact stick again."""
        return bool(np.linalg.norm(ft) >= mu_s * fn.sum() * (1 - STATIC_BAND) - STATIC_FLOOR)

    # ----------------------------------------------------------- kinetic law
    @staticmethod
    def slide_directions(dv: np.ndarray, k: np.ndarray, u: np.ndarray) -> np.ndarray:
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

    @staticmethod
    def kinetic_rows(J: np.ndarray, D: np.ndarray, mu_k: float) -> np.ndarray:
        """Force rows (m, nv) of sliding points: a normal force lam along the normal rows J (m, nv)
        carries the kinetic friction ``-mu_k lam u``, D (m, nv) the rows of the relative velocity
        along each point's sliding direction u."""
        return J - mu_k * D

    @staticmethod
    def kinetic_force(fn: np.ndarray, directions: np.ndarray, mu_k: float) -> np.ndarray:
        """The kinetic friction (N, world (3,)) of sliding points with normal forces ``fn`` (k,) N
        along their sliding directions (k, 3), or all along one direction (3,): ``-mu_k sum fn_i u_i``."""
        if directions.ndim == 1:
            return -mu_k * fn.sum() * directions
        return -mu_k * (fn @ directions)

    @staticmethod
    def slip_direction(friction: np.ndarray) -> np.ndarray:
        """The sliding direction (unit, world) of a contact that starts to slide under the static
        friction force ``friction`` (N, world (3,)): against it."""
        f = -friction
        return f / np.linalg.norm(f)

    # ---------------------------------------------------------------- impacts
    @staticmethod
    def outside_cone(pt: np.ndarray, pn: float, mu_s: float) -> bool:
        """Whether a tangential impulse ``pt`` (N s) leaves the friction cone of the normal impulse
        ``pn`` (N s), beyond round-off (``CONE_BAND``, ``CONE_FLOOR``)."""
        return bool(np.linalg.norm(pt) > mu_s * pn * (1 + CONE_BAND) + CONE_FLOOR)

    # --------------------------------------------------------------- pyramids
    @staticmethod
    def pyramid_rows(normal: np.ndarray, tangents: np.ndarray, mu: float) -> np.ndarray:
        """Rows R (4, 3) with ``R f <= 0`` for a contact force f (N, world (3,)) inside the friction
        pyramid ``|f . t_i| <= mu / sqrt(2) (f . n)`` (the square pyramid inscribed in Coulomb's
        cone of coefficient mu; normal n (3,), tangents t_i (2, 3), orthonormal): ``+t1, +t2, -t1,
        -t2``, each minus ``mu / sqrt(2) n``. The whole-body controller's pyramid on a planted foot."""
        m = mu / math.sqrt(2.0)
        T = np.asarray(tangents, dtype=float)
        n = np.asarray(normal, dtype=float)
        return np.vstack([T - m * n, -T - m * n])

    @staticmethod
    def multiplier_pyramid(k: int, nt: int, size: int, mu_s: float) -> np.ndarray:
        """Rows C (2^nt, size) with ``C lam <= 0``: ``+-f_t1 +- f_t2 <= mu_s sum(lam_n)``, the pyramid
        inscribed in Coulomb's cone on a hinge's multipliers ``lam`` (its k normal forces first, then
        its nt held tangential forces, N; ``size`` in all)."""
        rows = []
        for signs in itertools.product((1.0, -1.0), repeat=nt):
            row = np.zeros(size)
            row[:k] = -mu_s
            row[k:k + nt] = signs
            rows.append(row[None])
        return np.vstack(rows)


#: the name the coefficients' table is known by in scripts and tests
FrictionTable = FrictionLaw


def _check_mu(m, what: str) -> tuple[float, float]:
    """A friction spec as ``(mu_static, mu_kinetic)``, checked (ControlkitError naming ``what``)."""
    try:
        if isinstance(m, (str, bytes)):
            raise TypeError
        ms, mk = (float(m), float(m)) if np.isscalar(m) else (float(m[0]), float(m[1]))
    except (TypeError, ValueError, IndexError):
        raise ControlkitError(f"friction {what}: expected a number mu or a pair (mu_static, mu_kinetic), "
                              f"got {m!r}") from None
    if not (np.isfinite(ms) and np.isfinite(mk)) or ms < 0 or mk < 0 or mk > ms + MU_SLACK:
        raise ControlkitError(f"friction {what}: need finite 0 <= mu_kinetic <= mu_static, got ({ms}, {mk})")
    return ms, mk
