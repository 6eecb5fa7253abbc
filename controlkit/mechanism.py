"""A simulated mechanism: a Pinocchio model, its geometry, its actuation and its state.

:class:`Mechanism` owns one ``pinocchio.Data`` and caches the kernels evaluated at
the current state (kinematics, Jacobians, drift accelerations, mass matrix,
nonlinear effects) until the state changes. Everything at the acceleration level
in controlkit (quantities, constraints, the equation set) reads from this cache,
so one derivative evaluation runs each Pinocchio kernel once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import pinocchio as pin

from .cache import Cache
from .errors import ModelError, StateError, UnknownNameError

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


#: the entries of :attr:`Mechanism.cache`: key -> (who keeps it) what it holds; what invalidates it
CACHE_ENTRIES: dict[str, str] = {
    "scratch": "(controlkit.singular) a second Mechanism on the same model for trial states; never "
               "invalidated (the model does not change)",
    "full_rank_refs": "(controlkit.singular) constraint signatures -> the last full-rank Jacobian reference; each "
                      "entry is checked against the current rows before use; cleared above 256 entries",
    "benign_redundancy": "(controlkit.singular) (signature, rank) of constraint sets found redundant but not "
                         "critical; never invalidated (a property of the constraint set)",
    "solver_factors": "(controlkit.solver, controlkit.equations) factorizations reused across solves, each "
                      "matched by the identities of the arrays it was computed from",
    "constraint_plan": "(controlkit.equations) the active constraints' plan; rebuilt when the constraints or "
                       "their sizes change (its key)",
    "free_layout": "(controlkit.equations) the unknowns' layout while nothing is constrained; rebuilt when "
                   "nv or ntau differ",
    "contact_bodies": "(sim.contact.bodies) (state version, BodyTable: the bodies by joint id and their arrays); "
                      "stale when the state version moves",
    "contact_world_body": "(sim.contact) the world body for contact queries; never invalidated",
}


@dataclass
class KernelTimes:
    """Accumulated wall time (s) per group of work, for benchmarks and run statistics."""

    pinocchio: float = 0.0
    assembly: float = 0.0
    solve: float = 0.0
    calls: int = 0

    @property
    def total(self) -> float:
        """Kernels, assembly and solves together (s)."""
        return self.pinocchio + self.assembly + self.solve


class Mechanism:
    """A Pinocchio model with geometry, actuated joints, model constraints and a state.

    Args:
        model: the kinematic tree (``pinocchio.Model``); gravity is ``model.gravity`` (m/s^2).
        collision_model: collision ``GeometryModel`` (coal shapes) or None.
        visual_model: visual ``GeometryModel`` or None.
        name: a label used in messages and reports.
        actuated: names of the joints that carry control torques; default every joint
            except free-flyers.
        constraints: model constraints that are always active (loop closures).
        materials: free-form material tags per geometry name (used by contact).

    The state is read through :attr:`q`, :attr:`v` (read-only views) and :attr:`state_version`
    (a counter that moves whenever the state changes: a key for caches of state functions).
    Other modules keep their caches in :attr:`cache` under the keys of :data:`CACHE_ENTRIES`.
    """

    def __init__(
        self,
        model: pin.Model,
        collision_model: pin.GeometryModel | None = None,
        visual_model: pin.GeometryModel | None = None,
        *,
        name: str = "mechanism",
        actuated: Sequence[str] | None = None,
        constraints: Iterable = (),
        materials: dict[str, str] | None = None,
    ):
        if not isinstance(model, pin.Model):
            raise ModelError(f"Mechanism {name!r}: expected a pinocchio.Model, got {type(model).__name__}")
        self.model = model
        self.data = model.createData()
        self.collision_model = collision_model if collision_model is not None else pin.GeometryModel()
        self.visual_model = visual_model if visual_model is not None else pin.GeometryModel()
        self.name = name
        self.materials = dict(materials or {})
        self.nq, self.nv = model.nq, model.nv
        self._set_actuation(actuated)
        self.constraints: dict[str, object] = {}
        self.times = KernelTimes()
        self._q = pin.neutral(model)
        self._v = np.zeros(self.nv)
        self._version = 0
        self._kin_version = -1
        self._dyn_version = -1
        self._crba_version = -1
        self._minv_version = -1
        self._minv = None
        self._a0 = np.zeros(self.nv)
        self.solution = None  # the last solve's unknowns (controlkit.solver.Solution)
        self.problem = None  # the last assembled problem (controlkit.equations.Problem)
        #: other modules' caches, under the keys declared in CACHE_ENTRIES
        self.cache = Cache(CACHE_ENTRIES, "controlkit.mechanism.CACHE_ENTRIES")
        for c in constraints:  # (after the state: binding a world-anchored point reads the kinematics)
            self.add_constraint(c)

    # ----------------------------------------------------------------- naming
    def _set_actuation(self, actuated: Sequence[str] | None) -> None:
        names = list(self.model.names)[1:]
        if actuated is None:
            actuated = [n for n in names if self.model.joints[self.model.getJointId(n)].shortname() != "JointModelFreeFlyer"]
        idx: list[int] = []
        for n in actuated:
            j = self.joint_id(n)
            jm = self.model.joints[j]
            idx.extend(range(jm.idx_v, jm.idx_v + jm.nv))
        self.actuated_joints = list(actuated)
        self.tau_index = np.array(idx, dtype=int)
        self.ntau = len(idx)
        S = np.zeros((self.ntau, self.nv))
        S[np.arange(self.ntau), self.tau_index] = 1.0
        self.S = S

    def joint_id(self, name: str) -> int:
        """Pinocchio joint id of a joint name; raises UnknownNameError."""
        if not self.model.existJointName(name) or name == "universe":
            raise UnknownNameError("joint", name, list(self.model.names)[1:], f"mechanism {self.name!r}")
        return self.model.getJointId(name)

    def frame_id(self, name: str) -> int:
        """Pinocchio frame id of a frame, body or feature name; raises UnknownNameError."""
        # remembered: Pinocchio searches the frames' names one by one (a program asking for a
        # point every step asks again); frames are only ever appended, so an id stays valid
        ids = self.__dict__.setdefault("_frame_ids", {})
        fid = ids.get(name)
        if fid is None:
            if not self.model.existFrame(name):
                raise UnknownNameError("frame", name, [f.name for f in self.model.frames], f"mechanism {self.name!r}")
            fid = ids[name] = self.model.getFrameId(name)
        return fid

    def joint_v_slice(self, name: str) -> slice:
        """Slice of v (and a) belonging to a joint."""
        jm = self.model.joints[self.joint_id(name)]
        return slice(jm.idx_v, jm.idx_v + jm.nv)

    def joint_q_slice(self, name: str) -> slice:
        """Slice of q belonging to a joint."""
        jm = self.model.joints[self.joint_id(name)]
        return slice(jm.idx_q, jm.idx_q + jm.nq)

    def tau_columns(self, joint: str) -> np.ndarray:
        """Indices into the control-torque vector for an actuated joint."""
        vs = self.joint_v_slice(joint)
        cols = [k for k, i in enumerate(self.tau_index) if vs.start <= i < vs.stop]
        if not cols:
            raise UnknownNameError("actuated joint", joint, self.actuated_joints, f"mechanism {self.name!r}")
        return np.array(cols, dtype=int)

    # ------------------------------------------------------------- constraints
    def add_constraint(self, constraint) -> None:
        """Activate a constraint (loop closure, weld, lock, contact hinge) by its name."""
        if constraint.name in self.constraints:
            raise ModelError(f"mechanism {self.name!r} already has a constraint named {constraint.name!r}")
        constraint.bind(self)
        self.constraints[constraint.name] = constraint

    def remove_constraint(self, name: str):
        """Deactivate and return a constraint by name."""
        if name not in self.constraints:
            raise UnknownNameError("constraint", name, self.constraints, f"mechanism {self.name!r}")
        return self.constraints.pop(name)

    # ------------------------------------------------------------------ state
    @property
    def q(self) -> np.ndarray:
        """Configuration (nq,): a read-only view of the state (copy it to change it)."""
        q = self._q.view()
        q.flags.writeable = False
        return q

    @property
    def v(self) -> np.ndarray:
        """Generalized velocity (nv,): a read-only view of the state (copy it to change it)."""
        v = self._v.view()
        v.flags.writeable = False
        return v

    @property
    def state_version(self) -> int:
        """A counter that moves whenever the state changes (:meth:`set_state` with other values,
        :meth:`kernels_overwritten`): caches of functions of the state compare it."""
        return self._version

    def state_is(self, q: np.ndarray, v: np.ndarray) -> bool:
        """Whether the state was set from these very arrays (identity, not values): a caller that
        keeps its own state arrays sets them again only when they are not the mechanism's."""
        return self._q is q and self._v is v

    def check_q(self, q, where: str = "q") -> np.ndarray:
        """Validate a configuration vector's size and finiteness."""
        q = np.asarray(q, dtype=float).reshape(-1)
        if q.shape != (self.nq,):
            raise StateError(f"{where}: mechanism {self.name!r} has nq = {self.nq}, got a vector of size {q.size}")
        if not np.all(np.isfinite(q)):
            raise StateError(f"{where}: configuration of {self.name!r} is not finite: {q}")
        for name, sl in self._unit_blocks():
            n = float(np.linalg.norm(q[sl]))
            if not n > 1e-6:
                raise StateError(f"{where}: joint {name!r} of {self.name!r} has the zero quaternion (or unit complex) "
                                 f"{q[sl].tolist()} in q[{sl.start}:{sl.stop}]; give a unit one, e.g. "
                                 f"{self.neutral()[sl].tolist()} (no rotation)")
        return q

    def _unit_blocks(self) -> list[tuple[str, slice]]:
        """(joint name, slice of q) of the coordinates that must have unit norm: the quaternions of
        free-flyers and spherical joints, the (cos, sin) of unbounded revolute joints."""
        blocks = self.__dict__.get("_unit_q")
        if blocks is None:
            blocks = []
            for j in range(1, self.model.njoints):
                jm = self.model.joints[j]
                kind = jm.shortname()
                if kind == "JointModelFreeFlyer":
                    blocks.append((self.model.names[j], slice(jm.idx_q + 3, jm.idx_q + 7)))
                elif kind in ("JointModelSpherical", "JointModelSphericalZYX") and jm.nq == 4:
                    blocks.append((self.model.names[j], slice(jm.idx_q, jm.idx_q + 4)))
                elif kind.startswith("JointModelRUB") or kind == "JointModelRevoluteUnboundedUnaligned":
                    blocks.append((self.model.names[j], slice(jm.idx_q, jm.idx_q + 2)))
            self._unit_q = blocks
        return blocks

    def check_v(self, v, where: str = "v") -> np.ndarray:
        """Validate a velocity vector's size and finiteness."""
        v = np.asarray(v, dtype=float).reshape(-1)
        if v.shape != (self.nv,):
            raise StateError(f"{where}: mechanism {self.name!r} has nv = {self.nv}, got a vector of size {v.size}")
        if not np.all(np.isfinite(v)):
            raise StateError(f"{where}: velocity of {self.name!r} is not finite: {v}")
        return v

    def set_state(self, q, v=None, *, check: bool = True) -> None:
        """Set the state (q (nq,), v (nv,) in SI units); invalidates cached kernels when it changed.

        The same state set again (equal values, e.g. the simulator solving again at a step's end
        after a controller changed its torques) keeps the kernels, the contact rows and every
        other cache keyed by the state's version."""
        q = self.check_q(q) if check else q
        if v is None:
            v = np.zeros(self.nv)
        v = self.check_v(v) if check else v
        self._q, self._v = q, v
        # the values themselves, not the arrays: a caller may change an array in place
        key = (q.tobytes(), v.tobytes())
        if key == self._seen:
            return
        self._seen = key
        self._version += 1

    _seen = None
    #: (state version, id of the equation set, its version) of ``solution``: what it was solved for
    solved_for: tuple = (-1, 0, -1)

    def solved(self, eqs) -> bool:
        """Whether ``solution`` is the solve of these statements at the current state."""
        return self.solved_for == (self._version, id(eqs), eqs.version)

    def forget_solution(self) -> None:
        """The statements' terms changed with neither the state nor the equation set's version (a
        contact's friction leaving its slide's onset between two steps): ``solution`` no longer
        stands for them, and :meth:`solved` says so until the next solve."""
        self.solved_for = (-1, 0, -1)

    def kernels_overwritten(self) -> None:
        """A kernel was run on ``data`` directly (e.g. ``aba``): everything cached at this state
        (kinematics, mass matrix, factor, contact rows) is recomputed on its next use."""
        self._version += 1

    # ---------------------------------------------------------------- kernels
    def kinematics(self) -> pin.Data:
        """Placements, velocities, drift accelerations (a = 0) and Jacobians at the state."""
        if self._kin_version != self._version:
            m, d = self.model, self.data
            pin.forwardKinematics(m, d, self._q, self._v, self._a0)
            pin.computeJointJacobians(m, d)
            pin.updateFramePlacements(m, d)
            self._kin_version = self._version
        return self.data

    def dynamics(self) -> tuple[np.ndarray, np.ndarray]:
        """Mass matrix M (nv, nv, kg, kg m, kg m^2) and nonlinear effects h (nv,) at the state."""
        return self.mass_matrix(), self.bias_forces()

    def mass_matrix(self) -> np.ndarray:
        """Mass matrix M (nv, nv) (kg, kg m, kg m^2) at the state (a view of the data: valid until it changes)."""
        if self._crba_version != self._version:
            pin.crba(self.model, self.data, self._q)  # Pinocchio >= 3 fills both triangles of data.M
            self._crba_version = self._version
        return self.data.M

    def bias_forces(self) -> np.ndarray:
        """Nonlinear effects h (nv,) (N, N m): Coriolis, centrifugal and gravity terms at the state.

        Apart from :meth:`mass_matrix`: the solves take ``M^-1`` (:meth:`mass_inverse`) and h, and
        never M itself."""
        if self._dyn_version != self._version:
            pin.nonLinearEffects(self.model, self.data, self._q, self._v)
            self._dyn_version = self._version
        return self.data.nle

    def mass_inverse(self) -> np.ndarray:
        """M^-1 (nv, nv) at the state (1/kg, 1/(kg m^2)), symmetric; valid until the state changes.

        Pinocchio's recursive algorithm (computeMinverse), O(nv^2): on small trees it costs less
        than one triangular solve with the factor (a 22-dof biped: 3 us against 4 us per solve),
        and a block of right-hand sides is then one product."""
        if self._minv_version != self._version:
            self._minv = pin.computeMinverse(self.model, self.data, self._q)  # (a new array)
            self._minv_version = self._version
        return self._minv

    def mass_solve(self, b: np.ndarray) -> np.ndarray:
        """M^-1 b at the state, b (nv,) or (nv, k): a product with :meth:`mass_inverse`."""
        return self.mass_inverse().dot(b)

    def frame_placement(self, frame: int | str) -> pin.SE3:
        """World placement of a frame (a name, e.g. ``"tool0"``, or a Pinocchio frame id) at the
        state set by :meth:`set_state` (m, world frame)."""
        fid = self.frame_id(frame) if isinstance(frame, str) else frame
        return self.kinematics().oMf[fid]

    def frame_jacobian(self, fid: int) -> np.ndarray:
        """6 x nv Jacobian of a frame, LOCAL_WORLD_ALIGNED (linear rows of the frame origin)."""
        self.kinematics()
        J = pin.getFrameJacobian(self.model, self.data, fid, LWA)
        return J if J.ndim == 2 else J.reshape(6, 1)  # (a one-dof model's comes as a vector)

    def frame_velocity(self, fid: int) -> pin.Motion:
        """Spatial velocity of a frame, LOCAL_WORLD_ALIGNED (m/s, rad/s)."""
        self.kinematics()
        return pin.getFrameVelocity(self.model, self.data, fid, LWA)

    def frame_drift(self, fid: int) -> np.ndarray:
        """Classical acceleration of a frame at a = 0 (the ``Jdot v`` term), (6,), LWA."""
        self.kinematics()
        return pin.getFrameClassicalAcceleration(self.model, self.data, fid, LWA).vector

    # ------------------------------------------------------------- utilities
    def integrate(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """q (+) dq on the configuration Lie group."""
        return pin.integrate(self.model, q, dq)

    def difference(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        """Tangent vector dq with q0 (+) dq = q1."""
        return pin.difference(self.model, q0, q1)

    def neutral(self) -> np.ndarray:
        """The model's neutral configuration."""
        return pin.neutral(self.model)

    def joint_shares(self, V: np.ndarray) -> list[tuple[str, float]]:
        """Joints taking part in the motions spanned by the orthonormal V (nv, k), with their share
        in [0, 1] (the norm of their rows of V), largest first; shares below 0.2 left out."""
        model = self.model
        out = []
        for j in range(1, model.njoints):
            jm = model.joints[j]
            w = float(np.linalg.norm(V[jm.idx_v:jm.idx_v + jm.nv]))
            if w >= 0.2:
                out.append((model.names[j], w))
        return sorted(out, key=lambda x: -x[1])

    def kinetic_energy(self) -> float:
        """Kinetic energy (J) at the state."""
        M, _ = self.dynamics()
        return 0.5 * float(self._v @ M @ self._v)

    def potential_energy(self) -> float:
        """Gravitational potential energy (J) at the state, zero at the world origin."""
        e = float(pin.computePotentialEnergy(self.model, self.data, self._q))
        self._kin_version = -1  # the kernel reran forward kinematics without v
        return e

    def energy(self) -> float:
        """Total mechanical energy (J)."""
        return self.kinetic_energy() + self.potential_energy()

    def bodies(self) -> list[str]:
        """Names of the bodies (BODY frames)."""
        return [f.name for f in self.model.frames if f.type == pin.FrameType.BODY]

    def features(self) -> list[str]:
        """Names of the operational frames (features)."""
        return [f.name for f in self.model.frames if f.type == pin.FrameType.OP_FRAME]

    def __repr__(self) -> str:
        return f"Mechanism({self.name!r}, nq={self.nq}, nv={self.nv}, ntau={self.ntau}, constraints={list(self.constraints)})"
