"""The class a bot author subclasses: answer ``bid`` and ``play``; the SDK does the rest.

>>> from spades.bot import Bot, BotView
>>> class FirstCard(Bot):
...     def bid(self, view: BotView) -> int:
...         return 1 if 1 in view.legal_bids else min(b for b in view.legal_bids if b)
...     def play(self, view: BotView) -> Card:
...         return view.legal_cards[0]

Any decision may come with a sealed note, revealed in the table's record once the match is
over and shown to no one before, the partner included (:mod:`spades.notes`):

>>> class Explains(FirstCard):
...     def bid(self, view: BotView) -> Noted[int]:
...         return Noted(super().bid(view), "the lowest bid I may make")
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import traceback
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

from spades.bot.view import BotView
from spades.engine import (
    BID,
    BLIND,
    CLAIM_EXTENSION,
    CONCEDE,
    LOOK,
    PLAY,
    Action,
    Bid,
    Card,
    ChooseBlindNil,
    ClaimExtension,
    Concede,
    MakeBid,
    PassCards,
    PlayCard,
    automatic_choice,
    cheapest_cards,
    pass_cards,
)
from spades.engine import events as ev
from spades.notes import encode_note

log = logging.getLogger("spades.bot")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Noted(Generic[T]):
    """A decision with a sealed note: return ``Noted(4, "two sure spades, the AK of hearts")``
    from :meth:`Bot.bid` (or any decision) instead of ``4``.

    The note (at most :data:`~spades.notes.MAX_NOTE_BYTES` bytes of UTF-8) goes with the action;
    until the match is over only its salted SHA-256 is public, then the table's record reveals
    it (``spades-record show`` prints it beside the bid or card). A note that cannot be sent
    (too long) is dropped with a warning; the action stands.
    """

    answer: T
    note: str


class Decision(NamedTuple):
    """The bot's answer to a prompt, as :func:`decide` makes it."""

    action: Action
    #: The bot's own answer was illegal (or it raised): this is the automatic action instead.
    replaced: bool
    #: The sealed note that goes with it ("" for none; a replaced answer has none).
    note: str = ""


class Bot:
    """A Spades player. Implement :meth:`bid` and :meth:`play`; the rest is optional.

    Each decision method may also be ``async def``. A decision the rules do not allow (or an
    exception) is logged and replaced by the automatic action the clock would take (the
    engine's :func:`~spades.engine.automatic_choice`), so a bot never stalls a table.
    """

    #: The name shown at the table (the runner's ``--name`` overrides it).
    name: str = "bot"
    #: True for a bot whose plain (not ``async def``) decisions compute for a while, as a
    #: search does: the SDK then calls them in a worker thread, so the event loop they share
    #: (the other seats of the process, or the server's own streams for a house bot) goes on
    #: meanwhile instead of waiting the whole decision.
    thinks: bool = False

    def bid(self, view: BotView) -> int | Noted[int]:
        """How many tricks to bid: one of ``view.legal_bids``; 0 is Nil (a decision may come
        with a sealed note: :class:`Noted`)."""
        raise NotImplementedError

    def play(self, view: BotView) -> Card | Noted[Card]:
        """The card to play: one of ``view.legal_cards`` (or :class:`Noted`)."""
        raise NotImplementedError

    def choose_blind_nil(self, view: BotView) -> bool | Noted[bool]:
        """True to bid Blind Nil before looking at the cards; the default looks."""
        return False

    def pass_cards(self, view: BotView) -> list[Card]:
        """The cards to hand over in the Blind Nil card pass; the default gives the cheapest
        (the engine's :func:`~spades.engine.cheapest_cards` order, as the clock would)."""
        return cheapest_cards(view.rules, view.hand)[: view.rules.blind_nil_pass_cards]

    def concede(self, view: BotView) -> bool:
        """True to concede the match for my side now, instead of answering this turn (the
        other side wins). Asked at each of my turns while conceding is open
        (:func:`turn_options`); the default plays on."""
        return False

    def claim_extension(self, view: BotView) -> bool:
        """True to claim this turn's extension (the clock's ``extension_millis`` on top of
        ``turn_millis``) before deciding: the runner claims it, and asks for my move at the
        next prompt, whose ``view.deadline`` is the later one. Asked once a turn while the
        table's clock runs and has an unclaimed extension (:func:`turn_options`, with
        ``view.time_left()`` to decide by); the default never claims."""
        return False

    def on_event(self, event: ev.Event, view: BotView) -> None:
        """Called for every event of the table the seat sees, after it is folded into ``view``."""

    def on_hand_end(self, result: ev.HandScored, view: BotView) -> None:
        """Called when a hand has been scored."""

    def on_match_end(self, end: ev.MatchEnded, view: BotView) -> None:
        """Called once when the match is over."""


async def _resolve(value: T | Awaitable[T]) -> T:
    if inspect.isawaitable(value):
        return await value
    return value


async def _decision(bot: Bot, method: Callable[[BotView], T | Awaitable[T]], view: BotView) -> T:
    """``method(view)``, awaited if it is a coroutine; a thinking bot's in a worker thread
    (:attr:`Bot.thinks`), where it alone touches the bot and the view until it answers."""
    if bot.thinks and not inspect.iscoroutinefunction(method):
        return await _resolve(await asyncio.to_thread(method, view))
    return await _resolve(method(view))


async def _noted(bot: Bot, method: Callable[[BotView], Any], view: BotView) -> tuple[Any, str]:
    """A decision's answer and its note ("" when it has none)."""
    answer = await _decision(bot, method, view)
    if isinstance(answer, Noted):
        return answer.answer, answer.note
    return answer, ""


