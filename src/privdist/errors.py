"""Named errors of privdist.

Every user-facing failure raises one of these, with a message that says what was wrong and where
(STYLE #11). They subclass the matching builtin (``ValueError``, ``LookupError``, ``FileNotFoundError``)
so that generic handlers still work.
"""

from __future__ import annotations

__all__ = [
    "PrivdistError",
    "ValidationError",
    "NonFiniteDataError",
    "ShapeMismatchError",
    "NetworkError",
    "NetworkShapeError",
    "DisconnectedNetworkError",
    "NotDoublyStochasticError",
    "NotBStronglyConnectedError",
    "UnknownNameError",
    "UnsupportedEventError",
    "CalibrationError",
    "DataBoundError",
    "PublicParameterError",
    "DataFileNotFoundError",
    "ChecksumError",
    "DownloadError",
    "SpecError",
    "OutputDirError",
    "CheckpointError",
    "ResourceLimitError",
    "ResultsLockedError",
    "DivergenceError",
    "UnknownColumnError",
    "NonNumericDataError",
    "EmptyPartyError",
    "FeatureGroupError",
    "DataFormatError",
    "ModelFileError",
    "IncompleteOutputError",
    "BinaryOnlyError",
    "ParameterTypeError",
    "OutputWriteError",
    "SecureAggregationUnavailableError",
    "ReconstructionError",
    "SecureRoundError",
    "PolicyError",
    "LedgerCorruptError",
    "LedgerLockedError",
    "LedgerStateError",
    "JobConflictError",
    "RoundConflictError",
    "ModelNotFittedError",
]


class PrivdistError(Exception):
    """Base class of every error privdist raises on purpose."""


class ValidationError(PrivdistError, ValueError):
    """A value given by the user is outside its domain (e.g. ``epsilon <= 0``)."""


class NonFiniteDataError(ValidationError):
    """Data or parameters contain NaN or infinity."""


class ShapeMismatchError(ValidationError):
    """Arrays that must agree in shape do not (data vs labels, parties' sample counts, ...)."""


class NetworkError(ValidationError):
    """Base class of invalid communication networks."""


class NetworkShapeError(NetworkError):
    """An adjacency or weight matrix is not square, or does not match the number of agents."""


class DisconnectedNetworkError(NetworkError):
    """An undirected network is not connected."""


class NotDoublyStochasticError(NetworkError):
    """A weight matrix is not doubly stochastic (rows and columns summing to one, entries >= 0)."""


class NotBStronglyConnectedError(NetworkError):
    """A time-varying directed network is not B-strongly connected."""


class UnknownNameError(PrivdistError, LookupError):
    """An algorithm, experiment, accountant, dataset, ... name is not registered.

    ``str(err)`` lists the names that are known.
    """

    def __init__(self, kind: str, name: str, known: list[str] | tuple[str, ...] = ()):
        self.kind = kind
        self.name = name
        self.known = sorted(known)
        hint = f"; known: {', '.join(self.known)}" if self.known else ""
        super().__init__(f"unknown {kind} {name!r}{hint}")

    def __str__(self) -> str:  # LookupError would quote the message
        return self.args[0]


class UnsupportedEventError(PrivdistError, TypeError):
    """A DP event cannot be handled by the requested accountant."""


class CalibrationError(ValidationError):
    """No noise level meets the requested privacy target (or the target is infeasible)."""


class DataBoundError(ValidationError):
    """Data violate a bound that a privacy guarantee rests on and that clipping cannot enforce (e.g. rows of
    norm > 1 under objective perturbation); the message names the agent, the row and the bound."""


class PublicParameterError(ValidationError):
    """A noise calibration needs a public parameter that was not given and would otherwise be derived from the
    agents' private data (e.g. DPDO-NC's gradient bound theta)."""


class DataFileNotFoundError(PrivdistError, FileNotFoundError):
    """A data file is missing; the message names the path searched and how to obtain the file."""


class ChecksumError(PrivdistError, ValueError):
    """A shipped or downloaded file does not have the expected checksum (altered or truncated)."""


class DownloadError(PrivdistError, OSError):
    """A download failed (no network, HTTP error, timeout)."""


class SpecError(ValidationError):
    """An experiment specification (TOML) is malformed or has unknown keys."""


class OutputDirError(PrivdistError, FileExistsError):
    """An output directory holds another experiment's results (use ``--overwrite``)."""


class CheckpointError(PrivdistError, RuntimeError):
    """A checkpoint cannot be used to resume this run (missing, corrupt, or from another config)."""


