"""Parties on their own machines (issue 38): the consortium's certificates (:mod:`.pki`), signed message envelopes
(:mod:`.envelope`) and the gRPC transport with mutual TLS (:mod:`.transport`, which imports ``grpc``; import it
from its module)."""

from .envelope import (Envelope, EnvelopeError, Inbox, MalformedEnvelopeError, MisdirectedMessageError,
                       OutOfOrderMessageError, Outbox, ReplayedMessageError, TamperedMessageError,
                       UnknownSenderError, WrongJobError)
from .pki import (CertificateExpiredError, CertificateRoleError, Identity, KeyMismatchError, KeyPermissionError,
                  PkiError, PkiFileError, UntrustedCertificateError, init_ca, make_request, sign_request,
                  verify_certificate)

__all__ = [
    "Envelope", "EnvelopeError", "Inbox", "Outbox", "MalformedEnvelopeError", "MisdirectedMessageError",
    "OutOfOrderMessageError", "ReplayedMessageError", "TamperedMessageError", "UnknownSenderError", "WrongJobError",
    "CertificateExpiredError", "CertificateRoleError", "Identity", "KeyMismatchError", "KeyPermissionError",
    "PkiError", "PkiFileError", "UntrustedCertificateError", "init_ca", "make_request", "sign_request",
    "verify_certificate",
]
