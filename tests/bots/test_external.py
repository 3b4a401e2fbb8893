"""The exec adapter: a bot in a child process plays whole matches, locally and on a real server,
and every way a child can fail costs it one turn (the default action, logged) and a restart."""

from __future__ import annotations

import gc
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from spades.bot import Bot, BotView, Decision, decide, load_bot_class, play_local_match
from spades.bot import external_protocol as wire
from spades.bot.external import ExternalBot
from spades.client import SpadesClient
from spades.commands.bot import make_bot
from spades.engine import Rules, legal_actions, seated_match
from spades.engine import events as ev
from spades.v1 import cards_pb2
from spades_bots.arena import ArenaConfig, run_arena
from spades_bots.heuristic import HeuristicBot
from spades_server.app.server import SpadesServer
from tests.support.bot_matches import audit, play_all, seat_bots
from tests.support.servers import running_server

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = f"node {ROOT / 'bots' / 'examples' / 'simple.js'}"
CHILD = Path(__file__).with_name("external_child.py")


def child_command(mode: str, marker: Path | None = None) -> str:
    words = [sys.executable, str(CHILD), mode] + ([str(marker)] if marker else [])
    return shlex.join(words)


class Recording(Bot):
    """Wraps a bot and keeps, per decision, the view and the action the SDK took."""

    def __init__(self, inner: ExternalBot) -> None:
        self.inner = inner
        self.decisions: list[tuple[BotView, object]] = []

    async def _record(self, view: BotView) -> object:
        action = (await decide(self.inner, view)).action
        self.decisions.append((view, action))
        return action

    def choose_blind_nil(self, view: BotView) -> bool:
        return False

    async def bid(self, view: BotView) -> int:  # type: ignore[override]
        action = await self._record(view)
        return action.tricks  # type: ignore[attr-defined,no-any-return]

    async def play(self, view: BotView) -> object:  # type: ignore[override]
        action = await self._record(view)
        return action.card  # type: ignore[attr-defined]

    def on_match_end(self, end: ev.MatchEnded, view: BotView) -> None:
        self.inner.on_match_end(end, view)


def test_exec_spec_names_a_bot_that_runs_the_command() -> None:
    cls = load_bot_class(f"exec:{EXAMPLE}")
    bot = cls()
    assert isinstance(bot, ExternalBot)
    assert bot.argv == shlex.split(EXAMPLE)
    assert bot.name == "simple"
    assert isinstance(make_bot(f"exec:{EXAMPLE}"), ExternalBot)
    with pytest.raises(ValueError, match="needs a command"):
        load_bot_class("exec:  ")


@pytest.mark.asyncio
async def test_the_javascript_example_plays_a_whole_local_match() -> None:
    north, south = ExternalBot(EXAMPLE), ExternalBot(EXAMPLE)
    rules = Rules(target_score=200, max_hands=8)
    final = await play_local_match(
        [north, HeuristicBot(), south, HeuristicBot()], rules, seed=b"exec".ljust(32, b".")
    )
    assert final.is_over
    assert north.failures == south.failures == 0
    assert north.starts == south.starts == 1
    for bot in (north, south):
        assert bot.child is None
        await bot.close()  # waits for the goodbye the end of the match started
    assert north.exit_codes == south.exit_codes == [0]  # each read "end" and exited


@pytest.mark.asyncio
async def test_the_javascript_example_plays_a_whole_match_on_a_real_server(
    tmp_path: Path,
) -> None:
    rules = Rules(max_hands=2)
    async with (
        running_server(tmp_path / "tables.db", shutdown_grace=0.2) as server,
        SpadesClient(f"127.0.0.1:{server.port}") as client,
    ):
        assert isinstance(server, SpadesServer)
        table_id, tokens = await seat_bots(client, rules)
        bots: list[Bot] = [
            ExternalBot(EXAMPLE),
            HeuristicBot(),
            ExternalBot(EXAMPLE),
            HeuristicBot(),
        ]
        outcomes = await play_all(client, bots, tokens, table_id)
        final = await audit(client, table_id, outcomes)
        record = await client.get_record(table_id)
        for bot in bots:
            if isinstance(bot, ExternalBot):
                await bot.close()
    assert final.is_over and len(final.hand_results) >= 2
    # The example explains each of its bids in a sealed note, revealed in the record (and the
    # heuristic its count of tricks).
    example = {cards_pb2.SEAT_NORTH, cards_pb2.SEAT_SOUTH}
    noted = {(note.seat, note.text.split(":")[0]) for note in record.notes if note.seat in example}
    assert {seat for seat, _ in noted} == example
    assert all(said.endswith("strong cards") for _, said in noted)
    assert len(record.notes) == 4 * len(final.hand_results)
    counted = [note.text for note in record.notes if note.seat not in example]
    assert all(" counted " in text for text in counted)
    # the hand limit ends a match only on a clear leader: past it, every hand began from a tie
    for earlier in final.hand_results[1:-1]:
        assert len({side.total_score for side in earlier.sides}) == 1
    assert all(outcome.fallbacks == 0 for outcome in outcomes)
    assert all(bot.failures == 0 for bot in bots if isinstance(bot, ExternalBot))


