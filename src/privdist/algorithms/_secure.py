"""The trust model of the coordinator protocols (issue 27): what every algorithm with a secure sum shares.

``trust="local"``: each party's release carries all the noise its own sensitivity needs, so a coordinator that adds
up ``K`` releases holds ``sqrt(K)`` times a trusted curator's noise. ``trust="secure_aggregation"``: the vectors the
coordinator adds up are ``SECURE_SUM`` messages: each party encodes its vector as integers with a share of distributed
Skellam noise (:class:`~privdist.privacy.distributed.SkellamMechanism`), the backend masks it where the party runs
(:mod:`privdist.runtime.secure.secagg`) and the coordinator receives only the sum, with noise of central scale. One Skellam
mechanism per run, calibrated for ``shares = K - colluding - floor(dropout_tolerance K)`` honest parties in each sum;
each round's release is recomputed from the parties actually in the sum (``secure_events``): the aggregate, protected
by the shares of the ``n_t - colluding`` honest parties in it (:meth:`SkellamMechanism.releases`).

Algorithms with the option: :class:`~privdist.algorithms.dpmm.DPMM` (the gradient and Gram sums),
:class:`~privdist.algorithms.dpsgd.DPSGD` (federated averaging over a star: the parties' gradients summed at a
coordinator) and :class:`~privdist.algorithms.sharing.ADMMSharing` (the coordinator's sum of the shares ``Q_m``).
A decentralized graph has no coordinator to sum at: :class:`~privdist.errors.SecureAggregationUnavailableError`.

**Dropout recovery** (``recovery``; ``"sparse"``: SecAgg+'s sparse masking graph, issue 41,
:mod:`privdist.runtime.secure.secagg_plus`): ``"auto"`` (default: ``"sparse"`` from 100 parties, ``"retry"``
below), ``"retry"`` (keys once per run, a party that fails after sending costs a retried attempt among the others,
:mod:`privdist.runtime.secure.secure_round`) or ``"shamir"`` (Bonawitz et al.'s
threshold recovery with fresh keys every round: no retried attempt, :mod:`privdist.runtime.secure.secagg_threshold`), with
``threshold`` parties' shares rebuilding a seed (default ``colluding + 1``; it must exceed ``colluding``: fewer
than ``threshold`` colluders learn nothing from their shares).

:class:`SecureSum` is the mixin: it includes the five secure-aggregation fields ``colluding``, ``dropout_tolerance``,
``bits``, ``recovery``, ``threshold`` from their one declaration (:class:`privdist.privacy.secure_params.SecureAggregation`,
issue 37); its algorithm declares ``trust`` (and ``epsilon``, ``delta``, ``prior`` where it takes releases made
before the run) and calls :meth:`SecureSum._check_trust` in ``__post_init__``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import UnknownNameError, ValidationError
from ..privacy.secure_params import MAX_BITS, RECOVERIES, SPARSE_FROM, SecureAggregation

__all__ = ["TRUST", "RECOVERIES", "SecureSum", "sum_range"]

#: Trust models of the coordinator protocols: each party noises its own release, or the parties' noise shares are
#: summed under secure aggregation.
TRUST = ("local", "secure_aggregation")

#: The smallest modulus exponent chosen automatically (``bits=None``).
MIN_AUTO_BITS = 32


def sum_range(n_parties: int, largest: float, noise_std: float) -> float:
    """Public bound on a secure sum's magnitude per coordinate: ``n_parties`` vectors of integer coordinates at most
    ``largest`` before rounding (randomized rounding adds at most 1), plus noise within 40 standard deviations of
    the sum's noise ``noise_std``."""
    return n_parties * (float(largest) + 1.0) + 40.0 * float(noise_std)


