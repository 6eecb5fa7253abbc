"""The README's example runs as written and does what it says."""
import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_defines_a_mechanism_and_bends_its_elbow():
    text = README.read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    body = [ln for ln in code.splitlines() if ln.strip() and not ln.startswith(("import ", "from "))]
    assert len(body) <= 15  # the issue asks for a 15-line example (imports aside)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    rec = scope["recording"]
    bent = [e for e in rec.events if e.kind == "control" and "bent" in e.description]
    assert len(bent) == 1 and 0.2 < bent[0].time < 0.5
    mech = scope["built"].mechanism
    elbow = rec.q[-1][mech.joint_q_slice("elbow")][0]
    assert abs(elbow - np.pi / 2) < 0.01 * np.pi / 2
    assert mech.nq == 2 and "base" in mech.bodies()  # a base body with two links joined to it


def test_readme_quick_start_is_the_two_make_commands():
    text = README.read_text()
    block = re.search(r"## Quick start\n\n```sh\n(.*?)```", text, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
