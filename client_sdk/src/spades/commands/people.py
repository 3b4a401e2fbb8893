"""``spades account`` for people: sign up, sign in and out, sessions, and the bots you own.

    spades account sign-up NAME [--json]        a person account with a password; signed in
    spades account sign-in NAME [--json]        a new session, saved in the config file
    spades account sign-out                     end the saved session and forget it
    spades account sessions list [--json]       your sessions that still work
    spades account sessions revoke SESSION_ID   end one of them
    spades account bots create NAME [--json]    a bot you own, and its key (shown once)
    spades account bots list [--json]           your bots
    spades account bots rotate-key BOT [--json] a new key for your bot (id or name)
    spades account bots revoke BOT --yes        your bot's key never works again
    spades account bots manifest BOT [--players 4 3] [--target-scores MIN MAX] [--option NAME]
                                    [--max-series N]

The password is asked for (not echoed) at a terminal, or read as one line from standard input
when it is piped (``printf '%s\\n' "$PASSWORD" | spades account sign-in NAME``): never on the
command line, which other users see in ``ps``. The session token goes into the config file
(mode 0600), never on the screen; the calls after it send it from there (or from
``SPADES_SESSION_TOKEN``), else the account key.
"""

from __future__ import annotations

import argparse
import getpass
import sys
import time
from typing import Any

from spades.client import AccountInfo, NotFound, SessionInfo, SignedIn, SpadesClient, SpadesError
from spades.commands.common import (
    MissingCredential,
    add_leaf,
    configured,
    print_json,
    print_listing,
    usage_error,
)
from spades.commands.config import ConfigFileError, save_settings
from spades.manifest import OPTION_NAMES, manifest_of, manifest_problem
from spades.v1 import account_pb2

PROGRAM = "spades account"

#: A session the server no longer takes: sign-out forgets it all the same.
_ENDED = {"SESSION_REVOKED", "SESSION_EXPIRED", "SESSION_NOT_VALID"}


def read_password(*, confirm: bool = False) -> str:
    """The password: asked for without echo at a terminal (twice with ``confirm``), else one
    line of standard input. ValueError (a usage error) for none, or two that differ."""
    if sys.stdin.isatty():
        password = getpass.getpass("Password: ")
        if confirm and getpass.getpass("Password again: ") != password:
            raise ValueError("the two passwords differ; nothing was done")
    else:
        password = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    if not password:
        raise ValueError("no password given (type it when asked, or pipe it on standard input)")
    return password


def person_credential() -> str:
    """The saved session token, else the account key; MissingCredential when neither."""
    credential = configured("session_token") or configured("account_key")
    if not credential:
        raise MissingCredential(
            "sign in first: `spades account sign-in NAME` saves a session in the config file "
            "(or set SPADES_SESSION_TOKEN)"
        )
    return credential


def when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


def session_json(session: SessionInfo) -> dict[str, Any]:
    return {
        "session_id": session.session_id,
        "created": when(session.created),
        "expires": when(session.expires),
        "last_address": session.last_address,
        "last_used": when(session.last_used) if session.last_used else "",
        "current": session.current,
    }


def _save_session(signed: SignedIn, arguments: argparse.Namespace, verb: str) -> int:
    try:
        path = save_settings(
            {"session_token": signed.token, "account_id": signed.account.account_id}
        )
    except ConfigFileError as error:
        return usage_error(PROGRAM, f"could not save the session (sign in again): {error}")
    if arguments.json:
        print_json(
            {
                "account_id": signed.account.account_id,
                "name": signed.account.name,
                "session": session_json(signed.session),
                "saved_to": str(path),
            }
        )
        return 0
    print(f"{verb} as {signed.account.name!r} (id {signed.account.account_id})")
    print(
        f"Session {signed.session.session_id} until {when(signed.session.expires)}, saved to "
        f"{path} (readable by you only)"
    )
    return 0


async def _sign_up(client: SpadesClient, arguments: argparse.Namespace) -> int:
    password = read_password(confirm=True)
    signed = await client.sign_up(
        arguments.name, password, operator_token=configured("operator_token")
    )
    return _save_session(signed, arguments, "Signed up and signed in")


