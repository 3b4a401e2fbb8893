"""Rule-set manifests: which rule sets a bot account declares it can play.

A manifest (``spades.v1.RuleManifest``) lists the player counts a bot plays, a target-score
range and the variations beside the default game it knows (:class:`RuleOption` values). A rule
set is inside when its player count is listed, its target score is in the range and every
variation it uses is listed; the rest of a match's length (``max_hands``, ``loss_threshold``)
and the clock are free (the manifest column of :mod:`spades.engine.variations` says how each
variation is declared). This is the one place that decides it: the server (challenges, the
rated queue), the SDK's challenge policies and ``spades-bot --config`` all call
:func:`manifest_allows`.

A bot with no manifest plays the default rules only (:data:`DEFAULT_MANIFEST`); a person plays
any rules (the server does not check persons).

>>> from spades.engine import Rules
>>> manifest_allows(None, Rules(max_hands=25))
True
>>> manifest_allows(None, Rules(jokers=True))
False
>>> jokers = account_pb2.RuleManifest(options=[account_pb2.RULE_OPTION_JOKERS])
>>> manifest_allows(jokers, Rules(jokers=True)), outside(jokers, Rules(players=3))
(True, ['3 players'])
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from spades.engine import Rules
from spades.engine.variations import VARIATIONS
from spades.v1 import account_pb2

RuleOption = account_pb2.RuleOption

#: What a bot without a manifest declares: four players, the default rules, any target score.
DEFAULT_MANIFEST: Final = account_pb2.RuleManifest()

#: Each option by the name a config file or a person uses (``jokers``, ``blind_nil``, ...).
OPTION_NAMES: Final[dict[str, account_pb2.RuleOption.ValueType]] = {
    name.removeprefix("RULE_OPTION_").lower(): value
    for name, value in account_pb2.RuleOption.items()
    if value != account_pb2.RULE_OPTION_UNSPECIFIED
}
_NAME_OF: Final = {value: name for name, value in OPTION_NAMES.items()}

#: Each variation a RuleOption declares, with that option (the manifest column of the table of
#: variations; the two rows declared by manifest fields instead, the players and the target
#: score, are :func:`outside`'s first two checks, and the rows declared by nothing are free).
_OPTION_OF: Final = tuple(
    (account_pb2.RuleOption.Value(variation.manifest[0]), variation)
    for variation in VARIATIONS
    if variation.manifest and variation.manifest[0].startswith("RULE_OPTION_")
)

MIN_TARGET_SCORE: Final = 100
MAX_TARGET_SCORE: Final = 1000

#: The longest series of matches a challenge may ask for (and a manifest declare).
MAX_SERIES_LENGTH: Final = 99


def options_used(rules: Rules) -> set[account_pb2.RuleOption.ValueType]:
    """The variations beside the default game that ``rules`` uses."""
    default = Rules()
    return {option for option, variation in _OPTION_OF if variation.in_use(rules, default)}


def target_range(manifest: account_pb2.RuleManifest) -> tuple[int, int]:
    """The (lowest, highest) target score a manifest declares."""
    return (
        manifest.min_target_score or MIN_TARGET_SCORE,
        manifest.max_target_score or MAX_TARGET_SCORE,
    )


def outside(manifest: account_pb2.RuleManifest | None, rules: Rules) -> list[str]:
    """What of ``rules`` the manifest (None: none declared) does not declare, in words; empty
    when the rules are inside."""
    manifest = DEFAULT_MANIFEST if manifest is None else manifest
    missing = []
    if rules.players not in (manifest.players or [4]):
        missing.append(f"{rules.players} players")
    low, high = target_range(manifest)
    if not low <= rules.target_score <= high:
        missing.append(f"a target score of {rules.target_score} (it plays {low} to {high})")
    declared = set(manifest.options)
    missing += [_NAME_OF[option] for option in sorted(options_used(rules) - declared)]
    return missing


def manifest_allows(manifest: account_pb2.RuleManifest | None, rules: Rules) -> bool:
    """Whether a bot with ``manifest`` (None: none declared) plays ``rules``."""
    return not outside(manifest, rules)


def longest_series(manifest: account_pb2.RuleManifest | None) -> int:
    """The most matches in a row (a challenge's series) a bot with ``manifest`` plays: 1 (no
    rematches) unless it declares more.

    >>> longest_series(None), longest_series(account_pb2.RuleManifest(max_series_length=5))
    (1, 5)
    """
    return max(1, manifest.max_series_length) if manifest is not None else 1


def manifest_problem(manifest: account_pb2.RuleManifest) -> str | None:
    """Why a manifest cannot be declared, or None when it can."""
    if any(players not in (3, 4) for players in manifest.players):
        return "a manifest's players are 4 (partnerships) or 3 (cutthroat)"
    for bound in (manifest.min_target_score, manifest.max_target_score):
        if bound and not MIN_TARGET_SCORE <= bound <= MAX_TARGET_SCORE:
            return f"a target score bound is {MIN_TARGET_SCORE} to {MAX_TARGET_SCORE} (or 0)"
    low, high = target_range(manifest)
    if low > high:
        return f"min_target_score {low} is above max_target_score {high}"
    if any(option not in _NAME_OF for option in manifest.options):
        return "a manifest option is not a RuleOption"
    if manifest.max_series_length > MAX_SERIES_LENGTH:
        return f"a manifest's max_series_length is at most {MAX_SERIES_LENGTH}"
    return None


def manifest_of(
    *,
    players: Iterable[int] = (4,),
    target_scores: tuple[int, int] = (0, 0),
    options: Iterable[str] = (),
    max_series: int = 0,
) -> account_pb2.RuleManifest:
    """A manifest from plain values; ``options`` by name (see :data:`OPTION_NAMES`),
    ValueError for an unknown one; ``max_series`` the longest series it plays (0: single
    matches)."""
    values = []
    for name in options:
        if name not in OPTION_NAMES:
            raise ValueError(
                f"{name!r} is not a rule option; choose from {', '.join(OPTION_NAMES)}"
            )
        values.append(OPTION_NAMES[name])
    return account_pb2.RuleManifest(
        players=list(players),
        min_target_score=target_scores[0],
        max_target_score=target_scores[1],
        options=values,
        max_series_length=max_series,
    )
