"""The ``controlkit`` command: demos, users' scripts, model information, replays.

This is the top of the stack: the only core module that imports ``sim``,
``robots`` and ``controllers`` (lazily, inside the commands).
"""
from __future__ import annotations

import argparse
import ast
import inspect
import sys
from pathlib import Path

from .errors import ControlkitError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: what ``make demo`` runs: the richest demo that exists
DEFAULT_DEMOS = ("walking", "pendulum_block", "thesis_pendulum")


def _demos() -> dict[str, str]:
    """Demo name -> one-line description, from the example scripts that define ``build``."""
    out = {}
    if not EXAMPLES.is_dir():
        return out
    for path in sorted(EXAMPLES.glob("*.py")):
        tree = ast.parse(path.read_text())
        if any(isinstance(n, ast.FunctionDef) and n.name == "build" for n in tree.body):
            doc = ast.get_docstring(tree) or ""
            out[path.stem] = doc.strip().splitlines()[0] if doc.strip() else ""
    return out


def _default_demo(demos: dict[str, str]) -> str:
    for name in DEFAULT_DEMOS:
        if name in demos:
            return name
    raise ControlkitError("no demo found in " + str(EXAMPLES))


def _cmd_demo(args) -> int:
    demos = _demos()
    if args.default:
        args.name = _default_demo(demos)
    if not args.name:
        width = max(map(len, demos), default=0)
        for name, desc in demos.items():
            print(f"{name.ljust(width)}  {desc}")
        return 0
    if args.name not in demos:
        print(f"controlkit: unknown demo {args.name!r}; valid demos: {', '.join(demos)}", file=sys.stderr)
        return 2
    return _run_script(EXAMPLES / f"{args.name}.py", args)


def _cmd_run(args) -> int:
    return _run_script(Path(args.script), args)


def _run_script(path: Path, args) -> int:
    from sim.runner import build_scenario, load_script, run_scenario
    module = load_script(path)
    options = _build_options(module.build, args.set or [])
    if args.integrator:
        import inspect
        params = inspect.signature(module.build).parameters
        if "integrator" not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            raise ControlkitError(f"--integrator: {path.stem} does not let you choose its integrator (its build() "
                                  f"options: {', '.join(params) or '(none)'})")
        options["integrator"] = args.integrator
    scn = build_scenario(module, options)
    if not scn.model and args.out:
        print(f"note: scenario {scn.name!r} gives no model= (how to rebuild its mechanism): the recording "
              f"saved in {args.out} cannot be replayed later with `controlkit replay`; --html writes a "
              "replay now", file=sys.stderr)
    out = Path(args.out) if args.out else None
    folder = out if out is not None else Path(".")
    # --html / --plot without a file name write NAME.html / NAME.png into --out (or here)
    html = folder / f"{scn.name}.html" if args.html == "auto" else args.html
    plot = folder / f"{scn.name}.png" if args.plot == "auto" else args.plot
    if not args.quiet:
        _print_control_events(scn.sim)
    viewer = _live_viewer(scn, args) if args.live else None
    try:
        rec = run_scenario(scn, seconds=args.seconds, out=out, html=html, plot=plot, quiet=args.quiet)
        if viewer is not None:
            _serve_live(viewer, rec, args.live_seconds)
    finally:
        if viewer is not None:
            viewer.close()
    return 0


def _print_control_events(sim) -> None:
    """Print the programs' ``ctl.log`` lines and phase changes (control events) as they happen."""
    record = sim.recording.log_event

    def log_event(event):
        record(event)
        if event.kind == "control":
            extra = "  " + ", ".join(f"{k}={v}" for k, v in event.data.items()) if event.data else ""
            print(f"[{event.time:9.4f} s] {event.description}{extra}", flush=True)

    sim.recording.log_event = log_event


def _live_viewer(scn, args):
    """A live meshcat view of the scenario's robot, updated every 20 steps while it runs."""
    from .report import Viewer
    viewer = Viewer(scn.sim.mech)
    print(f"live view: {viewer.url()}", flush=True)
    scn.sim.control_phase.append(lambda s: viewer.display(s.q) if s.steps % 20 == 0 else None)
    return viewer


