"""What the terminal commands share: the connection flags (the server's address, the CA that
a TLS server's certificate is checked against; each a flag, else the environment, else the
config file, :mod:`spades.commands.config`), the account key and operator token (never needed on
the command line), ``--json`` output, and how a refusal is printed: its status, its stable
reason code and the server's reason, with exit status 1 (a usage mistake or a missing credential
is 2)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

import grpc

from spades.client import SpadesClient, SpadesError
from spades.commands.config import ConfigFileError, setting

DEFAULT_SERVER: Final = "127.0.0.1:50051"
#: The exit status of a usage mistake or a missing credential (argparse's own is 2 too).
USAGE: Final = 2


class MissingCredential(Exception):
    """A command needs a secret that neither the environment nor the config file holds."""


def configured(name: str, default: str = "") -> str:
    """A setting from the environment or the config file; a config file that cannot be read
    ends the command with one line and exit status 2."""
    try:
        return setting(name, default)
    except ConfigFileError as error:
        print(f"{Path(sys.argv[0]).name}: {error}", file=sys.stderr)
        raise SystemExit(USAGE) from None


def add_server_flag(parser: argparse.ArgumentParser, *, again: bool = False) -> None:
    """``--server`` and ``--tls-ca``: every command connects through these two. ``again``:
    the flags of a verb whose group has them too, so they may come before or after the verb
    (with no default of their own, which would override the group's)."""
    parser.add_argument(
        "--server",
        default=argparse.SUPPRESS if again else configured("server", DEFAULT_SERVER),
        help="the server's gRPC address [env SPADES_SERVER, else the config file; "
        f"default: {DEFAULT_SERVER}]",
    )
    parser.add_argument(
        "--tls-ca",
        metavar="FILE",
        type=_certificates,
        default=argparse.SUPPRESS if again else configured("tls_ca") or None,
        help="connect over TLS, trusting the CA certificates in this PEM file (a server "
        "started with --tls-cert) [env SPADES_TLS_CA, else the config file]; plaintext "
        "without it",
    )


def add_account_key_flag(parser: argparse.ArgumentParser) -> None:
    """``--account-key``, which comes before the environment and the config file."""
    parser.add_argument(
        "--account-key",
        default="",
        metavar="KEY",
        help="the account's key [else env SPADES_ACCOUNT_KEY, else the config file; "
        "better than the flag: a command line is visible in ps]",
    )


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print JSON (one document) for a program to read"
    )


def account_key(arguments: argparse.Namespace) -> str:
    """The account key: ``--account-key`` if the command has it, else the environment, else
    the config file; MissingCredential when none holds one."""
    key: str = getattr(arguments, "account_key", "") or configured("account_key")
    if not key:
        raise MissingCredential(
            "this needs an account key: set SPADES_ACCOUNT_KEY, or save one in the config file "
            "with `spades account create NAME --save` (docs/accounts.md)"
        )
    return key


def operator_token() -> str:
    """The operator token from the environment, else the config file (never a flag: a flag
    shows in the process list); MissingCredential when neither holds one."""
    token = configured("operator_token")
    if not token:
        raise MissingCredential(
            "set SPADES_OPERATOR_TOKEN (or operator_token in the config file) to the server's "
            "operator token"
        )
    return token


def print_json(document: Any) -> None:
    print(json.dumps(document, indent=2, sort_keys=True))


T = TypeVar("T")


async def gathered(
    fetch: Callable[[str], Awaitable[tuple[Sequence[T], str]]], most: int
) -> list[T]:
    """Up to ``most`` items of a paged listing: ``fetch(page_token)`` gives a page's items
    and the next page's token ("" after the last)."""
    found: list[T] = []
    token = ""
    while len(found) < most:
        items, token = await fetch(token)
        found += items
        if not token:
            break
    return found[:most]


def print_listing(
    items: Sequence[T],
    *,
    as_json: bool,
    document: Callable[[T], Any],
    line: Callable[[T], str],
    nothing: str,
) -> int:
    """A listing: one JSON array with ``--json``, else a line per item (``nothing`` for none)."""
    if as_json:
        print_json([document(item) for item in items])
        return 0
    for item in items:
        print(line(item))
    if not items:
        print(nothing)
    return 0


def parse_command_line(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None
) -> argparse.Namespace:
    """The command line parsed, after offering shell completion (argcomplete: when the shell
    asks for completions, this answers and exits; otherwise it does nothing)."""
    import argcomplete

    argcomplete.autocomplete(parser)
    return parser.parse_args(argv)


def usage_error(program: str, message: str) -> int:
    """Print ``program: message`` on stderr; the exit status of a usage mistake (2)."""
    print(f"{program}: {message}", file=sys.stderr)
    return USAGE


#: A subcommand's work on a connected client: returns the exit status.
ClientAction = Callable[[SpadesClient, argparse.Namespace], Awaitable[int]]


def run_with_client(
    program: str, action: ClientAction, arguments: argparse.Namespace, *, needs_key: bool
) -> int:
    """Connect (with the account key when ``needs_key``, or when one is configured), run
    ``action`` and turn what goes wrong into an exit status: a refusal printed with its reason
    code (1), a missing credential or usage mistake (2), Ctrl-C (130)."""
    as_json = bool(getattr(arguments, "json", False))
    try:
        key = account_key(arguments) if needs_key else configured("account_key")
    except MissingCredential as error:
        return usage_error(program, str(error))

    async def connected() -> int:
        async with SpadesClient(
            arguments.server, credentials=channel_credentials(arguments), account_key=key
        ) as client:
            return await action(client, arguments)

    try:
        return asyncio.run(connected())
    except SpadesError as error:
        return fail(program, error, as_json=as_json)
    except (MissingCredential, ValueError) as error:
        return usage_error(program, str(error))
    except KeyboardInterrupt:
        return 130


def add_leaf(
    group: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    help: str,
    action: ClientAction,
    *,
    program: str,
    needs_key: bool = False,
    json_output: bool = False,
) -> argparse.ArgumentParser:
    """A subcommand of ``group`` that runs ``action`` on a connected client: with the
    connection flags, ``--json`` when asked, and ``--account-key`` where a key is needed."""
    parser = group.add_parser(name, help=help, description=help[:1].upper() + help[1:] + ".")
    add_server_flag(parser)
    if json_output:
        add_json_flag(parser)
    if needs_key:
        add_account_key_flag(parser)

    def run(arguments: argparse.Namespace) -> int:
        return run_with_client(program, action, arguments, needs_key=needs_key)

    parser.set_defaults(run=run, command_parser=parser)
    return parser


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


def program_of(arguments: argparse.Namespace, default: str) -> str:
    """The name a message starts with: ``spades NAME`` under ``spades``, else the alias's."""
    program: str = getattr(arguments, "program", default)
    return program


def describe(error: SpadesError) -> str:
    """A refusal in one line: status, reason code (when the server sent one) and reason."""
    code = f" {error.reason_code}" if error.reason_code else ""
    return f"{error.code.name}{code}: {error.reason}"


def fail(program: str, error: SpadesError | str, *, as_json: bool = False) -> int:
    """Print ``program: STATUS REASON_CODE: reason`` on stderr (with ``as_json``, a JSON
    object with those fields); the exit status for a refused call (1)."""
    if as_json and isinstance(error, SpadesError):
        document = {
            "error": {
                "status": error.code.name,
                "reason_code": error.reason_code,
                "reason": error.reason,
            }
        }
        print(json.dumps(document), file=sys.stderr)
        return 1
    text = describe(error) if isinstance(error, SpadesError) else error
    print(f"{program}: {text}", file=sys.stderr)
    return 1
