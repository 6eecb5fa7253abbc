"""What a sweep varies: ``NAME=SPEC`` settings parsed into grid axes and random draws.

Accepted SPEC forms (:data:`FORMS`):

- ``START:STOP:COUNT`` — ``COUNT`` evenly spaced values from ``START`` to ``STOP`` inclusive
  (``mass_error=-0.2:0.2:9``);
- ``V1,V2,...`` — the listed values, each a Python literal or else the text itself
  (``mu=0.5,0.8,1.0``, ``integrator=rk4,euler``); one value alone fixes the option;
- ``uniform(LO,HI)``, ``loguniform(LO,HI)``, ``normal(MEAN,SD)`` — one random draw per sample
  (``--samples N``, the draws made from ``--seed``).

Grid axes multiply (every combination); random settings are drawn anew for each sample of each
grid point, the same draws at every grid point (sample ``k`` uses the generator seeded with
``(seed, k)``), so grid points are compared on common random numbers.
"""
from __future__ import annotations

import ast
import itertools
import math
import re
from dataclasses import dataclass

import numpy as np

from controlkit.errors import ControlkitError

FORMS = ("START:STOP:COUNT", "V1,V2,...", "VALUE", "uniform(LO,HI)", "loguniform(LO,HI)", "normal(MEAN,SD)")
DISTRIBUTIONS = ("uniform", "loguniform", "normal")
_CALL = re.compile(r"^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$")


class SpecError(ControlkitError, ValueError):
    """A ``--set NAME=SPEC`` a sweep cannot read."""


@dataclass(frozen=True)
class Axis:
    """A grid axis: the option ``name`` takes each of ``values`` in turn."""

    name: str
    values: tuple


@dataclass(frozen=True)
class Draw:
    """A random option: ``name`` drawn from ``distribution`` with parameters ``a``, ``b``."""

    name: str
    distribution: str
    a: float
    b: float

    def sample(self, rng: np.random.Generator) -> float:
        """One draw with ``rng``, rounded to 12 significant digits (readable in a table)."""
        if self.distribution == "uniform":
            x = rng.uniform(self.a, self.b)
        elif self.distribution == "loguniform":
            x = math.exp(rng.uniform(math.log(self.a), math.log(self.b)))
        else:
            x = rng.normal(self.a, self.b)
        return _tidy(x)


def _tidy(x):
    """A number as a plain Python value with 12 significant digits (``-0.15`` not ``-0.15000000000000002``)."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(f"{float(x):.12g}")
    return x


def _bad(item: str, why: str) -> SpecError:
    return SpecError(f"--set {item!r}: {why}; accepted forms: NAME=" + ", NAME=".join(FORMS))


def _number(text: str, item: str) -> float:
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(item, f"{text.strip()!r} is not a number")
    return value


def _literal(text: str):
    text = text.strip()
    try:
        return _tidy(ast.literal_eval(text))
    except (ValueError, SyntaxError):
        return text  # a bare word: a name, e.g. an integrator


def parse_setting(item: str) -> Axis | Draw:
    """One ``NAME=SPEC`` setting as a grid :class:`Axis` or a random :class:`Draw`.

    Raises :class:`SpecError` (one line naming the accepted forms) when SPEC is malformed.
    """
    name, sep, text = item.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise _bad(item, "expected NAME=SPEC with NAME an option of build()")
    if not text.strip():
        raise _bad(item, "no values")
    call = _CALL.match(text)
    if call:
        dist, args = call.group(1), call.group(2).split(",")
        if dist not in DISTRIBUTIONS:
            raise _bad(item, f"unknown distribution {dist!r}")
        if len(args) != 2:
            raise _bad(item, f"{dist}() takes two numbers")
        a, b = (_number(x, item) for x in args)
        if dist != "normal" and not a < b:
            raise _bad(item, f"{dist}(LO,HI) needs LO < HI")
        if dist == "loguniform" and a <= 0:
            raise _bad(item, "loguniform(LO,HI) needs LO > 0")
        if dist == "normal" and b < 0:
            raise _bad(item, "normal(MEAN,SD) needs SD >= 0")
        return Draw(name, dist, float(a), float(b))
    if ":" in text and text.strip()[:1] not in "'\"":
        parts = text.split(":")
        if len(parts) != 3:
            raise _bad(item, "a range is START:STOP:COUNT")
        start, stop, count = (_number(x, item) for x in parts)
        if not isinstance(count, int) or count < 1:
            raise _bad(item, "COUNT of START:STOP:COUNT must be a whole number >= 1")
        return Axis(name, tuple(_tidy(x) for x in np.linspace(start, stop, count)))
    if "," in text and text.strip()[:1] not in "([{'\"":
        values = [v for v in text.split(",")]
        if any(not v.strip() for v in values):
            raise _bad(item, "an empty value in the list")
        return Axis(name, tuple(_literal(v) for v in values))
    return Axis(name, (_literal(text),))


def parse_settings(items) -> list[Axis | Draw]:
    """``NAME=SPEC`` settings (strings) as axes and draws; a name given twice is an error."""
    parsed = [parse_setting(i) for i in items]
    names = [p.name for p in parsed]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SpecError(f"--set {twice[0]}: given more than once; give one SPEC per option")
    return parsed


def expand(settings: list[Axis | Draw], samples: int = 1, seed: int = 0) -> list[tuple[dict, int]]:
    """Every run of the sweep as ``(options, seed)``: the grid's combinations (in the settings'
    order, the last axis fastest) times ``samples``; sample ``k`` has seed ``seed + k`` and its
    random options drawn from ``numpy.random.default_rng((seed, k))``."""
    if samples < 1:
        raise SpecError(f"--samples {samples}: needs at least 1")
    axes = [s for s in settings if isinstance(s, Axis)]
    draws = [s for s in settings if isinstance(s, Draw)]
    drawn = []
    for k in range(samples):
        rng = np.random.default_rng((seed, k))
        drawn.append({d.name: d.sample(rng) for d in draws})
    runs = []
    for combo in itertools.product(*(a.values for a in axes)):
        point = dict(zip((a.name for a in axes), combo))
        for k in range(samples):
            options = {s.name: point[s.name] if s.name in point else drawn[k][s.name] for s in settings}
            runs.append((options, seed + k))
    return runs
