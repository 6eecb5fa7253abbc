"""The end of a contact update: the impulse that stops the residual slip of sticking contacts
(:func:`settle`), and Coulomb's law passed again after it."""
from __future__ import annotations

import numpy as np

from controlkit.errors import ControlkitError, InconsistentEquationsError
from controlkit.solver import require_consistent

from ..stabilization import project_velocities
from . import mode_pass, support_set
from .hinge import Mode

#: how many times an update settles sticking hinges that slip (:func:`settle`): each settle's
#: impulse may stop a slide, which then sticks and is settled in the next round
SETTLE_ROUNDS = 3


def still_slipping(src, sim) -> list:
    """The contact source's sticking (uncontrolled) hinges whose stick rows still see a slip at the
    simulator's velocity: a stick begun at up to ``stick_velocity``, an edge or face still turning
    about its normal."""
    return [h for h in src.hinges.values() if h.mode == Mode.STICK and not h.controlled and h.slips(sim.v)]


def settle(src, sim) -> None:
    """Hold what the hinges of ``src`` now hold: the velocity's M-weighted projection onto ``J v = 0``
    of every held row (an impulse, so kinetic energy can only drop).

    Done when a sticking hinge still slips (``src._stuck``): it begins to stick while its points
    slip at up to ``stick_velocity`` (and an edge or face may still turn about its normal); left to
    the rows' velocity feedback, that slip is taken out over ~1/kv s by the static friction forces,
    which do work on the bodies: a box sticking while it turned at 0.05 rad/s gained 0.15 W.
    (Every held row takes part, so the others stay held.) The held rows are then solved once:
    nearly dependent supports that disagree at the new velocity give up a point, as at a
    support choice. The impulse changes the slips the friction modes were chosen on, so
    Coulomb's law is passed again (:func:`_repass_modes`), and a stick begun there is settled too."""
    for _ in range(SETTLE_ROUNDS):
        if not src._stuck or not _project(src, sim):
            return
        _repass_modes(src, sim)


def _project(src, sim) -> bool:
    """One projection of :func:`settle`; False when no held row moved (v unchanged)."""
    mech = sim.mech
    cons = list(mech.constraints.values())
    mech.set_state(sim.q, sim.v, check=False)
    J = np.vstack([c.jacobian() for c in cons if c.size])
    if not len(J) or float(np.abs(J @ sim.v).max()) == 0.0:
        return False
    sim.v = project_velocities(mech, cons, sim.q, sim.v)
    mech.set_state(sim.q, sim.v, check=False)
    sim.set_state()
    try:
        require_consistent(sim.solve_now())
    except InconsistentEquationsError:
        # the held rows' velocity terms changed with v: nearly dependent supports (a box squeezed
        # by four fingers on a table) can disagree at the new velocity; a point gives way as at a
        # support choice (support_set.release_for_consistency)
        if not support_set.release_for_consistency(src, sim):
            raise
    except ControlkitError:
        pass  # (a probe of consistency only: any other failure is the simulator's next solve's to report)
    return True


def _repass_modes(src, sim) -> None:
    """Coulomb's law again after :func:`_project`'s impulse: a slide it turned follows its new slip,
    one it stopped sticks, a stick its new forces break slides (the support choice again after a
    change, as at the update); ``src._stuck`` is what a new stick leaves to settle.

    Without it a slide the impulse reversed kept its friction along the old direction with its
    guard already below 0, where no crossing can fire: it drove the slip it should oppose (two
    boxes, one pivoting on the other's edge: +2.6e-4 of the scene's energy in 0.3 s)."""
    mode_pass.choose_modes(src, sim, mode_pass.modes_of(src))
    src._stuck = still_slipping(src, sim)
    sim.set_state()
