"""Bad input, as a new user makes it: one clear ControlkitError (or one CLI line, exit != 0) per case.

Each test names the mistake; it asserts the error's class and the words of its message that say
what was wrong, and that a run which fails keeps its recording up to the failure.
"""
import math
import textwrap

import numpy as np
import pytest

from controlkit.cli import main
from controlkit.errors import (
    ArgumentError,
    ControlkitError,
    ControlProgramError,
    EquationError,
    InconsistentEquationsError,
    ModelError,
    RecordingError,
    SimulationError,
    StateError,
)
from controlkit.recording import Recording
from controllers.primitives import set_angle_with_pd
from models import free_ball, pendulum
from robots.definition import Body, Composite
from robots.shapes import cuboid
from robots.urdf import from_urdf
from sim.simulator import Simulator


def _sim(**kw):
    mech = pendulum(1)
    return Simulator(mech, np.array([0.3]), np.zeros(1), **kw)


# ------------------------------------------------------------------ models
def test_composites_nested_in_a_cycle_are_refused():
    a, b = Composite("a"), Composite("b")
    a.add(Body("x", cuboid(0.1, 0.1, 0.1), density=1000.0))
    a.add(b)
    with pytest.raises(ModelError, match="'a'.*cycle"):
        b.add(a)


def test_from_urdf_without_a_path_says_it_needs_one():
    with pytest.raises(ModelError, match="path of a URDF file.*None"):
        from_urdf(None)


def test_a_zero_quaternion_in_a_free_flyer_configuration_is_refused():
    q0 = np.array([0, 0, 1.0, 0, 0, 0, 0])
    with pytest.raises(StateError, match="'root'.*zero quaternion"):
        Simulator(free_ball(), q0)


# -------------------------------------------------------------- simulator
@pytest.mark.parametrize("setting, value", [("dt", "abc"), ("dt", -1e-3), ("event_tolerance", math.nan),
                                            ("max_step", 0.0), ("kp", math.inf)])
def test_simulator_settings_must_be_numbers_in_range(setting, value):
    with pytest.raises(ArgumentError, match=f"{setting} must be a"):
        _sim(**{setting: value})


def test_a_simulator_of_something_that_is_not_a_mechanism_is_refused():
    with pytest.raises(ArgumentError, match="expected a controlkit Mechanism.*got str"):
        Simulator("ur5")


def test_recording_something_that_is_not_a_quantity_is_refused():
    with pytest.raises(ArgumentError, match=r"record\['x'\] must be a quantity"):
        _sim(record={"x": 3})


@pytest.mark.parametrize("duration, words", [("abc", "number of seconds"), (-1, ">= 0"), (math.nan, ">= 0"),
                                             (math.inf, "infinite duration never ends")])
def test_run_durations_must_be_finite_non_negative_numbers(duration, words):
    with pytest.raises(ArgumentError, match=words):
        _sim().run(duration)


def test_an_infinite_run_ends_on_its_stop_condition():
    sim = _sim()
    rec = sim.run(math.inf, until=lambda s: s.t >= 0.01)
    assert 0.01 <= rec.t[-1] < 0.0111


def test_scheduling_an_action_in_the_past_is_refused():
    with pytest.raises(ArgumentError, match="before the current simulation time"):
        _sim().at(-1, lambda sim: None)


def test_an_external_force_of_the_wrong_shape_names_the_force_not_the_torques():
    sim = _sim(external_force=lambda t, mech: np.zeros(3))
    with pytest.raises(StateError, match=r"external_force must return .* nv = 1 .*shape \(3,\)") as info:
        sim.run(0.01)
    assert info.value.recording is not None


def test_an_external_force_that_raises_is_reported_with_time_and_recording():
    def push(t, mech):
        if t > 0.005:
            raise RuntimeError("sensor unplugged")
        return np.zeros(1)
    with pytest.raises(SimulationError, match="external_force 'push' raised RuntimeError: sensor unplugged") as info:
        _sim(external_force=push).run(0.02)
    assert 0.005 <= info.value.time <= 0.007
    assert info.value.recording.t[-1] >= 0.005


