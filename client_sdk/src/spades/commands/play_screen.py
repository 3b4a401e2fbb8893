"""The terminal player's screen (textual): the table as the person at one seat sees it, whose
buttons and keys answer the SDK's prompts. ``spades play`` (:mod:`spades.commands.play`) imports
it only when it runs, so the rest of the ``spades`` command starts without loading textual.
The screen's ``asking`` says which decision it waits for ("bid", "blind", "pass", "play", or ""
between turns), for whatever drives it (a test's pilot, say).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Sequence
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, DataTable, Footer, Header, Log, Static

from spades.bot import Bot, BotView, play_match
from spades.client import SeatTicket, SpadesClient, SpadesError, rating_change_text
from spades.engine import Card, seat_name
from spades.engine import events as ev
from spades.records import MatchNarrator
from spades.records.render import side_name


class Person(Bot):
    """A seat's decisions, taken from the person at the screen."""

    def __init__(self, screen: PlayScreen) -> None:
        self.screen = screen
        self.name = "person"

    async def choose_blind_nil(self, view: BotView) -> bool:  # type: ignore[override]
        return bool(await self.screen.ask("blind", view))

    async def bid(self, view: BotView) -> int:  # type: ignore[override]
        return int(await self.screen.ask("bid", view))

    async def play(self, view: BotView) -> Card:  # type: ignore[override]
        answer: Card = await self.screen.ask("play", view)
        return answer

    async def pass_cards(self, view: BotView) -> list[Card]:  # type: ignore[override]
        answer: list[Card] = await self.screen.ask("pass", view)
        return answer

    def on_event(self, event: ev.Event, view: BotView) -> None:
        self.screen.seat_event(event, view)


#: Buttons for the largest hand (three players with jokers hold 18 cards).
MOST_CARDS = 18

#: What the keys do, by what the person is asked (shown on the help line, above the footer).
HELP = {
    "bid": "Type your bid: 0 is Nil; 1 then Enter bids 1, 1 then 0-3 bids 10-13. "
    "Or click a bid (Tab and Enter).  q leaves",
    "play": "Click a card you may play (Tab to it, Enter plays it).  q leaves",
    "blind": "Click Blind Nil or Look at my cards (Tab and Enter).  q leaves",
    "pass": "Click cards to choose them, then Pass them (Tab and Enter).  q leaves",
    "": "Digits bid when it is your bid; cards are clicked (or Tab and Enter).  q leaves",
}

#: What leaving means, asked before the person goes (y leaves, n or Escape stays).
LEAVE_QUESTION = (
    "Leave the table? A house bot will take your seat and play it for you. y leaves, n stays"
)
#: Before the match has begun, leaving gives the seat up instead.
LEAVE_WAITING_QUESTION = "Leave the table? Your seat is given up. y leaves, n stays"


def typed_bid(typed: str, legal: Sequence[int]) -> tuple[int | None, str]:
    """The bid the digits typed so far make, and the digits still waiting.

    A bid no longer one could start is made at once ("3": 3); one a longer bid starts waits
    for the next digit or Enter ("1": 1, 10, 11, 12 or 13). Digits no legal bid starts are
    dropped.

    >>> typed_bid("3", range(14))
    (3, '')
    >>> typed_bid("1", range(14))
    (None, '1')
    >>> typed_bid("12", range(14))
    (12, '')
    >>> typed_bid("1", range(1, 9))
    (1, '')
    >>> typed_bid("9", range(1, 9))
    (None, '')
    """
    starts = [bid for bid in legal if str(bid).startswith(typed)]
    if not starts:
        return None, ""
    longer = [bid for bid in starts if len(str(bid)) > len(typed)]
    if int(typed) in legal and not longer:
        return int(typed), ""
    return None, typed


