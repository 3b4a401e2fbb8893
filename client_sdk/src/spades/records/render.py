"""Records as text for people: a hand-by-hand account of a match, and its score table.

Both read engine events (see :func:`~spades.records.record.events_of` for a record's). Plain
text, one line per fact, cards as symbols (``Q♠``); hidden cards are shown as a count.

>>> from spades.engine import Rules, seated_match
>>> _, events = seated_match(Rules(), seed=bytes(32))
>>> print(render_match(events).splitlines()[2])
Players: North: North (bot), East: East (bot), South: South (bot), West: West (bot)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spades.engine import events as ev
from spades.engine.actions import Bid
from spades.engine.cards import format_cards
from spades.engine.rules import Rules
from spades.engine.seating import seat_name


@dataclass(frozen=True, slots=True)
class SideLine:
    """One side's line of one hand in the score table."""

    side: str
    seats: tuple[int, ...]
    bids: tuple[Bid, ...]
    contract: int
    tricks: int
    points: int
    bags: int
    bag_penalty: int
    total: int
    total_bags: int

    @property
    def bid_text(self) -> str:
        return "+".join(_bid_text(bid) for bid in self.bids)


@dataclass(frozen=True, slots=True)
class ScoreTable:
    """A match's score, hand by hand and side by side, and how it ended."""

    sides: tuple[str, ...]
    hands: tuple[tuple[int, tuple[SideLine, ...]], ...]
    end: ev.MatchEnded | None
    #: Per hand (as ``hands``): the seats with a timeout or a substitute playing that hand.
    automatic_play: tuple[tuple[int, ...], ...] = ()

    def automatic_in(self, index: int) -> tuple[int, ...]:
        """The seats of hand ``index`` (0-based, as in ``hands``) played at least partly
        automatically (a turn timed out, or a substitute played)."""
        return self.automatic_play[index] if index < len(self.automatic_play) else ()


def side_name(seats: Sequence[int]) -> str:
    """``"North-South"``, ``"East-West"``, or a seat's name in cutthroat."""
    return "-".join(seat_name(seat) for seat in seats)


def score_table(events: Sequence[ev.Event]) -> ScoreTable:
    """The score table of a match from its events (the HandScored and MatchEnded ones)."""
    rules = _rules(events)
    hands = []
    automatic = []
    for event in events:
        if isinstance(event, ev.HandScored):
            lines = tuple(
                SideLine(
                    side=side_name(side.seats),
                    seats=side.seats,
                    bids=tuple(result.bid for result in side.seat_results),
                    contract=side.contract,
                    tricks=sum(result.tricks for result in side.seat_results),
                    points=side.hand_points,
                    bags=side.bags,
                    bag_penalty=side.bag_penalty_points,
                    total=side.total_score,
                    total_bags=side.total_bags,
                )
                for side in event.sides
            )
            hands.append((event.hand_number, lines))
            automatic.append(event.automatic_play)
    end = next((event for event in events if isinstance(event, ev.MatchEnded)), None)
    return ScoreTable(
        sides=tuple(side_name(seats) for seats in rules.sides),
        hands=tuple(hands),
        end=end,
        automatic_play=tuple(automatic),
    )


#: Events that come after a hand's bidding (so its bids can be printed on one line).
_AFTER_BIDDING = (ev.CardsPassed, ev.CardPlayed, ev.Conceded, ev.MatchEnded, ev.HandStarted)

_SIDE_COLUMNS = ("Bid", "Tricks", "Points", "Bags", "Total")


def render_score_table(table: ScoreTable) -> str:
    """The score table as aligned plain text, then the winner."""
    header = ["Hand"]
    rows: list[list[str]] = []
    for _ in table.sides:
        header.extend(_SIDE_COLUMNS)
    marked: dict[str, list[int]] = {}
    for index, (hand_number, lines) in enumerate(table.hands):
        seats = table.automatic_in(index)
        row = [f"{hand_number}*" if seats else str(hand_number)]
        if seats:
            marked.setdefault(", ".join(seat_name(s) for s in seats), []).append(hand_number)
        for line in lines:
            bags = f"{line.bags}" + (f" ({line.bag_penalty})" if line.bag_penalty else "")
            row.extend(
                [line.bid_text, str(line.tricks), f"{line.points:+d}", bags, str(line.total)]
            )
        rows.append(row)
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    group_line = " " * widths[0]
    for index, side in enumerate(table.sides):
        start = 1 + index * len(_SIDE_COLUMNS)
        span = sum(widths[start : start + len(_SIDE_COLUMNS)]) + 2 * (len(_SIDE_COLUMNS) - 1)
        group_line += " | " + side.ljust(span)
    out = [group_line.rstrip(), _row(header, widths), _row(["-" * w for w in widths], widths)]
    out.extend(_row(row, widths) for row in rows)
    if marked:
        out.append("")
        named = "; ".join(f"{seats}: {hand_ranges(hands)}" for seats, hands in marked.items())
        out.append("* automatic play (a turn timed out, or a substitute played): " + named)
    out.append("")
    out.append(_end_text(table.end, table.sides))
    return "\n".join(out) + "\n"


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    parts = [cells[0].rjust(widths[0])]
    per_side = len(_SIDE_COLUMNS)
    for index in range(1, len(cells)):
        cell = (
            cells[index].ljust(widths[index])
            if (index - 1) % per_side == 0
            else cells[index].rjust(widths[index])
        )
        parts.append((" | " if (index - 1) % per_side == 0 else "  ") + cell)
    return "".join(parts).rstrip()