async def _sign_in(client: SpadesClient, arguments: argparse.Namespace) -> int:
    signed = await client.sign_in(arguments.name, read_password())
    return _save_session(signed, arguments, "Signed in")


async def _sign_out(client: SpadesClient, arguments: argparse.Namespace) -> int:
    token = configured("session_token")
    if not token:
        return usage_error(PROGRAM, "not signed in: the config file holds no session")
    client.account_key = token
    try:
        session_id = await client.revoke_session()
        said = f"Signed out (session {session_id} revoked)"
    except SpadesError as error:
        if error.reason_code not in _ENDED:
            raise
        said = f"Signed out (the session had already ended: {error.reason_code})"
    try:
        save_settings({}, forget=("session_token",))
    except ConfigFileError as error:
        return usage_error(PROGRAM, f"could not remove the session from the config file: {error}")
    print(said)
    return 0


async def _sessions_list(client: SpadesClient, arguments: argparse.Namespace) -> int:
    client.account_key = person_credential()
    return print_listing(
        await client.sessions(),
        as_json=arguments.json,
        document=session_json,
        line=lambda s: (
            f"{s.session_id}  since {when(s.created)}  until {when(s.expires)}  "
            f"used {when(s.last_used) if s.last_used else '?'} from {s.last_address or '?'}"
            f"{'  (this one)' if s.current else ''}"
        ),
        nothing="No sessions.",
    )


async def _sessions_revoke(client: SpadesClient, arguments: argparse.Namespace) -> int:
    client.account_key = person_credential()
    session_id = await client.revoke_session(arguments.session_id)
    print(f"Revoked session {session_id}")
    return 0


async def _my_bot(client: SpadesClient, wanted: str) -> AccountInfo:
    """One of the person's bots by id or name (any case)."""
    for bot in await client.bots():
        if wanted == bot.account_id or bot.name.casefold() == wanted.strip().casefold():
            return bot
    # Not one of yours: the server says so by its reason code (NOT_BOT_OWNER) when it exists.
    try:
        return await client.get_account(wanted)
    except NotFound:
        return await client.get_account(name=wanted)


def bot_json(bot: AccountInfo) -> dict[str, Any]:
    return {
        "account_id": bot.account_id,
        "name": bot.name,
        "kind": bot.kind,
        "key_revoked": bot.key_revoked,
        "owner_account_id": bot.owner_account_id,
    }


async def _bots_create(client: SpadesClient, arguments: argparse.Namespace) -> int:
    client.account_key = person_credential()
    made = await client.create_bot(arguments.name)
    if arguments.json:
        print_json(bot_json(made.account) | {"key": made.key})
        return 0
    print(f"Created bot {made.account.name!r} (id {made.account.account_id}), owned by you")
    print(f"Key (shown once, keep it; SPADES_ACCOUNT_KEY for spades bot): {made.key}")
    return 0


async def _bots_list(client: SpadesClient, arguments: argparse.Namespace) -> int:
    client.account_key = person_credential()
    return print_listing(
        await client.bots(),
        as_json=arguments.json,
        document=bot_json,
        line=lambda bot: (
            f"{bot.name}  id {bot.account_id}{'  (key revoked)' if bot.key_revoked else ''}"
        ),
        nothing="No bots yet: `spades account bots create NAME`.",
    )


async def _bots_rotate(client: SpadesClient, arguments: argparse.Namespace) -> int:
    client.account_key = person_credential()
    bot = await _my_bot(client, arguments.bot)
    issued = await client.rotate_key(account_id=bot.account_id)
    if arguments.json:
        print_json(bot_json(issued.account) | {"key": issued.key})
        return 0
    print(f"New key for {bot.name!r} (the old one stops working now)")
    print(f"Key (shown once, keep it): {issued.key}")
    return 0


async def _bots_revoke(client: SpadesClient, arguments: argparse.Namespace) -> int:
    if not arguments.yes:
        return usage_error(PROGRAM, "revoking stops the bot's key at once: add --yes")
    client.account_key = person_credential()
    bot = await _my_bot(client, arguments.bot)
    await client.revoke_key(account_id=bot.account_id)
    print(f"Revoked the key of {bot.name!r} (`spades account bots rotate-key` issues a new one)")
    return 0