class PlayScreen(App[int]):
    """The table as the person at one seat sees it."""

    CSS = """
    #seats { height: auto; }
    .seat { width: 1fr; border: round $primary; padding: 0 1; height: 4; }
    #trick { height: 3; content-align: center middle; border: round $secondary; }
    #hand { height: 3; }
    #hand Button { min-width: 5; width: auto; margin: 0; }
    #choices { height: 3; }
    #choices Button { min-width: 6; width: auto; margin: 0 1 0 0; }
    #prompt { height: 1; }
    #clock { height: 1; color: $warning; }
    #story { height: 1fr; }
    #scores { height: auto; max-height: 12; }
    #help { height: 1; color: $text-muted; }
    """
    BINDINGS = [  # noqa: RUF012 - textual's own class attribute
        Binding("q", "leave", "Leave"),
        *(Binding(str(digit), f"digit({digit})", "Bid", show=False) for digit in range(10)),
        # Before a focused button's own Enter, but only while digits are typed (check_action).
        Binding("enter", "send_bid", "Bid", show=False, priority=True),
        Binding("y", "confirm_leave", "Leave", show=False),
        Binding("n,escape", "stay", "Stay", show=False),
    ]
    # No command palette: a stray click on the header must not take the table away.
    ENABLE_COMMAND_PALETTE = False

    def __init__(self, client: SpadesClient, ticket: SeatTicket) -> None:
        super().__init__()
        self.client = client
        self.ticket = ticket
        self.view: BotView | None = None
        self.narrator: MatchNarrator | None = None
        self._answer: asyncio.Future[Any] | None = None
        self.asking = ""
        self._chosen: list[Card] = []
        #: The card each shown hand button stands for, by button id.
        self.slot_cards: dict[str, Card] = {}
        self.outcome_text = ""
        #: Digits of a bid typed so far (a bid that a longer one starts waits for Enter).
        self.typed = ""
        #: The leave question is shown: y leaves, n stays.
        self.confirming = False
        #: The person left before the match ended (what ``spades play`` says on the way out).
        self.left = ""
        #: After a rated match played as an account: the rating change, once rated.
        self.rating_text = ""

    def compose(self) -> ComposeResult:
        yield Header(show_clock=True)
        with Horizontal(id="seats"):
            for seat in range(4):
                yield Static(seat_name(seat), classes="seat", id=f"seat-{seat}")
        yield Static("", id="trick")
        yield Static(self.waiting_text(), id="prompt")
        yield Static("", id="clock")
        # Fixed buttons, relabelled and shown or hidden as the hand and the prompt change:
        # nothing is mounted while playing.
        with Horizontal(id="hand"):
            for slot in range(MOST_CARDS):
                yield Button("", id=f"slot-{slot}", compact=True, disabled=True)
        with Horizontal(id="choices"):
            for tricks in range(MOST_CARDS + 1):
                yield Button(
                    "Nil" if tricks == 0 else str(tricks), id=f"bid-{tricks}", compact=True
                )
            yield Button("Blind Nil", id="blind-yes", compact=True)
            yield Button("Look at my cards", id="blind-no", compact=True)
            yield Button("Pass them", id="pass-send", compact=True)
        with Vertical():
            yield Log(id="story", highlight=False)
            yield DataTable(id="scores", show_cursor=False)
        yield Static(HELP[""], id="help")
        yield Footer()

    async def on_mount(self) -> None:
        for button in self.query("#choices Button").results(Button):
            button.display = False
        where = f"you are {seat_name(self.ticket.seat)}" if self.ticket.seat >= 0 else "your seat"
        self.title = f"Spades: table {self.ticket.table_id}, {where}"
        self.set_interval(0.5, self._tick)
        self.run_worker(self._play(), exclusive=True)

    def waiting_text(self) -> str:
        """Before the match: what the table waits for, when the queue said it."""
        wait = self.ticket.wait
        return "Waiting for the match to start" + (f": {wait}" if wait is not None else "…")

    def clock_text(self) -> str:
        """The turn's time left while the person is asked (from the prompt's deadline)."""
        left = self.view.time_left() if self.view is not None and self.asking else None
        return "" if left is None else f"{math.ceil(left)} s left"

    def _tick(self) -> None:
        # A query, not query_one: the interval may fire once more while the screen is torn down.
        for clock in self.query("#clock").results(Static):
            clock.update(self.clock_text())

    async def _play(self) -> None:
        try:
            outcome = await play_match(
                self.client, Person(self), self.ticket.token, table_id=self.ticket.table_id
            )
        except SpadesError as error:
            self.outcome_text = f"The server refused: {error}"
            self.query_one("#prompt", Static).update(self.outcome_text)
            return
        self.outcome_text = _outcome(outcome.end, outcome.seat)
        self.query_one("#prompt", Static).update(self.outcome_text + "  (q leaves)")
        self.rating_text = await self._rating()
        if self.rating_text:
            self.query_one("#story", Log).write_line(self.rating_text)
            self.query_one("#prompt", Static).update(
                f"{self.outcome_text}  {self.rating_text}  (q leaves)"
            )

    async def _rating(self) -> str:
        """After a rated match played as an account: its rating change once its pool rated it."""
        if not self.client.account_key:
            return ""
        try:
            if not (await self.client.get_table(self.ticket.table_id)).rated:
                return ""
            change = await self.client.rating_change(self.ticket.table_id)
        except SpadesError as error:
            return f"Rating not read: {error.reason}"
        return rating_change_text(change) if change is not None else "Not rated yet."

    # -- keys ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # False lets the key go on to the focused widget (Enter presses a focused button).
        if action == "send_bid":
            return bool(self.typed) and self.asking == "bid"
        if action in ("confirm_leave", "stay"):
            return self.confirming
        return True

    def action_digit(self, digit: int) -> None:
        answer, view = self._answer, self.view
        if self.asking != "bid" or answer is None or answer.done() or view is None:
            return
        bid, self.typed = typed_bid(self.typed + str(digit), view.legal_bids)
        if bid is not None:
            self._answered(answer, bid, view)
        else:
            self._show_choices(view)

    def action_send_bid(self) -> None:
        answer, view = self._answer, self.view
        typed, self.typed = self.typed, ""
        if answer is None or answer.done() or view is None:
            return
        if typed and int(typed) in view.legal_bids:
            self._answered(answer, int(typed), view)
        else:
            self._show_choices(view)

    def action_leave(self) -> None:
        if self.outcome_text:  # the match is over: nothing to hand over
            self.exit()
            return
        self.confirming = True
        self.query_one("#prompt", Static).update(self._leave_question())

    def _begun(self) -> bool:
        return self.view is not None and self.view.hand_number > 0

    def _leave_question(self) -> str:
        return LEAVE_QUESTION if self._begun() else LEAVE_WAITING_QUESTION

    async def action_confirm_leave(self) -> None:
        self.confirming = False
        if not self._begun():
            # Not begun: the seat is given up, so a waiting table does not keep it for us.
            with contextlib.suppress(SpadesError):
                await self.client.leave_table(self.ticket.token)
            self.left = f"You left table {self.ticket.table_id}; your seat is free again."
        else:
            self.left = (
                f"You left table {self.ticket.table_id}; a house bot takes your seat and plays "
                "it for you."
            )
        self.exit()

    def action_stay(self) -> None:
        self.confirming = False
        if self._begun() and self.view is not None:
            self._show_choices(self.view)
        else:
            self.query_one("#prompt", Static).update(self.waiting_text())

    # -- what the SDK calls ------------------------------------------------------------

    async def ask(self, kind: str, view: BotView) -> Any:
        """Show the choice the prompt offers and wait for the person's answer."""
        self.view = view
        self.asking = kind
        self._chosen = []
        self._answer = asyncio.get_running_loop().create_future()
        self._show_choices(view)
        self._tick()
        try:
            return await self._answer
        finally:
            self.asking = ""
            self._show_choices(view)
            self._tick()

    def seat_event(self, event: ev.Event, view: BotView) -> None:
        self.view = view
        if self.narrator is None:
            self.narrator = MatchNarrator(view.rules, needed=True)
        story = self.query_one("#story", Log)
        if isinstance(event, ev.HandStarted) and event.hand_number == 1:
            story.write_line(self.narrator.players_line())
        lines = self.narrator.lines(event)
        if isinstance(event, ev.CardsDealt) and event.cards is None:
            lines = lines[:-1]  # another seat's hand: "13 cards (hidden)" says nothing
        for line in lines:
            story.write_line(line)
        if isinstance(event, ev.HandScored):
            self._scores(view)
        self._table(view)
        if not self.asking:
            self._show_choices(view)

    # -- drawing -----------------------------------------------------------------------

    def _table(self, view: BotView) -> None:
        for seat in range(view.player_count):
            player = view.players[seat]
            bid = view.bids[seat]
            you = " (you)" if seat == view.seat else ""
            name = player[0] if player else "free"
            self.query_one(f"#seat-{seat}", Static).update(
                f"[b]{seat_name(seat)}[/b]{you}: {name}\n"
                f"bid {bid if bid is not None else '-'} · {view.tricks_won[seat]} tricks"
            )
        trick = "   ".join(f"{seat_name(seat)} {card.symbol}" for seat, card in view.current_trick)
        self.query_one("#trick", Static).update(trick or "(no card on the table)")

    def _scores(self, view: BotView) -> None:
        table = self.query_one("#scores", DataTable)
        table.clear(columns=True)
        results = view.hand_results
        if not results:
            return
        sides = [side_name(side.seats) for side in results[0].sides]
        table.add_column("Hand")
        for name in sides:
            for column in ("bid", "tricks", "points", "bags", "total"):
                table.add_column(f"{name} {column}" if column == "bid" else column)
        for result in results:
            row: list[str] = [str(result.hand_number)]
            for side in result.sides:
                bids = " + ".join(str(seat.bid) for seat in side.seat_results)
                row += [
                    bids,
                    str(side.contract_tricks),
                    str(side.hand_points),
                    str(side.bags),
                    str(side.total_score),
                ]
            table.add_row(*row, key=f"hand-{result.hand_number}")
        target = view.rules.target_score
        needs = [
            f"{side}: {max(0, target - score)} to go"
            for side, score in zip(sides, view.scores, strict=False)
        ]
        self.query_one("#prompt", Static).update("Score: " + ", ".join(needs))

    def _show_choices(self, view: BotView) -> None:
        legal = set(view.legal_cards) if self.asking == "play" else set()
        choosing = self.asking == "pass"
        hand = sorted(view.hand, key=lambda c: (-(int(c) // 13), -int(c)))
        for slot, button in enumerate(self.query("#hand Button").results(Button)):
            card = hand[slot] if slot < len(hand) else None
            button.display = card is not None
            if card is None:
                continue
            button.label = card.symbol
            self.slot_cards[button.id or ""] = card
            button.disabled = not (card in legal or choosing)
            button.variant = "primary" if card in self._chosen else "default"
        bids = set(view.legal_bids) if self.asking == "bid" else set()
        for button in self.query("#choices Button").results(Button):
            key = button.id or ""
            if key.startswith("bid-"):
                button.display = int(key.removeprefix("bid-")) in bids
            else:
                button.display = key.startswith(self.asking) and self.asking in (
                    "blind",
                    "pass",
                )
        prompt = self.query_one("#prompt", Static)
        if self.asking == "bid":
            prompt.update("Your bid:")
        elif self.asking == "blind":
            prompt.update("Bid Blind Nil before looking at your cards?")
        elif choosing:
            count = view.rules.blind_nil_pass_cards
            prompt.update(f"Choose {count} cards to pass ({len(self._chosen)} chosen)")
        elif self.asking == "play":
            prompt.update("Your turn: play a card")
        if self.asking == "bid" and self.typed:
            prompt.update(f"Your bid: {self.typed}_  (Enter bids {self.typed})")
        if self.confirming:  # the question stays until it is answered
            prompt.update(self._leave_question())
        self.query_one("#help", Static).update(HELP.get(self.asking, HELP[""]))

    # -- the person's answers -----------------------------------------------------------

    async def on_button_pressed(self, event: Button.Pressed) -> None:
        answer, key, view = self._answer, event.button.id or "", self.view
        if answer is None or answer.done() or view is None:
            return
        card = self.slot_cards.get(key) if key.startswith("slot-") else None
        if self.asking == "pass" and card is not None:
            if card in self._chosen:
                self._chosen.remove(card)
            else:
                self._chosen.append(card)
            self._show_choices(view)
            return
        if self.asking == "play" and card is not None:
            choice: Any = card
        elif self.asking == "bid" and key.startswith("bid-"):
            choice = int(key.removeprefix("bid-"))
        elif self.asking == "blind" and key.startswith("blind-"):
            choice = key == "blind-yes"
        elif self.asking == "pass" and key == "pass-send":
            if len(self._chosen) != view.rules.blind_nil_pass_cards:
                return
            choice = list(self._chosen)
        else:
            return
        self._answered(answer, choice, view)

    def _answered(self, answer: asyncio.Future[Any], choice: Any, view: BotView) -> None:
        # Answered: the choice is gone from the screen at once, so it cannot be sent twice.
        answer.set_result(choice)
        self.asking = ""
        self.typed = ""
        self._show_choices(view)


def _outcome(end: ev.MatchEnded | None, seat: int) -> str:
    if end is None:
        return "The match did not finish."
    scores = " - ".join(str(score) for score in end.final_scores)
    if not end.winners:
        return f"Match over, no winner ({scores})."
    result = "you win" if seat in end.winners else "you lose"
    return f"Match over: {result} ({scores})."
