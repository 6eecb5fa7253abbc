"""The user guide: the site builds with warnings as errors, and every code block in it runs.

Each page's ``python`` blocks run in order in one namespace (a page is a tutorial: later
blocks use what earlier ones defined), in a scratch folder that sees the repository's
``examples/``. Each line of a ``sh`` block runs too: ``controlkit ...`` and ``python ...``
as commands (exit status 0), ``make TARGET`` as ``make -n TARGET`` (the target exists and
its recipe expands; running it here would rebuild the environment the tests run in).
"""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
GUIDE = ["getting-started", "first-controller", "mechanisms", "contact", "events", "walking", "assemble", "hinges",
         "locking", "hand_study", "impacts", "comparison", "recordings", "notebooks", "benchmarks", "index"]
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def blocks(page: str) -> list[tuple[str, str]]:
    return BLOCK.findall((DOCS / f"{page}.md").read_text())


def test_every_guide_page_is_in_the_site_navigation():
    nav = (REPO / "mkdocs.yml").read_text()
    for page in GUIDE:
        assert f"{page}.md" in nav, page
    for name in ("programs", "controllers", "sim", "mechanism", "recording", "report"):
        assert f"api/{name}.md" in nav


def test_the_site_builds_strictly_with_the_api_reference(tmp_path):
    site = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "WARNING" not in p.stderr, p.stderr[-3000:]
    programs = (site / "api" / "programs" / "index.html").read_text()
    for name in ("Controller", "until", "after", "add_equation", "FramePoint"):
        assert name in programs, name  # rendered from the docstrings
    controllers = (site / "api" / "controllers" / "index.html").read_text()
    assert "position_with_quintic" in controllers and "orient_with_pd" in controllers
    guide = (site / "first-controller" / "index.html").read_text()
    assert "reach_and_hold" in guide and "within 1 mm" in guide


@pytest.mark.parametrize("page", GUIDE)
def test_every_code_block_of_the_guide_runs(page, tmp_path, monkeypatch):
    found = blocks(page)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(REPO / "examples")
    scope: dict = {"__name__": f"docs_{page.replace('-', '_')}"}
    for lang, code in found:
        if lang == "python":
            exec(compile(code, f"docs/{page}.md", "exec"), scope)
        elif lang == "sh":
            for line in code.strip().splitlines():
                _run_command(line)
        else:
            raise AssertionError(f"docs/{page}.md: a ```{lang} block: the test runs python and sh blocks only")


def _run_command(line: str) -> None:
    words = shlex.split(line.split("#")[0])
    if words[0] == "controlkit":
        argv = [sys.executable, "-m", "controlkit.cli", *words[1:]]
    elif words[0] == "python":
        argv = [sys.executable, *words[1:]]
    elif words[0] == "make":
        argv = ["make", "-n", "-C", str(REPO), *[w for w in words[1:] if w != "-n"]]
    else:
        raise AssertionError(f"a documented command the test cannot run: {line!r}")
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"{line}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"


def test_the_first_controller_is_the_reach_and_hold_the_issue_asks_for():
    """A quintic on the tool, its orientation held, until within 1 mm, then hold."""
    code = "\n".join(c for lang, c in blocks("first-controller") if lang == "python")
    for needle in ("position_with_quintic", "orient_with_pd", "ctl.until", "< 1e-3", "position_with_pd"):
        assert needle in code, needle


def test_make_test_says_it_will_install_chromium_before_apt_get_does():
    recipe = subprocess.run(["make", "-n", "-C", str(REPO), "browser"], capture_output=True, text=True).stdout
    said = recipe.find("installing them now with apt-get install (as root)")
    assert 0 <= said < recipe.find("apt-get update"), recipe
    assert "test_browser.py" in recipe[:said]  # and why: the real-browser tests
    make = (REPO / "Makefile").read_text()
    assert re.search(r"^test: .*\bbrowser\b", make, re.M)  # make test runs that recipe first