def test_a_nan_external_force_is_named_as_such():
    with pytest.raises(StateError, match="external_force returned a non-finite force"):
        _sim(external_force=lambda t, mech: np.full(1, np.nan)).run(0.01)


# ---------------------------------------------------------------- programs
def _run_program(program, seconds=0.05, **kw):
    sim = _sim(**kw)
    sim.add_program(program)
    return sim.run(seconds)


def test_a_nan_pd_target_is_refused_when_it_is_set():
    def prog(ctl):
        set_angle_with_pd(ctl, "hold", "j0", math.nan, 0.2)
        yield
    with pytest.raises(ControlProgramError, match="'hold'.*not finite.*nan"):
        _run_program(prog)


def test_a_nan_torque_is_refused_when_it_is_assigned():
    def prog(ctl):
        ctl.assign("motor", ctl.torque("j0"), math.nan)
        yield
    with pytest.raises(ControlProgramError, match="'motor'.*not finite"):
        _run_program(prog)


def test_a_target_with_the_wrong_number_of_components_names_the_statement():
    from controllers.primitives import position_with_pd

    def prog(ctl):
        position_with_pd(ctl, "reach", "l0.tip", [0.1, 0.2], 0.2)  # a 2-vector for a point in space
        yield
    with pytest.raises(EquationError, match=r"'reach'.*not have the same number of components.*\(3,\) \(2,\)"):
        _run_program(prog)


def test_removing_a_statement_that_does_not_exist_says_there_is_none():
    def prog(ctl):
        ctl.remove("nothing")
        yield
    with pytest.raises(ControlProgramError, match="unknown control statement 'nothing'.*There is no control statement yet"):
        _run_program(prog)


@pytest.mark.parametrize("seconds", [math.nan, -1.0, "soon"])
def test_waiting_a_duration_that_is_not_a_finite_non_negative_number(seconds):
    def prog(ctl):
        yield ctl.after(seconds)
    with pytest.raises(ControlProgramError, match="'prog'.*after\\(\\) needs a finite duration"):
        _run_program(prog)


def test_a_program_that_never_yields_is_stopped_by_the_watchdog():
    def spin(ctl):
        yield
        while True:
            pass
    with pytest.raises(ControlProgramError, match="'spin': a step ran for more than 0.2 s of wall time without "
                                                  "yielding") as info:
        _run_program(spin, program_timeout=0.2)
    assert info.value.recording is not None


def test_a_condition_that_never_returns_is_stopped_by_the_watchdog():
    def never():
        while True:
            pass

    def wait(ctl):
        yield
        yield ctl.until(never)
    with pytest.raises(ControlProgramError, match="'wait': its until\\(\\) condition ran for more than 0.2 s"):
        _run_program(wait, program_timeout=0.2)


def test_conflicting_equations_keep_the_recording_up_to_the_failure():
    def prog(ctl):
        yield ctl.after(0.02)
        ctl.add_equation("up", ctl.joint_acceleration("j0") == 1.0)
        ctl.add_equation("down", ctl.joint_acceleration("j0") == -1.0)
        yield
    with pytest.raises(InconsistentEquationsError, match="up.*down|down.*up") as info:
        _run_program(prog)
    rec = info.value.recording
    assert rec is not None and rec.t[-1] == pytest.approx(0.02) and len(rec) >= 20
    assert info.value.time == pytest.approx(0.02)


# ----------------------------------------------------------------- contact
@pytest.mark.parametrize("friction", [math.nan, "high"])
def test_contact_friction_must_be_a_finite_number(friction):
    from robots.definition import Scene
    from robots.shapes import sphere
    from sim.contact import enable_contacts
    s = Scene("drop")
    s.add(Body("ground", cuboid(2.0, 2.0, 0.1), density=1000.0), (0, 0, -0.05), fixed=True)
    s.add(Body("ball", sphere(0.1), density=1000.0), (0, 0, 0.5))
    built = s.build()
    sim = Simulator(built.mechanism, built.q0)
    with pytest.raises(ControlkitError, match=f"friction.*{friction}"):
        enable_contacts(sim, friction=friction)


