"""The consortium's certificates (issue 38): one CA, a key and certificate per party and per coordinator.

Provisioning follows the cross-silo frameworks (NVIDIA FLARE's project admin and its startup kits): the coordinator's
operator holds the consortium CA; each member makes its own private key and a certificate signing request on its
own machine (the key never leaves it), sends the request to the operator, and gets back its certificate and the CA
certificate. A member's name is the common name (CN) of its certificate; the transport takes a peer's identity from
the certificate the TLS handshake verified, and checks the signature of each message against the same certificate.

Keys are ECDSA on P-256 (what every TLS stack, gRPC's BoringSSL included, accepts for mutual TLS), written as
unencrypted PKCS#8 PEM with mode 0600; a key file readable by others is refused when loaded, as ``ssh`` does.
A party's certificate allows client authentication, a coordinator's server authentication (extended key usage);
the coordinator's carries the host names and addresses it serves on as subject alternative names.

Files: ``init_ca`` writes ``ca.key`` and ``ca.crt`` in its folder; ``make_request`` writes ``NAME.key`` and
``NAME.csr``; ``sign_request`` writes the certificate (``NAME.crt`` beside the request unless told otherwise).
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ...errors import PrivdistError, ValidationError

__all__ = [
    "ROLES", "PkiError", "PkiFileError", "KeyPermissionError", "CertificateExpiredError", "UntrustedCertificateError",
    "CertificateRoleError", "KeyMismatchError", "Identity", "check_name", "init_ca", "make_request", "sign_request",
    "load_certificate", "load_certificate_pem", "load_private_key", "load_request", "verify_certificate", "common_name", "certificate_role", "alt_names",
]

#: The roles a certificate can be signed for, and the extended key usage each gets.
ROLES = {"party": ExtendedKeyUsageOID.CLIENT_AUTH, "coordinator": ExtendedKeyUsageOID.SERVER_AUTH}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_SKEW = _dt.timedelta(minutes=5)  # a certificate is valid from a little before it was signed (clock skew)


class PkiError(PrivdistError):
    """A key, request or certificate cannot be used."""


class PkiFileError(PkiError, ValueError):
    """A file is not what it should be (not PEM, a key where a certificate was expected, unreadable)."""


class KeyPermissionError(PkiError, PermissionError):
    """A private key file is readable or writable by other users (it must be mode 0600 or stricter)."""


class CertificateExpiredError(PkiError, ValueError):
    """A certificate is outside its validity period (expired, or not valid yet)."""


class UntrustedCertificateError(PkiError, ValueError):
    """A certificate (or request) was not signed by the consortium's CA (or its signature does not verify)."""


class CertificateRoleError(PkiError, ValueError):
    """A certificate is used for a role it was not signed for (a party's as a coordinator's, or the reverse)."""


class KeyMismatchError(PkiError, ValueError):
    """A certificate does not belong to the private key it is loaded with."""