async def play_with(bot: ExternalBot, rules: Rules | None = None) -> list[tuple[BotView, object]]:
    """A local match in which North is ``bot``; North's decisions, in order."""
    recording = Recording(bot)
    rules = rules or Rules(max_hands=1)
    await play_local_match(
        [recording, HeuristicBot(), HeuristicBot(), HeuristicBot()], rules, seed=bytes(32)
    )
    await bot.close()
    return recording.decisions


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["crash", "hang", "garbage", "illegal"])
async def test_a_failing_child_costs_one_default_turn_and_is_restarted(
    mode: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bot = ExternalBot(child_command(mode, tmp_path / "marker"), answer_seconds=1.0)
    decisions = await play_with(bot)
    first_view, first_action = decisions[0]
    assert first_action == first_view.legal_actions[0]  # the SDK's default
    for view, action in decisions[1:]:  # the restarted child's own choice: the last on offer
        assert action == view.legal_actions[-1]
    assert bot.failures == 1 and bot.starts == 2
    expected = {
        "crash": "exit code 3",
        "hang": "no answer within 1 s",
        "garbage": "not JSON",
        "illegal": "is not one of the 14 legal actions",
    }[mode]
    failures = [record for record in caplog.records if record.name == "spades.bot.external"]
    assert len(failures) == 1 and expected in failures[0].getMessage()


@pytest.mark.asyncio
async def test_a_child_that_keeps_failing_never_stalls_the_match(tmp_path: Path) -> None:
    bot = ExternalBot(child_command("garbage"), answer_seconds=1.0)
    decisions = await play_with(bot)
    assert len(decisions) == 14  # a bid and thirteen cards
    assert all(action == view.legal_actions[0] for view, action in decisions)
    assert bot.failures == bot.starts == 14


@pytest.mark.asyncio
async def test_a_child_that_exits_mid_match_is_restarted_for_the_next_turn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bot = ExternalBot(child_command("exit-after-5"), answer_seconds=1.0)
    decisions = await play_with(bot)
    defaults = [
        index
        for index, (view, action) in enumerate(decisions)
        if action == view.legal_actions[0] and len(view.legal_actions) > 1
    ]
    assert 5 in defaults  # the sixth decision found the child gone
    assert all(decisions[index][1] == decisions[index][0].legal_actions[-1] for index in range(5))
    assert bot.starts == 3 and bot.failures == 2  # it exits again after five more
    assert any("exit code 0" in record.getMessage() for record in caplog.records)


@pytest.mark.asyncio
async def test_a_command_that_cannot_start_falls_to_the_default(tmp_path: Path) -> None:
    bot = ExternalBot(str(tmp_path / "no-such-bot"), answer_seconds=1.0)
    decisions = await play_with(bot)
    assert all(action == view.legal_actions[0] for view, action in decisions)
    assert bot.failures == 14


def documented_messages() -> list[dict[str, Any]]:
    """The JSON examples of docs/external-bots.md."""
    text = (ROOT / "docs" / "external-bots.md").read_text()
    blocks = [block.split("```", 1)[0] for block in text.split("```json\n")[1:]]
    return [json.loads(block) for block in blocks]


def test_the_protocol_document_shows_the_messages_the_sdk_sends() -> None:
    examples = documented_messages()
    assert examples[0] == wire.hello()
    assert wire.read_hello(wire.encode(examples[1])) == "simple"
    state, _ = seated_match(Rules(), seed=bytes(32))
    view = BotView(state, state.seat_to_act())
    sent = wire.decide(view, 1, 1000)
    documented = next(example for example in examples if example.get("type") == "decide")
    assert documented.keys() == sent.keys()
    assert set(wire.rules_json(Rules())) >= set(documented["rules"]) - {"..."}
    answer, noted = (example for example in examples if "choice" in example)
    assert wire.read_answer(wire.encode(answer), 7, view.legal_actions) == wire.Answer(
        view.legal_actions[1]
    )
    assert wire.read_answer(wire.encode(noted), 7, view.legal_actions) == wire.Answer(
        view.legal_actions[1], noted["note"]
    )
    goodbye = next(example for example in examples if example.get("type") == "end")
    sent_end = wire.end(ev.MatchEnded(ev.EndReason.TARGET_SCORE, (1, 3), (310, 502)))
    assert goodbye == sent_end


@pytest.mark.asyncio
async def test_a_child_may_attach_a_sealed_note_and_a_bad_one_costs_the_turn(
    tmp_path: Path,
) -> None:
    state, _ = seated_match(Rules(), seed=bytes(32))
    seat = state.seat_to_act()
    view = BotView(state, seat, legal_actions(state, seat))
    noted = ExternalBot(child_command("noted"), answer_seconds=10.0)
    try:
        assert await decide(noted, view) == Decision(view.legal_actions[-1], False, "child note 1")
    finally:
        await noted.close()
    bad = ExternalBot(child_command("bad-note"), answer_seconds=10.0)
    try:
        # A note that is not a string: the child failed; the default action, and no note.
        assert await decide(bad, view) == Decision(view.legal_actions[0], False, "")
        assert bad.failures == 1
    finally:
        await bad.close()


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_an_exec_team_plays_in_the_arena_and_leaves_no_child_behind() -> None:
    config = ArenaConfig(
        f"exec:{EXAMPLE}", "random", pairs=1, seed=b"exec", rules=Rules(max_hands=2)
    )
    report = run_arena(config)
    assert len(report.results) == 2 and report.team_a.matches == 2
    gc.collect()  # a child's transport left for the collector would complain here
