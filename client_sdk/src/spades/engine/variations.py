"""The table of rule variations: one row per variation, read by everything that lists them.

A row names a variation, its :class:`~spades.engine.rules.Rules` field(s), the matching
``spades.v1.RuleSet`` field(s) and how their values read on the wire, its lobby badge, how a
bot's manifest declares it, the web form's control for it and one line saying what it does.
Its readers: :meth:`Rules.badges`, the proto conversion (``spades.protocol``), the manifests
(``spades.manifest``), the web form (``tools/gen_variations.py`` writes
``server/web/src/variations.generated.ts`` from it) and docs/rules.md's list (the same tool).
Adding a variation is one row here plus its hook in the engine.

Why here, in the engine, as plain data: the badges are the engine's (``Rules.badges()``), and the
engine imports nothing outside itself, so the table cannot live in the SDK above it. Everything
of the wire is a name in a string (a ``RuleSet`` field, a ``RuleOption`` value), resolved
against the generated descriptors only by the SDK's readers; so the engine still imports no
protobuf, and a test holds every name to the ``.proto`` files. Every field of ``Rules`` and of
``RuleSet`` is in exactly one row (the clock too: the lobby badges it and the form sets it).

>>> [variation.name for variation in VARIATIONS if variation.manifest == ("RULE_OPTION_JOKERS",)]
['jokers']
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final


class Wire(Enum):
    """How a ``RuleSet`` field carries a ``Rules`` field (each proto field's comment says so)."""

    #: The same value; zero (unset, for an ``optional`` field) reads as the default.
    SAME = "the same value; zero (or unset, when optional) means the default"
    #: The opposite sense: ``nil_disabled`` for ``nil_allowed``.
    NEGATED = "the opposite sense"
    #: ``None`` (off) travels as 0.
    ZERO_IS_NONE = "0 means off (None)"
    #: An engine ``Enum`` as the proto enum value of the same name; UNSPECIFIED is the default.
    ENUM = "the enum value of the same name; UNSPECIFIED means the default"
    #: An engine dataclass as a message of the same field names, each read as ``SAME``; an
    #: unset message is the default.
    MESSAGE = "a message of the same fields; unset means the default"


@dataclass(frozen=True, slots=True)
class Field:
    """One ``Rules`` field and the ``spades.v1.RuleSet`` field that carries it."""

    rules: str
    proto: str
    wire: Wire = Wire.SAME


@dataclass(frozen=True, slots=True)
class Checkbox:
    """A tick box: ticked sets ``proto_field`` to ``checked`` (a number, a bool, or a proto enum
    value's name); unticked leaves the default game's value."""

    id: str
    label: str
    proto_field: str
    checked: int | bool | str = True


@dataclass(frozen=True, slots=True)
class NumberInput:
    """A number field: its value, times ``scale``, is ``proto_field`` (a dotted path into
    ``RuleSet``). ``beside_name`` puts it beside the table's name, with the match's length,
    rather than among the rules."""

    id: str
    label: str
    proto_field: str
    value: int
    minimum: int
    maximum: int
    step: int | None = None
    scale: int = 1
    beside_name: bool = False


Control = Checkbox | NumberInput


@dataclass(frozen=True, slots=True)
class Variation:
    """One rule variation, as every reader of the table sees it."""

    #: The variation's name (docs/rules.md, the generated TypeScript).
    name: str
    #: Its ``Rules`` fields, each with the ``RuleSet`` field that carries it.
    fields: tuple[Field, ...]
    #: What it does, in one line.
    description: str
    #: The lobby's badge when the rules differ from the default game here, a format string of
    #: the row's own ``Rules`` fields (``"to {target_score}"``); None: never shown.
    badge: str | None
    #: How a bot's manifest (``spades.v1.RuleManifest``) declares it: the ``RuleOption`` value's
    #: name, or the manifest fields that do; empty when any manifest allows it.
    manifest: tuple[str, ...]
    #: The web form's control for it, or None when the form does not offer it.
    control: Control | None = None

    def in_use(self, rules: object, default: object) -> bool:
        """Whether ``rules`` differ from the ``default`` game in this variation's fields (both
        :class:`~spades.engine.rules.Rules`, which read this table: no import back)."""
        return any(getattr(rules, f.rules) != getattr(default, f.rules) for f in self.fields)

    def badge_of(self, rules: object) -> str | None:
        """The badge of ``rules`` in this variation (whether or not it is in use)."""
        if self.badge is None:
            return None
        return self.badge.format(**{f.rules: getattr(rules, f.rules) for f in self.fields})


#: Every rule variation, in the order of the lobby's badges.
VARIATIONS: Final[tuple[Variation, ...]] = (
    Variation(
        name="players",
        fields=(Field("players", "players"),),
        description="4 players in partnerships, or 3 in cutthroat (everyone plays alone).",
        badge="cutthroat (3 players)",
        manifest=("players",),
        control=Checkbox("cutthroat", "Cutthroat (3 players, each alone)", "players", 3),
    ),
    Variation(
        name="target_score",
        fields=(Field("target_score", "target_score"),),
        description="The score that wins, 100 to 1000 (500 by default).",
        badge="to {target_score}",
        manifest=("min_target_score", "max_target_score"),
        control=NumberInput(
            "target", "Target score", "target_score", 500, 100, 1000, step=50, beside_name=True
        ),
    ),
    Variation(
        name="nil",
        fields=(Field("nil_allowed", "nil_disabled", Wire.NEGATED),),
        description="Nil may be bid (on by default); off, bids are 1 and up.",
        badge="no nil",
        manifest=("RULE_OPTION_NIL_DISABLED",),
        control=Checkbox("no-nil", "No Nil", "nil_disabled"),
    ),
    Variation(
        name="nil_tricks_count_for_partner",
        fields=(Field("nil_tricks_count_for_partner", "nil_tricks_count_for_partner"),),
        description="A Nil bidder's tricks count toward the partner's contract.",
        badge="nil tricks count for partner",
        manifest=("RULE_OPTION_NIL_TRICKS_COUNT_FOR_PARTNER",),
        control=Checkbox(
            "nil-tricks-count", "Nil tricks count for partner", "nil_tricks_count_for_partner"
        ),
    ),
    Variation(
        name="blind_nil",
        fields=(Field("blind_nil", "blind_nil"),),
        description="A side far enough behind may bid Nil before looking at its cards.",
        badge="blind nil",
        manifest=("RULE_OPTION_BLIND_NIL",),
        control=Checkbox("blind-nil", "Blind Nil", "blind_nil"),
    ),
    Variation(
        name="blind_nil_deficit",
        fields=(Field("blind_nil_deficit", "blind_nil_deficit"),),
        description="How far a side must trail the leader to be offered Blind Nil (100; 0: any).",
        badge=None,
        manifest=(),  # RULE_OPTION_BLIND_NIL declares Blind Nil with any deficit
    ),
    Variation(
        name="blind_nil_pass_cards",
        fields=(Field("blind_nil_pass_cards", "blind_nil_pass_cards"),),
        description="A Blind Nil bidder and partner exchange 2 cards after bidding.",
        badge="blind nil pass {blind_nil_pass_cards}",
        manifest=("RULE_OPTION_BLIND_NIL_PASS_CARDS",),
        control=Checkbox(
            "blind-nil-pass", "Blind Nil card pass (2 cards)", "blind_nil_pass_cards", 2
        ),
    ),
    Variation(
        name="two_of_clubs_leads",
        fields=(Field("two_of_clubs_leads", "two_of_clubs_leads"),),
        description="The holder of the 2♣ leads it to the first trick of every hand.",
        badge="2♣ leads",
        manifest=("RULE_OPTION_TWO_OF_CLUBS_LEADS",),
        control=Checkbox("two-of-clubs-leads", "2♣ leads", "two_of_clubs_leads"),
    ),
    Variation(
        name="jokers",
        fields=(Field("jokers", "jokers"),),
        description="Big Joker, Little Joker: the jokers are the top trumps, then the 2♠.",
        badge="big joker, little joker",
        manifest=("RULE_OPTION_JOKERS",),
        control=Checkbox("jokers", "Big joker, little joker", "jokers"),
    ),
    Variation(
        name="minimum_team_bid",
        fields=(Field("minimum_team_bid", "minimum_team_bid"),),
        description="The smallest contract a side may have (a board), 0 to 13.",
        badge="board {minimum_team_bid}",
        manifest=("RULE_OPTION_MINIMUM_TEAM_BID",),
        control=NumberInput(
            "minimum-team-bid", "Minimum team bid (0: none)", "minimum_team_bid", 0, 0, 13
        ),
    ),
    Variation(
        name="bags",
        fields=(Field("bag_limit", "bag_limit"), Field("bag_penalty", "bag_penalty")),
        description="How many bags cost a penalty, and how many points (10 cost 100).",
        badge="{bag_limit} bags cost {bag_penalty}",
        manifest=("RULE_OPTION_BAGS",),
    ),
    Variation(
        name="spades_lead_any_time",
        fields=(Field("spades_must_be_broken", "spades_lead_any_time", Wire.NEGATED),),
        description="Spades may be led before they are broken.",
        badge="spades lead any time",
        manifest=("RULE_OPTION_SPADES_LEAD_ANY_TIME",),
        control=Checkbox(
            "spades-lead-any-time", "Spades may be led any time", "spades_lead_any_time"
        ),
    ),
    Variation(
        name="loss_threshold",
        fields=(Field("loss_threshold", "loss_threshold", Wire.ZERO_IS_NONE),),
        description="Mercy: a side at or below this score after a hand loses (off by default).",
        badge="mercy at {loss_threshold}",
        manifest=(),
        control=NumberInput(
            "loss-threshold", "Mercy: lose at or below (0: off)", "loss_threshold", 0, -1000, 0
        ),
    ),
    Variation(
        name="max_hands",
        fields=(Field("max_hands", "max_hands", Wire.ZERO_IS_NONE),),
        description="The match ends after this many hands (no limit by default).",
        badge="{max_hands} hands",
        manifest=(),
        control=NumberInput(
            "hands", "Hands at most (0: no cap)", "max_hands", 0, 0, 100, beside_name=True
        ),
    ),
    Variation(
        name="direction",
        fields=(Field("direction", "direction", Wire.ENUM),),
        description="Bidding, play and the deal go counter-clockwise.",
        badge="counter-clockwise",
        manifest=("RULE_OPTION_COUNTER_CLOCKWISE",),
        control=Checkbox(
            "counter-clockwise",
            "Counter-clockwise",
            "direction",
            "PLAY_DIRECTION_COUNTER_CLOCKWISE",
        ),
    ),
    Variation(
        name="clock",
        fields=(Field("clock", "clock", Wire.MESSAGE),),
        description="A turn's time and its one extension (30 s each), enforced by the server.",
        badge="clock {clock.turn_millis}+{clock.extension_millis} ms",
        manifest=(),
        control=NumberInput(
            "turn-seconds", "Seconds a turn", "clock.turn_millis", 30, 1, 600, scale=1000
        ),
    ),
)