def check_name(name: str) -> str:
    """A member's name: 1-63 letters, digits, ``.``, ``_`` or ``-``, starting with a letter or digit."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValidationError(f"name must be 1-63 letters, digits, '.', '_' or '-' (starting with a letter or "
                              f"digit), got {name!r}")
    return name


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def _write(path: Path, data: bytes, private: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if private:  # created 0600 from the start: the key is never readable by others, not even briefly
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    else:
        path.write_bytes(data)
    return path


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _refuse_existing(*paths: Path) -> None:
    there = [str(p) for p in paths if p.exists()]
    if there:
        raise PkiFileError(f"refusing to overwrite {', '.join(there)} (remove it first)")


def _subject(name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])


def _san(name: str, hosts) -> x509.SubjectAlternativeName:
    entries: list[x509.GeneralName] = [x509.DNSName(name)]
    for host in hosts:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            entries.append(x509.DNSName(check_name(host)))
    return x509.SubjectAlternativeName(entries)


def init_ca(out_dir, name: str, days: int = 3650) -> tuple[Path, Path]:
    """Create the consortium CA: a P-256 key (``ca.key``, 0600) and a self-signed certificate (``ca.crt``).

    Returns:
        ``(key_path, cert_path)``.

    Raises:
        PkiFileError: ``ca.key`` or ``ca.crt`` already exists in ``out_dir``.
    """
    check_name(name)
    _check_days(days)
    out = Path(out_dir)
    key_path, cert_path = out / "ca.key", out / "ca.crt"
    _refuse_existing(key_path, cert_path)
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (x509.CertificateBuilder().subject_name(_subject(name)).issuer_name(_subject(name))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - _SKEW).not_valid_after(now + _dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    _write(key_path, _key_pem(key), private=True)
    _write(cert_path, cert.public_bytes(serialization.Encoding.PEM))
    return key_path, cert_path


def make_request(name: str, out_dir, server_hosts=()) -> tuple[Path, Path]:
    """Make a member's private key (``NAME.key``, 0600) and certificate signing request (``NAME.csr``).

    Args:
        name: the member's name (the certificate's CN, and a DNS subject alternative name).
        out_dir: where to write both files.
        server_hosts: for a coordinator, the addresses or host names it serves on (``127.0.0.1``, ``localhost``,
            ``coord.example.org``), added as subject alternative names.

    Returns:
        ``(key_path, csr_path)``.
    """
    check_name(name)
    out = Path(out_dir)
    key_path, csr_path = out / f"{name}.key", out / f"{name}.csr"
    _refuse_existing(key_path, csr_path)
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (x509.CertificateSigningRequestBuilder().subject_name(_subject(name))
           .add_extension(_san(name, list(server_hosts)), critical=False).sign(key, hashes.SHA256()))
    _write(key_path, _key_pem(key), private=True)
    _write(csr_path, csr.public_bytes(serialization.Encoding.PEM))
    return key_path, csr_path


def _check_days(days) -> None:
    if isinstance(days, bool) or not isinstance(days, int) or days < 1:
        raise ValidationError(f"days must be an integer >= 1, got {days!r}")


def sign_request(csr_path, ca_dir, out=None, role: str = "party", days: int = 365) -> Path:
    """Sign a member's request with the consortium CA (run by the coordinator's operator).

    The certificate keeps the request's name and subject alternative names, is valid for ``days`` days, may sign
    (digital signature) but not issue certificates, and allows client authentication (``role="party"``) or server
    authentication (``role="coordinator"``).

    Returns:
        The certificate's path (``out``, or ``NAME.crt`` beside the request).

    Raises:
        UntrustedCertificateError: the request's own signature does not verify (altered in transit).
        PkiFileError: a file is not a request / the CA's key or certificate, or ``out`` exists.
    """
    if role not in ROLES:
        raise ValidationError(f"role must be one of {sorted(ROLES)}, got {role!r}")
    _check_days(days)
    csr = load_request(csr_path)
    name = check_name(_cn(csr.subject, csr_path))
    ca_cert = load_certificate(Path(ca_dir) / "ca.crt")
    ca_key = load_private_key(Path(ca_dir) / "ca.key")
    if ca_key.public_key() != ca_cert.public_key():
        raise KeyMismatchError(f"{Path(ca_dir) / 'ca.crt'} does not belong to {Path(ca_dir) / 'ca.key'}")
    out = Path(out) if out is not None else Path(csr_path).with_name(f"{name}.crt")
    _refuse_existing(out)
    try:
        san = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        san = _san(name, [])
    now = _now()
    not_after = min(now + _dt.timedelta(days=days), ca_cert.not_valid_after_utc)
    cert = (x509.CertificateBuilder().subject_name(_subject(name)).issuer_name(ca_cert.subject)
            .public_key(csr.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - _SKEW).not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ROLES[role]]), critical=False)
            .add_extension(san, critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return _write(out, cert.public_bytes(serialization.Encoding.PEM))


def rehearsal_consortium(directory, parties, coordinator: str = "coord", server_hosts=("127.0.0.1",),
                         ca_name: str = "consortium") -> Path:
    """Every certificate of a consortium made in one folder (a rehearsal, a test or a benchmark on one machine; a
    deployment makes each member's key on its own machine): ``ca/`` (the CA), ``<coordinator>/`` (its key and
    certificate, serving on ``server_hosts``) and ``<party>/`` for each party. Returns ``directory``."""
    directory = Path(directory)
    init_ca(directory / "ca", ca_name)
    for name, role, hosts in [(coordinator, "coordinator", server_hosts)] + [(p, "party", ()) for p in parties]:
        make_request(name, directory / name, server_hosts=hosts)
        sign_request(directory / name / f"{name}.csr", directory / "ca", directory / name / f"{name}.crt", role=role)
    return directory


def _read(path, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise PkiFileError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None


def load_certificate(path) -> x509.Certificate:
    """Read a PEM certificate; a file that is not one (a key, a request, garbage) raises :class:`PkiFileError`."""
    data = _read(path, "certificate")
    try:
        return x509.load_pem_x509_certificate(data)
    except ValueError:
        raise PkiFileError(f"{path} is not a PEM certificate{_looks_like(data)}") from None


def load_certificate_pem(data: bytes, where: str = "the peer") -> x509.Certificate:
    """Parse PEM certificate bytes (e.g. received from a peer); garbage raises :class:`PkiFileError`."""
    try:
        return x509.load_pem_x509_certificate(data)
    except ValueError:
        raise PkiFileError(f"{where} sent no valid PEM certificate") from None


def load_request(path) -> x509.CertificateSigningRequest:
    """Read a PEM certificate signing request and check its own signature."""
    data = _read(path, "signing request")
    try:
        csr = x509.load_pem_x509_csr(data)
    except ValueError:
        raise PkiFileError(f"{path} is not a PEM certificate signing request{_looks_like(data)}") from None
    if not csr.is_signature_valid:
        raise UntrustedCertificateError(f"the signature of the request {path} does not verify (altered?)")
    return csr


def load_private_key(path) -> ec.EllipticCurvePrivateKey:
    """Read an unencrypted PEM P-256 private key that only its owner may read (mode 0600 or stricter)."""
    path = Path(path)
    data = _read(path, "private key")
    mode = path.stat().st_mode & 0o077
    if mode:
        raise KeyPermissionError(f"the private key {path} is accessible by other users (mode "
                                 f"{path.stat().st_mode & 0o777:o}); run: chmod 600 {path}")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise PkiFileError(f"{path} is not an unencrypted PEM private key{_looks_like(data)}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
        raise PkiFileError(f"{path} is not a P-256 (ECDSA) key")
    return key


def _looks_like(data: bytes) -> str:
    m = re.search(rb"-----BEGIN ([A-Z ]+)-----", data)
    return f" (it holds a {m.group(1).decode().lower()})" if m else ""


def _cn(name: x509.Name, where) -> str:
    attrs = name.get_attributes_for_oid(NameOID.COMMON_NAME)
    if len(attrs) != 1:
        raise PkiFileError(f"{where} has {len(attrs)} common names (CN), expected one")
    return str(attrs[0].value)


def common_name(cert: x509.Certificate) -> str:
    """The member's name: the certificate's CN."""
    return _cn(cert.subject, "the certificate")


def alt_names(cert: x509.Certificate) -> list[str]:
    """The certificate's subject alternative names (host names and addresses), as text."""
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [str(n.value) for n in san]


