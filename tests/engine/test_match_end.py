"""The end of the match once a hand is scored (RULES.md section 1, "Winning"): the engine's
rule, which the solver reads too (``spades.engine.match_end``)."""

from __future__ import annotations

import pytest

from spades.engine import Rules, match_end
from spades.engine.events import EndReason


@pytest.mark.parametrize(
    ("rules", "scores", "hand", "expected"),
    [
        (Rules(), (490, 480), 9, None),  # neither at the target
        (Rules(), (500, 480), 9, (EndReason.TARGET_SCORE, 0)),  # at the target is enough
        (Rules(), (480, 512), 9, (EndReason.TARGET_SCORE, 1)),
        (Rules(), (530, 510), 9, (EndReason.TARGET_SCORE, 0)),  # both past it: the higher
        (Rules(), (510, 510), 9, None),  # tied at the top: another hand
        (Rules(loss_threshold=-200), (-200, 150), 4, (EndReason.LOSS_THRESHOLD, 1)),
        (Rules(loss_threshold=-200), (-190, 150), 4, None),
        (Rules(max_hands=3), (120, 80), 2, None),
        (Rules(max_hands=3), (120, 80), 3, (EndReason.MAX_HANDS, 0)),  # the last hand
        (Rules(max_hands=3), (90, 90), 3, None),  # a tie plays on past the limit
        (Rules(players=3), (200, 510, 505), 7, (EndReason.TARGET_SCORE, 1)),
        (Rules(players=3), (510, 510, 300), 7, None),  # cutthroat: two tied at the top
    ],
)
def test_the_match_ends_with_one_side_ahead_at_an_end(
    rules: Rules,
    scores: tuple[int, ...],
    hand: int,
    expected: tuple[EndReason, int] | None,
) -> None:
    assert match_end(rules, scores, hand) == expected
