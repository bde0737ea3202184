"""Random streams as a pure function of (seed, trial, role, agent, round) (DESIGN idea 4, STYLE #3, spec §7).

Every stream is ``Generator(PCG64(SeedSequence([root, trial, domain, agent, round])))`` with ``domain`` 0 for
data generation, 1 for an agent's algorithm randomness, 2 for the coordinator. The same (seed, trial, agent,
round) gives the same draws on every backend, whatever block of agents a worker serves and in whatever order
rounds are resumed. Algorithms never seed anything: they receive an :class:`AgentStreams`.

The ``root`` is the run's recorded ``seed`` in research mode (anyone who knows it regenerates every draw). In
secure mode (issue 23, "one secret per party") each party has its own key instead: a 128-bit integer drawn by
:func:`party_keys` from OS entropy where that party runs (its Ray actor, or the simulator's entry for that agent),
never returned to the driver, never shared with another party or the coordinator (which draws its own). Knowing
the seed, the other parties' keys and the coordinator's key gives nothing about a party's streams.
"""

from __future__ import annotations

import secrets
from typing import Callable

import numpy as np

from .._checks import check_int
from ._seeding import pcg64_generators

__all__ = ["stream", "data_rng", "AgentStreams", "party_keys", "pair_secret", "step_generator", "DATA", "AGENT_DOMAIN",
           "COORDINATOR_DOMAIN", "STEP_DOMAIN", "SECAGG_DOMAIN", "DROPOUT_DOMAIN", "PAIR_DOMAIN", "KEY_BITS"]

DATA, AGENT_DOMAIN, COORDINATOR_DOMAIN = 0, 1, 2
#: Domain of a party's noise in a step before the run (e.g. the DP range step of :mod:`privdist.learn.ranges`).
STEP_DOMAIN = 3
#: Domains of secure aggregation (issue 27): a party's key and self-mask seeds in research mode (secure mode draws
#: them from OS entropy), and the simulated dropouts of a run (failure injection, never noise).
SECAGG_DOMAIN, DROPOUT_DOMAIN = 4, 5
#: Domain of the draws two neighbours share in research mode (pairwise-cancelling correlated noise, issue 27): the
#: stream ``(seed, trial, PAIR_DOMAIN, min(i, j) K + max(i, j), round)`` of the pair ``(i, j)`` of ``K`` agents.
PAIR_DOMAIN = 6
KEY_BITS = 128


def party_keys(n: int) -> list[int]:
    """``n`` fresh ``KEY_BITS``-bit keys from OS entropy (:func:`secrets.randbits`), one per agent (secure mode).

    Call it where the agents run and keep the keys there: a key that leaves its party lets the holder regenerate
    that party's noise (DESIGN idea 4)."""
    return [secrets.randbits(KEY_BITS) for _ in range(check_int(n, "n", 0))]


