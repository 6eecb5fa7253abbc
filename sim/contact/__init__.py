"""Continuous contact and Coulomb friction: the thesis' temporary hinges (sections 5.3, 5.4).

Contacts that last are modelled as **contact hinges**, bilateral constraints that an
event handler adds, changes and removes as the contact relationship changes:

- A hinge joins body A (a box or a sphere) to body B (a half-space, the world, or a box
  whose face is the contact surface). Its **support points** are material points of A,
  taken from coal's contact patch (the vertices of the contact polygon: a face on a plane
  gives four corners, an edge two points, a vertex one; a sphere one point). Each point
  has a normal row ``n . (v_A(x) - v_B(x)) = 0`` with ``n`` B's outward surface normal
  (fixed in B, from B towards A); its multiplier is the normal force (N, > 0 pressing).
- **Sticking** hinges add two tangential rows at an anchor (the support points' centroid
  at stick onset, fixed in A and B) and, for edge and face contacts, a torsion row about
  ``n``; their multipliers are the friction force (N) and torque (N m). Coulomb's static
  law ``|f_t| <= mu_s f_n`` is checked on the pair's totals.
- **Sliding** hinges have normal rows only and carry kinetic friction: each normal force
  acts along ``n - mu_k u`` (u the unit sliding direction of A relative to B), through
  :meth:`ContactHinge.force_jacobian`.

The **support set** is found at every contact event by a QP on the normal forces, never by
enumerating subsets: with the candidate points' normal rows removed, the separating
accelerations ``s = s0 + A lam`` (``s0`` at zero normal force, one column per unit force,
each from a full solve of the control statements, so hinges, control equations and
inverse dynamic control are all included) give the LCP ``lam >= 0, s >= 0, lam . s = 0``,
solved as ``min 1/2 lam^T (A_sym + eps I) lam + s0^T lam, lam >= 0`` by `controlkit.qp.solve_qp` (exact
for forward dynamics, where A is the symmetric Delassus matrix). The small regularization
picks the least-squares forces among equivalent ones, so redundant points (four corners of
a box on a table) share the load instead of breaking the solve. Contacts between the same two
bodies in one plane (a plank across two blocks, a stool's four legs on the ground) share one
support: the first one's held points carry them all (:class:`~sim.contact.hinge_support.HingeSupport`).
A point whose normal row the held normal rows of other contacts already hold (a plank across two
free blocks: the second block's points) is *linked*: no row of its own, its share of the load
taken over by the held rows, one support margin for all the contacts involved
(:class:`~sim.contact.linked.LinkedSupport`).

:class:`ContactSource` is the event source (velocity kind) that watches, for every
pair of the collision world:

- pairs without a hinge: the signed distance (an impact, or a new contact when it comes
  to rest within ``rest_velocity``);
- support points: the normal force (tensile -> the point leaves the support);
- sticking pairs: ``mu_s f_n - |f_t|`` (slip onset); sliding pairs: the sliding velocity
  along its direction at slip onset (it stops: stick again, or slide the other way);
- the other vertices of A: their gap to B's surface plus ``penetration_tolerance``
  (a vertex comes down: an impact, the contact region grows);
- support points on a finite box B: their margin inside B's face (the body slides off);
- hinged pairs: their signed distance, as a safety net for crossings no vertex shows (an edge
  of B cutting into A's face): it fires when the penetration that the support points do not show
  (theirs is their rows' error, corrected by the stabilization) grows by ``penetration_tolerance``.

A support point where an edge of one face crosses an edge of the other belongs to neither body
once the edges slide along each other; :meth:`ContactSource.follow_crossings` (run after every
step) moves it to the current crossing. An edge crossing the other's edge at an angle (not both
in the contact plane) has the edges' own row instead (:func:`_edge_rows`: their distance along
``e_A x e_B``), watched for the crossing leaving either edge.

Under inverse dynamic control a hinge on an actuated body (a robot's foot) is **controlled**:
it keeps every candidate point and hands the solve ``lam_n >= 0`` and a friction pyramid as
inequalities on its forces (:meth:`ContactHinge.force_inequalities`), so torques and
compressive contact forces are chosen together; its force and slip guards are not needed.

Every change is logged: ``contact_made``, ``contact_changed`` (region face/edge/vertex,
support points), ``contact_broken``, ``slip``, ``stick``, ``impact``. What touches what at the
last solve: :func:`contacts_of` (``sim.contact.contacts_of(sim, body)``).
"""
from controlkit.friction import POINT_SLIDE_SPEED, FrictionLaw, FrictionTable

from .bodies import _bodies as _bodies
from .geometry import Region, SupportPoint
from .geometry import _Geometry as _Geometry
from .hinge import ContactHinge, Mode
from .query import ContactForceProbe, ContactState, contacts_of
from .rows import _edge_geometry as _edge_geometry
from .rows import _edge_rows as _edge_rows
from .rows import _rows_on_world as _rows_on_world
from .shape_points import _box_edges as _box_edges
from .source import ContactSource, enable_contacts

# (the private helpers above are re-exported for the tests that check them directly)
__all__ = ["ContactForceProbe", "ContactHinge", "ContactSource", "ContactState", "FrictionLaw", "FrictionTable", "Mode",
           "POINT_SLIDE_SPEED", "Region", "SupportPoint", "contacts_of", "enable_contacts"]
