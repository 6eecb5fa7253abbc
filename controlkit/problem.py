"""The assembled problem of one state: the column layout of the unknowns ``x = [a | tau | lam]``,
named row blocks, rows stacked per kind of statement, and :class:`Problem` (what one solve needs).

:func:`controlkit.equations.build_problem` builds them; :mod:`controlkit.solver` solves them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


# -------------------------------------------------------------- the layout
@dataclass
class Layout:
    """Column layout of the unknown vector x = [a | tau | lam]."""

    nv: int
    ntau: int
    lam: dict[str, slice]
    nlam: int

    @property
    def nx(self) -> int:
        return self.nv + self.ntau + self.nlam

    @property
    def a(self) -> slice:
        return slice(0, self.nv)

    @property
    def tau(self) -> slice:
        return slice(self.nv, self.nv + self.ntau)

    @classmethod
    def for_mechanism(cls, mech, extra: dict[str, int] | None = None) -> "Layout":
        lam, k = {}, mech.nv + mech.ntau
        sizes = [(name, c.size) for name, c in mech.constraints.items()] + list((extra or {}).items())
        for name, size in sizes:
            lam[name] = slice(k, k + size)
            k += size
        return cls(mech.nv, mech.ntau, lam, k - mech.nv - mech.ntau)


# ------------------------------------------------------------- the problem
class Block:
    """Named rows ``A x = b`` (equality) or ``A x <= b`` (inequality); ``kind`` says where they come from.

    ``A`` may be given dense, or by column blocks ``Aa`` (on a) and ``Aw`` (on [tau | lam]),
    None where zero, with the layout's ``nv`` and ``nx``; the solver works on the blocks,
    and ``A`` is built from them when asked for.
    """

    def __init__(self, name: str, kind: str, A: np.ndarray | None = None, b: np.ndarray | None = None,
                 labels: list[str] | None = None, weight: np.ndarray | None = None, *,
                 Aa: np.ndarray | None = None, Aw: np.ndarray | None = None,
                 nv: int | None = None, nx: int | None = None):
        self.name, self.kind, self.b = name, kind, b
        self.labels = [] if labels is None else labels
        self.weight = weight  # costs only
        self._A, self.Aa, self.Aw, self.nv, self.nx = A, Aa, Aw, nv, nx

    @property
    def A(self) -> np.ndarray:
        """The dense rows (m, nx)."""
        if self._A is None:
            A = np.zeros((len(self.b), self.nx))
            if self.Aa is not None:
                A[:, :self.nv] = self.Aa
            if self.Aw is not None:
                A[:, self.nv:] = self.Aw
            self._A = A
        return self._A

    def parts(self, nv: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The column blocks (on a, on [tau | lam]), None where zero."""
        if self._A is not None and self.Aa is None and self.Aw is None:
            return self._A[:, :nv], self._A[:, nv:]
        return self.Aa, self.Aw

    def __repr__(self) -> str:
        return f"Block({self.name!r}, {self.kind!r}, {len(self.b)} rows)"


class Rows:
    """The rows of several statements of one kind, stacked: ``Aa a + Aw w`` (=, <= or cost target) ``b``.

    ``Aa`` (m, nv) and ``Aw`` (m, nw) are None where zero; ``weight`` (m,) for costs, else None;
    ``spans``: (name, kind, first row, end row) per statement; ``labels``: row labels by statement
    name where there are any (the constraints'). :meth:`blocks` gives one :class:`Block` per statement.
    Arrays may be shared between problems (constant rows): treat them as read-only.
    """

    __slots__ = ("Aa", "Aw", "b", "spans", "nv", "nx", "weight", "labels", "_blocks")

    def __init__(self, Aa, Aw, b: np.ndarray, spans: list, nv: int, nx: int, weight=None, labels=None):
        self.Aa, self.Aw, self.b, self.spans = Aa, Aw, b, spans
        self.nv, self.nx, self.weight, self.labels = nv, nx, weight, labels
        self._blocks = None

    @classmethod
    def empty(cls, nv: int, nx: int) -> "Rows":
        return cls(None, None, np.zeros(0), [], nv, nx)

    def __len__(self) -> int:
        return len(self.b)

    def owners(self) -> list[str]:
        """The name of the statement each row comes from."""
        return [name for name, _, i, j in self.spans for _ in range(j - i)]

    def blocks(self) -> list[Block]:
        """One block per statement (views of the stacked rows), for printing and inspection."""
        if self._blocks is None:
            lab, w = self.labels or {}, self.weight
            self._blocks = [Block(name, kind, None, self.b[i:j], list(lab.get(name, [])),
                                  None if w is None else w[i:j],
                                  Aa=None if self.Aa is None else self.Aa[i:j],
                                  Aw=None if self.Aw is None else self.Aw[i:j], nv=self.nv, nx=self.nx)
                            for name, kind, i, j in self.spans]
        return self._blocks

    @staticmethod
    def stack(first: "Rows", second: "Rows") -> "Rows":
        """``first``'s rows above ``second``'s (equalities or inequalities: unweighted)."""
        if not len(second.spans):
            return first
        if not len(first.spans):
            return second
        k, m = len(first), len(second)
        out = []
        for x, y, width in ((first.Aa, second.Aa, first.nv), (first.Aw, second.Aw, first.nx - first.nv)):
            if x is None and y is None:
                out.append(None)
                continue
            A = np.empty((k + m, width))
            A[:k] = 0.0 if x is None else x
            A[k:] = 0.0 if y is None else y
            out.append(A)
        spans = first.spans + [(n, kind, i + k, j + k) for n, kind, i, j in second.spans]
        w = None if first.weight is None else np.concatenate([first.weight, second.weight])
        labels = {**(first.labels or {}), **(second.labels or {})} or None
        return Rows(out[0], out[1], np.concatenate([first.b, second.b]), spans, first.nv, first.nx, w, labels)


