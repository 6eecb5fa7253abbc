"""A variational integrator: the midpoint discrete Lagrangian (seed 001, section VI).

The action is discretised directly. With ``L(q, v) = 1/2 v^T M(q) v - V(q)`` (V: the model's
gravity) and the step from q_k to q_{k+1} = q_k (+) xi (``pin.integrate``; on a Lie group the
curve ``q_k (+) s xi / h`` has the constant velocity ``xi / h``), the midpoint rule is

    L_d(q_k, q_{k+1}) = h L(q_m, w),    q_m = q_k (+) xi / 2,   w = xi / h.

The discrete Legendre transforms give the discrete momenta

    p_k^-     = -D_1 L_d(q_k, q_{k+1}) - f_d^-,      p_{k+1}^+ = D_2 L_d(q_k, q_{k+1}) + f_d^+,

and the discrete Euler-Lagrange equations (DEL, eq. 28-29) ask ``p_k^+ = p_k^-``: the momentum
that leaves a step is the one the next step starts from. For flat coordinates

    M(q_m) w - h/2 (dL/dq(q_m, w) + F) = p_k,       p_{k+1} = M(q_m) w + h/2 (dL/dq(q_m, w) + F),

and on Lie groups the same with Pinocchio's ``dIntegrate`` / ``dDifference`` transporting the
covectors. ``dL/dq = 1/2 (d(M w)/dq)^T w - g(q)``: the kinetic part from Pinocchio's RNEA
derivatives on the gravity-free model (``d rnea(q, 0, w)/dq = d(M w)/dq``), g the generalized
gravity. F (N, N m) is every generalized force the equation set adds (control torques, contact and
constraint forces, external forces), ``F = rnea(q_m, w, a(t_m, q_m, w))`` from one derivative
evaluation of the simulated system at the midpoint (the forced DEL with midpoint forces
``f_d^+- = h/2 F``). Each step solves its DEL for xi by Newton iterations whose matrix is
``M(q_m)/h + (D - D^T)/2`` (D = d(M w)/dq), exact up to the O(h) second derivatives of the energy,
so the iteration contracts by O(h) per step; it stops at round-off.

**Holonomic constraints** (the mechanism's active constraints, when the system belongs to a
``Simulator``): the step also holds ``phi(q_{k+1}) = 0`` with a discrete constraint impulse
``G(q_k)^T mu`` added to the DEL (SHAKE), and the momentum leaving the step is projected so that
``G(q_{k+1}) M^-1 p_{k+1} = 0`` (RATTLE). The continuous constraint forces of the equation set at
the midpoint are part of F; mu is what keeps the configuration on the constraint manifold exactly.

**State and impacts.** The simulator's state is (q, v); this integrator's state is (q, p). It
keeps the momentum it returned and starts the next step from it when handed back the very (q, v)
it produced; otherwise it starts from the continuous Legendre transform ``p = M(q) v``. An impact
handler's reset ``v+ = v- + M^-1 J^T Lambda`` is therefore the reset map applied to the discrete
momentum at the isolated impact time, ``p+ = p- + J^T Lambda`` (eq. 14 and 30).

Options: ``tolerance`` (the DEL's residual relative to its terms' size, default 1e-11; iterations go
on while the residual still halves, so it usually ends at round-off), ``max_iterations``. A system
with ``conservative = True`` (an attribute) is taken to add no forces (F = 0: no evaluation per
iteration). The constraints are found through the system's owner: ``system.accel_fn.__self__.mech``
(a ``Simulator``'s system); a bare :class:`~sim.integrators.PinocchioSystem` has none.
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import scipy.linalg as sla

from .integrators import Integrator, IntegratorError, Step, _check_h, _hermite_interp, _is_flat

__all__ = ["VariationalMidpoint"]


class _Kernels:
    """Pinocchio data for one model: the model, a gravity-free copy, their data."""

    def __init__(self, model: pin.Model):
        self.model = model
        self.data = model.createData()
        self.free = pin.Model(model)
        self.free.gravity = pin.Motion.Zero()
        self.free_data = self.free.createData()
        self.nv = model.nv
        self.zero = np.zeros(model.nv)
        self.flat = _is_flat(model)
        self._lower = np.tril_indices(model.nv, -1)

    def _sym(self, upper: np.ndarray) -> np.ndarray:
        """The symmetric matrix whose upper triangle Pinocchio filled."""
        M = upper.copy()
        M[self._lower] = M.T[self._lower]
        return M

    def mass(self, q) -> np.ndarray:
        """M(q) (nv, nv)."""
        return self._sym(pin.crba(self.model, self.data, q))

    def lagrangian_terms(self, q, w):
        """M(q) (nv, nv), D = d(M w)/dq (nv, nv), dL/dq (nv,) at (q, w)."""
        pin.computeRNEADerivatives(self.free, self.free_data, q, self.zero, w)
        D = self.free_data.dtau_dq.copy()
        M = self._sym(self.free_data.M)
        g = pin.computeGeneralizedGravity(self.model, self.data, q)
        return M, D, 0.5 * D.T @ w - g

    def force(self, system, t, q, w) -> tuple[np.ndarray, int]:
        """F = rnea(q, w, a(t, q, w)): the generalized force the system adds to the Lagrangian's."""
        if getattr(system, "conservative", False):
            return self.zero, 0
        a = system.accel(t, q, w)
        return pin.rnea(self.model, self.data, q, w, a).copy(), 1


