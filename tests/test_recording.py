"""Recordings are data: save then load gives identical arrays; CSV carries units."""
import csv

import numpy as np

import robots
from controlkit.quantities import FramePoint
from controlkit.recording import Recording
from sim.simulator import Simulator


def _short_run():
    b = robots.four_bar()
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=2e-3, record={"crank tip": FramePoint(b.mechanism, "crank")})
    sim.recording.set_unit("crank tip", "m")
    sim.log("control", "a marker", value=1.5)
    return sim.run(0.05)


def test_save_then_load_gives_identical_arrays(tmp_path):
    rec = _short_run()
    back = Recording.load(rec.save(tmp_path / "run.npz"))
    for name in ("t", "q", "v", "tau"):
        assert np.array_equal(getattr(rec, name), getattr(back, name))
    assert np.array_equal(rec.quantity("crank tip"), back.quantity("crank tip"))
    assert back.units == rec.units and back.meta == rec.meta
    assert [e.description for e in back.events] == [e.description for e in rec.events]
    assert back.events[0].data == {"value": 1.5}


def test_csv_export_has_time_quantity_columns_and_units(tmp_path):
    rec = _short_run()
    path = rec.to_csv(tmp_path / "run.csv")
    rows = list(csv.reader(open(path)))
    assert rows[0] == ["t [s]", "crank tip[0] [m]", "crank tip[1] [m]", "crank tip[2] [m]"]
    assert len(rows) == len(rec) + 1
    assert float(rows[-1][1]) == rec.quantity("crank tip")[-1, 0]


def test_save_into_a_missing_folder_creates_it(tmp_path):
    rec = _short_run()
    path = rec.save(tmp_path / "runs" / "today" / "run")
    assert path == tmp_path / "runs" / "today" / "run.npz" and path.is_file()
    assert np.array_equal(Recording.load(path).q, rec.q)
