"""The bot's turn hooks and clock over a real server: ``BotView.deadline``/``time_left()``
from the prompt, ``Bot.claim_extension`` (the runner claims, the next prompt's deadline is the
later one) and ``Bot.concede`` (the match ends for the conceding side); and the same
concession in a local match."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from spades.bot import BotView, run_local_match, turn_options
from spades.client import SpadesClient
from spades.engine import Card, Clock, Phase, Rules
from spades.engine import events as ev
from spades_bots.random_bot import RandomBot
from tests.support.bot_matches import play_all, seat_bots

CLOCK = Clock(turn_millis=20_000, extension_millis=7_000)


class ClaimingBot(RandomBot):
    """Claims the extension at each turn it may, and notes the deadlines it was shown."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.asked: list[tuple[datetime, float]] = []
        self.decided: list[tuple[datetime, float, bool]] = []

    def claim_extension(self, view: BotView) -> bool:
        assert view.deadline is not None and turn_options(view).may_claim_extension
        left = view.time_left()
        assert left is not None
        self.asked.append((view.deadline, left))
        return True

    def bid(self, view: BotView) -> int:
        self._note(view)
        return super().bid(view)

    def play(self, view: BotView) -> Card:
        self._note(view)
        return super().play(view)

    def _note(self, view: BotView) -> None:
        assert view.deadline is not None and view.deadline.tzinfo is not None
        left = view.time_left()
        assert left is not None
        self.decided.append((view.deadline, left, view.extension_claimed))


class ConcedingBot(RandomBot):
    """Concedes at its first turn to play a card."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.conceded_in: Phase | None = None

    def concede(self, view: BotView) -> bool:
        assert turn_options(view).may_concede
        if view.phase is Phase.PLAYING and self.conceded_in is None:
            self.conceded_in = view.phase
            return True
        return False


@pytest.mark.asyncio
async def test_a_bot_sees_its_deadline_and_claims_the_extension(client: SpadesClient) -> None:
    rules = Rules(max_hands=1, clock=CLOCK)
    table_id, tokens = await seat_bots(client, rules)
    claimer = ClaimingBot(1)
    outcomes = await play_all(client, [claimer, *map(RandomBot, (2, 3, 4))], tokens, table_id)
    assert outcomes[0].end is not None and outcomes[0].end.reason is ev.EndReason.MAX_HANDS
    # Asked once a turn (14 decisions: a bid and 13 cards), and each claim was applied.
    assert len(claimer.asked) == len(claimer.decided) == 1 + rules.hand_size
    record = await client.get_record(table_id)
    claims = [e for e in record.events if e.WhichOneof("kind") == "extension_claimed"]
    assert len(claims) == len(claimer.asked)
    assert all(e.extension_claimed.seat == 1 for e in claims)  # SEAT_NORTH
    extension = timedelta(milliseconds=CLOCK.extension_millis)
    for (before, left_before), (after, left_after, claimed) in zip(
        claimer.asked, claimer.decided, strict=True
    ):
        assert claimed and 0 < left_before <= CLOCK.turn_millis / 1000
        assert 0 < left_after <= (CLOCK.turn_millis + CLOCK.extension_millis) / 1000
        assert after - before == extension  # the same turn, with the extension on top
    assert not outcomes[0].fallbacks


@pytest.mark.asyncio
async def test_a_bot_that_concedes_ends_the_match_for_its_side(client: SpadesClient) -> None:
    table_id, tokens = await seat_bots(client, Rules(max_hands=3))
    conceder = ConcedingBot(5)
    outcomes = await play_all(
        client, [RandomBot(6), conceder, RandomBot(7), RandomBot(8)], tokens, table_id
    )
    end = outcomes[1].end
    assert end is not None and end.reason is ev.EndReason.CONCESSION
    assert end.winners == (0, 2) and not outcomes[1].won and outcomes[0].won
    assert conceder.conceded_in is Phase.PLAYING


def test_a_local_match_honours_a_concession_and_has_no_extension() -> None:
    class Claims(ConcedingBot):
        def claim_extension(self, view: BotView) -> bool:
            raise AssertionError("no clock runs in a local match, so no extension is offered")

    final = run_local_match(
        [RandomBot(1), RandomBot(2), Claims(3), RandomBot(4)], Rules(max_hands=2), seed=bytes(32)
    )
    assert final.end is not None and final.end.reason is ev.EndReason.CONCESSION
    assert final.end.winners == (1, 3)


def test_time_left_counts_down_to_zero() -> None:
    from spades.engine import seated_match

    state, _ = seated_match(Rules(), seed=bytes(32))
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    view = BotView(state, 1, None, now + timedelta(seconds=3))
    assert view.time_left(now) == 3.0
    assert view.time_left(now + timedelta(seconds=10)) == 0.0
    assert BotView(state, 1).deadline is None