def test_bodies_that_overlap_at_the_start_are_refused_by_name_and_depth():
    """Contacts begin where bodies touch: a box 5 mm into the ground, or two balls 2 mm into each
    other, is no contact state (it was simulated overlapping, with no impact); touching is fine."""
    from robots import scenes
    from sim.contact import enable_contacts
    cases = [([dict(name="box", box=(0.1, 0.1, 0.1), position=(0, 0, 0.045))], "ground/box by 5 mm"),
             ([dict(name="a", radius=0.05, position=(0, 0, 0.3)), dict(name="b", radius=0.05, position=(0.098, 0, 0.3))],
              "a/b by 2 mm")]
    for bodies, words in cases:
        b = scenes.free_bodies(bodies)
        sim = Simulator(b.mechanism, b.q0, b.v0)
        with pytest.raises(ModelError, match=f"overlap at the start: {words}"):
            enable_contacts(sim)
    touching = scenes.free_bodies([dict(name="box", box=(0.1, 0.1, 0.1), position=(0, 0, 0.05))])
    sim = Simulator(touching.mechanism, touching.q0, touching.v0)
    assert len(enable_contacts(sim).hinges) == 1  # resting on the ground from the start


# ---------------------------------------------------------------- recordings
def test_loading_a_file_that_is_not_a_recording_says_so(tmp_path):
    path = tmp_path / "notes.npz"
    path.write_text("not a recording")
    with pytest.raises(RecordingError, match="not a recording written by controlkit") as info:
        Recording.load(path)
    assert "pickle" not in str(info.value)


# --------------------------------------------------------------------- CLI
def _cli(capsys, *argv):
    code = main(list(argv))
    err = capsys.readouterr().err
    return code, err


def _one_clear_line(code, err, *words):
    assert code != 0
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0], lines[0]