async def _bots_manifest(client: SpadesClient, arguments: argparse.Namespace) -> int:
    manifest = manifest_from_flags(arguments)
    problem = manifest_problem(manifest)
    if problem:
        return usage_error(PROGRAM, problem)
    client.account_key = person_credential()
    bot = await _my_bot(client, arguments.bot)
    declared = await client.set_manifest(manifest, account_id=bot.account_id)
    if arguments.json:
        print_json(bot_json(declared))
    else:
        print(f"Declared the manifest of {declared.name!r}")
    return 0


def manifest_from_flags(arguments: argparse.Namespace) -> account_pb2.RuleManifest:
    """The manifest :func:`add_manifest_flags`' flags declare."""
    return manifest_of(
        players=arguments.players,
        target_scores=(arguments.target_scores[0], arguments.target_scores[1]),
        options=arguments.option,
        max_series=arguments.max_series,
    )


def add_manifest_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--players", type=int, nargs="+", choices=[3, 4], default=[4], help="default: 4"
    )
    parser.add_argument(
        "--target-scores",
        type=int,
        nargs=2,
        metavar=("MIN", "MAX"),
        default=[0, 0],
        help="the target-score range (0: no bound)",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        choices=sorted(OPTION_NAMES),
        help="a variation beside the default game it plays (repeat for more)",
    )
    parser.add_argument(
        "--max-series",
        type=int,
        default=0,
        metavar="N",
        help="the longest series of matches it plays in a row (default: single matches only)",
    )


def register_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the people's verbs to ``spades account``."""
    up = add_leaf(
        verbs,
        "sign-up",
        "a person account with a password (asked for, or piped on stdin); signs you in",
        _sign_up,
        program=PROGRAM,
        json_output=True,
    )
    up.add_argument("name", help="1 to 32 printable characters, unique ignoring case")
    signin = add_leaf(
        verbs,
        "sign-in",
        "a new session (the password asked for, or piped on stdin), saved in the config file",
        _sign_in,
        program=PROGRAM,
        json_output=True,
    )
    signin.add_argument("name", help="your account's name (any case)")
    add_leaf(verbs, "sign-out", "end the saved session and forget it", _sign_out, program=PROGRAM)

    sessions = verbs.add_parser(
        "sessions", help="your sessions: list them, revoke one", description="Your sessions."
    )
    session_verbs = sessions.add_subparsers(dest="session_verb", required=True, metavar="VERB")
    add_leaf(
        session_verbs,
        "list",
        "your sessions that still work, newest first",
        _sessions_list,
        program=PROGRAM,
        json_output=True,
    )
    revoke = add_leaf(
        session_verbs, "revoke", "end one of your sessions", _sessions_revoke, program=PROGRAM
    )
    revoke.add_argument("session_id", help="its id (from `spades account sessions list`)")

    bots = verbs.add_parser(
        "bots",
        help="the bot accounts you own: create, list, rotate-key, revoke, manifest",
        description="The bot accounts you own.",
    )
    bot_verbs = bots.add_subparsers(dest="bot_verb", required=True, metavar="VERB")
    create = add_leaf(
        bot_verbs,
        "create",
        "a bot account you own, and its key (shown once)",
        _bots_create,
        program=PROGRAM,
        json_output=True,
    )
    create.add_argument("name", help="1 to 32 printable characters, unique ignoring case")
    add_leaf(bot_verbs, "list", "the bots you own", _bots_list, program=PROGRAM, json_output=True)
    rotate = add_leaf(
        bot_verbs,
        "rotate-key",
        "a new key for your bot; the old one stops working at once",
        _bots_rotate,
        program=PROGRAM,
        json_output=True,
    )
    rotate.add_argument("bot", help="its id or name")
    revoke_key = add_leaf(
        bot_verbs, "revoke", "your bot's key stops working", _bots_revoke, program=PROGRAM
    )
    revoke_key.add_argument("bot", help="its id or name")
    revoke_key.add_argument("--yes", action="store_true", help="yes, revoke it")
    manifest = add_leaf(
        bot_verbs,
        "manifest",
        "declare the rule sets your bot plays (docs/challenges.md)",
        _bots_manifest,
        program=PROGRAM,
        json_output=True,
    )
    manifest.add_argument("bot", help="its id or name")
    add_manifest_flags(manifest)
