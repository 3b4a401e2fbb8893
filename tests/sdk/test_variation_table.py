"""The table of rule variations covers the rule set on both sides of the wire, and its names
are the .proto files' own: a Rules field, a RuleSet field or a RuleOption in no row fails here.

Which fields are not variations: none. Every field of ``Rules`` and of ``spades.v1.RuleSet`` is
in exactly one row, the clock included (the lobby badges it, the form sets it, any manifest
allows it)."""

from __future__ import annotations

from collections import Counter
from dataclasses import fields

from google.protobuf.descriptor import FieldDescriptor

from spades.engine import Clock, Rules
from spades.engine.rules import Direction
from spades.engine.variations import VARIATIONS, Checkbox, Wire
from spades.manifest import options_used
from spades.protocol import rules_from_proto, rules_to_proto
from spades.v1 import account_pb2, rules_pb2

RULE_SET = rules_pb2.RuleSet.DESCRIPTOR
#: Fields that belong to no variation (see the module's docstring): none today.
NOT_VARIATIONS: frozenset[str] = frozenset()


def test_every_rules_field_is_in_exactly_one_row() -> None:
    named = Counter(field.rules for variation in VARIATIONS for field in variation.fields)
    assert set(named) == {field.name for field in fields(Rules)} - NOT_VARIATIONS
    assert max(named.values()) == 1


def test_every_rule_set_field_is_in_exactly_one_row() -> None:
    named = Counter(field.proto for variation in VARIATIONS for field in variation.fields)
    assert set(named) == set(RULE_SET.fields_by_name) - NOT_VARIATIONS
    assert max(named.values()) == 1


def test_every_rule_option_declares_exactly_one_row_and_other_names_are_manifest_fields() -> None:
    options = [
        name for variation in VARIATIONS for name in variation.manifest if name.startswith("RULE_")
    ]
    declared = {name for name, value in account_pb2.RuleOption.items() if value}
    assert sorted(options) == sorted(declared)
    others = {name for variation in VARIATIONS for name in variation.manifest} - declared
    assert others == {"players", "min_target_score", "max_target_score"}
    assert others <= set(account_pb2.RuleManifest.DESCRIPTOR.fields_by_name)


def test_each_wire_reading_fits_its_field() -> None:
    for variation in VARIATIONS:
        for field in variation.fields:
            descriptor = RULE_SET.fields_by_name[field.proto]
            default = getattr(Rules(), field.rules)
            if field.wire is Wire.NEGATED:
                assert descriptor.type == FieldDescriptor.TYPE_BOOL and default is True
            assert (descriptor.enum_type is not None) == (field.wire is Wire.ENUM), field
            assert (descriptor.message_type is not None) == (field.wire is Wire.MESSAGE), field
            assert (field.wire is Wire.ZERO_IS_NONE) == (default is None), field


def test_form_controls_have_distinct_names_and_checked_values_of_their_field() -> None:
    controls = [variation.control for variation in VARIATIONS if variation.control]
    assert len({control.id for control in controls}) == len(controls)
    for control in controls:
        if isinstance(control, Checkbox) and isinstance(control.checked, str):
            enum = RULE_SET.fields_by_name[control.proto_field].enum_type
            assert enum is not None and control.checked in enum.values_by_name


# Each variation in use on its own (with what it needs), written independently of the table:
# its badge, its manifest option and a trip over the wire.
IN_USE = {
    "players": (Rules(players=3), "cutthroat (3 players)"),
    "target_score": (Rules(target_score=300), "to 300"),
    "nil": (Rules(nil_allowed=False), "no nil"),
    "nil_tricks_count_for_partner": (
        Rules(nil_tricks_count_for_partner=True),
        "nil tricks count for partner",
    ),
    "blind_nil": (Rules(blind_nil=True), "blind nil"),
    "blind_nil_deficit": (Rules(blind_nil=True, blind_nil_deficit=0), None),
    "blind_nil_pass_cards": (
        Rules(blind_nil=True, blind_nil_pass_cards=2),
        "blind nil pass 2",
    ),
    "two_of_clubs_leads": (Rules(two_of_clubs_leads=True), "2♣ leads"),
    "jokers": (Rules(jokers=True), "big joker, little joker"),
    "minimum_team_bid": (Rules(minimum_team_bid=4), "board 4"),
    "bags": (Rules(bag_penalty=0), "10 bags cost 0"),
    "spades_lead_any_time": (Rules(spades_must_be_broken=False), "spades lead any time"),
    "loss_threshold": (Rules(loss_threshold=-200), "mercy at -200"),
    "max_hands": (Rules(max_hands=25), "25 hands"),
    "direction": (Rules(direction=Direction.COUNTER_CLOCKWISE), "counter-clockwise"),
    "clock": (Rules(clock=Clock(5_000, 0)), "clock 5000+0 ms"),
}


def test_each_row_in_use_has_its_badge_its_option_and_survives_the_wire() -> None:
    assert set(IN_USE) == {variation.name for variation in VARIATIONS}
    for variation in VARIATIONS:
        rules, badge = IN_USE[variation.name]
        assert variation.in_use(rules, Rules())
        assert badge is None or badge in rules.badges(), variation.name
        assert variation.badge_of(rules) == badge
        options = {
            account_pb2.RuleOption.Value(name)
            for name in variation.manifest
            if name.startswith("RULE_OPTION_")
        }
        assert options <= options_used(rules), variation.name
        assert rules_from_proto(rules_to_proto(rules)) == rules
        assert rules_from_proto(rules_pb2.RuleSet()) == Rules()