def certificate_role(cert: x509.Certificate) -> str | None:
    """``"party"`` or ``"coordinator"`` from the extended key usage, or None for neither (e.g. the CA)."""
    try:
        usages = set(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
    except x509.ExtensionNotFound:
        return None
    roles = [role for role, oid in ROLES.items() if oid in usages]
    return roles[0] if len(roles) == 1 else None


def verify_certificate(cert: x509.Certificate, ca_cert: x509.Certificate, role: str | None = None,
                       name: str | None = None, now: _dt.datetime | None = None) -> str:
    """Check that ``cert`` was signed by the CA, is valid at ``now``, and (if given) has ``role`` and ``name``.

    Returns:
        The certificate's name (CN).

    Raises:
        UntrustedCertificateError: not signed by ``ca_cert``.
        CertificateExpiredError: expired or not valid yet (the CA's own certificate too).
        CertificateRoleError: signed for another role, or a CA certificate.
        PkiError: another name than ``name``.
    """
    now = now or _now()
    try:
        cert.verify_directly_issued_by(ca_cert)
    except (ValueError, TypeError, InvalidSignature):
        raise UntrustedCertificateError(
            f"the certificate of {_safe_cn(cert)!r} was not signed by the CA {_safe_cn(ca_cert)!r}") from None
    for c, what in ((ca_cert, "the CA certificate"), (cert, f"the certificate of {_safe_cn(cert)!r}")):
        if now < c.not_valid_before_utc:
            raise CertificateExpiredError(f"{what} is not valid before {c.not_valid_before_utc:%Y-%m-%d %H:%M} UTC")
        if now > c.not_valid_after_utc:
            raise CertificateExpiredError(f"{what} expired on {c.not_valid_after_utc:%Y-%m-%d %H:%M} UTC")
    found = certificate_role(cert)
    if role is not None and found != role:
        raise CertificateRoleError(f"the certificate of {_safe_cn(cert)!r} is for {found or 'no role'}, "
                                   f"not for a {role}")
    cn = common_name(cert)
    if name is not None and cn != name:
        raise PkiError(f"the certificate is {cn!r}'s, expected {name!r}'s")
    return cn


def _safe_cn(cert) -> str:
    try:
        return common_name(cert)
    except PkiError:
        return "?"


@dataclass(frozen=True)
class Identity:
    """A member's credentials: its private key, its certificate and the consortium CA's certificate, checked
    together (the certificate belongs to the key, was signed by the CA, is valid, and is for ``role``)."""

    name: str
    role: str
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate
    ca_cert: x509.Certificate

    @classmethod
    def load(cls, key_path, cert_path, ca_path, role: str) -> "Identity":
        """Load and check the three files (named errors for each way they can be wrong)."""
        if role not in ROLES:
            raise ValidationError(f"role must be one of {sorted(ROLES)}, got {role!r}")
        key, cert, ca_cert = load_private_key(key_path), load_certificate(cert_path), load_certificate(ca_path)
        if cert.public_key() != key.public_key():
            raise KeyMismatchError(f"the certificate {cert_path} does not belong to the key {key_path}")
        name = verify_certificate(cert, ca_cert, role=role)
        return cls(name=name, role=role, key=key, cert=cert, ca_cert=ca_cert)

    def key_pem(self) -> bytes:
        return _key_pem(self.key)

    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def ca_pem(self) -> bytes:
        return self.ca_cert.public_bytes(serialization.Encoding.PEM)
