"""The two roles of a job across organisations as Python calls (issue 38): what ``privdist coordinate`` and
``privdist party`` run.

:func:`run_coordinator` listens with mutual TLS for the named parties, runs the job
(:func:`privdist.learn.job.coordinate`, or :func:`privdist.learn.job_vertical.coordinate_vertical` when ``labels``
are given) and returns the model; it holds no data. :func:`run_party` dials out to the coordinator with the party's
certificate and answers the job (:class:`privdist.learn.job.PartyJob` or
:class:`privdist.learn.job_vertical.VerticalPartyJob`): it checks the plan against the party's gate (policy and
lifetime ledger) before it reads any data. Both take the paths of a key, a certificate and the consortium CA made by
``privdist pki`` (:mod:`privdist.runtime.remote.pki`).
"""

from __future__ import annotations

__all__ = ["run_coordinator", "run_party", "PartyOutcome"]

from dataclasses import dataclass


def run_coordinator(request, parties, *, key, cert, ca, host: str = "127.0.0.1", port: int = 0,
                    timeout: float = 600.0, labels=None, on_listening=None):
    """Run ``request`` (a :class:`~privdist.learn.job.JobRequest`, or a
    :class:`~privdist.learn.job_vertical.VerticalJobRequest` with the coordinator's ``labels``) with the parties
    named ``parties`` (their certificates' names); ``on_listening(port)`` is called once the server listens.

    Returns:
        The fitted estimator (its ``privacy_report_``, ``privacy_plan_`` and ``remote_``).

    Raises:
        PeerTimeoutError: a party did not join within ``timeout``. JobRefusedError: a party refused the plan.
    """
    from ..runtime.remote.grpc_link import GrpcLink
    from ..runtime.remote.pki import Identity
    from ..runtime.remote.transport import CoordinatorServer

    names = list(parties)
    me = Identity.load(key, cert, ca, role="coordinator")
    with CoordinatorServer(me, job=request.job_id, parties=names, host=host, port=port, timeout=timeout) as server:
        if on_listening is not None:
            on_listening(server.port)
        server.wait_for_parties(timeout=timeout)
        links = [GrpcLink(server, n, timeout) for n in names]
        if labels is not None:
            from .job_vertical import coordinate_vertical

            return coordinate_vertical(request, links, labels)
        from .job import coordinate

        return coordinate(request, links)


@dataclass(frozen=True)
class PartyOutcome:
    """How a party's job ended: ``"finished"``, ``"refused"`` (``reasons``; no data read), ``"called_off"`` (the
    coordinator stopped the job before its rounds ended, e.g. another party refused; aborted in the party's ledger),
    ``"abandoned"`` (the coordinator went away; aborted in the party's ledger; what was released stays charged) or
    ``"no_plan"`` (the coordinator went away before it offered a plan, e.g. another party never joined: nothing was
    read, released or written to the ledger) or ``"unreadable"`` (it accepted the plan but could not read its data
    as the job needs: ``error``, kept on its machine; the coordinator was told without the error's text; aborted in
    the party's ledger, nothing released)."""

    status: str
    job: str | None
    reasons: tuple = ()
    error: Exception | None = None


def run_party(job, *, key, cert, ca, coordinator: str, coordinator_name: str, timeout: float = 600.0
              ) -> PartyOutcome:
    """Take part in the job the coordinator at ``coordinator`` (``host:port``, whose certificate must name
    ``coordinator_name``) runs, as ``job`` (a :class:`~privdist.learn.job.PartyJob`) with the party's certificate."""
    from ..runtime.remote.grpc_link import GrpcEnd
    from ..runtime.remote.party_side import serve_link
    from ..runtime.remote.pki import Identity
    from ..runtime.remote.transport import PartyClient

    me = Identity.load(key, cert, ca, role="party")
    job_id = None
    try:
        with PartyClient(me, coordinator, coordinator=coordinator_name, timeout=timeout) as client:
            job_id = client.job
            serve_link(job, GrpcEnd(client, timeout))
    except KeyboardInterrupt:  # Ctrl-C on the party's machine: an accepted job ends aborted, not 'running' for ever
        if job.abandon("interrupted on the party's machine"):
            raise KeyboardInterrupt(f"job {job_id!r} is aborted in this party's ledger (what was released stays "
                                    "charged)") from None
        raise
    if getattr(job, "data_error_", None) is not None:
        job.abandon()  # already ended in its ledger when the error happened; a no-op then
        return PartyOutcome("unreadable", job_id, error=job.data_error_)
    if not job.closed and not getattr(job, "finished", False):  # finished: the rounds ended, only the release missed
        job.abandon()
        return PartyOutcome("no_plan" if job.decision is None else "abandoned", job_id)
    if job.decision is not None and not job.decision[0]:
        return PartyOutcome("refused", job_id, tuple(job.decision[1]))
    if job.called_off:
        return PartyOutcome("called_off", job_id)
    return PartyOutcome("finished", job_id)
