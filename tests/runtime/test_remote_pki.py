"""Issue 38: the consortium's certificates (runtime/remote/pki) and ``privdist pki`` end to end."""

from __future__ import annotations

import datetime as dt
import ipaddress
import stat

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from privdist.cli.main import main
from privdist.errors import ValidationError
from privdist.runtime.remote import pki


@pytest.fixture
def consortium(tmp_path):
    pki.init_ca(tmp_path / "ca", "consortium")
    pki.make_request("coord", tmp_path / "coord", server_hosts=["127.0.0.1", "localhost"])
    pki.sign_request(tmp_path / "coord" / "coord.csr", tmp_path / "ca", role="coordinator")
    pki.make_request("party_0", tmp_path / "p0")
    pki.sign_request(tmp_path / "p0" / "party_0.csr", tmp_path / "ca")
    return tmp_path


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_keys_are_written_0600_and_certificates_carry_name_role_and_hosts(consortium):
    for key in ("ca/ca.key", "coord/coord.key", "p0/party_0.key"):
        assert _mode(consortium / key) == 0o600
    ca = pki.load_certificate(consortium / "ca" / "ca.crt")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    coord = pki.load_certificate(consortium / "coord" / "coord.crt")
    assert pki.verify_certificate(coord, ca, role="coordinator", name="coord") == "coord"
    san = coord.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["coord", "localhost"]
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert list(coord.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == \
        [ExtendedKeyUsageOID.SERVER_AUTH]
    party = pki.load_certificate(consortium / "p0" / "party_0.crt")
    assert pki.certificate_role(party) == "party" and pki.common_name(party) == "party_0"
    assert not party.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    ident = pki.Identity.load(consortium / "p0" / "party_0.key", consortium / "p0" / "party_0.crt",
                              consortium / "ca" / "ca.crt", role="party")
    assert ident.name == "party_0"


def test_a_wrong_file_is_named(consortium):
    with pytest.raises(pki.PkiFileError, match="holds a private key"):
        pki.load_certificate(consortium / "p0" / "party_0.key")
    with pytest.raises(pki.PkiFileError, match="holds a certificate"):
        pki.load_request(consortium / "p0" / "party_0.crt")
    (consortium / "junk.key").write_bytes(b"not a key")
    (consortium / "junk.key").chmod(0o600)
    with pytest.raises(pki.PkiFileError, match="not an unencrypted PEM private key"):
        pki.load_private_key(consortium / "junk.key")
    with pytest.raises(pki.PkiFileError, match="cannot read"):
        pki.load_certificate(consortium / "missing.crt")
    with pytest.raises(pki.PkiFileError, match="refusing to overwrite"):
        pki.init_ca(consortium / "ca", "again")


def test_a_key_readable_by_others_is_refused(consortium):
    key = consortium / "p0" / "party_0.key"
    key.chmod(0o644)
    with pytest.raises(pki.KeyPermissionError, match="chmod 600"):
        pki.load_private_key(key)


def test_expired_and_not_yet_valid_certificates_are_named(consortium):
    ca = pki.load_certificate(consortium / "ca" / "ca.crt")
    pki.make_request("party_1", consortium / "p1")
    cert = pki.load_certificate(pki.sign_request(consortium / "p1" / "party_1.csr", consortium / "ca", days=2))
    now = dt.datetime.now(dt.timezone.utc)
    assert pki.verify_certificate(cert, ca, now=now + dt.timedelta(days=1)) == "party_1"
    with pytest.raises(pki.CertificateExpiredError, match="expired"):
        pki.verify_certificate(cert, ca, now=now + dt.timedelta(days=3))
    with pytest.raises(pki.CertificateExpiredError, match="not valid before"):
        pki.verify_certificate(cert, ca, now=now - dt.timedelta(days=1))


def test_a_certificate_not_signed_by_the_ca_is_named(consortium):
    pki.init_ca(consortium / "rogue", "rogue")
    pki.make_request("party_0", consortium / "r0")
    rogue = pki.load_certificate(pki.sign_request(consortium / "r0" / "party_0.csr", consortium / "rogue"))
    ca = pki.load_certificate(consortium / "ca" / "ca.crt")
    with pytest.raises(pki.UntrustedCertificateError, match="not signed by the CA 'consortium'"):
        pki.verify_certificate(rogue, ca)
    with pytest.raises(pki.UntrustedCertificateError):
        pki.Identity.load(consortium / "r0" / "party_0.key", consortium / "r0" / "party_0.crt",
                          consortium / "ca" / "ca.crt", role="party")


def test_role_key_and_request_mismatches_are_named(consortium):
    ca = consortium / "ca" / "ca.crt"
    with pytest.raises(pki.CertificateRoleError, match="for party, not for a coordinator"):
        pki.Identity.load(consortium / "p0" / "party_0.key", consortium / "p0" / "party_0.crt", ca, "coordinator")
    with pytest.raises(pki.KeyMismatchError):
        pki.Identity.load(consortium / "coord" / "coord.key", consortium / "p0" / "party_0.crt", ca, "party")
    csr = consortium / "p0" / "party_0.csr"
    text = csr.read_text().splitlines()
    body = list(text[1])
    body[40] = "A" if body[40] != "A" else "B"  # one base64 character of the request's body changed
    (consortium / "bad.csr").write_text("\n".join([text[0], "".join(body)] + text[2:]) + "\n")
    with pytest.raises((pki.UntrustedCertificateError, pki.PkiFileError)):
        pki.sign_request(consortium / "bad.csr", consortium / "ca", out=consortium / "bad.crt")
    with pytest.raises(ValidationError, match="name must be"):
        pki.make_request("../etc", consortium / "x")
    with pytest.raises(ValidationError, match="role must be"):
        pki.sign_request(csr, consortium / "ca", out=consortium / "x.crt", role="admin")


def test_cli_provisions_a_consortium(tmp_path, capsys):
    assert main(["pki", "init-ca", "--out", str(tmp_path / "ca"), "--name", "consortium"]) == 0
    assert main(["pki", "request", "--name", "coord", "--out", str(tmp_path / "coord"),
                 "--server-host", "127.0.0.1"]) == 0
    assert main(["pki", "sign", str(tmp_path / "coord" / "coord.csr"), "--ca", str(tmp_path / "ca"),
                 "--role", "coordinator", "--days", "30"]) == 0
    assert main(["pki", "request", "--name", "hospital_a", "--out", str(tmp_path / "a")]) == 0
    assert main(["pki", "sign", str(tmp_path / "a" / "hospital_a.csr"), "--ca", str(tmp_path / "ca"),
                 "--out", str(tmp_path / "a" / "a.crt")]) == 0
    out = capsys.readouterr().out
    assert "signed 'coord' as a coordinator" in out and "127.0.0.1" in out
    assert "signed 'hospital_a' as a party" in out
    for key in ("ca/ca.key", "coord/coord.key", "a/hospital_a.key"):
        assert _mode(tmp_path / key) == 0o600
    ca = tmp_path / "ca" / "ca.crt"
    assert pki.Identity.load(tmp_path / "coord" / "coord.key", tmp_path / "coord" / "coord.crt", ca,
                             "coordinator").name == "coord"
    assert pki.Identity.load(tmp_path / "a" / "hospital_a.key", tmp_path / "a" / "a.crt", ca, "party").name \
        == "hospital_a"
    # named errors are one line, exit 2
    assert main(["pki", "sign", str(ca), "--ca", str(tmp_path / "ca")]) == 2
    assert "is not a PEM certificate signing request (it holds a certificate)" in capsys.readouterr().err
    assert main(["pki", "sign", str(tmp_path / "a" / "hospital_a.csr"), "--ca", str(tmp_path / "ca"),
                 "--out", str(tmp_path / "a" / "a.crt")]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err


def test_the_cli_offers_the_roles_of_the_pki():
    from privdist.cli.pki_cmd import ROLES

    assert sorted(ROLES) == sorted(pki.ROLES)