def test_cli_replay_of_a_file_that_is_not_a_recording(capsys, tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("hello")
    _one_clear_line(*_cli(capsys, "replay", str(path), "--html", str(tmp_path / "x.html")), "not a recording")


def _script(tmp_path, body: str):
    path = tmp_path / "scenario.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_cli_run_of_a_script_with_a_syntax_error(capsys, tmp_path):
    path = _script(tmp_path, "def build(:\n    pass\n")
    _one_clear_line(*_cli(capsys, "run", path, "--quiet"), "syntax error at line 1")


def test_cli_run_of_a_script_whose_build_returns_nothing(capsys, tmp_path):
    path = _script(tmp_path, "def build():\n    pass\n")
    _one_clear_line(*_cli(capsys, "run", path, "--quiet"), "returned NoneType, not a sim.runner.Scenario")


def test_cli_integrator_for_a_demo_without_one(capsys):
    _one_clear_line(*_cli(capsys, "demo", "friction_block", "--integrator", "rk4", "--quiet"),
                    "--integrator", "friction_block")


def test_cli_a_text_where_a_number_is_expected(capsys):
    _one_clear_line(*_cli(capsys, "demo", "friction_block", "--set", "dt=abc", "--quiet"),
                    "--set dt='abc': expected a number")


def test_cli_a_set_value_the_build_cannot_use(capsys, tmp_path):
    path = _script(tmp_path, """
        def build(mass_error=None):
            return 1.0 + mass_error
    """)
    _one_clear_line(*_cli(capsys, "run", path, "--set", "mass_error=abc", "--quiet"),
                    "build(mass_error='abc') raised TypeError", "--set")


def test_cli_a_set_value_of_the_wrong_type_for_its_default_is_named(capsys, tmp_path):
    path = _script(tmp_path, """
        def build(mass_error: float = 0.0, steps: int | None = None):
            return 1.0 + mass_error
    """)
    _one_clear_line(*_cli(capsys, "run", path, "--set", "mass_error=abc", "--quiet"),
                    "--set mass_error='abc': expected a number (default 0.0)")
    _one_clear_line(*_cli(capsys, "run", path, "--set", "steps=many", "--quiet"),
                    "--set steps='many': expected a number or None")


@pytest.mark.parametrize("seconds, words", [("-1", ">= 0"), ("inf", "infinite duration")])
def test_cli_seconds_out_of_range(capsys, seconds, words):
    code, err = _cli(capsys, "demo", "friction_block", "--seconds", seconds, "--quiet")
    _one_clear_line(code, err, words)
    assert "Progress" not in err


def test_cli_an_unwritable_out_folder_is_refused_before_the_run(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    _one_clear_line(*_cli(capsys, "demo", "friction_block", "--out", str(blocker / "sub"), "--quiet"),
                    "cannot write to the output folder")


_FAILING = """
    import numpy as np
    import pinocchio as pin
    from controlkit.mechanism import Mechanism
    from sim.runner import Scenario
    from sim.simulator import Simulator

    def build():
        model = pin.Model()
        j = model.addJoint(0, pin.JointModelRY(), pin.SE3.Identity(), "j0")
        model.appendBodyToJoint(j, pin.Inertia(1.0, np.array([0, 0, -0.5]), np.eye(3) * 0.1), pin.SE3.Identity())
        sim = Simulator(Mechanism(model, name="pend"), np.array([0.3]))

        def fail(ctl):
            yield ctl.after(0.03)
            raise RuntimeError("motor driver fault")
        sim.add_program(fail)
        return Scenario("failing", "a run that fails at 30 ms", sim, 0.1)
"""


def test_cli_a_failing_run_writes_its_partial_recording_and_says_so(capsys, tmp_path):
    out = tmp_path / "out"
    code, err = _cli(capsys, "run", _script(tmp_path, _FAILING), "--out", str(out), "--quiet")
    assert code != 0 and "Traceback" not in err
    assert "motor driver fault" in err and "partial recording" not in err  # (--quiet: the error only)
    rec = Recording.load(out / "failing.npz")
    assert rec.t[-1] == pytest.approx(0.03) and len(rec) >= 30
    code, err = _cli(capsys, "run", _script(tmp_path, _FAILING), "--out", str(out))
    assert "wrote the partial recording" in err and "failing.npz" in err


_ELBOW_ONLY = """
    import numpy as np
    import pinocchio as pin
    from controllers import set_angle_with_pd
    from controlkit.mechanism import Mechanism
    from sim.runner import Scenario
    from sim.simulator import Simulator

    def build():
        model, parent = pin.Model(), 0
        for i in range(2):
            j = model.addJoint(parent, pin.JointModelRY(), pin.SE3(np.eye(3), np.array([0, 0, -float(i)])), f"j{i}")
            model.appendBodyToJoint(j, pin.Inertia(1.0, np.array([0, 0, -0.5]), np.eye(3) * 0.1), pin.SE3.Identity())
            parent = j
        sim = Simulator(Mechanism(model, name="double"), np.array([0.3, 0.2]))

        def elbow(ctl):
            set_angle_with_pd(ctl, "elbow", "j1", 0.5, 0.3)
            yield ctl.after(1.0)
        sim.add_program(elbow)
        return Scenario("double", "PD on the elbow only", sim, 0.2)
"""


def test_cli_warns_in_one_line_when_the_default_moves_an_uncommanded_joint(capsys, tmp_path):
    assert main(["run", _script(tmp_path, _ELBOW_ONLY)]) == 0
    warnings = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and "j0 (1.00)" in warnings[0] and "actuated=False" in warnings[0]


def test_torques_assigned_to_an_unactuated_chain_say_it_has_none():
    import robots
    from controlkit.quantities import ControlTorques

    b = robots.pendulum_chain(3)  # no actuated joints: ntau = 0
    sim = Simulator(b.mechanism, b.q0, b.v0, dt=1e-3)
    sim.equations.assign("tau", ControlTorques(b.mechanism), np.zeros(3))
    with pytest.raises(EquationError, match="'tau'.*0 components.*value has 3"):
        sim.run(0.01)
