"""The example notebook runs top to bottom in a Jupyter kernel (nbclient) and shows what it says:
the run's events, its plot inline (a PNG), its replay embedded (the self-contained page) and a live
meshcat viewer in a cell (a real server, answering, stopped when the cell ends)."""
from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from PIL import Image

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "first_run.ipynb"


def test_the_notebook_runs_and_shows_its_plot_and_replay(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "tool moved 20 cm" in text and "wrote out/ur5_phases.html" in text

    pngs = [o.data["image/png"] for o in outputs if "image/png" in o.get("data", {})]
    assert len(pngs) == 1
    with Image.open(io.BytesIO(base64.b64decode(pngs[0]))) as im:
        assert im.width > 800 and len(im.convert("RGB").getcolors(1 << 20)) > 50  # a plot, not a blank

    html = [o.data["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    frames = [h for h in html if h.startswith("<iframe srcdoc=")]
    assert len(frames) == 1
    assert "controlkit_replay" in frames[0] and len(frames[0]) > 100_000  # the whole page, inline
    assert (tmp_path / "out" / "ur5_phases.html").exists()

    live = [h for h in html if "<iframe" in h and "http://127.0.0.1:" in h]
    assert len(live) == 1  # the live viewer's page, shown in the cell
    assert re.search(r"live viewer at http://127\.0\.0\.1:\d+/static/ answers 200", text)
    closed = re.search(r"live viewer closed: True server process (\d+)", text)
    assert closed and not _running(int(closed.group(1)))  # the cell's server was stopped


def _running(pid: int) -> bool:
    """Whether process ``pid`` is alive (a zombie or a gone process is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
