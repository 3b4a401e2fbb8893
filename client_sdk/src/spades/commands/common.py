"""What the terminal commands share: the server address flag and how a refusal is printed."""

from __future__ import annotations

import argparse
import os
import sys

from spades.client import SpadesError

DEFAULT_SERVER = "127.0.0.1:50051"


def add_server_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--server",
        default=os.environ.get("SPADES_SERVER", DEFAULT_SERVER),
        help=f"the server's gRPC address [env SPADES_SERVER; default: {DEFAULT_SERVER}]",
    )


def fail(program: str, error: SpadesError | str) -> int:
    """Print ``program: error`` on stderr; the exit status for a refused call (1)."""
    print(f"{program}: {error}", file=sys.stderr)
    return 1
