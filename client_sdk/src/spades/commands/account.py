"""``spades account``: an account's life from the terminal (AccountService and its ratings).

    spades account create NAME [--kind bot|person] [--save] [--json]   a new account and key
    spades account show [ACCOUNT] [--json]        an account (id or name; default: yours)
    spades account rotate-key [--save] [--json]   a new key; the old one stops working
    spades account revoke --yes                   the key never works again
    spades account manifest [--players 4 3] [--target-scores MIN MAX] [--option NAME ...]
                            [--max-series N]
    spades account events [--after N] [--count N] [--json]   the account's stream, live
    spades account sign-up | sign-in | sign-out | sessions | bots   people (spades.commands.people)
    spades account games [ACCOUNT] [--rated] [--opponent NAME] [--json]   finished matches

The key comes from ``SPADES_ACCOUNT_KEY``, else the config file (:mod:`spades.commands.config`);
``--save`` writes a new key, and the account's id, into the config file (mode 0600) instead of
printing it. ``create`` sends the operator token too when one is configured (a server whose
registration is for the operator only).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from google.protobuf import json_format

from spades.client import AccountInfo, AccountKey, NotFound, RatingInfo, SpadesClient
from spades.commands import games, people
from spades.commands.common import add_leaf, configured, print_json, usage_error
from spades.commands.config import SETTINGS, ConfigFileError, save_settings
from spades.manifest import OPTION_NAMES, longest_series, manifest_problem
from spades.v1 import account_pb2

PROGRAM = "spades account"


def account_json(account: AccountInfo) -> dict[str, Any]:
    document: dict[str, Any] = {
        "account_id": account.account_id,
        "name": account.name,
        "kind": account.kind,
        "key_revoked": account.key_revoked,
    }
    if account.manifest is not None:
        document["manifest"] = manifest_json(account.manifest)
    return document


def manifest_json(manifest: account_pb2.RuleManifest) -> dict[str, Any]:
    names = {value: name for name, value in OPTION_NAMES.items()}
    return {
        "players": list(manifest.players),
        "target_scores": [manifest.min_target_score, manifest.max_target_score],
        "options": [names.get(option, str(option)) for option in manifest.options],
        "max_series": longest_series(manifest),
    }


def rating_json(rating: RatingInfo) -> dict[str, Any]:
    return {
        "pool": rating.pool,
        "mu": rating.mu,
        "sigma": rating.sigma,
        "score": rating.score,
        "matches": rating.matches,
        "provisional": rating.provisional,
    }


def _keep_key(issued: AccountKey, arguments: argparse.Namespace, verb: str) -> int:
    """Print the new key, or with ``--save`` write it (and the account id) into the config."""
    account = issued.account
    document = account_json(account)
    saved = ""
    if arguments.save:
        try:
            path = save_settings({"account_key": issued.key, "account_id": account.account_id})
        except ConfigFileError as error:
            # The key exists now and is shown nowhere else: print it rather than lose it.
            print(f"Key (shown once): {issued.key}")
            return usage_error(PROGRAM, f"could not save the key: {error}")
        saved = str(path)
        document["saved_to"] = saved
    else:
        document["key"] = issued.key
    if arguments.json:
        print_json(document)
        return 0
    print(f"{verb} {account.kind} account {account.name!r} (id {account.account_id})")
    if saved:
        print(f"Saved its key to {saved} (readable by you only)")
        variable = SETTINGS["account_key"]
        if os.environ.get(variable):
            print(f"Note: {variable} is set and comes before the file; unset it to use the key")
    else:
        print(f"Key (shown once, keep it): {issued.key}")
    return 0


async def _create(client: SpadesClient, arguments: argparse.Namespace) -> int:
    created = await client.create_account(
        arguments.name, kind=arguments.kind, operator_token=configured("operator_token")
    )
    return _keep_key(created, arguments, "Created")


async def _rotate(client: SpadesClient, arguments: argparse.Namespace) -> int:
    return _keep_key(await client.rotate_key(), arguments, "New key for")


async def _revoke(client: SpadesClient, arguments: argparse.Namespace) -> int:
    if not arguments.yes:
        return usage_error(
            PROGRAM, "revoking is for good (only the operator can issue a new key): add --yes"
        )
    account = await client.revoke_key()
    print(f"Revoked the key of {account.name!r} (id {account.account_id})")
    return 0


async def find_account(client: SpadesClient, account: str) -> AccountInfo:
    """An account by id, else by name."""
    try:
        return await client.get_account(account)
    except NotFound:
        return await client.get_account(name=account)


async def _show(client: SpadesClient, arguments: argparse.Namespace) -> int:
    wanted = arguments.account or configured("account_id")
    if not wanted:
        return usage_error(
            PROGRAM,
            "name an account (its id or name), or save yours with "
            "`spades account create NAME --save`",
        )
    account = await find_account(client, wanted)
    ratings = await client.ratings(account.account_id)
    if arguments.json:
        print_json(account_json(account) | {"ratings": [rating_json(r) for r in ratings]})
        return 0
    revoked = "  (key revoked)" if account.key_revoked else ""
    print(f"{account.name}  {account.kind}  id {account.account_id}{revoked}")
    if account.manifest is not None:
        manifest = manifest_json(account.manifest)
        low, high = manifest["target_scores"]
        print(
            f"Manifest: players {manifest['players']}, target scores {low or 'any'} to "
            f"{high or 'any'}, options {', '.join(manifest['options']) or 'none'}"
        )
    for rating in ratings:
        provisional = " (provisional)" if rating.provisional else ""
        print(
            f"Rating in {rating.pool}: {rating.score:.1f} (mu {rating.mu:.1f}, sigma "
            f"{rating.sigma:.1f}) after {rating.matches} matches{provisional}"
        )
    if not ratings:
        print("No rated matches yet.")
    return 0


async def _manifest(client: SpadesClient, arguments: argparse.Namespace) -> int:
    manifest = people.manifest_from_flags(arguments)
    problem = manifest_problem(manifest)
    if problem:
        return usage_error(PROGRAM, problem)
    account = await client.set_manifest(manifest)
    if arguments.json:
        print_json(account_json(account))
    else:
        print(f"Declared the manifest of {account.name!r}: {manifest_json(manifest)}")
    return 0


async def _events(client: SpadesClient, arguments: argparse.Namespace) -> int:
    seen = 0
    async for event in client.connect(arguments.after):
        kind = event.WhichOneof("kind") or "event"
        if arguments.json:  # JSON Lines: one event a line, as they come
            print(json.dumps(json_format.MessageToDict(event)), flush=True)
        else:
            detail = json_format.MessageToDict(getattr(event, kind)) if kind != "event" else {}
            print(f"#{event.sequence} {kind.replace('_', ' ')} {json.dumps(detail)}", flush=True)
        seen += 1
        if arguments.count and seen >= arguments.count:
            break
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = commands.add_parser(
        "account",
        help="create an account, show one, rotate or revoke its key, declare its manifest",
        description=__doc__.replace("``", "") if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = group.add_subparsers(dest="verb", required=True, metavar="VERB")
    people.register_verbs(verbs)
    games.register_verb(verbs)
    create = add_leaf(
        verbs, "create", "a new account and its key", _create, program=PROGRAM, json_output=True
    )
    create.add_argument("name", help="1 to 32 printable characters, unique ignoring case")
    create.add_argument("--kind", choices=["bot", "person"], default="bot")
    create.add_argument(
        "--save", action="store_true", help="write the key into the config file, not the screen"
    )
    show = add_leaf(
        verbs, "show", "an account and its ratings", _show, program=PROGRAM, json_output=True
    )
    show.add_argument("account", nargs="?", help="its id or name (default: the saved account)")
    rotate = add_leaf(
        verbs,
        "rotate-key",
        "a new key; the old one stops working at once",
        _rotate,
        program=PROGRAM,
        needs_key=True,
        json_output=True,
    )
    rotate.add_argument(
        "--save", action="store_true", help="write the new key into the config file"
    )
    revoke = add_leaf(
        verbs, "revoke", "revoke the key for good", _revoke, program=PROGRAM, needs_key=True
    )
    revoke.add_argument("--yes", action="store_true", help="yes, revoke it")
    manifest = add_leaf(
        verbs,
        "manifest",
        "declare the rule sets your bot account plays (docs/challenges.md)",
        _manifest,
        program=PROGRAM,
        needs_key=True,
        json_output=True,
    )
    events = add_leaf(
        verbs,
        "events",
        "the account's stream: its events after --after, then live ones until Ctrl-C",
        _events,
        program=PROGRAM,
        needs_key=True,
        json_output=True,
    )
    events.add_argument(
        "--after", type=int, default=0, metavar="N", help="after this sequence (default: 0, all)"
    )
    events.add_argument(
        "--count", type=int, default=0, metavar="N", help="stop after N events (default: never)"
    )
    people.add_manifest_flags(manifest)
