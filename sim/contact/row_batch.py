"""The compiled rows of all a contact source's hinges in one call per state.

:meth:`ContactHinge.rows` is asked once per hinge and state (the assembly, the guards). The first
such call at a state fills every hinge of its source that the compiled path covers: their bodies
go into the state's :class:`sim.contact.bodies.BodyTable` (each body once, shared by all hinges
touching it), their packed parameters (:func:`sim.contact.row_kernel.pack`, kept per hinge) are
stacked (kept while the hinges and their packs are the same), and
:func:`sim.contact.row_kernel.batch_rows` builds all their rows: one numba call instead of one
per hinge (~4 us of call overhead each). Each hinge's rows are views of the call's arrays with
the values :func:`sim.contact.row_kernel.hinge_rows` gives it (the same compiled arithmetic).
"""
from __future__ import annotations

import numpy as np

from .bodies import body_table

row_kernel = None  # sim.contact.row_kernel, imported (numba) at the first fill
#: how many batched calls filled rows, and how many hinges' rows they filled
BATCH_COUNTS = {"calls": 0, "hinges": 0}


class RowBatch:
    """A contact source's batched compiled rows (see the module's docstring).

    Args:
        hinges: the source's hinges by pair (the live dict: hinges come and go between events).
    """

    def __init__(self, hinges: dict):
        self.hinges = hinges
        self._key: tuple = ()
        # the last fill: (state version, its hinges, phi, JD, their stacked terms or None)
        self._filled: list | None = None
        self._stack = None  # (joints, P, E, F, IV, poff, roff, goff, sliding hinge indices, joints to load)

    def fill(self, mech, compiled) -> None:
        """Set the rows of every hinge of the source that ``compiled(h)`` admits and whose rows are
        not yet those of the mechanism's state (:meth:`ContactHinge.rows`' cache)."""
        global row_kernel
        if row_kernel is None:
            from . import row_kernel
        sv = mech.state_version
        group, packs = [], []
        for h in self.hinges.values():  # (every evaluation: a loop, no comprehension)
            if h._cache_version != sv and h.mech is mech and compiled(h):
                p = row_kernel.packed(h)
                if p is not None:
                    group.append(h)
                    packs.append(p)
        if not group:
            return
        stack = self._stacked(group, packs)
        joints, P, E, F, IV, poff, roff, goff, sliding, bodies = stack
        table = body_table(mech)
        for j in bodies:  # (the arrays only: a hinge's _Body is built when something reads it)
            table.load(mech, j)
        for i in sliding:  # (the support's centroid: a point of A, or where the points are now)
            F[i, row_kernel.F_CENTROID:row_kernel.F_CENTROID + 3] = group[i].centroid_local()
        phi, JD, G = row_kernel.batch_rows(table.H, table.V, table.JA, joints, P, E, F, IV, poff, roff, goff)
        r = roff.tolist()
        g = goff.tolist()
        for i, h in enumerate(group):
            r0, r1 = r[i], r[i + 1]
            J = JD[r0:r1, :-1]
            h._cache = (phi[r0:r1], J, JD[r0:r1, -1], G[g[i]:g[i + 1]] if g[i + 1] > g[i] else J)
            h._cache_version = sv
        self._filled = [sv, group, phi, JD, None]
        BATCH_COUNTS["calls"] += 1
        BATCH_COUNTS["hinges"] += len(group)

    def stacked_terms(self, cons: list, rows: int):
        """``(phi, J, drift)`` of the constraints ``cons`` stacked (as the assembly stacks their
        ``terms()``: the same values, contiguous arrays), when they are exactly the hinges of this
        state's fill in its order with every row held (``rows``: their sizes' sum); else None."""
        f = self._filled
        h0 = cons[0]
        if f is None or f[0] != h0.mech.state_version:
            h0.rows()  # (fills the batch at this state)
            f = self._filled
            if f is None or f[0] != h0.mech.state_version:
                return None
        group, JD = f[1], f[3]
        # every row held: a hinge's size is at most its kernel rows, so the sums agree only then
        # (checked at every call: a hinge may be detached or re-shaped at the same state)
        if len(JD) != rows or len(group) != len(cons):
            return None
        for a, b in zip(group, cons):
            if a is not b or a._cache_version != f[0] or a.detached:
                return None
        out = f[4]
        if out is None:
            out = f[4] = (f[2], JD[:, :-1].copy(), JD[:, -1].copy())
        return out

    def forget(self) -> None:
        """Drop the last fill: :meth:`stacked_terms` then answers None until the next fill, and the
        assembly stacks each hinge's ``terms()`` (the general path, for tests that compare the two)."""
        self._filled = None

    def _stacked(self, group: list, packs: list) -> tuple:
        """The group's parameters stacked (kept while the same hinges have the same packs)."""
        key = (tuple(group), tuple(packs))
        old = self._key
        if len(old) == 2 and len(old[0]) == len(group) and all(
                x is y for x, y in zip(old[0], group)) and all(x is y for x, y in zip(old[1], packs)):
            return self._stack
        n = len(group)
        joints = np.array([h.joints for h in group], dtype=np.int64).reshape(n, 2)
        P = np.ascontiguousarray(np.concatenate([p[0] for p in packs]))
        E = np.ascontiguousarray(np.concatenate([p[1] for p in packs]))
        F = np.ascontiguousarray(np.stack([p[2] for p in packs]))
        IV = np.ascontiguousarray(np.stack([p[3] for p in packs]))
        poff, roff, goff = np.zeros(n + 1, dtype=np.int64), np.zeros(n + 1, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)
        sliding = []
        for i, p in enumerate(packs):
            m = len(p[0])
            nrow, ng = row_kernel.row_count(m, p[3])
            poff[i + 1], roff[i + 1], goff[i + 1] = poff[i] + m, roff[i] + nrow, goff[i] + ng
            if p[3][row_kernel.I_SLIDING]:
                sliding.append(i)
        self._key = key
        bodies = sorted({j for h in group for j in h.joints} - {0})  # (the world's rows are set)
        self._stack = (joints, P, E, F, IV, poff, roff, goff, sliding, bodies)
        return self._stack