def score_table_json(table: ScoreTable) -> dict[str, Any]:
    """The score table as plain JSON-ready data."""
    end = table.end
    return {
        "sides": list(table.sides),
        "hands": [
            {
                "hand": hand_number,
                "automatic_play": [seat_name(seat) for seat in table.automatic_in(index)],
                "sides": [
                    {
                        "side": line.side,
                        "seats": [seat_name(seat) for seat in line.seats],
                        "bids": [_bid_text(bid) for bid in line.bids],
                        "contract": line.contract,
                        "tricks": line.tricks,
                        "points": line.points,
                        "bags": line.bags,
                        "bag_penalty": line.bag_penalty,
                        "total": line.total,
                        "total_bags": line.total_bags,
                    }
                    for line in lines
                ],
            }
            for index, (hand_number, lines) in enumerate(table.hands)
        ],
        "winner": None
        if end is None
        else {
            "seats": [seat_name(seat) for seat in end.winners],
            "reason": end.reason.value,
            "final_scores": list(end.final_scores),
        },
    }


def render_match(
    events: Sequence[ev.Event], table_id: str = "", *, notes: Mapping[int, str] | None = None
) -> str:
    """A readable account of a match, hand by hand: deals, bids, tricks, scores, the winner, and
    the seats' sealed ``notes`` (by the sequence of the event each explains, as
    :func:`~spades.records.record.notes_of` reads them from a finished record), each under the
    line of its bid or card."""
    notes = notes or {}
    rules = _rules(events)
    created = events[0]
    assert isinstance(created, ev.TableCreated)
    out = ["Spades match" + (f" at table {table_id}" if table_id else "")]
    out.append("Rules: " + (", ".join(rules.badges()) or "standard (partnership, to 500)"))
    seated_line = len(out)
    out.append("")
    out.append(f"Seed commitment: {created.seed_commitment.hex()}")
    narrator = MatchNarrator(rules)
    for sequence, event in enumerate(events, 1):
        out.extend(narrator.lines(event, notes.get(sequence, "")))
    if not narrator.over:
        out.extend(narrator.unfinished())
    out[seated_line] = narrator.players_line()
    return "\n".join(out) + "\n"