@dataclass(frozen=True)
class SecureSum(SecureAggregation):
    """Mixin of a frozen-dataclass algorithm with a secure-sum option (module docstring): the five fields of
    :class:`~privdist.privacy.secure_params.SecureAggregation` (declared there once), plus :meth:`_check_trust`."""

    def _check_trust(self) -> None:
        trusts = getattr(self, "trusts", TRUST)
        if self.trust not in trusts:
            raise UnknownNameError("trust", str(self.trust), trusts)
        self.check()

    def _check_prior(self) -> None:
        """Normalise ``prior`` (:func:`~privdist.privacy.distributed.check_prior`); releases made before the run are
        composed into the Skellam calibration, so they need ``trust="secure_aggregation"``."""
        from ..privacy.distributed import check_prior

        object.__setattr__(self, "prior", check_prior(self.prior))
        if self.prior and self.trust != "secure_aggregation":
            raise ValidationError(f"{self.name}: prior releases are composed into the Skellam calibration of "
                                  "trust='secure_aggregation' (with trust='local', split the budget instead)")

    @property
    def shamir_threshold(self) -> int | None:
        """The shares that rebuild a seed under ``recovery="shamir"`` (``threshold``, default ``colluding + 1``);
        None under ``"retry"``."""
        if self.recovery != "shamir":
            return None
        return self.colluding + 1 if self.threshold is None else self.threshold

    @property
    def secure(self) -> bool:
        """Whether the sums go through secure aggregation (``trust="secure_aggregation"`` with noise; without noise
        the vectors are in the clear anyway and are gathered as plain messages)."""
        return self.trust == "secure_aggregation" and self.epsilon is not None

    def _skellam(self, releases, prior=()):
        """The run's Skellam mechanism: ``releases`` = ``(count, uses)`` pairs over the run (``budget="round"``:
        one release of one use, each release then meets the per-release budget)."""
        from ..privacy.budget import skellam_mechanism

        if getattr(self, "budget", "total") == "round":
            releases = [(1, 1)]
        return skellam_mechanism(self.epsilon, self.delta, releases=releases, prior=prior,
                                 clear=f"{self.name}: sums sent without noise (not private)")

    def _sum_noise_std(self, dim: int, n_agents: int, uses: int = 1) -> float:
        """Std per coordinate (integer units) of a secure sum's noise when all ``n_agents`` parties add a share."""
        return math.sqrt(self.mechanism.variance(dim, uses) * n_agents / self.shares(n_agents))

    def _secure_release(self, dim: int, honest: int, n_agents: int, uses: int = 1):
        """One party's release of a secure sum of ``dim`` coordinates that ``honest`` parties' shares protect."""
        return self.mechanism.releases([0], uses=uses, dim=dim, honest=honest, shares=self.shares(n_agents))[0]

    def weaker_sum(self, present) -> bool:
        """Whether a secure sum of the parties ``present`` (bool (K,)) holds fewer honest noise shares than each
        party's declared release assumes (:meth:`shares`, the calibration's worst case): a weaker release."""
        present = np.asarray(present, dtype=bool)
        return self._honest(present) < self.shares(present.size)

    def _honest(self, present) -> int:
        """Honest parties in a sum of the parties ``present`` (bool (K,)): all but the colluding ones (at least 1)."""
        return max(1, int(np.asarray(present, dtype=bool).sum()) - self.colluding)

    def _modulus_bits(self, need: float) -> int:
        """``bits``, or (``None``) the smallest exponent of 32 .. MAX_BITS whose modulus holds sums up to ``need``."""
        if self.bits is not None:
            return self.bits
        return int(min(MAX_BITS, max(MIN_AUTO_BITS, math.ceil(math.log2(max(need, 1.0))) + 2)))

    def _check_modulus(self, need: float, what: str) -> None:
        """Public, before any release: sums up to ``need`` stay inside ``[-2^(bits-1), 2^(bits-1))``, else a named
        error (raise ``bits``). ``what`` says which sums."""
        bits = self._modulus_bits(need)
        if need >= 2.0 ** (bits - 1):
            raise ValidationError(f"{self.name}: {what} may reach {need:.3g}, beyond the modulus 2^{bits}; set bits="
                                  f"{math.ceil(math.log2(need)) + 2}")

    def _trust_assumption(self) -> str:
        """The assumption line of a secure run (the report prints it)."""
        recovery = ("dropouts recovered by a retried attempt" if self.recovery == "retry" else
                    "dropouts recovered by Shamir sharing of per-round seeds among each party's neighbours in a "
                    "random regular masking graph (SecAgg+, Bell et al. 2020; its degree, threshold and failure "
                    "probability are stated with the graph)" if self.recovery == "sparse" else
                    f"dropouts recovered by a retried attempt below {SPARSE_FROM} parties and, from {SPARSE_FROM} on, by Shamir sharing "
                    "among each party's neighbours in a random regular masking graph (SecAgg+, Bell et al. 2020; its "
                    "degree, threshold and failure probability are stated with the graph)" if self.recovery == "auto"
                    else
                    f"dropouts recovered by {self.shamir_threshold}-out-of-K Shamir sharing of per-round seeds (fewer colluders than that learn nothing from their shares)")
        return (f"trust=secure_aggregation: the aggregator is honest-but-curious (follows the protocol and announces "
                f"one set of present parties per round), at most {self.colluding} part"
                f"{'y' if self.colluding == 1 else 'ies'} collude with it; {recovery}; each sum's Skellam noise is "
                "calibrated for "
                f"{self.dropout_tolerance:g} of the parties missing (dropped or colluding beyond that lowers the "
                "guarantee, recomputed per round from the parties in the sum); epsilon from the Skellam RDP bound "
                "(Agarwal, Kairouz & Liu 2021) at integer orders, converted by dp-accounting (the pld column "
                "repeats it: no PLD is published for it)")