def pair_secret(key_a: int, key_b: int, lo: int, hi: int) -> int:
    """The secret of the pair ``(lo, hi)`` of agents with secure-mode keys ``key_a`` and ``key_b`` (either order):
    X25519 (RFC 7748) agreement of private keys derived from the agents' keys, through HKDF-SHA256 bound to the
    pair, as a ``KEY_BITS``-bit integer. Both ends compute the same value; it needs one of the two keys."""
    import hashlib

    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    def private(key: int):
        return X25519PrivateKey.from_private_bytes(hashlib.sha256(b"privdist-pair-key|" + int(key).to_bytes(
            (KEY_BITS + 7) // 8, "big")).digest())

    shared = private(key_a).exchange(private(key_b).public_key())
    info = b"privdist-pair|" + int(lo).to_bytes(8, "big") + int(hi).to_bytes(8, "big")
    return int.from_bytes(HKDF(algorithm=hashes.SHA256(), length=KEY_BITS // 8, salt=None, info=info)
                          .derive(shared), "big")


def stream(seed: int, trial: int, domain: int, agent: int = 0, round_: int = 0) -> np.random.Generator:
    """The generator of one (seed, trial, domain, agent, round) stream."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, trial, domain, agent, round_])))


def step_generator(seed: int, step: str, party: int, secure: bool) -> np.random.Generator:
    """Party ``party``'s noise generator for the named pre-run ``step`` (e.g. ``"ranges"``).

    Research mode (``secure=False``): ``SeedSequence([seed, 0, STEP_DOMAIN, party, tag(step)])``, a stream of its
    own, distinct from every run stream of the same seed (those have domain 0-2). Secure mode: rooted at a fresh
    ``KEY_BITS``-bit key from OS entropy drawn here for this party and step, used once and never returned or
    recorded (DESIGN idea 4); ``seed`` takes no part."""
    tag = int.from_bytes(str(step).encode(), "big")
    root = secrets.randbits(KEY_BITS) if secure else int(seed)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([root, 0, STEP_DOMAIN, int(party), tag])))


def data_rng(seed: int, trial: int) -> np.random.Generator:
    """Stream for the data (and random network) of one trial: shared by every algorithm of the trial
    (common random numbers, spec §7)."""
    check_int(seed, "seed", 0)
    check_int(trial, "trial", 0)
    return stream(seed, trial, DATA)


class AgentStreams:
    """Per-agent streams of one round for a block of agents.

    Draw helpers return arrays with a leading block axis whose row ``i`` comes from agent ``agents[i]``'s own
    stream, so a block split differently across workers produces identical numbers. Generators are created
    lazily: a non-private algorithm that draws nothing pays nothing.

    Args:
        seed: the run's recorded seed: the root of every stream in research mode (``keys=None``).
        trial, agents, round_, domain: the stream coordinates (see the module docstring).
        keys: secure mode: one key per agent of the block (from :func:`party_keys`, held where that agent runs);
            agent ``agents[i]``'s stream is rooted at ``keys[i]`` and ``seed`` takes no part in it (DESIGN idea 4).
    """

    def __init__(self, seed: int, trial: int, agents, round_: int, domain: int = AGENT_DOMAIN, keys=None):
        self.seed, self.trial, self.round, self.domain = int(seed), int(trial), int(round_), domain
        self.agents = np.asarray(agents, dtype=np.int64)
        if keys is not None:
            keys = [int(k) for k in keys]
            if len(keys) != len(self.agents) or min(keys, default=0) < 0:
                raise ValueError(f"keys must be one non-negative integer per agent ({len(self.agents)}), "
                                 f"got {len(keys)}")
        self._keys = keys
        self._gens: list[np.random.Generator] | None = None

    @property
    def secure(self) -> bool:
        """Whether the streams are rooted at the agents' own keys (secure mode) rather than the seed."""
        return self._keys is not None

    def entropies(self) -> list[list[int]]:
        """The ``SeedSequence`` entropy of each agent's stream: rooted at the agent's key in secure mode, else at
        the seed."""
        roots = self._keys if self._keys is not None else [self.seed] * len(self.agents)
        return [[r, self.trial, self.domain, int(a), self.round] for r, a in zip(roots, self.agents)]

    def generators(self) -> list[np.random.Generator]:
        """One generator per agent of the block (created on first use)."""
        if self._gens is None:
            self._gens = pcg64_generators(self.entropies())
        return self._gens

    @staticmethod
    def prefetch(streams: list["AgentStreams"]) -> None:
        """Create the generators of several blocks' streams (e.g. the trials of :func:`~privdist.runtime.run_many`)
        in one pass: the same streams, hashed together (:mod:`._seeding`)."""
        todo = [s for s in streams if s._gens is None]
        gens = pcg64_generators([e for s in todo for e in s.entropies()])
        for s in todo:
            s._gens, gens = gens[:len(s.agents)], gens[len(s.agents):]

    def draw(self, fn: Callable[[np.random.Generator, int], np.ndarray]) -> np.ndarray:
        """Stack ``fn(generator_i, i)`` over the block's agents (``i`` is the row in the block)."""
        return np.stack([fn(g, i) for i, g in enumerate(self.generators())])

    def pair_normal(self, partners, n_agents: int, shape: tuple[int, ...]) -> np.ndarray:
        """Per agent ``i`` of the block, ``sum_{j in partners[i]} s_ij n_ij`` with ``n_ij = n_ji ~ N(0, I)`` of
        per-agent ``shape`` drawn from the pair's shared stream (:data:`PAIR_DOMAIN`) and ``s_ij = +1`` for
        ``i < j``, ``-1`` otherwise: both ends of a pair draw the same ``n_ij``, so the terms cancel in the sum over
        all agents. Research mode: the pair stream is keyed by the seed. Secure mode: it is rooted at the pair's
        secret, the X25519 agreement of the two agents' own keys (:func:`pair_secret`), computed where both agents
        run; nobody without one of the two keys can derive it, and it is never recorded.

        Raises:
            SecureAggregationUnavailableError: secure mode with a partner outside the block (the Ray backend
                splitting a pair across actors: agreement across processes is not implemented for this draw).
        """
        from ..errors import SecureAggregationUnavailableError

        K = int(n_agents)
        own = None if self._keys is None else dict(zip(self.agents.tolist(), self._keys))
        draws: dict[tuple[int, int], np.ndarray] = {}  # a pair inside the block is drawn once, for both ends
        out = np.zeros((len(self.agents), *shape))
        for row, (i, js) in enumerate(zip(self.agents.tolist(), partners)):
            for j in np.asarray(js, dtype=np.int64).tolist():
                lo, hi = min(i, j), max(i, j)
                if (lo, hi) not in draws:
                    if own is None:
                        root = self.seed
                    elif j in own:
                        root = pair_secret(own[i], own[j], lo, hi)
                    else:
                        raise SecureAggregationUnavailableError(
                            f"secure-mode correlated noise needs the pair ({lo}, {hi}) in one process (its secret is "
                            "the agreement of both agents' keys); a backend splitting pairs across workers is not "
                            "supported for it: use the in-process simulator")
                    draws[lo, hi] = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
                        [root, self.trial, PAIR_DOMAIN, lo * K + hi, self.round]))).standard_normal(shape)
                out[row] += draws[lo, hi] if i < j else -draws[lo, hi]
        return out

    def normal(self, shape: tuple[int, ...], scale=1.0) -> np.ndarray:
        """Gaussian draws of per-agent ``shape``; ``scale`` is a scalar or one std per agent of the block."""
        out = self.draw(lambda g, i: g.standard_normal(shape))
        scale = np.asarray(scale, dtype=float)
        return out * (scale.reshape(-1, *([1] * len(shape))) if scale.ndim else scale)
