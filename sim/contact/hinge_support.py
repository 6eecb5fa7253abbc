"""A contact hinge's support: its held, dependent and spare points, the hinges it rides on or
carries, the transitions that change them, and the support margin they give
(:class:`HingeSupport`, a part of :class:`sim.contact.hinge.ContactHinge`)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .geometry import Region, SupportPoint, _region
from .mode import Mode
from .support import _support_margin, affine_coordinates, least_squares_spread

if TYPE_CHECKING:
    from .hinge import ContactHinge

#: dimensionless: two unit normals whose dot product is within this of 1 are the same direction
PARALLEL_TOL = 1e-12
_STICK = Mode.STICK


class HingeSupport:
    """The support part of a contact hinge. Its state (set up by ``ContactHinge.__init__``):
    ``points`` (held: their normal rows are held), ``dependent`` (affine combinations of the held
    ones in the contact plane), ``candidates`` (the resting points of the contact region),
    ``spare`` (other vertices, watched for touching down), ``linked`` (points whose rows are
    combinations of held rows through other bodies: :class:`sim.contact.linked.LinkedSupport`),
    ``stick_keep`` (which stick rows are held), and ``carrier`` (the hinge it rides on, or None) and
    ``carried`` (the hinges riding on it); :meth:`ride` says what riding means."""

    def support(self) -> list[SupportPoint]:
        """Every support point: the held ones, the dependent ones, then the linked ones."""
        if self.linked:
            return self.points + self.dependent + self.linked
        return self.points + self.dependent

    def positions(self, pts: Sequence[SupportPoint], sides=None) -> np.ndarray:
        """World positions (k, 3) of support points (m), each on its owner."""
        sides = sides or self.sides()
        if not pts:
            return np.zeros((0, 3))
        return np.array([sides[p.owner][0].point(p.local_a) for p in pts])

    def support_margin(self, fn: np.ndarray, sides=None) -> float:
        """The largest smallest normal force (N) over the compressive distributions of the held
        points' forces ``fn`` (k,) on the whole support.

        The dependent points carry no rows: a force moved onto one of them is taken off the held
        points by its affine coefficients (the same resultant and moment). The margin is positive
        while the centre of pressure is strictly inside the support polygon and reaches zero where
        it leaves it; without dependent points it is ``min(fn)``. The points of the hinges it carries
        count as its dependent points; a hinge that rides on a carrier has the margin ``inf`` (its
        carrier's covers its points)."""
        if self.carrier is not None:
            return math.inf
        if not self.dependent and not self.carried:
            return float(fn.min(initial=np.inf))
        return _support_margin(fn, self.dependent_affine(sides))

    def spread_weights(self, sides=None) -> np.ndarray:
        """W (k + d, k): the least-squares distribution ``W fn`` over its support points (held, dependent,
        then the carried hinges' points) of its held points' normal forces fn (k,), with the same
        resultant and moments: ``min |fn - C^T mu|^2 + |mu|^2`` over the dependent forces mu, C their
        affine coordinates in the held points."""
        return least_squares_spread(self.dependent_affine(sides))

    def dependent_affine(self, sides=None) -> np.ndarray:
        """Affine coordinates (d, k) in its held points of every point dependent on them: its own
        dependent points (:meth:`affine`), then the points of the hinges it carries (:meth:`carried_affine`)."""
        C = self.affine(sides) if self.dependent else np.zeros((0, len(self.points)))
        return np.vstack([C, self.carried_affine(sides)]) if self.carried else C

    def carried_affine(self, sides=None) -> np.ndarray:
        """Affine coordinates (d, k) of the support points of the hinges it carries in its held points
        (recomputed at every state: its riders' points are other geometries')."""
        Xd = np.vstack([r.positions(r.dependent) for r in self.carried])
        return affine_coordinates(self.positions(self.points, sides or self.sides()), Xd)

    def affine(self, sides=None) -> np.ndarray:
        """Affine coordinates (d, k) of the dependent points in the held points (rows sum to 1).

        Constant while every support point is a material point of one body; recomputed from the
        positions otherwise (points of both bodies move relative to each other when sliding)."""
        key = (self.version, self.mech.state_version)
        if self._affine is not None:
            old, C, rigid = self._affine
            if old[0] == key[0] and (rigid or old[1] == key[1]):
                return C
        sides = sides or self.sides()
        C = affine_coordinates(self.positions(self.points, sides), self.positions(self.dependent, sides))
        self._affine = (key, C, self._rigid)
        return C

    @property
    def _rigid(self) -> bool:
        sup = self.support()
        return len({p.owner for p in sup}) == 1 and not any(p.crossing for p in sup)

    def reset_support(self, controlled: bool) -> None:
        """Hold every candidate point again (the support pass starts from them); ``controlled``:
        whether a controller holds it (see :meth:`force_inequalities`)."""
        self.stick_keep[:] = True
        self.points, self.dependent, self.spare = list(self.candidates), [], list(self.spare_geometry)
        self.linked = []
        self._leave_carrier()
        self.controlled = controlled
        self.invalidate()

    def release(self, point: SupportPoint) -> None:
        """Give up a support point: it becomes a spare vertex, watched for touching down."""
        self.spare.append(point)

    def hold(self, points: list[SupportPoint]) -> None:
        """Hold these support points (every one; the basis is chosen again) and every stick row."""
        self.points, self.dependent, self.linked = points, [], []
        self._leave_carrier()
        self.stick_keep[:] = True
        self.invalidate(rows_only=True)

    def keep_stick_rows(self, keep: list[bool]) -> None:
        """Which of its stick rows are held (the first ``len(keep)``)."""
        for i, k in enumerate(keep):
            self.stick_keep[i] = k
        self.invalidate(rows_only=True)

    def set_basis(self, basis: list[int], dependent: list[int], unsupported: list[int],
                  linked: Sequence[int] = ()) -> None:
        """Of its held points (by index): hold ``basis``, make ``dependent`` dependent points and
        ``linked`` linked points (dependent through other bodies' rows), and watch ``unsupported`` as
        spare vertices."""
        self.spare += [self.points[i] for i in unsupported]
        self.linked = [self.points[i] for i in linked]
        self.points, self.dependent = [self.points[i] for i in basis], [self.points[i] for i in dependent]
        self.invalidate()

    def ride(self, carrier: "ContactHinge", dependent: list[int], unsupported: list[int]) -> None:
        """Of its held points (by index): make ``dependent`` dependent on ``carrier``'s held points, with
        no rows of its own, and watch ``unsupported`` as spare vertices. It takes the carrier's friction
        mode (the carrier's stick rows and kinetic friction, on the whole load, act for both)."""
        self.spare += [self.points[i] for i in unsupported]
        self.points, self.dependent, self.linked = [], [self.points[i] for i in dependent], []
        self.carrier = carrier
        self.stick_keep[:] = False
        self.mode, self.slide_dir, self.onset_speed = carrier.mode, carrier.slide_dir, 0.0
        carrier.carry(self)
        self.invalidate()

    def shares_plane(self, other: "ContactHinge") -> bool:
        """Whether ``other`` touches the same two bodies with the same friction and the same surface
        normal (world) as this hinge: then its points in this hinge's plane may ride on it."""
        if self.controlled or other.controlled or self.balls or other.balls \
                or (self.mu_s, self.mu_k) != (other.mu_s, other.mu_k):
            return False
        n, m = self.sides()[0][2], other.sides()[0][2]
        if other.joints == self.joints:
            return float(n @ m) >= 1.0 - PARALLEL_TOL
        return other.joints == self.joints[::-1] and float(n @ m) <= PARALLEL_TOL - 1.0

    def _leave_carrier(self) -> None:
        """Ride on no carrier, carry no hinge and belong to no linked support (the support is chosen
        again). A rider takes its carrier's mode as it is now (the friction pass changes the carrier's
        alone); sticking, it anchors its stick rows where it is: its carrier's held its place until now."""
        c = self.carrier
        if c is not None:
            self.mode, self.slide_dir, self.onset_speed = c.mode, c.slide_dir, c.onset_speed
            if self.mode == _STICK:
                self.set_anchor()
        self.carrier, self.carried, self.group = None, [], None

    def join(self, group) -> None:
        """Belong to the linked support ``group`` (:class:`sim.contact.linked.LinkedSupport`), or to none."""
        if group is not self.group:
            self.group = group
            self.invalidate(rows_only=True)

    def carry(self, rider: "ContactHinge") -> None:
        """Carry ``rider``'s support points (see :meth:`ride`)."""
        self.carried.append(rider)
        self.invalidate(rows_only=True)

    def update_region(self, sides=None) -> None:
        """The region of its support points (a ball's point stays a point)."""
        if self.region != Region.POINT:
            self.region = _region(self.positions(self.support(), sides))

    def support_state(self) -> tuple:
        """Its support as it is (held, dependent, linked and spare points, stick rows held, carrier and
        carried hinges, mode), for :meth:`restore`."""
        return (list(self.points), list(self.dependent), list(self.linked), list(self.spare), self.stick_keep.copy(),
                self.carrier, list(self.carried), self.mode)

    def restore(self, state: tuple) -> None:
        """The support as :meth:`support_state` gave it."""
        points, dependent, linked, spare, keep, self.carrier, carried, self.mode = state
        self.points, self.dependent, self.linked, self.spare = list(points), list(dependent), list(linked), list(spare)
        self.carried = list(carried)
        self.stick_keep[:] = keep
        self.invalidate()

    def move_support(self, support: list[SupportPoint], moved: bool) -> None:
        """Its support points (held, dependent, then linked, as :meth:`support`) re-placed; ``moved``:
        whether any point changed (crossing points following their edges)."""
        k, d = len(self.points), len(self.dependent)
        self.points, self.dependent, self.linked = support[:k], support[k:k + d], support[k + d:]
        if moved:
            self.invalidate()

    def arm_spares(self) -> None:
        """Watch the spare vertices from where they are: one already slightly below the surface
        (a dropped redundant point) fires when it sinks a further ``penetration_tolerance``."""
        sides = self.sides()
        spares = []
        for s in self.spare:
            P, Q, k = sides[s.owner]
            gap = float((P.point(s.local_a) - Q.point(s.local_o)) @ k)
            spares.append(SupportPoint(s.local_a, s.local_o, s.radius, s.owner, min(gap, 0.0)))
        self.spare = spares