class MatchNarrator:
    """:func:`render_match` one event at a time, for a match being watched as it is played.

    :meth:`lines` gives the lines an event completes (bids come as one line once bidding is
    over, a trick once it is won). ``needed=True`` adds to each hand's score table the points
    each side still needs to reach the target.

    >>> from spades.engine import Rules, seated_match
    >>> _, events = seated_match(Rules(), seed=bytes(32))
    >>> narrator = MatchNarrator(Rules())
    >>> [line for event in events for line in narrator.lines(event)][1]
    'Hand 1, dealt by North'
    """

    def __init__(self, rules: Rules, *, needed: bool = False) -> None:
        self.rules = rules
        self.needed = needed
        self.players: dict[int, ev.SeatTaken] = {}
        self.over = False
        self._hand_results: list[ev.HandScored] = []
        # What the clock did for a seat, shown with the seat's next action.
        self._notes: dict[int, list[str]] = {}
        self._bids: list[str] = []
        self._trick: list[str] = []
        # Sealed notes of the bids or trick in progress, printed under its line.
        self._sealed: list[str] = []

    def players_line(self) -> str:
        return "Players: " + ", ".join(
            f"{seat_name(seat)}: {taken.name}{' (bot)' if taken.bot else ''}"
            for seat, taken in sorted(self.players.items())
        )

    def lines(self, event: ev.Event, note: str = "") -> list[str]:
        """The lines ``event`` completes (often none); ``note``: the sealed note of the action
        the event records (a finished record's), printed under the line that shows it."""
        out: list[str] = []
        players, notes, trick = self.players, self._notes, self._trick
        if self._bids and isinstance(event, _AFTER_BIDDING):
            out.append("  Bids: " + ", ".join(self._bids))
            self._bids = []
            out.extend(self._sealed)
            self._sealed = []
        if isinstance(event, ev.SeatTaken):
            players[event.seat] = event
        elif isinstance(event, ev.SeatLeft):
            players.pop(event.seat, None)
        elif isinstance(event, ev.HandStarted):
            out.append("")
            out.append(f"Hand {event.hand_number}, dealt by {_who(players, event.dealer)}")
            if event.blind_nil_eligible:
                eligible = ", ".join(seat_name(seat) for seat in event.blind_nil_eligible)
                out.append(f"  May bid Blind Nil: {eligible}")
        elif isinstance(event, ev.CardsDealt):
            shown = (
                f"{event.card_count} cards (hidden)"
                if event.cards is None
                else format_cards(event.cards, symbols=True)
            )
            face_down = " (face down)" if event.face_down else ""
            out.append(f"  {seat_name(event.seat):<5}  {shown}{face_down}")
        elif isinstance(event, ev.BlindNilChosen):
            choice = "bids Blind Nil" if event.blind else "looks at the cards"
            out.append(f"  {seat_name(event.seat)} {choice}{_clock(notes, event.seat)}")
        elif isinstance(event, ev.BidMade):
            clock = "" if event.bid.blind else _clock(notes, event.seat)
            self._bids.append(f"{seat_name(event.seat)} {event.bid}{clock}")
        elif isinstance(event, ev.CardsPassed):
            cards = "" if event.cards is None else ": " + format_cards(event.cards, symbols=True)
            out.append(
                f"  {seat_name(event.from_seat)} passes {event.card_count} cards to "
                f"{seat_name(event.to_seat)}{cards}{_clock(notes, event.from_seat)}"
            )
        elif isinstance(event, ev.CardPlayed):
            verb = " leads" if not trick else ""
            clock = _clock(notes, event.seat)
            trick.append(f"{seat_name(event.seat)}{verb} {event.card.symbol}{clock}")
        elif isinstance(event, ev.TrickWon):
            out.append(
                f"  Trick {event.trick_number:>2}: {', '.join(trick)}  -> "
                f"{seat_name(event.winner)} wins with the {event.winning_card.symbol}"
            )
            trick.clear()
            out.extend(self._sealed)
            self._sealed = []
        elif isinstance(event, ev.HandScored):
            self._hand_results.append(event)
            out.append("  Score:")
            target = self.rules.target_score if self.needed else None
            out.extend("    " + line for line in _hand_score_lines(self.rules, event, target))
            if event.automatic_play:
                seats = ", ".join(seat_name(seat) for seat in event.automatic_play)
                out.append(f"  Automatic play this hand (timeouts or a substitute): {seats}")
        elif isinstance(event, ev.TurnTimedOut):
            notes.setdefault(event.seat, []).append("time ran out")
        elif isinstance(event, ev.ExtensionClaimed):
            notes.setdefault(event.seat, []).append("extension claimed")
        elif isinstance(event, ev.SeatSubstituted):
            out.append(
                f"  A house bot takes over {_who(players, event.seat)} ({event.reason.value})"
            )
        elif isinstance(event, ev.SeatReclaimed):
            out.append(f"  {_who(players, event.seat)} is back and takes the seat again")
        elif isinstance(event, ev.Conceded):
            if trick:
                out.append(f"  Unfinished trick: {', '.join(trick)}")
                out.extend(self._sealed)
                self._sealed = []
                trick.clear()
            out.append("")
            out.append(f"{_who(players, event.seat)} concedes the match.")
        elif isinstance(event, ev.MatchEnded):
            self.over = True
            sides = tuple(side_name(seats) for seats in self.rules.sides)
            out.append("")
            out.append(_end_text(event, sides))
        elif isinstance(event, ev.SeedRevealed):
            out.append(f"Seed revealed: {event.seed.hex()}")
        if note and event.actor is not None:
            self._sealed.extend(_note_lines(event, event.actor, note))
        if self._sealed and not self._bids and not trick:
            # A choice, a pass or a concession: its line is out already.
            out.extend(self._sealed)
            self._sealed = []
        return out

    def unfinished(self) -> list[str]:
        """The closing lines of a match that is not over: the bids and trick in progress."""
        out = []
        if self._bids:
            out.append("  Bids so far: " + ", ".join(self._bids))
        if self._trick:
            out.append(f"  Trick in progress: {', '.join(self._trick)}")
        out.append("")
        out.append("The match is not over.")
        return out


