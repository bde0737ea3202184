"""A party's side of a run whose parties are separate processes (issue 38): its data, its keys, its releases.

:class:`RemoteParty` serves one party (agent ``k``) of a run driven by :class:`~privdist.runtime.remote.backend.
RemoteBackend` in another process. It holds the party's own problem block (built in its own process from its own
data), the algorithm factory it built itself from privdist's installed code (nothing executable is received: the
calls carry the method's name and data, :mod:`privdist.runtime.remote.codec`), and, in secure mode, its own noise
key drawn here (:func:`~privdist.runtime.rng.party_keys`), never sent. Secure-aggregation messages leave it masked
(its :class:`~privdist.runtime.secure.secure_round.PartySide`). It reuses the actor body of the Ray backends
(:class:`~privdist.runtime.ray_common.Worker`), so the same algorithm code runs as in the simulator and on Ray.

A party whose model is not a release (a vertical party's coefficient block ``x_m``, computed without noise from its
own columns) is built with ``share_estimate=False``: its estimate never leaves it (the replies carry None, an
``estimate`` call is refused) and it keeps the latest one in :attr:`RemoteParty.estimate_` for its owner.

Before a round's outbox leaves, the party hands the round's releases to ``on_release(t, releases)`` (its lifetime
ledger records them first: a crash after recording over-counts, never under-counts). A secure sum's release is
recorded at the calibration's worst case (``shares`` honest noise shares); when parties are gone and fewer honest
shares are in the sum the coordinator asks it to help unmask, the party hands the weaker release to
``on_amend(t, releases)`` before it answers (its ledger replaces the round's record), so its ledger never counts less
than the coordinator's accountant.

:meth:`RemoteParty.handle` answers one call ``(method, args)``; :func:`serve_link` answers calls on a link until the
coordinator says ``close`` or the link ends.
"""

from __future__ import annotations

import numpy as np

from ...contract import AgentBlock
from ...errors import PrivdistError, ValidationError
from ..ray_common import Worker
from ..simulator import sent_messages

__all__ = ["RemoteParty", "serve_link", "PARTY_METHODS", "RemoteCallError"]

#: The calls a party answers (anything else is refused by name).
PARTY_METHODS = ("init", "step", "events", "estimate", "secure_setup", "secure_agree", "secure_answer",
                 "secure_remask", "secure_prepare", "secure_share", "secure_receive", "secure_reveal", "close")


class RemoteCallError(PrivdistError, RuntimeError):
    """A call a party refused or failed (unknown method, a call out of order, the algorithm's own error)."""