def _serve_live(viewer, rec, seconds: float | None) -> None:
    """Keep the live view up after the run, replaying it in real time, until Ctrl-C or ``seconds``
    of wall time."""
    import time
    end = None if seconds is None else time.monotonic() + seconds
    print(f"serving the live view at {viewer.url()} "
          + ("until Ctrl-C" if end is None else f"for {seconds:g} s (Ctrl-C stops)"), flush=True)
    idx = rec.frame_indices(30.0)
    try:
        while end is None or time.monotonic() < end:
            wall0, t0 = time.monotonic(), rec.t[idx[0]]
            for i in idx:
                wait = wall0 + (rec.t[i] - t0) - time.monotonic()
                if end is not None:
                    wait = min(wait, end - time.monotonic())
                if wait > 0:
                    time.sleep(wait)
                if end is not None and time.monotonic() >= end:
                    return
                viewer.display(rec.q[i])
            time.sleep(0.5 if end is None else max(0.0, min(0.5, end - time.monotonic())))
    except KeyboardInterrupt:
        print("live view stopped", flush=True)


def _build_options(build, settings: list[str]) -> dict:
    """``NAME=VALUE`` settings as keyword arguments of a script's ``build``: each VALUE a Python
    literal (``0.1``, ``True``, ``'rk4'``) or else the text itself; a name ``build`` does not take
    is an error naming the ones it does."""
    import inspect
    params = inspect.signature(build).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    known = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    options = {}
    for item in settings:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ControlkitError(f"--set {item!r}: expected NAME=VALUE (e.g. --set mass_error=0.1)")
        if name not in known and not takes_any:
            raise ControlkitError(f"--set {name}: not an option of this demo; its options: "
                                  f"{', '.join(known) if known else '(none)'}")
        try:
            options[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            options[name] = text  # (a bare word: a name, e.g. an integrator)
        if name in params:
            _check_like_default(name, options[name], params[name].default, params[name].annotation)
    return options


def _check_like_default(name: str, value, default, annotation) -> None:
    """A number where the option's default (or its annotation, e.g. ``int | None``) is a number,
    a flag where it is a flag: the demo's own checks then see the right type, and a typo gets a
    message naming the option."""
    def number(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool)
    text = annotation.__name__ if isinstance(annotation, type) else str(annotation)  # "int | None" either way
    kinds = {k.strip() for k in text.split("|")} if annotation is not inspect.Parameter.empty else set()
    if default is None and kinds and kinds <= {"int", "float", "None"} and not (value is None or number(value)):
        raise ControlkitError(f"--set {name}={value!r}: expected a number or None")
    if isinstance(default, bool) and not isinstance(value, bool):
        raise ControlkitError(f"--set {name}={value!r}: expected True or False (default {default!r})")
    if number(default) and not number(value):
        raise ControlkitError(f"--set {name}={value!r}: expected a number (default {default!r})")


def _cmd_info(args) -> int:
    import robots

    from .printing import format_equations
    name = args.model
    if name in robots.SEEDS:
        built = robots.SEEDS[name]()
    elif name in robots.robot_names():
        built = robots.load(name)
    else:
        valid = sorted(robots.SEEDS) + robots.robot_names()
        print(f"controlkit: unknown model {name!r}; valid models: {', '.join(valid)}", file=sys.stderr)
        return 2
    mech = getattr(built, "mechanism", built)
    m = mech.model
    print(f"{mech.name}: nq = {mech.nq}, nv = {mech.nv} (degrees of freedom), ntau = {mech.ntau} actuated")
    print(f"mass {sum(i.mass for i in m.inertias):.4g} kg, gravity {m.gravity.linear.tolist()} m/s^2")
    print("bodies:   " + ", ".join(mech.bodies()))
    print("joints:   " + ", ".join(f"{m.names[j]} ({m.joints[j].shortname().replace('JointModel', '')}, "
                                   f"{m.joints[j].nv} dof)" for j in range(1, m.njoints)))
    feats = mech.features()
    print("features: " + (", ".join(feats) if feats else
                          "none declared (a URDF model: programs name its link frames, listed as bodies)"))
    print()
    print(format_equations(mech))
    return 0


def _cmd_replay(args) -> int:
    from sim.runner import build_mechanism

    from .recording import Recording
    from .report import export_html
    rec = Recording.load(args.file)
    mech = build_mechanism(rec.meta.get("model", {}))
    html = Path(args.html) if args.html else Path(args.file).with_suffix(".html")
    path = export_html(mech, rec, html, fps=args.fps)
    print(f"wrote {path}")
    return 0


def _cmd_compare(args) -> int:
    from .studies.compare import DEFAULT_CLOCKS, compare
    options = {"mass_error": 0.1, "clocks": list(DEFAULT_CLOCKS)}
    for item in args.set or []:
        name, sep, text = item.partition("=")
        if not sep or name.strip() not in options:
            raise ControlkitError(f"--set {item!r}: compare takes --set mass_error=F or --set clocks=[S, ...]")
        options[name.strip()] = ast.literal_eval(text)
    mass_error = args.mass_error if args.mass_error is not None else options["mass_error"]
    seconds = args.seconds if args.seconds is not None else args.duration
    compare(args.task, clocks=args.clocks or options["clocks"], mass_error=mass_error, duration=seconds,
            out=args.out, quiet=args.quiet)
    return 0


def _cmd_sweep(args) -> int:
    from .studies.sweep import report, sweep
    if args.report:
        report(args.report, args.metric or (), quiet=args.quiet)
        return 0
    if not args.target or not args.out or not (args.set or args.samples > 1):
        raise ControlkitError("sweep: give a demo or script, --set NAME=SPEC (one or more) or --samples N, and "
                              "--out DIR (or --report DIR to redraw a finished sweep)")
    sweep(args.target, args.set or [], out=args.out, seconds=args.seconds, samples=args.samples, seed=args.seed,
          metrics=args.metric or (), scheduler=args.scheduler, workers=args.workers,
          keep_recordings=args.keep_recordings, quiet=args.quiet, connect_timeout=args.connect_timeout)
    return 0


def _sweep_parser(sub) -> None:
    s = sub.add_parser("sweep", help="run a demo or script over a grid or random samples of its options (Dask)",
                       description="Run a demo's or script's build() over a grid (NAME=START:STOP:COUNT, "
                                   "NAME=V1,V2,...) or random samples (NAME=uniform(LO,HI), normal(MEAN,SD), "
                                   "loguniform(LO,HI)) of its options on Dask; write DIR/results.csv and "
                                   "robustness maps. Finished runs are skipped when the sweep is run again.")
    s.add_argument("target", nargs="?", help="a demo name or a script defining build(**options)")
    s.add_argument("--set", action="append", metavar="NAME=SPEC", help="an option and its values (repeatable)")
    s.add_argument("--seconds", type=float, help="simulated time per run (s); default the demo's own")
    s.add_argument("--samples", type=int, default=1, help="runs per grid point, random options drawn anew")
    s.add_argument("--seed", type=int, default=0, help="seed of the first sample (sample k: seed + k)")
    s.add_argument("--metric", action="append", help="a metric to map (repeatable; default the first)")
    s.add_argument("--out", help="output folder (results.csv, maps, rows/ of finished runs)")
    s.add_argument("--scheduler", help="a running Dask scheduler, e.g. tcp://host:8786 (default: a local "
                                       "cluster, one worker process per core)")
    s.add_argument("--workers", type=int, help="worker processes of the local cluster (default one per core)")
    s.add_argument("--connect-timeout", type=float, default=10.0, help="seconds to wait for --scheduler")
    s.add_argument("--keep-recordings", action="store_true", help="write each run's recording to DIR/runs/")
    s.add_argument("--report", metavar="DIR", help="redraw the maps of a finished sweep in DIR")
    s.add_argument("--quiet", action="store_true", help="no progress bar and no printing")
    s.set_defaults(fn=_cmd_sweep)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="controlkit", description="Control programming for robots and bipeds.")
    sub = p.add_subparsers(dest="command", required=True)

    def run_options(sp):
        sp.add_argument("--seconds", type=float, help="simulated duration (s); default the demo's own")
        sp.add_argument("--set", action="append", metavar="NAME=VALUE",
                        help="an option of the demo's build() (repeatable), e.g. --set mass_error=0.1")
        sp.add_argument("--html", nargs="?", const="auto", help="write an offline HTML replay (default NAME.html)")
        sp.add_argument("--plot", nargs="?", const="auto", help="write the plot, PNG or SVG (default NAME.png)")
        sp.add_argument("--out", help="folder for the recording (NAME.npz) and for --html/--plot without a name")
        sp.add_argument("--live", action="store_true",
                        help="show a live meshcat view while running; it keeps serving until Ctrl-C")
        sp.add_argument("--live-seconds", type=float, metavar="N",
                        help="with --live: stop serving N s (wall time) after the run")
        sp.add_argument("--integrator", help="euler, semi_implicit_euler, rk4, abm4, dopri5 or dop853")
        sp.add_argument("--quiet", action="store_true",
                        help="no progress bar and no printing (the programs' log lines included)")

    d = sub.add_parser("demo", help="list the demos, or run one", description="List the demos, or run one.")
    d.add_argument("name", nargs="?", help="demo name (omit to list them)")
    d.add_argument("--default", action="store_true", help="run the main demo (what `make demo` runs)")
    run_options(d)
    d.set_defaults(fn=_cmd_demo)
    r = sub.add_parser("run", help="run a scenario script (defining build())", description="Run a user's script.")
    r.add_argument("script", help="a Python file defining build(**options) -> sim.runner.Scenario")
    run_options(r)
    r.set_defaults(fn=_cmd_run)
    i = sub.add_parser("info", help="print a model's bodies, joints, features and equations",
                       description="Print a model's bodies, joints, DOF, features and equation set.")
    i.add_argument("model", help="a seed model (e.g. biped, four_bar) or an example-robot-data robot (e.g. talos)")
    i.set_defaults(fn=_cmd_info)
    rp = sub.add_parser("replay", help="write an HTML replay of a saved recording",
                        description="Write an offline HTML replay of a saved recording (.npz).")
    rp.add_argument("file", help="recording written by a run (.npz)")
    rp.add_argument("--html", help="output HTML file (default: the recording's name with .html)")
    rp.add_argument("--fps", type=float, default=30.0, help="frames per simulated second")
    rp.set_defaults(fn=_cmd_replay)
    c = sub.add_parser("compare", help="one task under inverse, computed-torque and joint-PD control",
                       description="Run one task under inverse dynamic control, computed torque at several "
                                   "clocks (with and without model error) and joint PD; print a table, write plots.")
    c.add_argument("task", help="redundant_arm, panda_circle, ur5_circle or biped_stance")
    c.add_argument("--seconds", type=float, help="simulated duration (s); default the task's own")
    c.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="mass_error=F (relative mass error of the model-error controller, default 0.1) "
                        "or clocks=[S, ...] (computed-torque controller periods, s)")
    c.add_argument("--out", default="out", help="folder for the overlay plot (default out)")
    c.add_argument("--quiet", action="store_true", help="print nothing")
    # the names before the options were made one set across the subcommands
    c.add_argument("--duration", type=float, help=argparse.SUPPRESS)
    c.add_argument("--mass-error", type=float, help=argparse.SUPPRESS)
    c.add_argument("--clocks", type=float, nargs="+", help=argparse.SUPPRESS)
    c.set_defaults(fn=_cmd_compare)
    _sweep_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``controlkit`` command."""
    args = _parser().parse_args(argv)
    try:
        return args.fn(args)
    except ControlkitError as exc:
        print(f"controlkit: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