class ResourceLimitError(SpecError):
    """An experiment's estimated memory or time is above the limit and was not confirmed (``--yes``)."""


class ResultsLockedError(OutputDirError):
    """Another live privdist process holds the lock of a results directory."""


class DivergenceError(PrivdistError, ArithmeticError):
    """A run produced a non-finite metric or estimate (NaN or inf): it diverged or degenerated."""


class UnknownColumnError(ValidationError, LookupError):
    """A named column (the target, a party column, a column of a group) is not in the data; the message lists
    the columns that are."""


class NonNumericDataError(ValidationError):
    """Feature columns are not numeric and no encoder was asked for (the message names them and the option)."""


class EmptyPartyError(ValidationError):
    """A party (agent) would hold no rows or no columns."""


class FeatureGroupError(ValidationError):
    """A vertical partition's feature groups do not assign every column to exactly one party (a column in no
    group, in two groups, or out of range); the message names the column (issue 16)."""


class DataFormatError(ValidationError):
    """A data file's format is unknown or its content cannot be read as a table."""


class ModelFileError(DataFormatError):
    """A ``model.json`` (or a party block of one) is not a model privdist can predict with: a field missing, of the
    wrong type or shape (``coef`` against the feature names and classes), non-finite or beyond the magnitude limit;
    the message names the file and the field (issue 40)."""


class IncompleteOutputError(PrivdistError, RuntimeError):
    """An output directory of ``privdist fit`` or ``privdist run`` has no completion marker: the process that wrote
    it was interrupted (the message says to rerun or ``--resume``; issue 40)."""


class BinaryOnlyError(ValidationError):
    """A method that fits two classes only (e.g. a vertical fit) got a target with more; the message says what to
    do instead (issue 25)."""


class ParameterTypeError(ValidationError, TypeError):
    """A parameter has the wrong type (a string where a number is expected, ...); the message names the parameter
    and the type it must have (issue 26). Both a ``ValueError`` and a ``TypeError``, so that either handler works."""


class OutputWriteError(PrivdistError, OSError):
    """A file or directory privdist was asked to write cannot be written (a path under a read-only or virtual file
    system, a missing parent that cannot be created, a file where a directory is needed); the message names the
    path and the operating system's reason (issue 26)."""


class SecureAggregationUnavailableError(ValidationError):
    """``trust="secure_aggregation"`` was asked of a protocol (or a mode of one) whose sum cannot be made secure, e.g.
    gossip over a graph without a coordinator, or a mode without a sensitivity bound (issue 27)."""


class ReconstructionError(PrivdistError, ValueError):
    """A secret shared t-out-of-n (Shamir) cannot be rebuilt: fewer than t shares, or shares that do not belong to
    one sharing (issue 27, dropout recovery of secure aggregation)."""


class SecureRoundError(ReconstructionError):
    """A round of sparse-graph secure aggregation (issue 41) cannot end with a correct and private sum: a party has
    fewer answering neighbours than the threshold (its seed cannot be rebuilt), or the parties whose vectors arrived
    split the masking graph (the aggregator would learn partial sums). The round stops; no sum is released."""


class PolicyError(ValidationError):
    """A party's policy file (issue 38) has an unknown key or a value outside its domain; the message names the key,
    the value and what is allowed."""


class LedgerCorruptError(PrivdistError, ValueError):
    """A party's lifetime ledger file cannot be read as one (truncated, not JSON, wrong format, malformed entries).
    It is never reset silently: the message names the file and what is wrong (issue 38)."""


class LedgerLockedError(PrivdistError, TimeoutError):
    """Another process holds a lifetime ledger's lock and did not release it within the wait allowed (issue 38)."""


class LedgerStateError(ValidationError):
    """A lifetime ledger was asked to do something its job's state forbids: an unknown job, recording into a job
    that finished or was aborted, a status change that goes backwards (issue 38)."""


class JobConflictError(ValidationError):
    """A job id already in a lifetime ledger was announced again with another plan, coordinator or declaration
    (issue 38)."""


class RoundConflictError(ValidationError):
    """A lifetime ledger was asked to record releases for a round it already recorded with DIFFERENT releases: that
    would be fresh noise for a round already released (issue 38). The same releases again are a no-op."""


class ModelNotFittedError(ValidationError, AttributeError):
    """A method that needs a fitted model (e.g. :func:`privdist.learn.personal.personalize`) got one that was never
    fitted; the message names the model (issue 39). Also an ``AttributeError``, as scikit-learn's ``NotFittedError``."""