class RemoteParty:
    """Party ``party`` of ``n_parties`` (module docstring).

    Args:
        algorithm: the algorithm factory, built by the party from the job's plan with its installed privdist.
        problem: a problem whose ``subset([party])`` is this party's data (e.g. a
            :class:`~privdist.runtime.party.HorizontalParties` whose other sources are never resolved here).
        network: the job's public network.
        party: this party's agent id.
        on_release: called as ``on_release(t, releases)`` before round ``t``'s outbox leaves.
        share_estimate: send the party's estimate with every reply (a released model); False keeps it here
            (:attr:`estimate_`, owner-only).
    """

    def __init__(self, algorithm, problem, network, party: int, *, on_release=None, share_estimate: bool = True,
                 on_amend=None):
        K = network.n_agents
        if not 0 <= int(party) < K:
            raise ValidationError(f"party must be in [0, {K}), got {party}")
        self.algorithm, self.problem, self.network, self.party = algorithm, problem, network, int(party)
        self.on_release, self.share_estimate, self.on_amend = on_release, bool(share_estimate), on_amend
        self.worker, self.closed, self.estimate_ = None, False, None

    def _amend(self, t: int, present) -> None:
        """Before this party helps unmask round ``t``'s secure sum (module docstring): a sum of the parties
        ``present`` holding fewer honest shares than the calibration's worst case is a weaker release than the one
        recorded when its vector left; it goes to ``on_amend`` first."""
        weaker = getattr(self.algorithm, "weaker_sum", None)
        if self.on_amend is None or weaker is None:
            return
        in_sum = _in_sum(present)
        if in_sum[self.party] and weaker(in_sum):
            release = self.algorithm.secure_events(t, in_sum, self.problem)[self.party]
            if release is not None:
                self.on_amend(t, [release])

    def _block(self) -> AgentBlock:
        degrees = getattr(self.network, "degrees", None)
        deg = None if degrees is None else np.asarray(degrees)[[self.party]]
        return AgentBlock(np.array([self.party]), self.network.n_agents, deg)

    def _shared(self, est):
        """The estimate as it leaves the party: itself, or None when it stays here (kept in :attr:`estimate_`)."""
        self.estimate_ = np.asarray(est)
        return self.estimate_ if self.share_estimate else None

    def handle(self, method: str, args: dict):
        """Answer one call; the result is data only (arrays, numbers, release declarations)."""
        if method not in PARTY_METHODS:
            raise RemoteCallError(f"party {self.party}: unknown call {method!r}; a party answers {PARTY_METHODS}")
        if method == "close":
            self.worker, self.closed = None, True  # forget the keys and secrets: no more noise is drawn
            return None
        if method == "init":
            self.worker = Worker()
            out, est = self.worker.start(self.algorithm, self.problem, self.network, self._block(),
                                         int(args["seed"]), int(args["trial"]), bool(args["secure"]))
            return {"out": out, "estimate": self._shared(est)}
        if self.worker is None:
            raise RemoteCallError(f"party {self.party}: {method!r} before init (or after close)")
        w = self.worker
        if method == "step":
            t = int(args["t"])
            out, releases, est = w.step(t, args["inbox"])
            if self.on_release is not None:
                self.on_release(t, releases)
            out = sent_messages(self.algorithm, out, t)  # the backend puts the declared zeros back
            return {"out": out, "releases": releases, "estimate": self._shared(est)}
        if method == "events":
            return w.events(int(args["t"]))
        if method == "estimate":
            if not self.share_estimate:
                raise RemoteCallError(f"party {self.party}: its model is not a release; it stays with the party")
            return np.asarray(self.algorithm.estimate(w.state))
        if method == "secure_setup":
            from ..secure.secure_round import secure_specs

            specs = secure_specs(self.algorithm.messages(self.problem, self.network))
            return w.secure_setup(specs, self.network.n_agents, args["session"], bool(args["secure"]))
        if method == "secure_agree":
            return w.secure_agree(args["table"])
        if method in ("secure_answer", "secure_remask", "secure_reveal"):
            self._amend(int(args["t"]), args["present"])
        if method in ("secure_answer", "secure_remask"):
            return getattr(w, method)(int(args["t"]), int(args["attempt"]), args["present"])
        if method == "secure_prepare":
            return list(w.secure_prepare(int(args["t"])))
        if method == "secure_share":
            return w.secure_share(int(args["t"]), args["table"])
        if method == "secure_receive":
            return w.secure_receive(int(args["t"]), args["table"], args["sealed"])
        return w.secure_reveal(int(args["t"]), args["present"])


def _in_sum(present) -> np.ndarray:
    """The parties in a secure sum from a call's ``present``: a bool (K,), or the sparse protocol's states (in, or
    pending in its first phase)."""
    p = np.asarray(present)
    if p.dtype == bool:
        return p
    from ..secure.secagg_plus import IN, PENDING

    return (p == IN) | (p == PENDING)


def serve_link(party: RemoteParty, link) -> None:
    """Answer the calls arriving on ``link`` (``link.receive() -> (method, args)``, ``link.reply(result)`` or
    ``link.fail(error)``) until ``close`` or the end of the link."""
    while not party.closed:
        call = link.receive()
        if call is None:  # the coordinator went away
            return
        method, args = call
        try:
            result = party.handle(method, args)
        except Exception as exc:  # noqa: BLE001 - the coordinator learns the named error, the party goes on
            link.fail(f"{type(exc).__name__}: {exc}")
            continue
        link.reply(result)
