"""What the terminal commands share: the connection flags (the server's address, the CA that
a TLS server's certificate is checked against) and how a refusal is printed."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import grpc

from spades.client import SpadesError

DEFAULT_SERVER = "127.0.0.1:50051"


def add_server_flag(parser: argparse.ArgumentParser) -> None:
    """``--server`` and ``--tls-ca``: every command connects through these two."""
    parser.add_argument(
        "--server",
        default=os.environ.get("SPADES_SERVER", DEFAULT_SERVER),
        help=f"the server's gRPC address [env SPADES_SERVER; default: {DEFAULT_SERVER}]",
    )
    parser.add_argument(
        "--tls-ca",
        metavar="FILE",
        type=_certificates,
        help="connect over TLS, trusting the CA certificates in this PEM file (a server "
        "started with --tls-cert); plaintext without it",
    )


def _certificates(path: str) -> bytes:
    """The PEM text of ``--tls-ca``, read while the flags are parsed: a missing file or one
    with no certificate is argparse's one-line usage error (exit 2), not a failed handshake."""
    try:
        text = Path(path).read_bytes()
    except OSError as error:
        raise argparse.ArgumentTypeError(f"{path}: {error.strerror or error}") from error
    if b"-----BEGIN CERTIFICATE-----" not in text:
        raise argparse.ArgumentTypeError(f"{path}: no PEM certificate in the file")
    return text


def channel_credentials(arguments: argparse.Namespace) -> grpc.ChannelCredentials | None:
    """The credentials ``--tls-ca`` asks for; None (plaintext) without it."""
    certificates: bytes | None = arguments.tls_ca
    if certificates is None:
        return None
    return grpc.ssl_channel_credentials(root_certificates=certificates)


def fail(program: str, error: SpadesError | str) -> int:
    """Print ``program: error`` on stderr; the exit status for a refused call (1)."""
    print(f"{program}: {error}", file=sys.stderr)
    return 1
