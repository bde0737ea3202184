"""``privdist pki``: provision the consortium's certificates (issue 38).

* ``privdist pki init-ca --out DIR --name NAME``: the coordinator's operator creates the consortium CA
  (``DIR/ca.key``, mode 0600, and ``DIR/ca.crt``, which every member receives).
* ``privdist pki request --name NAME --out DIR [--server-host HOST ...]``: each member (party or coordinator) makes
  its own private key (``DIR/NAME.key``, 0600; it never leaves the machine) and signing request (``DIR/NAME.csr``,
  sent to the operator). A coordinator names the addresses it serves on with ``--server-host``.
* ``privdist pki sign CSR --ca DIR [--out CERT] [--role party|coordinator] [--days N]``: the operator signs a
  request with the CA and sends the certificate back with ``ca.crt``.
"""

from __future__ import annotations

__all__ = ["register", "ROLES"]

#: ``runtime.remote.pki.ROLES`` (not imported here: ``privdist --help`` loads no runtime, issue 16; a test compares)
ROLES = ("coordinator", "party")


def register(sub) -> None:
    p = sub.add_parser("pki", help="provision certificates: a consortium CA, members' keys and requests, signing")
    cmds = p.add_subparsers(dest="pki_command", metavar="PKI_COMMAND")
    cmds.required = True

    c = cmds.add_parser("init-ca", help="create the consortium CA (ca.key, mode 0600, and ca.crt) in DIR")
    c.add_argument("--out", required=True, metavar="DIR", help="folder for ca.key and ca.crt")
    c.add_argument("--name", required=True, help="the CA's name (its certificate's CN)")
    c.add_argument("--days", type=int, default=3650, help="validity in days (default 3650)")
    c.set_defaults(func=_init_ca)

    r = cmds.add_parser("request", help="make a member's private key (NAME.key, 0600) and signing request (NAME.csr)")
    r.add_argument("--name", required=True, help="the member's name (its certificate's CN)")
    r.add_argument("--out", required=True, metavar="DIR", help="folder for NAME.key and NAME.csr")
    r.add_argument("--server-host", action="append", metavar="HOST",
                   help="a coordinator's address or host name it serves on (repeatable), e.g. 127.0.0.1")
    r.set_defaults(func=_request)

    s = cmds.add_parser("sign", help="sign a member's request with the consortium CA")
    s.add_argument("csr", metavar="CSR", help="the member's signing request (NAME.csr)")
    s.add_argument("--ca", required=True, metavar="DIR", help="the folder of ca.key and ca.crt")
    s.add_argument("--out", metavar="CERT", help="the certificate to write (default: NAME.crt beside CSR)")
    s.add_argument("--role", choices=ROLES, default="party",
                   help="party (client authentication) or coordinator (server authentication); default party")
    s.add_argument("--days", type=int, default=365, help="validity in days (default 365)")
    s.set_defaults(func=_sign)


def _init_ca(args) -> int:
    from ..runtime.remote import pki

    key, cert = pki.init_ca(args.out, args.name, days=args.days)
    print(f"wrote {key} (keep it private) and {cert} (send it to every member)")
    return 0


def _request(args) -> int:
    from ..runtime.remote import pki

    key, csr = pki.make_request(args.name, args.out, server_hosts=args.server_host or ())
    print(f"wrote {key} (keep it private) and {csr} (send it to the coordinator's operator to sign)")
    return 0


def _sign(args) -> int:
    from ..runtime.remote import pki

    path = pki.sign_request(args.csr, args.ca, out=args.out, role=args.role, days=args.days)
    cert = pki.load_certificate(path)
    print(f"signed {pki.common_name(cert)!r} as a {args.role}, valid until "
          f"{cert.not_valid_after_utc:%Y-%m-%d} UTC (names: {', '.join(pki.alt_names(cert))}): wrote {path}")
    return 0