def _hand_score_lines(rules: Rules, event: ev.HandScored, target: int | None = None) -> list[str]:
    header = ["Side", "Bids", "Tricks", "Points", "Bags", "Total", "Bags held", "How"]
    if target is not None:
        header.insert(7, "Needs")
    rows = []
    for side in event.sides:
        bids = "+".join(_bid_text(result.bid) for result in side.seat_results)
        tricks = "+".join(str(result.tricks) for result in side.seat_results)
        row = [
            side_name(side.seats),
            bids,
            tricks,
            f"{side.hand_points:+d}",
            str(side.bags),
            str(side.total_score),
            str(side.total_bags),
            _how(side),
        ]
        if target is not None:
            row.insert(7, str(max(0, target - side.total_score)))
        rows.append(row)
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    left = (0, 1, 2, len(header) - 1)
    return [
        "  ".join(
            cell.ljust(width) if column in left else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in [header, *rows]
    ]


def _how(side: ev.SideResult) -> str:
    parts = []
    if side.contract:
        outcome = "made" if side.contract_made else "set"
        parts.append(f"contract {side.contract} {outcome} {side.contract_points:+d}")
    for nil in side.nil_results:
        kind = "blind nil" if nil.blind else "nil"
        outcome = "made" if nil.made else "failed"
        parts.append(f"{seat_name(nil.seat)} {kind} {outcome} {nil.points:+d}")
    if side.bag_penalty_points:
        parts.append(f"bag penalty {side.bag_penalty_points}")
    return "; ".join(parts)


def hand_ranges(hands: Sequence[int]) -> str:
    """Hand numbers as runs: ``hand 4``, ``hands 1-1006``, ``hands 1-3, 7, 9-12``.

    >>> hand_ranges([1, 2, 3, 7, 9, 10, 11, 12])
    'hands 1-3, 7, 9-12'
    """
    ordered = sorted(set(hands))
    if len(ordered) == 1:
        return f"hand {ordered[0]}"
    runs: list[list[int]] = []
    for hand in ordered:
        if runs and hand == runs[-1][1] + 1:
            runs[-1][1] = hand
        else:
            runs.append([hand, hand])
    return "hands " + ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


def _end_text(end: ev.MatchEnded | None, sides: Sequence[str]) -> str:
    if end is None:
        return "No winner yet: the match is not over."
    scores = ", ".join(
        f"{side} {score}" for side, score in zip(sides, end.final_scores, strict=False)
    )
    if not end.winners:  # closed by the operator: a case of its own, not an empty winner
        return f"No winner: {end.reason.value} (final scores {scores})"
    winners = "-".join(seat_name(seat) for seat in end.winners)
    return f"Winner: {winners} ({end.reason.value}; final scores {scores})"


def _rules(events: Sequence[ev.Event]) -> Rules:
    if not events or not isinstance(events[0], ev.TableCreated):
        raise ValueError("a match's events start with TableCreated")
    return events[0].rules


def _who(players: dict[int, ev.SeatTaken], seat: int) -> str:
    taken = players.get(seat)
    if taken is None or taken.name == seat_name(seat):
        return seat_name(seat)
    return f"{seat_name(seat)} ({taken.name})"


def _note_lines(event: ev.Event, seat: int, note: str) -> list[str]:
    """A sealed note under its bid or card: ``      North (4♣): why``, each of its lines
    indented, with no character that would move a terminal's cursor or colour its text."""
    shown = [_printable(line) for line in note.splitlines() or [""]]
    first = f"      {seat_name(seat)} ({_action_text(event)}): "
    return [first + shown[0], *(" " * len(first) + line for line in shown[1:])]


def _action_text(event: ev.Event) -> str:
    """What the action an event records was, in a word or a card."""
    if isinstance(event, ev.BidMade):
        return f"bid {event.bid}"
    if isinstance(event, ev.CardPlayed):
        return event.card.symbol
    if isinstance(event, ev.BlindNilChosen):
        return "Blind Nil" if event.blind else "looks"
    if isinstance(event, ev.CardsPassed):
        return "pass"
    if isinstance(event, ev.Conceded):
        return "concedes"
    return type(event).__name__


def _printable(text: str) -> str:
    """``text`` with each unprintable character (an escape, a control) as its ``\\x..``."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def _clock(notes: dict[int, list[str]], seat: int) -> str:
    said = notes.pop(seat, None)
    return f" ({', '.join(said)})" if said else ""


def _bid_text(bid: Bid) -> str:
    return str(bid)


__all__ = [
    "MatchNarrator",
    "ScoreTable",
    "SideLine",
    "hand_ranges",
    "render_match",
    "render_score_table",
    "score_table",
    "score_table_json",
    "side_name",
]
