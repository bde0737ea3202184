"""The secure-aggregation parameters, declared once (issue 37): what every protocol with a secure sum and the
privacy plan share.

:class:`SecureAggregation` is a frozen dataclass of the five public facts a secure sum rests on. The algorithms with
a secure-sum option (:class:`~privdist.algorithms.dpmm.DPMM`, :class:`~privdist.algorithms.dpsgd.DPSGD`,
:class:`~privdist.algorithms.sharing.ADMMSharing`) include it as a base class
(:class:`privdist.algorithms._secure.SecureSum`), so their fields, defaults and validation are these and no copy;
the privacy plan (:mod:`privdist.privacy.plan`) holds one as its ``secure`` section, validated by the same
:meth:`SecureAggregation.check`.

* ``colluding``: parties assumed to collude with the aggregator (their noise shares do not count);
* ``dropout_tolerance``: the fraction of the parties whose shares the calibration may lose in a round and still meet
  the budget (``floor(dropout_tolerance K)`` parties);
* ``bits``: the modulus ``2^bits`` of the sums (None: the smallest of 32 .. 53 that holds them, from public facts);
* ``recovery``: ``"retry"`` (a retried attempt among the parties that answered), ``"shamir"`` (threshold
  secret sharing of per-round seeds; Bonawitz et al., CCS 2017), ``"sparse"`` (SecAgg+'s sparse masking graph with
  threshold sharing among neighbours; Bell et al., CCS 2020) or ``"auto"`` (default: ``"sparse"`` from
  :data:`SPARSE_FROM` parties on, ``"retry"`` below; :func:`resolve_recovery`);
* ``threshold``: the Shamir threshold (default ``colluding + 1``; it must exceed ``colluding``); under
  ``recovery="sparse"`` the threshold among a party's neighbours (default: chosen with the graph's degree,
  :func:`privdist.privacy.secagg_graph.choose_graph`; a colluding majority among some party's neighbours is then a
  bounded probability, not excluded).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .._checks import check_int, shown
from ..errors import ParameterTypeError, UnknownNameError, ValidationError

__all__ = ["SecureAggregation", "SECURE_FIELDS", "MAX_BITS", "RECOVERIES", "check_bits", "SPARSE_FROM",
           "resolve_recovery"]

#: Largest modulus exponent of a secure sum: masked values travel through the float64 transcript exactly (2^53).
MAX_BITS = 53

#: Dropout recovery of a secure sum (issue 27): a retried attempt among the parties that answered, or threshold secret
#: sharing (:mod:`privdist.runtime.secure.secure_round`), or the sparse masking graph of SecAgg+ with threshold
#: sharing among neighbours (issue 41, :mod:`privdist.runtime.secure.secagg_plus`); an algorithm declares it as
#: ``recovery`` and, for ``"shamir"``, its threshold as ``shamir_threshold``.
RECOVERIES = ("retry", "shamir", "sparse", "auto")

#: ``recovery="auto"`` (the default, issue 41): the sparse graph from this many parties on, the retried attempt below
#: (:func:`resolve_recovery`; benchmarks/results/secagg.md has the measurements behind it).
SPARSE_FROM = 100


def resolve_recovery(recovery: str, n_parties: int) -> str:
    """The protocol ``recovery`` names for ``n_parties``: ``"auto"`` is ``"sparse"`` from :data:`SPARSE_FROM`
    parties on and ``"retry"`` below; the others are themselves."""
    if recovery == "auto":
        return "sparse" if int(n_parties) >= SPARSE_FROM else "retry"
    return recovery


def check_bits(bits) -> int:
    """A secure sum's modulus exponent, an int in [8, :data:`MAX_BITS`] (named error otherwise)."""
    bits = check_int(bits, "bits", 8)
    if bits > MAX_BITS:
        raise ValidationError(f"bits must be <= {MAX_BITS} (masked values are recorded exactly as float64), got {bits}")
    return bits


@dataclass(frozen=True)
class SecureAggregation:
    """The public parameters of a secure sum (module docstring); :meth:`check` is their one validation."""

    colluding: int = 0
    dropout_tolerance: float = 0.0
    bits: int | None = None
    recovery: str = "auto"
    threshold: int | None = None

    def check(self) -> None:
        """Named errors for values no secure sum can run with: a negative or non-integer ``colluding``, a
        ``dropout_tolerance`` outside [0, 1) (NaN included), ``bits`` outside 8..53, an unknown ``recovery``, a
        ``threshold`` without ``recovery="shamir"`` or not above ``colluding``."""
        name = getattr(self, "name", "") or "secure aggregation"
        check_int(self.colluding, "colluding", 0)
        tol = self.dropout_tolerance
        if isinstance(tol, bool) or not isinstance(tol, (int, float)):
            raise ParameterTypeError(f"dropout_tolerance must be a number in [0, 1), got {type(tol).__name__} "
                                     f"{shown(tol)}")
        if not (math.isfinite(tol) and 0 <= tol < 1):
            raise ValidationError(f"dropout_tolerance must be in [0, 1), got {shown(tol)}")
        if self.bits is not None:
            check_bits(self.bits)
        if not isinstance(self.recovery, str) or self.recovery not in RECOVERIES:
            raise UnknownNameError("recovery", str(self.recovery), RECOVERIES)
        if self.threshold is not None:
            check_int(self.threshold, "threshold", 1)
            if self.recovery not in ("shamir", "sparse"):
                raise ValidationError(f"{name}: threshold is the Shamir threshold of recovery='shamir' or 'sparse'")
            if self.recovery == "shamir" and self.threshold <= self.colluding:
                raise ValidationError(f"{name}: threshold={self.threshold} must exceed colluding={self.colluding}: "
                                      "that many colluders would rebuild every seed from their shares")

    def dropouts(self, n_parties: int) -> int:
        """Parties the calibration may lose in a round: ``floor(dropout_tolerance K)``."""
        return int(math.floor(float(self.dropout_tolerance) * int(n_parties)))

    def shares(self, n_parties: int) -> int:
        """Honest parties each sum is calibrated for: ``K - colluding - floor(dropout_tolerance K)`` (a named error
        when none is left)."""
        from .distributed import check_shares

        return check_shares(int(n_parties), int(self.colluding), self.dropouts(n_parties))

    def secure_parameters(self) -> SecureAggregation:
        """These five parameters alone (from an algorithm that includes them)."""
        return SecureAggregation(**{f: getattr(self, f) for f in SECURE_FIELDS})

    def to_dict(self) -> dict:
        return {f: getattr(self, f) for f in SECURE_FIELDS}

    @classmethod
    def from_dict(cls, data: dict) -> SecureAggregation:
        """The parameters of a dict (unknown keys are a named error); checked."""
        unknown = sorted(set(data) - set(SECURE_FIELDS))
        if unknown:
            raise ValidationError(f"unknown secure-aggregation parameter(s) {unknown}; known: {list(SECURE_FIELDS)}")
        out = cls(**data)
        out.check()
        return out


#: The field names of :class:`SecureAggregation`, in order.
SECURE_FIELDS = tuple(f.name for f in dataclasses.fields(SecureAggregation))
