"""Rule sets: impossible combinations are refused naming the field; the derived tables."""

from __future__ import annotations

from typing import Any

import pytest

from spades.engine import Clock, Direction, InvalidRules, Rules, card, cards_of, new_match
from spades.engine.cards import BIG_JOKER, LITTLE_JOKER


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"players": 2}, "players"),
        ({"players": 5}, "players"),
        ({"target_score": 99}, "target_score"),
        ({"target_score": 1001}, "target_score"),
        ({"blind_nil": True, "nil_allowed": False}, "blind_nil"),
        ({"blind_nil": True, "blind_nil_deficit": -1}, "blind_nil_deficit"),
        ({"blind_nil": True, "blind_nil_pass_cards": 1}, "blind_nil_pass_cards"),
        ({"blind_nil": True, "blind_nil_pass_cards": 3}, "blind_nil_pass_cards"),
        ({"blind_nil_pass_cards": 2}, "blind_nil_pass_cards"),
        (
            {"players": 3, "blind_nil": True, "blind_nil_pass_cards": 2},
            "blind_nil_pass_cards",
        ),
        (
            {"nil_tricks_count_for_partner": True, "nil_allowed": False},
            "nil_tricks_count_for_partner",
        ),
        ({"nil_tricks_count_for_partner": True, "players": 3}, "nil_tricks_count_for_partner"),
        ({"jokers": True, "two_of_clubs_leads": True}, "two_of_clubs_leads"),
        ({"minimum_team_bid": -1}, "minimum_team_bid"),
        ({"minimum_team_bid": 14}, "minimum_team_bid"),
        ({"minimum_team_bid": 4, "players": 3}, "minimum_team_bid"),
        ({"bag_limit": 0}, "bag_limit"),
        ({"bag_penalty": -1}, "bag_penalty"),
        ({"loss_threshold": 0}, "loss_threshold"),
        ({"loss_threshold": 100}, "loss_threshold"),
        ({"max_hands": 0}, "max_hands"),
        ({"clock": Clock(turn_millis=0)}, "clock.turn_millis"),
        ({"clock": Clock(extension_millis=-1)}, "clock.extension_millis"),
    ],
)
def test_impossible_combinations_are_refused_naming_the_field(
    settings: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidRules) as refused:
        Rules(**settings)
    assert refused.value.field == field
    assert refused.value.reason
    assert str(refused.value) == f"{field}: {refused.value.reason}"


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"target_score": 100},
        {"target_score": 1000},
        {"blind_nil": True, "blind_nil_deficit": 0, "blind_nil_pass_cards": 2},
        {"players": 3, "jokers": True, "blind_nil": True},
        {"two_of_clubs_leads": True, "spades_must_be_broken": False},
        {"minimum_team_bid": 13, "nil_allowed": False},
        {"nil_tricks_count_for_partner": True},
        {"bag_limit": 1, "bag_penalty": 0},
        {"loss_threshold": -1, "max_hands": 1},
        {"direction": Direction.COUNTER_CLOCKWISE},
        {"clock": Clock(turn_millis=1, extension_millis=0)},
    ],
)
def test_valid_combinations_are_accepted(settings: dict[str, Any]) -> None:
    Rules(**settings)


def test_the_default_game() -> None:
    rules = Rules()
    assert (rules.players, rules.target_score, rules.nil_allowed) == (4, 500, True)
    assert (rules.bag_limit, rules.bag_penalty, rules.spades_must_be_broken) == (10, 100, True)
    assert not (rules.blind_nil or rules.jokers or rules.two_of_clubs_leads)
    assert (rules.minimum_team_bid, rules.loss_threshold, rules.max_hands) == (0, None, None)
    assert rules.direction is Direction.CLOCKWISE
    assert rules.clock == Clock(30_000, 30_000)
    assert rules.badges() == []


@pytest.mark.parametrize(
    ("rules", "size", "hand_size", "removed", "added"),
    [
        (Rules(), 52, 13, (), ()),
        (Rules(jokers=True), 52, 13, ("2C", "2H"), ("LJ", "BJ")),
        (Rules(players=3), 52, 17, (), ()),
        (Rules(players=3, jokers=True), 54, 18, (), ("LJ", "BJ")),
    ],
)
def test_the_deck(
    rules: Rules, size: int, hand_size: int, removed: tuple[str, ...], added: tuple[str, ...]
) -> None:
    deck = set(cards_of(rules.deck_mask))
    assert len(deck) == size
    assert rules.hand_size == hand_size
    assert not deck & {card(text) for text in removed}
    assert {card(text) for text in added} <= deck


def test_trump_order_with_and_without_jokers() -> None:
    assert Rules().trump_order() == [card(f"{rank}S") for rank in "23456789TJQKA"]
    jokers = Rules(jokers=True).trump_order()
    assert len(jokers) == 15
    assert jokers[-4:] == [card("AS"), card("2S"), LITTLE_JOKER, BIG_JOKER]
    assert jokers[0] == card("3S")


def test_sides_and_direction() -> None:
    assert Rules().sides == ((0, 2), (1, 3))
    assert Rules(players=3).sides == ((0,), (1,), (2,))
    assert Rules().step == 1
    assert Rules(direction=Direction.COUNTER_CLOCKWISE).step == -1


def test_badges_name_every_variation() -> None:
    rules = Rules(
        players=3,
        target_score=300,
        nil_allowed=True,
        blind_nil=True,
        jokers=True,
        bag_limit=5,
        bag_penalty=50,
        spades_must_be_broken=False,
        loss_threshold=-200,
        max_hands=25,
        direction=Direction.COUNTER_CLOCKWISE,
    )
    assert rules.badges() == [
        "cutthroat (3 players)",
        "to 300",
        "blind nil",
        "big joker, little joker",
        "5 bags cost 50",
        "spades lead any time",
        "mercy at -200",
        "25 hands",
        "counter-clockwise",
    ]
    assert Rules(nil_allowed=False, two_of_clubs_leads=True, minimum_team_bid=4).badges() == [
        "no nil",
        "2♣ leads",
        "board 4",
    ]


@pytest.mark.parametrize(
    ("deal", "message"),
    [
        ([[0, 1]] * 4, "must get 13 different cards"),
        ([list(range(13)), list(range(13, 26)), list(range(26, 39))], "each of the 4 seats"),
        ([list(range(13)), list(range(13)), list(range(26, 39)), list(range(39, 52))], "twice"),
    ],
)
def test_preset_deals_are_checked(deal: list[list[int]], message: str) -> None:
    with pytest.raises(InvalidRules, match=message) as refused:
        new_match(Rules(), bytes(32), [deal])
    assert refused.value.field == "preset deal 1"


def test_a_preset_deal_must_use_the_rules_deck() -> None:
    # With jokers (4 players) the 2♣ is out of the deck.
    deal = [list(range(13)), list(range(13, 26)), list(range(26, 39)), list(range(39, 52))]
    with pytest.raises(InvalidRules, match="does not have"):
        new_match(Rules(jokers=True), bytes(32), [deal])
