"""Support points linked through other bodies, and the one support margin they share.

A plank across two free blocks on the ground: the ground's contacts fix the blocks, the first
block's contact fixes the plank, so the second block's normal rows are combinations of those held
rows (through the first block, the ground and the second block) and add nothing to them. Held,
they would be redundant; dropped, the plank would rest on one block only (its held forces pulling
at one end) and tip at the first release. So such a point is *linked*: it carries no row of its
own, but its force may be taken over from the held rows by the coefficients of the combination
(the same generalized force), and the support holds while some compressive distribution over
every point of the linked hinges exists. That is one LP over all their held normal forces (the
other constraints' forces free): one margin, watched by one guard, in place of those hinges' own
margins. Their load is spread over all their points by least squares; kinetic friction acts on
that spread, and the static law reads a least-norm spread of their normal and stick forces.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .geometry import SupportPoint
from .hinge import ContactHinge, _multipliers_of
from .mode import Mode
from .rows import _friction_rows, _point_rows_of, support_normal_rows
from .support import least_squares_spread, support_distribution

_SLIDE, _STICK = Mode.SLIDE, Mode.STICK
_NONE = np.zeros(0)

#: dimensionless: a linked point's coefficient on a hinge's held normal row smaller than this
#: fraction of its largest coefficient leaves that hinge out of the linked support
COUPLING_TOL = 1e-9


class LinkedSupport:
    """The hinges whose support margins are one (see the module): those with linked points and
    those whose held normal rows their linked points' rows combine.

    Args:
        hinges: the hinges (their held and dependent points, as :meth:`ContactHinge.support_margin`
            counts them), each with its held points' forces read from the solve.

    Besides the margin it gives the hinges' normal forces a distribution over all their points
    (:meth:`spread`: the least-squares one with the same generalized force), on which the kinetic
    friction of its sliding hinges acts (:meth:`force_rows`) and which reporting shows. Its one
    cache, keyed by the state and the constraints' rows: the coefficients, the spread and the
    friction rows.
    """

    def __init__(self, hinges: Sequence) -> None:
        self.hinges = list(hinges)
        self._members = {id(h) for h in self.hinges}
        # where each hinge's held normal forces start among all of theirs (its support, and so its
        # count of held points, is fixed while it belongs here: a support change makes a new one)
        self._at, at = {}, 0
        for h in self.hinges:
            self._at[id(h)] = at
            at += len(h.points)
        self._key = None
        self._cache: dict = {}
        self._static = None  # (solve, state version, static_loads' table): loads_of's memo

    def __contains__(self, h) -> bool:
        return id(h) in self._members

    @classmethod
    def of(cls, mech, hinges: Sequence) -> "LinkedSupport | None":
        """The linked support of ``hinges`` at the mechanism's state (None when none has a linked point):
        the hinges with linked points and those their rows are combinations of."""
        if not any(h.linked for h in hinges):
            return None
        whole = cls([h for h in hinges if h.points or h.linked])
        C = whole._linked_coefficients(mech)
        cols = np.abs(C).max(axis=0, initial=0.0)
        big = COUPLING_TOL * float(cols.max(initial=0.0))
        at, keep = 0, []
        for h in whole.hinges:
            k = len(h.points)
            if h.linked or (k and float(cols[at:at + k].max()) > big):
                keep.append(h)
            at += k
        return cls(keep)

    def sliding(self) -> bool:
        """Whether any of its hinges slides (then their kinetic friction is spread: :meth:`force_rows`)."""
        for h in self.hinges:
            if h.mode == _SLIDE:
                return True
        return False

    # ------------------------------------------------------------ per state
    def _cached(self, mech, name: str, make):
        cons = mech.constraints.values()
        # (the held rows change with the support and the modes as well as with the state)
        key = (mech.state_version, [(id(c), c.size, getattr(c, "version", None), getattr(c, "mode", None),
                                     getattr(c, "stick_keep", _NONE).tobytes()) for c in cons])
        if self._key != key:
            self._key, self._cache = key, {}
        if name not in self._cache:
            self._cache[name] = make(mech)
        return self._cache[name]

    def _linked_coefficients(self, mech) -> np.ndarray:
        """C (d, k): each linked point's normal row as a combination of the held normal rows and the other
        constraints' rows, its coefficients on this support's hinges' held normal rows (k: those rows,
        in the order of ``hinges``)."""
        return self._cached(mech, "linked", self._make_linked)

    def _make_linked(self, mech) -> np.ndarray:
        held, at, cols = [], 0, {}
        for c in mech.constraints.values():
            J = c.jacobian()
            if isinstance(c, ContactHinge):  # (its normal rows)
                J = J[:len(c.points)]
            if id(c) in self._members:
                cols[id(c)] = (at, at + len(J))
            held.append(J)
            at += len(J)
        J = np.vstack(held) if held else np.zeros((0, mech.nv))
        L = np.vstack([support_normal_rows(h, h.sides(), h.linked) for h in self.hinges if h.linked])
        # L = full J (least squares), J's rows independent (the support's basis): the normal rows and
        # other constraints alone, so that a linked point's load is taken over by normal forces
        try:
            full = np.linalg.solve(J.dot(J.T), J.dot(L.T)).T  # (d, rows)
        except np.linalg.LinAlgError:
            full = np.linalg.lstsq(J.T, L.T, rcond=None)[0].T
        return np.hstack([full[:, slice(*cols[id(h)])] for h in self.hinges]) if self.hinges else np.zeros((len(L), 0))

    def _structure(self, mech) -> tuple[np.ndarray, list]:
        """``(C, points)``: the coefficients C (d, k) of every point dependent on the k held normal rows
        (each hinge's own dependent points and those of the hinges it carries, then the linked ones) and
        every point as ``(hinge, point, slider, sign)`` (the k held ones, then the d others): the hinge
        whose support lists it, and the hinge whose sliding direction (times sign) its friction takes."""
        return self._cached(mech, "structure", self._make_structure)

    def _make_structure(self, mech) -> tuple[np.ndarray, list]:
        ks = [len(h.points) for h in self.hinges]
        total, k, blocks = sum(ks), 0, []
        points = [(h, p, h, 1.0) for h in self.hinges for p in h.points]
        for h, kh in zip(self.hinges, ks):
            if h.dependent or h.carried:
                D = h.dependent_affine()
                block = np.zeros((len(D), total))
                block[:, k:k + kh] = D
                blocks.append(block)
                points += [(h, p, h, 1.0) for p in h.dependent]
                points += [(r, p, h, 1.0 if r.joints == h.joints else -1.0) for r in h.carried for p in r.dependent]
            k += kh
        blocks.append(self._linked_coefficients(mech))
        points += [(h, p, h, 1.0) for h in self.hinges for p in h.linked]
        return np.vstack(blocks), points

    def spread(self, mech) -> np.ndarray:
        """W (k + d, k): the least-squares distribution ``W fn`` over all its points (as :meth:`_structure`
        lists them) of the held normal forces fn (k,), with the same generalized force:
        ``min |fn - C^T mu|^2 + |mu|^2`` over the other points' forces mu."""
        return self._cached(mech, "spread", self._make_spread)

    def _make_spread(self, mech) -> np.ndarray:
        return least_squares_spread(self._structure(mech)[0])

    def _friction(self, mech) -> np.ndarray:
        """``W^T F`` (k, nv): the kinetic friction rows F of every point of a sliding hinge (zero rows
        elsewhere), each carried by the held normal forces through the spread W."""
        return self._cached(mech, "friction", self._make_friction)

    def _make_friction(self, mech) -> np.ndarray:
        C, points = self._structure(mech)
        F = np.zeros((len(points), mech.nv))
        groups: dict = {}
        for i, (h, _p, slider, sign) in enumerate(points):
            if slider.mode == _SLIDE:
                groups.setdefault((id(h), sign), (h, slider, sign, []))[3].append(i)
        for h, slider, sign, idx in groups.values():
            sides = h.sides()
            u, own = slider._sliding_direction(*slider.sides()[0])
            pts = [points[i][1] for i in idx]
            F[idx] = _friction_rows(h, sides, pts, sign * u, own)
            for j, p in zip(idx, pts):
                if p.edges is not None:  # (an edge crossing's friction row: its own, not a face point's)
                    _, J, _, G = _point_rows_of(sides, p, sign * u, h.mu_k)
                    F[j] = G[0] - J[0]
        return self.spread(mech).T.dot(F)

    # ------------------------------------------------------------ forces
    def force_rows(self, h, J: np.ndarray) -> np.ndarray:
        """Hinge h's force rows: its held rows J (rows, nv), the normal ones (first) carrying the
        kinetic friction of the spread (:meth:`_friction`) while any of its hinges slides."""
        if not self.sliding():
            return J
        at, k = self._at[id(h)], len(h.points)
        G = J.copy()
        G[:k] += self._friction(h.mech)[at:at + k]
        return G

    def _held_forces(self, lam_of) -> np.ndarray:
        fn = [h.forces(lam_of(h))[0] for h in self.hinges]
        return np.concatenate(fn) if fn else np.zeros(0)

    def margin(self, mech, lam_of) -> tuple[float, float]:
        """The support margin (N): the largest smallest normal force over the compressive distributions
        of the held forces on every point of the linked hinges; and the sum of the held forces'
        magnitudes (N, the scale of its round-off). ``lam_of(h)``: hinge h's multipliers."""
        fn = self._held_forces(lam_of)
        return support_distribution(fn, self._structure(mech)[0])[0], float(np.abs(fn).sum())

    def weakest(self, mech, lam_of) -> tuple[float, float, object, SupportPoint]:
        """``(margin, scale, hinge, point)``: :meth:`margin`'s two numbers (N), and the point (and its
        hinge) whose force is the smallest in the distribution that attains the margin: the one to
        release when the margin is negative."""
        fn = self._held_forces(lam_of)
        C, points = self._structure(mech)
        t, held, mu = support_distribution(fn, C)
        h, p = points[int(np.argmin(np.concatenate([held, mu])))][:2]
        return t, float(np.abs(fn).sum()), h, p

    def static_loads(self, mech, lam_of) -> dict:
        """What the static friction law of its sticking hinges reads, by ``id(hinge)``: the normal force
        (N, total over its support points) and the tangential force (2,) (N, along its t1, t2), from the
        least-norm forces on all its hinges' rows (every support point's normal row, every sticking
        hinge's stick rows, held or dropped as dependent) with the same generalized force as the held
        ones. (A plank sticking on two free blocks on a slope: one block's rows are dependent on the
        other's and the ground's; as held, the other carries all the plank's weight and friction,
        spread each carries its share.)"""
        rows, held, index = [], [], {}
        at = 0
        for h in self.hinges:
            k = len(h.points)
            J = h.rows()[1]
            lam = np.asarray(lam_of(h), dtype=float)
            N = support_normal_rows(h, h.sides(), h.support())
            if h.carried:  # (the points of the hinges it carries count as its own)
                N = np.vstack([N] + [support_normal_rows(r, r.sides(), r.dependent) for r in h.carried])
            rows.append(N)
            n_at = (at, len(N))
            at += len(N)
            if k:
                held.append(J[:k].T.dot(lam[:k]))
            t_at = None
            if h.mode == _STICK:
                n = h.stick_row_count()
                T = J[k:k + n]
                keep = h.stick_mask()
                if keep.any():
                    held.append(T[keep].T.dot(lam[k:k + int(keep.sum())]))
                rows.append(T)
                t_at = (at, min(n, 2))
                at += n
            index[id(h)] = (n_at, t_at)
        g = np.sum(held, axis=0) if held else np.zeros(mech.nv)
        f = np.linalg.lstsq(np.vstack(rows).T, g, rcond=None)[0]
        out = {}
        for key, ((a0, na), t_at) in index.items():
            ft = np.zeros(2)
            if t_at is not None:
                ft[:t_at[1]] = f[t_at[0]:t_at[0] + t_at[1]]
            out[key] = (float(f[a0:a0 + na].sum()), ft)
        return out

    def loads_of(self, h, sol) -> tuple[np.ndarray, np.ndarray]:
        """What the static friction law of its sticking hinge h reads at the solve ``sol``: the normal
        force (1,) (N) and the tangential force (2,) (N), h's shares of :meth:`static_loads` (its own
        held forces leave out what other hinges' rows carry: a block under one end of a plank held up
        by its own weight only). One spread per solve and state, for all its hinges."""
        memo, version = self._static, h.mech.state_version
        if memo is None or memo[0] is not sol or memo[1] != version:
            memo = self._static = (sol, version, self.static_loads(h.mech, lambda x: _multipliers_of(sol, x)))
        fn, ft = memo[2].get(id(h), (0.0, np.zeros(2)))
        return np.array([fn]), ft

    def normal_forces(self, mech, lam_of, h) -> np.ndarray:
        """The normal forces (N) at hinge h's support points (as ``h.support()`` lists them) in the spread
        of the held forces (:meth:`spread`): the distribution its friction acts on."""
        f = self.spread(mech).dot(self._held_forces(lam_of))
        at = {id(p): x for x, (_, p, _, _) in zip(f, self._structure(mech)[1])}
        return np.array([at.get(id(p), 0.0) for p in h.support()])