async def ask(bot: Bot, view: BotView) -> tuple[Action, str]:
    """The bot's answer to the prompt in ``view`` as an engine action (not validated yet), and
    the note it came with ("" for none)."""
    kind = type(view.legal_actions[0])
    if kind is ChooseBlindNil:
        blind, note = await _noted(bot, bot.choose_blind_nil, view)
        return (BLIND if blind else LOOK), note
    if kind is MakeBid:
        answer, note = await _noted(bot, bot.bid, view)
        tricks = answer.tricks if isinstance(answer, Bid) else int(answer)
        return (BID[tricks] if 0 <= tricks < len(BID) else MakeBid(tricks)), note
    if kind is PassCards:
        cards, note = await _noted(bot, bot.pass_cards, view)
        return pass_cards(*cards), note
    if kind is PlayCard:
        played, note = await _noted(bot, bot.play, view)
        card = Card.parse(played) if isinstance(played, str) else Card(int(played))
        return (PLAY[card] if 0 <= card < len(PLAY) else PlayCard(card)), note
    raise TypeError(f"no bot decision answers {kind.__name__}")


@dataclass(frozen=True, slots=True)
class TurnOptions:
    """What a seat may do on its turn besides answering the prompt."""

    may_concede: bool
    may_claim_extension: bool


def turn_options(view: BotView) -> TurnOptions:
    """What the prompt in ``view`` allows besides its answer: the one place the runner learns
    it (so the bot's hooks decide, and this detects).

    The engine's rules decide both (:attr:`BotView.may_concede`,
    :attr:`BotView.may_claim_extension`: the same the server's prompt flags say).
    """
    listed = {type(action) for action in view.legal_actions}
    return TurnOptions(
        may_concede=Concede in listed or view.may_concede,
        may_claim_extension=ClaimExtension in listed or view.may_claim_extension,
    )


async def turn_extra(bot: Bot, view: BotView) -> Action | None:
    """``CONCEDE`` or ``CLAIM_EXTENSION`` when the turn allows it and the bot's hook asks for
    it (conceding first), else None: then the bot answers the prompt (:func:`decide`). A hook
    that raises is logged and counts as no."""
    options = turn_options(view)
    try:
        if options.may_concede and await _resolve(bot.concede(view)):
            return CONCEDE
        if options.may_claim_extension and await _resolve(bot.claim_extension(view)):
            return CLAIM_EXTENSION
    except Exception:
        log.exception("%s raised in a concede or extension hook; playing on", type(bot).__name__)
    return None


def automatic_answer(view: BotView) -> Action:
    """What the turn clock would play for the seat (the engine's automatic action: a bid of 1,
    the lowest card): the answer that replaces an illegal one. Not the first legal action,
    which for a bid is Nil, the riskiest bid there is."""
    return automatic_choice(view.rules, view.legal_actions)


#: For each bot, how many times each failure was seen (by where it was raised and its type):
#: its traceback is logged the first time, then one line a repeat, so a bot that raises on
#: every turn does not bury the log in copies of one traceback.
_RAISED: weakref.WeakKeyDictionary[Bot, dict[tuple[str, int, str], int]] = (
    weakref.WeakKeyDictionary()
)

_RAISED_BY_ID: dict[int, dict[tuple[str, int, str], int]] = {}


def _log_raised(bot: Bot, error: Exception, fallback: Action) -> None:
    frames = traceback.extract_tb(error.__traceback__)
    where = frames[-1] if frames else None
    key = (
        where.filename if where else "",
        (where.lineno or 0) if where else 0,
        type(error).__name__,
    )
    try:
        seen = _RAISED.setdefault(bot, {})
    except TypeError:  # a bot that cannot be weakly referenced (__slots__) or hashed
        seen = _RAISED_BY_ID.setdefault(id(bot), {})
    seen[key] = count = seen.get(key, 0) + 1
    name = type(bot).__name__
    if count == 1:
        log.error(
            "%s raised while deciding; playing %s instead",
            name,
            fallback,
            exc_info=(type(error), error, error.__traceback__),
        )
        return
    place = f" at {Path(where.filename).name}:{where.lineno}" if where else ""
    log.error(
        "%s raised %s again%s (%d times; traceback above): %s; playing %s instead",
        name,
        type(error).__name__,
        place,
        count,
        error,
        fallback,
    )


async def decide(bot: Bot, view: BotView) -> Decision:
    """The bot's legal answer to the prompt in ``view``, whether it had to be replaced, and its
    sealed note.

    An illegal answer or an exception is logged (an exception's traceback the first time it is
    raised at one place, then a line each time), and the automatic action (what the clock
    would play: a bid of 1, the cheapest legal card, ...) is played instead, without a note. A
    note that cannot be sent (over :data:`~spades.notes.MAX_NOTE_BYTES`, not text) is logged
    and dropped: the action stands.
    """
    legal = view.legal_actions
    try:
        action, note = await ask(bot, view)
    except Exception as error:
        fallback = automatic_answer(view)
        _log_raised(bot, error, fallback)
        return Decision(fallback, True)
    if action in legal:
        return Decision(action, False, _sendable(bot, note))
    fallback = automatic_answer(view)
    log.warning(
        "%s chose %s, which the rules do not allow now; playing %s instead",
        type(bot).__name__,
        action,
        fallback,
    )
    return Decision(fallback, True)


def _sendable(bot: Bot, note: object) -> str:
    """``note`` when it can go with the action, else "" (and a warning saying why)."""
    if not note:
        return ""
    try:
        if not isinstance(note, str):
            raise ValueError(f"a note is a str, not {type(note).__name__}")
        encode_note(note)
    except ValueError as error:
        log.warning("%s's note is dropped: %s", type(bot).__name__, error)
        return ""
    return note
