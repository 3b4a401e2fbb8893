"""A demonstration match: four random players, printed hand by hand.

    python -m spades.demo [--hands N] [--seed HEX]

Random bids rarely reach 500, so the match stops after a few hands (8 by default); the higher
score then wins. The same seed plays the same match.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence

from spades.engine import apply, legal_actions
from spades.engine import events as ev
from spades.engine.actions import Action, MakeBid
from spades.engine.commands import seated_match
from spades.engine.rules import Rules
from spades.engine.shuffle import SEED_BYTES, new_seed
from spades.records.render import render_match, render_score_table, score_table

DEFAULT_HANDS = 8
MODEST_BID = 4
NAMES = ("Ada", "Brook", "Cyd", "Dale")


def play_random_match(
    rules: Rules | None = None, seed: bytes | None = None, *, rng: random.Random | None = None
) -> list[ev.Event]:
    """Every event of a match in which each player picks a random legal action.

    The rules default to the standard game stopped after :data:`DEFAULT_HANDS` hands (random
    bids seldom reach the target, so pass rules with ``max_hands`` set). ``rng`` chooses the
    actions; by default it is seeded from ``seed``, so one seed plays one match.
    """
    rules = Rules(max_hands=DEFAULT_HANDS) if rules is None else rules
    seed = new_seed() if seed is None else seed
    rng = random.Random(seed) if rng is None else rng
    state, events = seated_match(rules, seed, names=NAMES[: rules.players])
    while not state.is_over:
        seat = state.seat_to_act()
        state, produced = apply(state, seat, _pick(legal_actions(state, seat), rng))
        events.extend(produced)
    return events


def _pick(actions: Sequence[Action], rng: random.Random) -> Action:
    # Uniform bids up to 13 set nearly every contract; modest ones make the demo a game.
    modest = [a for a in actions if isinstance(a, MakeBid) and a.tricks <= MODEST_BID]
    return rng.choice(modest or actions)


def _seed(text: str) -> bytes:
    try:
        seed = bytes.fromhex(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not hexadecimal") from error
    if len(seed) != SEED_BYTES:
        raise argparse.ArgumentTypeError(
            f"a seed is {SEED_BYTES} bytes ({2 * SEED_BYTES} hex digits)"
        )
    return seed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m spades.demo", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--hands", type=int, default=DEFAULT_HANDS, help=f"hand limit (default {DEFAULT_HANDS})"
    )
    parser.add_argument("--seed", type=_seed, help="the table's seed, 64 hex digits")
    arguments = parser.parse_args(argv)
    if arguments.hands < 1:
        parser.error("--hands must be at least 1")
    events = play_random_match(Rules(max_hands=arguments.hands), arguments.seed)
    print(render_match(events), end="")
    print()
    print(render_score_table(score_table(events)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
