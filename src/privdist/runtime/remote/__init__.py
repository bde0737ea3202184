"""Parties in their own processes (issue 38): the wire format, a party's side of a run, the coordinator's backend and
the links between them. Nothing executable crosses a link: a call is a method name and data."""

from .backend import LinkLostError, RemoteBackend
from .codec import WireFormatError, decode, encode
from .links import LocalLink, PipeLink, spawn_party
from .party_side import RemoteCallError, RemoteParty

__all__ = ["RemoteBackend", "RemoteParty", "LocalLink", "PipeLink", "spawn_party", "encode", "decode",
           "WireFormatError", "LinkLostError", "RemoteCallError"]
