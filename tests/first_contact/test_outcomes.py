"""What a newcomer reads about a match: fallbacks that are not Nil, "no winner", hand ranges,
and where the arena plays.

A bot answering an illegal bid gets the clock's automatic bid (1), not the first legal bid
(Nil, the riskiest); a match the operator closed has no winner, in ``spades-bot``'s lines and
in ``spades-record``'s; long runs of hand numbers print as ranges.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

from spades.bot import Bot, BotView, describe_end, run_local_match
from spades.bot.runner import MatchOutcome
from spades.commands.bot import tally
from spades.engine import Bid, Rules
from spades.engine import events as ev
from spades.records.render import hand_ranges, render_match, render_score_table, score_table
from spades_bots.arena.cli import config_from, parser, where_played
from spades_bots.random_bot import RandomBot

README = Path(__file__).resolve().parents[2] / "README.md"


class IllegalBidder(RandomBot):
    """Bids what no rule allows; plays randomly."""

    def bid(self, view: BotView) -> int:
        return 99


class Crashing(RandomBot):
    def bid(self, view: BotView) -> int:
        raise RuntimeError("my bot has a bug")


def bids_of(events: list[ev.Event], seat: int) -> list[Bid]:
    return [event.bid for event in events if isinstance(event, ev.BidMade) and event.seat == seat]


def test_an_illegal_or_failing_bid_falls_back_to_the_automatic_bid_not_nil() -> None:
    for bot in (IllegalBidder(seed=1), Crashing(seed=2)):
        events: list[ev.Event] = []
        bots: list[Bot] = [bot, RandomBot(seed=3), RandomBot(seed=4), RandomBot(seed=5)]
        run_local_match(bots, Rules(max_hands=3), seed=bytes(32), events=events)
        bids = bids_of(events, 0)
        assert len(bids) == 3
        # The clock's automatic bid under the default rules is 1 (RULES.md section 3).
        assert bids == [Bid(1)] * 3, bids


def readme_bot() -> type[Bot]:
    """The README's "Write a bot" example, run as it is printed there."""
    source = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)[0]
    namespace: dict[str, object] = {}
    exec(source, namespace)
    bot_class = namespace["MyBot"]
    assert isinstance(bot_class, type) and issubclass(bot_class, Bot)
    return bot_class


def test_the_readme_example_bot_never_falls_back_to_nil() -> None:
    FromReadme = readme_bot()
    events: list[ev.Event] = []
    # A board of 5: when North bid 2, South may not bid 2 (nor Nil). Random opponents, so
    # that the two sides' scores differ and the capped match ends.
    rules = Rules(max_hands=2, minimum_team_bid=5)
    bots: list[Bot] = [FromReadme(), RandomBot(seed=1), FromReadme(), RandomBot(seed=2)]
    run_local_match(bots, rules, seed=bytes(32), events=events)
    ours = bids_of(events, 0) + bids_of(events, 2)
    assert len(ours) >= 4 and all(bid.tricks > 0 for bid in ours), ours
    # Where 2 is not allowed, the lowest bid that is (3 after a partner's 2), not 13.
    assert any(bid.tricks == 3 for bid in ours), ours
    assert all(bid.tricks <= 3 for bid in ours), ours


CLOSED = ev.MatchEnded(reason=ev.EndReason.CLOSED, winners=(), final_scores=(120, -40))


def test_spades_bot_says_no_winner_for_a_closed_match() -> None:
    line = describe_end(CLOSED, seat=0)
    assert line == "match over (closed by the operator): no winner, scores 120/-40"
    won = ev.MatchEnded(reason=ev.EndReason.TARGET_SCORE, winners=(0, 2), final_scores=(510, 3))
    assert describe_end(won, seat=1).endswith("NS win, scores 510/3; we lost")

    def outcome(end: ev.MatchEnded) -> MatchOutcome:
        return MatchOutcome(seat=0, table_id="t", end=end, hand_results=(), view=None)  # type: ignore[arg-type]

    results = [outcome(won), outcome(CLOSED), outcome(won)]
    assert not results[1].won and results[1].no_winner and not results[0].no_winner
    assert tally(results) == "won 2 of 3 matches (1 closed without a winner)"
    assert tally(results[:1]) == "won 1 of 1 matches"


def test_spades_record_says_no_winner_for_a_closed_match() -> None:
    events: list[ev.Event] = []
    run_local_match(
        [RandomBot(seed=n) for n in range(4)], Rules(max_hands=1), bytes(32), events=events
    )
    ended = next(i for i, event in enumerate(events) if isinstance(event, ev.MatchEnded))
    events[ended] = CLOSED
    text = render_score_table(score_table(events[: ended + 1]))
    shown = render_match(events[: ended + 1])
    assert "No winner: closed by the operator" in shown and "Winner:" not in shown
    last = text.strip().splitlines()[-1]
    assert (
        last == "No winner: closed by the operator (final scores North-South 120, East-West -40)"
    ), last
    assert "Winner:" not in text


def test_the_automatic_play_footnote_gives_hand_ranges_per_seat() -> None:
    events: list[ev.Event] = []
    bots = [RandomBot(seed=n) for n in range(4)]
    run_local_match(bots, Rules(max_hands=4), bytes(32), events=events)
    marked = {1: (0,), 2: (0,), 3: (0,), 4: (1, 3)}  # hand number -> seats played for
    events = [
        dataclasses.replace(event, automatic_play=marked.get(event.hand_number, ()))
        if isinstance(event, ev.HandScored)
        else event
        for event in events
    ]
    text = render_score_table(score_table(events))
    footnote = next(line for line in text.splitlines() if line.startswith("* automatic play"))
    assert footnote.endswith("played): North: hands 1-3; East, West: hand 4"), footnote


def test_hand_numbers_print_as_ranges() -> None:
    assert hand_ranges(list(range(1, 1007))) == "hands 1-1006"
    assert hand_ranges([4]) == "hand 4"
    assert hand_ranges([7, 1, 2, 3, 9, 10]) == "hands 1-3, 7, 9-10"
    assert hand_ranges([2, 4]) == "hands 2, 4"


def arena(*argv: str) -> str:
    parse = parser()
    args: argparse.Namespace = parse.parse_args(["--matches", "4", *argv])
    return where_played(config_from(args, parse))


def test_the_arena_says_where_and_how_many_at_once() -> None:
    assert arena() == "in this process"
    assert arena("--jobs", "2") == "in 2 worker processes"
    served = arena("--server", "127.0.0.1:50051", "--jobs", "4", "--operator-token", "t" * 20)
    assert served == "on the server 127.0.0.1:50051, 4 at a time"
    assert arena("--server", "h:1", "--operator-token", "t" * 20).endswith("one at a time")