@dataclass
class Problem:
    """Everything one solve needs, at one state; printable.

    Motion equations: ``M a + bias = S^T tau + G^T lam`` with bias = h - f_ext (N, N m) and
    G = ``Jf`` (the force Jacobian) when given, else ``Jc``.
    ``eq_rows``, ``cost_rows``, ``ineq_rows``, ``reg_rows``: the equalities (constraints first),
    costs, inequalities and regularizations, each kind stacked (:class:`Rows`); ``equalities``, ``costs`` and
    ``inequalities`` list them as one :class:`Block` per statement.
    ``fixed``: (name, columns, values) of the direct assignments of unknowns.
    """

    time: float
    layout: Layout
    M: np.ndarray | None  # (nv, nv); None when ``mass_solve`` is given (the solves never need M itself)
    bias: np.ndarray
    S: np.ndarray
    Jc: np.ndarray
    eq_rows: Rows
    fixed: list[tuple[str, np.ndarray, np.ndarray]]
    cost_rows: Rows
    ineq_rows: Rows
    default_cost: bool = True
    mass_solve: object = None  # b -> M^-1 b (the mechanism's); None: factor M here
    Jf: np.ndarray | None = None  # force Jacobian when it differs from Jc (sliding friction)
    lam_labels: list[str] = field(default_factory=list)
    mass_inverse: object = None  # () -> M^-1 (nv, nv) at the state (the mechanism's), or None
    reg_rows: Rows | None = None  # regularizations: weighted like costs, used where the costs are flat
    # the solver's factors kept with the constraint rows (``Jc`` by identity); the mechanism's cache
    factors: dict | None = field(default=None, repr=False, compare=False)
    #: keep per-structure decisions in ``factors`` between evaluations (``EquationSet.evaluation == "plan"``)
    plan: bool = False

    @property
    def equalities(self) -> list[Block]:
        return self.eq_rows.blocks()

    @property
    def costs(self) -> list[Block]:
        return self.cost_rows.blocks()

    @property
    def inequalities(self) -> list[Block]:
        return self.ineq_rows.blocks()

    def sizes(self) -> dict[str, int]:
        """Row counts per kind of statement."""
        return {
            "unknowns": self.layout.nx,
            "motion": self.layout.nv,
            "equalities": len(self.eq_rows),
            "assigned": sum(len(c) for _, c, _ in self.fixed),
            "costs": len(self.cost_rows),
            "regularizations": len(self.reg_rows) if self.reg_rows is not None else 0,
            "inequalities": len(self.ineq_rows),
        }

    def __str__(self) -> str:
        s = self.sizes()
        lines = [f"problem at t = {self.time:.9g} s: {s['unknowns']} unknowns "
                 f"(a {self.layout.nv}, tau {self.layout.ntau}, lam {self.layout.nlam})",
                 f"  motion equations: {s['motion']} rows"]
        kinds = [("equalities", self.eq_rows), ("costs", self.cost_rows)]
        if self.reg_rows is not None and self.reg_rows.spans:
            kinds.append(("regularizations", self.reg_rows))
        for title, rows in kinds + [("inequalities", self.ineq_rows)]:
            lines.append(f"  {title}: {len(rows)} rows")
            lines += [f"    {name} ({kind}, {j - i} rows)" for name, kind, i, j in rows.spans]
        lines.append(f"  assigned unknowns: {s['assigned']}")
        lines += [f"    {name} ({len(cols)} columns)" for name, cols, _ in self.fixed]
        return "\n".join(lines)
