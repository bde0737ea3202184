"""Parties in their own processes and on their own machines (issue 38): the consortium's certificates (:mod:`.pki`),
signed message envelopes (:mod:`.envelope`), the gRPC transport with mutual TLS (:mod:`.transport`, which imports
``grpc``; import it from its module), the wire format of a run's calls (:mod:`.codec`), a party's side of a run
(:mod:`.party_side`), the coordinator's backend (:mod:`.backend`) and the links between them (:mod:`.links`).
Nothing executable crosses a link: a call is a method name and data."""

from .backend import LinkLostError, RemoteBackend
from .codec import WireFormatError, decode, encode
from .envelope import (Envelope, EnvelopeError, Inbox, MalformedEnvelopeError, MisdirectedMessageError,
                       OutOfOrderMessageError, Outbox, ReplayedMessageError, TamperedMessageError,
                       UnknownSenderError, WrongJobError)
from .links import LocalLink, PipeLink, spawn_party
from .party_side import RemoteCallError, RemoteParty
from .pki import (CertificateExpiredError, CertificateRoleError, Identity, KeyMismatchError, KeyPermissionError,
                  PkiError, PkiFileError, UntrustedCertificateError, init_ca, make_request, sign_request,
                  verify_certificate)

__all__ = [
    "RemoteBackend", "RemoteParty", "LocalLink", "PipeLink", "spawn_party", "encode", "decode", "WireFormatError",
    "LinkLostError", "RemoteCallError",
    "Envelope", "EnvelopeError", "Inbox", "Outbox", "MalformedEnvelopeError", "MisdirectedMessageError",
    "OutOfOrderMessageError", "ReplayedMessageError", "TamperedMessageError", "UnknownSenderError", "WrongJobError",
    "CertificateExpiredError", "CertificateRoleError", "Identity", "KeyMismatchError", "KeyPermissionError",
    "PkiError", "PkiFileError", "UntrustedCertificateError", "init_ca", "make_request", "sign_request",
    "verify_certificate",
]