def _constraints_of(system):
    """The active constraints of the simulator that owns ``system`` (its ``accel_fn``), if any."""
    owner = getattr(getattr(system, "accel_fn", None), "__self__", None)
    mech = getattr(owner, "mech", None)
    if mech is None or not getattr(mech, "constraints", None):
        return None, []
    return mech, list(mech.constraints.values())


def _phi_G(mech, cons, q) -> tuple[np.ndarray, np.ndarray]:
    """Stacked constraint errors phi (k,) and Jacobians G (k, nv) at q (the mechanism's state is moved)."""
    mech.set_state(q, np.zeros(mech.nv), check=False)
    phi = np.concatenate([np.asarray(c.error(), float).reshape(-1) for c in cons])
    G = np.vstack([np.asarray(c.jacobian(), float) for c in cons])
    return phi, G


class VariationalMidpoint(Integrator):
    """Midpoint-rule variational integrator with discrete momenta (order 2, symplectic).

    Args:
        tolerance: the DEL are solved until their residual is below ``tolerance`` times the
            momentum's size (N s).
        max_iterations: Newton iterations per step before :class:`IntegratorError`.
    """

    name, order = "variational", 2

    def __init__(self, tolerance: float = 1e-11, max_iterations: int = 40):
        if not (0.0 < tolerance < 1e-3) or int(max_iterations) < 1:
            raise IntegratorError(f"variational: need 0 < tolerance < 1e-3 and max_iterations >= 1; got "
                                  f"tolerance={tolerance}, max_iterations={max_iterations}")
        self.tolerance = float(tolerance)
        self.max_iterations = int(max_iterations)
        self._kernels: dict[int, _Kernels] = {}
        self.iterations = 0  # Newton iterations of the last step
        self.reset()

    def reset(self) -> None:
        self._last: tuple | None = None

    def momentum(self, system, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The discrete momentum (nv,) a step from (q, v) starts from (N s, N m s)."""
        return self._start(system, q, v)[0]

    def _start(self, system, q, v):
        """(p, compensation of q, compensation of p): the last step's end when handed back its (q, v)."""
        last = self._last
        if last is not None and last[0] is q and last[1] is v:
            return last[2], last[3], last[4]
        return self._kern(system).mass(q) @ v, None, None

    def _kern(self, system) -> _Kernels:
        model = system.model
        k = self._kernels.get(id(model))
        if k is None or k.model is not model:
            k = self._kernels[id(model)] = _Kernels(model)
        return k

    def step(self, system, t, q, v, h, a0=None):
        h = _check_h(h, self.name)
        K = self._kern(system)
        n = 0
        if a0 is None:
            a0, n = system.accel(t, q, v), 1
        p0, cq, cp = self._start(system, q, v)
        mech, cons = _constraints_of(system)
        xi, Phi, mu_impulse, M, w, it, n2 = self._solve(system, K, t, q, v, a0, p0, h, mech, cons)
        if K.flat:
            # p_{k+1} = p_k + h Phi + G_k^T mu (the DEL at convergence), both sums compensated (Kahan):
            # over 1e4+ steps round-off then stays at the last bits instead of adding up
            q1, cq = _kahan(q, xi, cq)
            p1, cp = _kahan(p0, h * Phi + mu_impulse, cp)
        else:
            q1, cq, cp = system.integrate(q, xi), None, None
            p1 = self._forward_momentum(K, q, xi, Phi, M, w, h)
        M1 = K.mass(q1)
        chol = sla.cho_factor(M1, check_finite=False)
        if cons:
            p1 = _project_momentum(mech, cons, q1, p1, chol)
        v1 = sla.cho_solve(chol, p1, check_finite=False)
        self._last = (q1, v1, p1, cq, cp)
        self.iterations = it
        # the integrators' cubic Hermite positions; with the mean acceleration at both ends its
        # velocities are the straight line from v to v1 (the midpoint rule's)
        a = (v1 - v) / h
        interp = _hermite_interp(system, q, xi, v, v1, a, a, h)
        return Step(t, h, q, v, np.asarray(a0, float), t + h, q1, v1, None, True, math.nan, h, n + n2, interp)

    # ------------------------------------------------------------------ the DEL
    def _residual(self, system, K, t, q, xi, p0, h):
        """(R (nv,), Phi, q_m, w, M, Newton matrix, evaluations): R = p0 + D1 L_d + f_d^- (no constraints)."""
        w = xi / h
        qm = system.integrate(q, 0.5 * xi)
        M, D, Lq = K.lagrangian_terms(qm, w)
        F, n = K.force(system, t + 0.5 * h, qm, w)
        Phi = Lq + F
        Lv = M @ w
        if K.flat:
            R = p0 + 0.5 * h * Phi - Lv
        else:
            Dd0 = pin.dDifference(K.model, q, system.integrate(q, xi), pin.ArgumentPosition.ARG0)
            Di0 = pin.dIntegrate(K.model, q, 0.5 * xi, pin.ArgumentPosition.ARG0)
            Di1 = pin.dIntegrate(K.model, q, 0.5 * xi, pin.ArgumentPosition.ARG1)
            R = p0 + h * (Di0.T @ Phi + 0.5 * Dd0.T @ (Di1.T @ Phi)) + Dd0.T @ Lv
            return R, Phi, qm, w, M, Dd0.T @ (M / h + 0.5 * (D - D.T)), n
        return R, Phi, qm, w, M, -(M / h + 0.5 * (D - D.T)), n

    def _solve(self, system, K, t, q, v, a0, p0, h, mech, cons):
        nv = K.nv
        xi = h * (v + 0.5 * h * np.asarray(a0, float))  # the explicit Taylor step: Newton's first guess
        scale = float(np.abs(p0).max(initial=0.0))
        n_eval = 0
        nc = 0
        mu = np.zeros(0)
        last = math.inf
        if cons:
            _, Gk = _phi_G(mech, cons, q)
            nc = len(Gk)
            mu = np.zeros(nc)
        B = prev = None  # Broyden's correction of the Newton matrix (the energy's dropped second derivatives)
        for it in range(1, self.max_iterations + 1):
            R, Phi, _, w, M, Jac, n = self._residual(system, K, t, q, xi, p0, h)
            n_eval += n
            if prev is not None:
                s_, R_, J_ = prev
                ss = float(s_ @ s_)
                if ss > (1e-9 * float(np.abs(xi).max(initial=0.0))) ** 2 and float(np.abs(R).max()) < float(np.abs(R_).max()):
                    B = (J_ - Jac if B is None else B + J_ - Jac) + np.outer(R - R_ - J_ @ s_, s_) / ss
                else:  # a step at round-off (its secant is noise) or a worse residual: back to the analytic matrix
                    B = None
            Jac0 = Jac
            if B is not None:
                Jac = Jac + B
            # the size of the DEL's terms: its residual is judged relative to it
            scale = max(scale, h * float(np.abs(Phi).max(initial=0.0)), float(np.abs(M @ w).max(initial=0.0)), 1e-300)
            if cons:
                q1 = system.integrate(q, xi)
                phi, G1 = _phi_G(mech, cons, q1)
                Dx = system.dintegrate(q, xi)
                G1x = G1 if Dx is None else G1 @ Dx
                R = R + Gk.T @ mu
                A = np.block([[Jac, Gk.T], [G1x, np.zeros((nc, nc))]])
                rhs = -np.concatenate([R, phi])
                step = np.linalg.lstsq(A, rhs, rcond=None)[0] if nc else np.linalg.solve(Jac, -R)
                dxi, dmu = step[:nv], step[nv:]
                res = max(float(np.abs(R).max()) / scale, float(np.abs(phi).max(initial=0.0)) * 1e-1)
                done = res <= 1e-15 or (res >= 0.5 * last and res <= self.tolerance)
            else:
                try:
                    dxi = np.linalg.solve(Jac, -R)
                except np.linalg.LinAlgError:  # a secant update gone singular: the analytic matrix
                    B, Jac = None, Jac0
                    dxi = np.linalg.solve(Jac, -R)
                dmu = mu
                res = float(np.abs(R).max()) / scale
                done = res <= 1e-15 or (res >= 0.5 * last and res <= self.tolerance)
            if done or res == 0.0:
                return xi, Phi, (Gk.T @ mu if cons else 0.0), M, w, it, n_eval
            last = res
            prev = (dxi, R - Gk.T @ mu if cons else R, Jac)
            xi = xi + dxi
            if cons:
                mu = mu + dmu
        raise IntegratorError(
            f"variational: the discrete Euler-Lagrange equations did not converge in {self.max_iterations} "
            f"Newton iterations at t = {t:.9g} s (h = {h:.3g} s, residual {np.abs(R).max():.3g} N s); reduce dt")

    @staticmethod
    def _forward_momentum(K, q, xi, Phi, M, w, h):
        """p_{k+1} = D2 L_d(q_k, q_{k+1}) + f_d^+."""
        Lv = M @ w
        if K.flat:
            return Lv + 0.5 * h * Phi
        q1 = pin.integrate(K.model, q, xi)
        Dd1 = pin.dDifference(K.model, q, q1, pin.ArgumentPosition.ARG1)
        Di1 = pin.dIntegrate(K.model, q, 0.5 * xi, pin.ArgumentPosition.ARG1)
        return 0.5 * h * Dd1.T @ (Di1.T @ Phi) + Dd1.T @ Lv


def _kahan(x: np.ndarray, dx: np.ndarray, c: np.ndarray | None):
    """x + dx with Kahan's compensation c carried between steps; returns (sum, new compensation)."""
    y = dx if c is None else dx - c
    t = x + y
    return t, (t - x) - y


def _project_momentum(mech, cons, q1, p1, chol):
    """RATTLE: p1 + G^T nu with G M^-1 (p1 + G^T nu) = 0 at q1 (least squares for redundant rows)."""
    _, G = _phi_G(mech, cons, q1)
    MiGt = sla.cho_solve(chol, G.T, check_finite=False)
    nu = np.linalg.lstsq(G @ MiGt, -(G @ sla.cho_solve(chol, p1, check_finite=False)), rcond=None)[0]
    return p1 + G.T @ nu
