"""The JSON-lines protocol between the SDK and a bot in a child process (docs/external-bots.md).

Each message is one JSON object on one line. The SDK says ``hello`` with the protocol version
and the child answers ``hello`` with the same version; then, at each of the seat's turns, the
SDK sends ``decide``: the seat's whole view and the legal actions, numbered from 0; the child
answers ``{"id": ..., "choice": N}``, picking action N, and may add ``"note": "..."``, a sealed
note on the action (:mod:`spades.notes`: revealed in the record once the match is over). Answering
by index means a child never has to spell an action the way the engine does, and an answer is
either one of the offered actions or plainly wrong. At the end of the match the SDK sends ``end``
and closes stdin.

This module only builds and reads messages; :mod:`spades.bot.external` runs the child.

>>> from spades.engine import PLAY, Card
>>> action_json(PLAY[Card.parse("QS")])
{'type': 'play', 'card': 'QS'}
>>> read_answer(b'{"id": 3, "choice": 1}', 3, (PLAY[0], PLAY[1]))
Answer(action=PlayCard(card=Card.parse('3C')), note='')
>>> read_answer(b'{"id": 4, "choice": 0, "note": "low"}', 4, (PLAY[0],)).note
'low'
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from enum import Enum
from typing import Any, Final, NamedTuple

from spades.bot.view import BotView
from spades.engine import (
    Action,
    Bid,
    ChooseBlindNil,
    MakeBid,
    PassCards,
    PlayCard,
    Rules,
)
from spades.engine import events as ev

PROTOCOL: Final = "spades-jsonl"
#: Bumped on any change a child could notice; a child answering another version is refused.
VERSION: Final = 1


class ProtocolError(Exception):
    """The child said something the protocol does not allow (the message says what)."""


def encode(message: dict[str, Any]) -> bytes:
    """One message as a line of JSON."""
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def hello() -> dict[str, Any]:
    return {"type": "hello", "protocol": PROTOCOL, "version": VERSION}


def read_hello(line: bytes) -> str:
    """Check the child's hello; returns the name it gives (may be empty)."""
    message = _read_object(line)
    if message.get("type") != "hello":
        raise ProtocolError(f"expected a hello first, got {_short(line)}")
    if message.get("version") != VERSION:
        raise ProtocolError(
            f"the child speaks version {message.get('version')!r}; this SDK speaks {VERSION}"
        )
    name = message.get("name", "")
    return name if isinstance(name, str) else ""


def rules_json(rules: Rules) -> dict[str, Any]:
    """The rule set's fields, as RULES.md names them (the clock in milliseconds)."""
    return {field.name: _plain(getattr(rules, field.name)) for field in dataclasses.fields(rules)}


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def bid_json(bid: Bid | None) -> dict[str, Any] | None:
    return None if bid is None else {"tricks": bid.tricks, "blind": bid.blind}


def action_json(action: Action) -> dict[str, Any]:
    """A legal action as the child sees it."""
    if isinstance(action, PlayCard):
        return {"type": "play", "card": str(action.card)}
    if isinstance(action, MakeBid):
        return {"type": "bid", "tricks": action.tricks}
    if isinstance(action, ChooseBlindNil):
        return {"type": "blind_nil", "blind": action.blind}
    if isinstance(action, PassCards):
        return {"type": "pass", "cards": [str(card) for card in action.cards]}
    raise TypeError(f"a bot is never asked to choose {action}")


def decide(view: BotView, request_id: int, time_ms: int) -> dict[str, Any]:
    """The ``decide`` message: everything the seat may know, and the actions to choose from."""
    return {
        "type": "decide",
        "id": request_id,
        "time_ms": time_ms,
        "seat": view.seat,
        "partner": view.partner,
        "sides": [list(side) for side in view.sides],
        "rules": rules_json(view.rules),
        "phase": view.phase.value,
        "hand_number": view.hand_number,
        "dealer": view.dealer,
        "hand": [str(card) for card in view.hand],
        "bids": [bid_json(bid) for bid in view.bids],
        "current_trick": [{"seat": seat, "card": str(card)} for seat, card in view.current_trick],
        "tricks": [
            {
                "leader": trick.leader,
                "cards": [str(card) for card in trick.cards],
                "winner": trick.winner,
            }
            for trick in view.tricks
        ],
        "tricks_won": list(view.tricks_won),
        "spades_broken": view.spades_broken,
        "scores": list(view.scores),
        "bags": list(view.bags),
        "legal": [action_json(action) for action in view.legal_actions],
    }


def end(match_end: ev.MatchEnded) -> dict[str, Any]:
    return {
        "type": "end",
        "reason": match_end.reason.name.lower(),
        "winners": list(match_end.winners),
        "scores": list(match_end.final_scores),
    }


class Answer(NamedTuple):
    """A child's answer to ``decide``: the action it picked, and its note ("" for none)."""

    action: Action
    note: str = ""


def read_answer(line: bytes, request_id: int, legal: Sequence[Action]) -> Answer:
    """The action a ``decide`` answer picks and its note, or :class:`ProtocolError` saying what
    is wrong (a note that is not a string; one too long to send is the SDK's to drop)."""
    message = _read_object(line)
    if message.get("id") != request_id:
        raise ProtocolError(f"answered id {message.get('id')!r}, but the question was {request_id}")
    choice = message.get("choice")
    if not isinstance(choice, int) or isinstance(choice, bool):
        raise ProtocolError(f"the choice must be an index into legal, got {choice!r}")
    if not 0 <= choice < len(legal):
        raise ProtocolError(f"choice {choice} is not one of the {len(legal)} legal actions")
    note = message.get("note", "")
    if not isinstance(note, str):
        raise ProtocolError(f"the note must be a string, got {_short(json.dumps(note).encode())}")
    return Answer(legal[choice], note)


def _read_object(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except ValueError:
        raise ProtocolError(f"not JSON: {_short(line)}") from None
    if not isinstance(message, dict):
        raise ProtocolError(f"not a JSON object: {_short(line)}")
    return message


def _short(line: bytes) -> str:
    text = line.decode(errors="replace").strip()
    return repr(text if len(text) <= 80 else text[:77] + "...")
