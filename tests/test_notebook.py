"""The example notebook runs top to bottom in a Jupyter kernel (nbclient) and shows what it says:
the run's events, its plot inline (a PNG) and its replay embedded (the self-contained page)."""
from __future__ import annotations

import base64
import io
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

    frames = [o.data["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert len(frames) == 1 and frames[0].startswith("<iframe srcdoc=")
    assert "controlkit_replay" in frames[0] and len(frames[0]) > 100_000  # the whole page, inline
    assert (tmp_path / "out" / "ur5_phases.html").exists()
