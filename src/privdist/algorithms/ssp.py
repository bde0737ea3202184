"""SSP: one-shot private sufficient statistics through a secure sum (issue 39: the global model where data are small).

Not one of the five papers' algorithms (the spec has no section on it): the sufficient-statistics perturbation of
Vu & Slavkovic (2009) and Wang (2018, "Revisiting differentially private linear regression: optimal and adaptive
prediction & estimation in unbounded domain", UAI; AdaSSP, Algorithm 2), distributed over parties the way
:mod:`privdist.algorithms.dpmm` distributes its first round. Where dpmm iterates (a budget split over ``T - 1``
gradient releases and one Gram release), SSP releases once.

**Statistics (round 1, one release per party).** Party ``k`` clips its rows to ``||x|| <= row_bound`` and its
targets to ``|y| <= y_bound`` (both enforced here; logistic labels are ``+-1``) and releases, with noise,

* ``S_k = sum_j x_j x_j^T`` (upper triangle): replace-one sensitivity ``||x x^T - x' x'^T||_F <= sqrt(2) row_bound^2``;
* ``u_k = sum_j y_j x_j``: replace-one sensitivity ``2 y_bound row_bound``;
* its row count ``N_k`` in the clear (public under replace-one neighbours).

One mechanism of the total budget draws both: ``u`` one use of multiplier ``z``, ``S`` ``gram_uses`` uses (the Gram
takes ``gram_uses / (1 + gram_uses)`` of the budget's ``mu^2``; ``gram_uses = 1`` is Wang's equal split of the two
statistics). ``trust="local"``: each party adds its own full Gaussian; ``trust="secure_aggregation"``: each party
adds a Skellam share and the sums go through secure aggregation, exactly as dpmm's secure round 1
(:mod:`privdist.algorithms._secure`), so the decoded sums carry one central noise. The ledger records one release of
``1 + gram_uses`` uses per party (round 1); round 2 only delivers the model (nothing released).

**Ridge** (squared loss). The pooled objective ``(1/n) sum_i (x_i^T w - y_i)^2 + lam ||w||^2`` (``lam =
reg_weight / K``, as dpmm) has the normal equations ``(S + n lam I) w = u``. With the noisy sums
``S~, u~`` the coordinator solves ``(S~ + (lambda + n lam) I) w = u~`` (Wang 2018, Alg. 2, last line), where the
regularisation ``lambda`` is AdaSSP's choice, Alg. 2 lines 3-4:

    lambda = max(0, lambda_0 - lambda_min~),   lambda_0 = sigma_S sqrt(P log(2 P^2 / rho)),  rho = 0.05,

``sigma_S`` the (public) std of one entry of the summed Gram's noise: ``lambda_0`` is Wang's high-probability bound
on the spectral norm of the Gram's noise (his ``sqrt(d log(6/delta) log(2 d^2 / rho)) / (eps / 3)`` is the same
expression with his noise scale). **Deviation (stated):** Wang spends a third of the budget on a separate noisy
``lambda_min(X^T X)``; here ``lambda_min~ = lambda_min(S~)``, read off the released Gram (post-processing: no
release, no budget). The minimum eigenvalue of a SUM of the parties' Grams is not a sum, so a secure sum could not
release it anyway; ``|lambda_min(S~) - lambda_min(S)| <= ||E||_2 <= lambda_0`` (with probability ``>= 1 - rho``),
so ``S~ + lambda I`` has every eigenvalue ``>= lambda_0 > 0``: the system is always well posed.

**Logistic regression: PASS** (Huggins, Adams & Broderick 2017, "PASS-GLM: polynomial approximate sufficient
statistics for scalable Bayesian GLM inference", NeurIPS; their eq. (3)-(4) with ``M = 2``). The log-likelihood term
``phi(s) = log(1 + exp(-s))``, ``s = y x^T w``, is replaced by its degree-2 Chebyshev approximation on
``[-R, R]`` (``R = pass_radius``): ``phi(s) ~ b0 + b1 s + b2 s^2`` with ``b1 = -1/2`` exactly (``phi(s) + s/2`` is
even) and ``b2 = 2 c2 / R^2``, ``c2`` the second Chebyshev coefficient of ``log(2 cosh(s/2))`` on ``[-R, R]``
(:func:`pass_coefficient`). Since ``y^2 = 1``, ``sum_i phi(y_i x_i^T w) ~ n b0 - u^T w / 2 + b2 w^T S w``: the same
two statistics. The minimiser of the approximate objective plus ``lam ||w||^2`` solves
``(b2 (S~ + lambda I) + n lam I) w = u~ / 4``, with the same ``lambda`` as ridge (it guards the same noisy Gram).

**Trust** and **secure aggregation**: as dpmm (:mod:`privdist.algorithms._secure`), with its secure-sum fields,
its modulus checks and its ``prior`` (the estimators' DP range step composed into the Skellam calibration).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from .._checks import check_positive
from ..errors import UnknownNameError, ValidationError
from .dpmm import DPMM

__all__ = ["SSP", "pass_coefficient", "adassp_lambda", "RHO", "LAMBDA_RULES"]

#: How the coordinator guards the noisy Gram: AdaSSP's shift, dpmm's eigenvalue floor, or nothing.
LAMBDA_RULES = ("adassp", "floor", "none")

#: AdaSSP's failure probability of the spectral bound ``lambda_0`` (Wang 2018, Alg. 2 uses ``rho = 0.05``).
RHO = 0.05


def pass_coefficient(radius: float, nodes: int = 256) -> float:
    """``b2`` of the degree-2 Chebyshev approximation of ``phi(s) = log(1 + exp(-s))`` on ``[-radius, radius]``
    (Huggins et al. 2017, §3): ``phi(s) + s/2 = log(2 cosh(s/2))`` is even, its Chebyshev series
    ``sum_k c_k T_k(s / radius)`` (Gauss-Chebyshev quadrature on ``nodes`` points) truncated at ``k = 2`` gives
    ``b2 = 2 c2 / radius^2`` (``T_2(t) = 2 t^2 - 1``). Tends to the Taylor coefficient ``1/8`` as ``radius -> 0``."""
    check_positive(radius, "pass_radius")
    theta = math.pi * (np.arange(nodes) + 0.5) / nodes
    s = radius * np.cos(theta)
    g = np.logaddexp(s / 2.0, -s / 2.0)  # log(2 cosh(s/2))
    c2 = 2.0 / nodes * float(np.sum(g * np.cos(2.0 * theta)))
    return 2.0 * c2 / radius**2


def adassp_lambda(S: np.ndarray, sigma: float, rho: float = RHO) -> float:
    """AdaSSP's regularisation (Wang 2018, Alg. 2, lines 3-4) from the released noisy Gram ``S`` (P x P, symmetric)
    whose entries carry noise of std ``sigma``: ``max(0, lambda_0 - lambda_min(S))``, ``lambda_0 = sigma sqrt(P
    log(2 P^2 / rho))`` (module docstring: the minimum eigenvalue is read off the noisy Gram, post-processing)."""
    P = S.shape[0]
    if sigma <= 0:
        return 0.0
    lam0 = sigma * math.sqrt(P * math.log(2.0 * P * P / rho))
    return max(0.0, lam0 - float(np.linalg.eigvalsh(S)[0]))


@dataclass(frozen=True)
class SSP(DPMM):
    """Factory: ``SSP(epsilon=1.0, delta=1e-5)`` (module docstring). Runs 2 rounds: round 1 releases the statistics,
    round 2 delivers the model (further rounds release nothing; a single round releases nothing, as dpmm's).

    Args (beyond dpmm's secure-aggregation and budget fields, which mean the same here):
        row_bound: public bound on a row's norm (rows clipped to it), intercept column included.
        y_bound: public bound on ``|y|`` of a regression target (targets clipped to it; the estimators scale the
            target into [-1, 1]); logistic labels are ``+-1``.
        gram_uses: the Gram release costs this many uses of the ``X^T y`` release's noise (its budget share).
        pass_radius: logistic loss: the interval ``[-R, R]`` of PASS's Chebyshev approximation.
        lambda_rule: how the coordinator guards the noisy Gram: ``"adassp"`` (default: Wang's shift ``lambda``,
            module docstring), ``"floor"`` (dpmm's rule: eigenvalues floored at ``floor * sigma_S sqrt(P)``, the
            inherited ``floor`` field) or ``"none"`` (``lam`` alone; eigenvalues floored at ``1e-9`` of the largest).
            All three are post-processing of the released sums.

    The inherited ``average_from`` is not used (one release, no iterates to average).

    Measured (issue 39, ``benchmarks/bench_utility.py --cases breast,diabetes --algorithms ...``, total epsilon 1,
    5 draws): SSP lost to dpmm on both small cases, see ``docs/algorithms/ssp.md``; dpmm stays the default.
    """

    y_bound: float = 1.0
    gram_uses: int = 1
    pass_radius: float = 4.0
    lambda_rule: str = "adassp"
    name: ClassVar[str] = "ssp"

    def __post_init__(self):
        check_positive(self.y_bound, "y_bound")
        check_positive(self.pass_radius, "pass_radius")
        if self.lambda_rule not in LAMBDA_RULES:
            raise UnknownNameError("lambda_rule", str(self.lambda_rule), LAMBDA_RULES)
        if self.c1 is not None:
            raise ValidationError("ssp: c1 is not a parameter of ssp (the X^T y sensitivity is 2 y_bound row_bound, "
                                  "from the enforced clipping); set row_bound / y_bound instead")
        super().__post_init__()

    # ------------------------------------------------------------------ privacy
    def release_count(self, rounds: int) -> int:
        return 1 + self.gram_uses if rounds > 1 else 1  # one X^T y and one Gram release; one round releases nothing

    def _build_mechanism(self):
        from ..privacy import gaussian_mechanism

        if self.trust == "secure_aggregation":
            return self._skellam([(self.runs, 1), (self.runs, self.gram_uses)], self.prior)
        return gaussian_mechanism(self.epsilon, self.delta, budget="total",
                                  releases=self.release_count(self.rounds or 2),
                                  clear="ssp: statistics sent without noise (not private)")

    @property
    def _last(self) -> float:
        """Round 2 delivers the model; nothing is released from it on. A run of one round (as dpmm's) releases
        nothing: its model could not be delivered."""
        return 1 if self.rounds == 1 else 2

    def _clip(self, loss) -> float:
        """The bound on ``||y x||`` (so ``2 *`` it is the ``X^T y`` sensitivity): ``y_bound row_bound`` for a
        regression target, ``row_bound`` for ``+-1`` labels."""
        return self.row_bound * (1.0 if loss.name == "logistic" else self.y_bound)

    def assumptions(self):
        if not self.mechanism.private:
            return []
        out = [f"ssp: rows clipped to norm {self.row_bound:g} and regression targets to |y| <= {self.y_bound:g} "
               "(logistic labels +-1); Gram sensitivity sqrt(2) row_bound^2 and X^T y sensitivity 2 y_bound row_bound "
               "are a-priori; row counts public"]
        if self.secure:
            out.append(self._trust_assumption())
        return out

    def _audit_label(self, loss) -> float:
        """The audit canary's label (:meth:`DPMM.audit_records`): ``+-y_bound`` (``+-1`` logistic), so the ``X^T y``
        releases differ by ``sqrt(2) y_bound row_bound`` of the sensitivity ``2 y_bound row_bound``: the pair's
        Gaussian is ``sqrt((1/2 + gram_uses) / (1 + gram_uses))`` of the declared one in ``mu`` (0.87 for
        ``gram_uses = 1``)."""
        return 1.0 if loss.name == "logistic" else self.y_bound

    # ------------------------------------------------------------------ protocol
    def _clipped_sums(self, state, w) -> np.ndarray:
        """Each agent's ``u_k = sum_j y_j x_j`` (rows clipped at init, targets clipped to ``y_bound`` here)."""
        y = state.y if state.problem.loss.name == "logistic" else np.clip(state.y, -self.y_bound, self.y_bound)
        return np.einsum("kn,knp->kp", y * state.mask, state.X)

    def init_coordinator(self, problem, network, rng):
        if problem.regularizer.name not in ("l2", "none"):
            raise ValidationError(f"ssp solves the l2-regularised normal equations; regularizer "
                                  f"{problem.regularizer.name!r} needs an iterative algorithm (dpmm)")
        return super().init_coordinator(problem, network, rng)

    def step_coordinator(self, cstate, inbox, t, rng):
        if t >= self._last:
            return cstate, {"w": cstate.w, "w_bar": cstate.w}
        g, h = self._sums(inbox, cstate.public)
        P = g.shape[0] - 1
        S = np.zeros((P, P))
        S[np.triu_indices(P)] = h
        S = S + np.triu(S, 1).T
        n = float(g[-1])
        w = self.solve(S, g[:P], n, cstate.public) if n > 0 else cstate.w
        cstate = replace(cstate, w=w, n_total=n)
        return cstate, {"w": w, "w_bar": w}

    def gram_noise_std(self, P: int, K: int) -> float:
        """Std of one entry of the summed Gram's noise with all ``K`` parties in the sum (public); 0 without noise."""
        if not self.mechanism.private:
            return 0.0
        sens = math.sqrt(2.0) * self.row_bound**2
        if self.secure:
            return self.mechanism.noise_std(sens, P * (P + 1) // 2, self.gram_uses) * math.sqrt(K / self.shares(K))
        z = float(np.max(np.atleast_1d(self.mechanism.noise_multiplier)))
        return z * sens / math.sqrt(self.gram_uses) * math.sqrt(K)

    def solve(self, S: np.ndarray, u: np.ndarray, n: float, problem) -> np.ndarray:
        """The model from the summed statistics (module docstring): ridge or PASS with AdaSSP's ``lambda``."""
        P = S.shape[0]
        K = problem.n_agents_total
        lam_user = problem.reg_weight / K if problem.regularizer.name == "l2" else 0.0
        sigma = self.gram_noise_std(P, K)
        evals, evecs = np.linalg.eigh(S)
        if self.lambda_rule == "floor":
            evals = np.maximum(evals, self.floor * sigma * math.sqrt(P))
        elif self.lambda_rule == "adassp":
            evals = evals + adassp_lambda(S, sigma)
        if problem.loss.name == "logistic":
            b2 = pass_coefficient(self.pass_radius)
            diag, rhs = b2 * evals + n * lam_user, evecs.T @ u / 4.0
        else:
            diag, rhs = evals + n * lam_user, evecs.T @ u
        diag = np.maximum(diag, 1e-9 * max(float(np.abs(diag).max()), 1.0))
        return evecs @ (rhs / diag)

    def run_info(self, states):
        return {"gram_uses": self.gram_uses, "row_bound": self.row_bound, "y_bound": self.y_bound,
                "trust": self.trust, "lambda_rule": self.lambda_rule}
