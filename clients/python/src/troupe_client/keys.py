"""CURVE keys for the job endpoint, and the connection settings of a local cluster.

Key files are Troupe's (transport/keys.h): UTF-8 text, ``name = value`` per
line, ``#`` comments::

    DIR/node.pub   public-key = <40 Z85 characters>
    DIR/node.key   public-key = ...
                   secret-key = ...

The head's job endpoint is plain on loopback and CURVE elsewhere when the
cluster runs CURVE (actors/node.cpp); a CURVE client needs the head's public
key and a key pair the head's allowlist holds.
"""
from __future__ import annotations

import ipaddress
import json
import os
import pathlib
from dataclasses import dataclass
from typing import Dict, Optional, Tuple, Union

import zmq

from .errors import BadRequestError

__all__ = ["KeyPair", "read_key_file", "server_key_of", "client_keys_of", "is_loopback", "ClusterSettings",
           "cluster_settings"]

Z85_ALPHABET = set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#")
PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class KeyPair:
    """A CURVE key pair, Z85 text (40 characters each)."""

    public_key: str
    secret_key: str


def _valid_z85(key: str, what: str) -> str:
    if len(key) != 40 or not set(key) <= Z85_ALPHABET:
        raise BadRequestError(f"{what}: not a Z85 CURVE key (40 characters of the Z85 alphabet)")
    return key


def read_key_file(path: PathLike) -> Dict[str, str]:
    """The entries of a Troupe key file: {"public-key": ..., "secret-key": ...}."""
    entries: Dict[str, str] = {}
    text = pathlib.Path(path).read_text(encoding="utf-8")
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, eq, value = line.partition("=")  # Z85 itself may hold '='
        name, value = name.strip(), value.strip()
        if not eq or name not in ("public-key", "secret-key"):
            raise BadRequestError(f"{path}:{n}: expected `public-key = ...` or `secret-key = ...`")
        entries[name] = _valid_z85(value, f"{path}:{n}: {name}")
    return entries


def server_key_of(key: Union[str, PathLike]) -> str:
    """The head's public key: Z85 text, or a .pub/.key file holding it."""
    if isinstance(key, str) and len(key) == 40 and not os.path.exists(key):
        return _valid_z85(key, "server_key")
    entries = read_key_file(key)
    if "public-key" not in entries:
        raise BadRequestError(f"{key}: no public-key entry")
    return entries["public-key"]


def client_keys_of(keys: Union[None, PathLike, Tuple[str, str], KeyPair]) -> KeyPair:
    """This client's pair: a node.key file, (public, secret) Z85, or None for a fresh pair."""
    if keys is None:
        fresh = zmq.curve_keypair()
        return KeyPair(fresh[0].decode(), fresh[1].decode())
    if isinstance(keys, KeyPair):
        return keys
    if isinstance(keys, tuple):
        return KeyPair(_valid_z85(keys[0], "client public key"), _valid_z85(keys[1], "client secret key"))
    entries = read_key_file(keys)
    if "secret-key" not in entries:
        raise BadRequestError(f"{keys}: no secret-key entry (a client needs its node.key, not its node.pub)")
    secret = entries["secret-key"]
    public = zmq.curve_public(secret.encode()).decode()
    if entries.get("public-key", public) != public:
        raise BadRequestError(f"{keys}: the public key does not match the secret key")
    return KeyPair(public, secret)


def is_loopback(endpoint: str) -> bool:
    """As transport::IsLoopbackEndpoint: ipc/inproc, localhost, 127.0.0.0/8, ::1."""
    if endpoint.startswith(("ipc://", "inproc://")):
        return True
    if not endpoint.startswith("tcp://"):
        return False
    host = endpoint[len("tcp://"):].rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # wildcards, interface names, host names: reachable from elsewhere


@dataclass(frozen=True)
class ClusterSettings:
    """How to reach the job endpoint of a cluster started by ``troupe cluster up --dir DIR``."""

    endpoint: str
    server_key: Optional[str]  # None: plain
    client_keys: Optional[KeyPair]


def cluster_settings(directory: PathLike) -> ClusterSettings:
    """Reads DIR/cluster.json and the keys it names.

    The job endpoint is CURVE when cluster.json says so (``job_curve``), else
    when the cluster runs CURVE (``curve``) and the endpoint is not loopback
    — the head's own rule. Then the head's key is ``server_key`` (Z85) or
    ``server_key_file`` (default DIR/keys/head/node.pub), and the client's
    pair ``client_key_file`` (default DIR/keys/client/node.key when present,
    else the head's own DIR/keys/head/node.key, which the head always
    allows).
    """
    d = pathlib.Path(directory)
    info = json.loads((d / "cluster.json").read_text(encoding="utf-8"))
    endpoint = info["job_endpoint"]
    curve = info.get("job_curve")
    if curve is None:
        curve = bool(info.get("curve")) and not is_loopback(endpoint)
    if not curve:
        return ClusterSettings(endpoint, None, None)
    if info.get("server_key"):
        server = server_key_of(str(info["server_key"]))
    else:
        server = server_key_of(pathlib.Path(info.get("server_key_file") or d / "keys" / "head" / "node.pub"))
    client_file = info.get("client_key_file")
    if not client_file:
        client_file = d / "keys" / "client" / "node.key"
        if not client_file.exists():
            client_file = d / "keys" / "head" / "node.key"
    return ClusterSettings(endpoint, server, client_keys_of(pathlib.Path(client_file)))
