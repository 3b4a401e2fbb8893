"""The server's decisions, without a server: a table, a request, and what to append."""

from __future__ import annotations

import grpc
import pytest

from spades.engine import Concede, IllegalAction, MakeBid, Rules, legal_actions, new_match
from spades.engine import events as ev
from spades.engine.events import SubstitutionReason
from spades.reasons import Reason
from spades_server.domain import errors, seats, table_events, tokens
from spades_server.domain.checks import MAX_PLAYER_NAME
from spades_server.domain.decisions import (
    SUBSTITUTED,
    SUPERSEDED,
    ActionRequest,
    AlreadyAnswered,
    AlreadyJoined,
    decide_action,
    decide_close,
    decide_join,
    decide_leave,
    decide_new_table,
    decide_reclaim,
    decide_release,
    decide_substitution,
    decide_timeout,
)
from spades_server.domain.table_events import Listing, Secrets
from spades_server.domain.tables import Decided, Table
from spades_server.eventlog.base import StoredEvent
from spades_server.store import journal

TOKENS = [f"table-1.{'x' * 20}{seat}" for seat in range(4)]


def appended(table: Table, decided: Decided | None) -> list[table_events.Entry]:
    """Append ``decided`` to ``table`` as the store would (without a log)."""
    assert decided is not None and decided.drafts
    rows = [
        StoredEvent(table.table_id, table.version + number, 0, 1000.0 + number, journal.encode(d))
        for number, d in enumerate(decided.drafts, 1)
    ]
    entries = [
        journal.appended(row, draft) for row, draft in zip(rows, decided.drafts, strict=True)
    ]
    table.adopt(decided.state, entries)
    return entries


def refusal(call: object, *args: object, **kwargs: object) -> errors.RequestError:
    with pytest.raises(errors.RequestError) as raised:
        call(*args, **kwargs)  # type: ignore[operator]
    return raised.value


def new_table(*, private: bool = False, seated: int = 0) -> Table:
    table = Table("table-1")
    created = new_match(Rules(), seed=bytes(32))
    appended(
        table,
        decide_new_table(
            created, name="Pond", private=private, join_code="CODE234567" if private else ""
        ),
    )
    for seat in range(seated):
        code = "CODE234567" if private else ""
        appended(table, decide_join(table, seat, f"p{seat}", True, code, TOKENS[seat]))
    return table


def test_a_new_table_keeps_its_join_code_digest_as_a_secret() -> None:
    table = new_table(private=True)
    assert (table.name, table.private) == ("Pond", True)
    assert table.join_code_sha256 == tokens.digest("CODE234567")
    assert b"CODE" not in table.entries[0].message.SerializeToString()


def test_joining_a_private_table_needs_its_code() -> None:
    table = new_table(private=True)
    assert refusal(decide_join, table, None, "Eve", False, "", TOKENS[0]).code is (
        grpc.StatusCode.PERMISSION_DENIED
    )
    wrong = refusal(decide_join, table, None, "Eve", False, "WRONG23456", TOKENS[0])
    assert wrong.reason == "that is not this table's join code"
    decided = decide_join(table, None, "Eve", False, "CODE234567", TOKENS[0])
    assert decided.drafts[0].event == ev.SeatTaken(0, "Eve", False)
    assert decided.drafts[0].secrets.seat_token_sha256 == tokens.digest(TOKENS[0])


def test_join_takes_the_first_free_seat_and_leaves_a_taken_one_to_the_engine() -> None:
    table = new_table(seated=1)
    assert decide_join(table, None, "Eve", False, "", TOKENS[1]).drafts[0].event.seat == 1  # type: ignore[union-attr]
    with pytest.raises(IllegalAction, match="North is already taken"):
        decide_join(table, 0, "Eve", False, "", TOKENS[1])
    beyond = refusal(decide_join, table, 4, "Eve", False, "", TOKENS[1])
    assert beyond.code is grpc.StatusCode.INVALID_ARGUMENT


def test_a_name_a_seat_already_shows_is_numbered_unless_an_account_sits() -> None:
    table = Table("table-1")
    appended(
        table,
        decide_new_table(new_match(Rules(), seed=bytes(32)), name="t", private=False, join_code=""),
    )

    def seated(seat: int, name: str, account_id: str = "") -> str:
        decided = decide_join(table, seat, name, True, "", TOKENS[seat], account_id=account_id)
        appended(table, decided)
        return decided.drafts[0].event.name  # type: ignore[union-attr]

    # The house's bots all ask for number 1 and get the smallest number no seat shows.
    assert seated(0, "House Heuristic 1") == "House Heuristic 1"
    assert seated(1, "House Heuristic 1") == "House Heuristic 2"
    assert seated(2, "House Heuristic 2") == "House Heuristic 3"
    # An account's seat shows the account's name, even twice (its two seats of one side).
    assert seated(3, "House Heuristic 1", account_id="acc-1") == "House Heuristic 1"
    other = new_table(seated=1)  # "p0" at north
    assert decide_join(other, None, "p0", False, "", TOKENS[1]).drafts[0].event.name == "p0 2"  # type: ignore[union-attr]
    long = "x" * MAX_PLAYER_NAME
    appended(other, decide_join(other, None, long, False, "", TOKENS[1]))
    numbered = decide_join(other, None, long, False, "", TOKENS[2]).drafts[0].event.name  # type: ignore[union-attr]
    assert numbered == "x" * (MAX_PLAYER_NAME - 2) + " 2"


def test_the_last_seat_starts_the_match_and_then_no_one_joins_or_leaves() -> None:
    table = new_table(seated=4)
    assert table.started and table.state.turn is not None
    late = refusal(decide_join, table, None, "Eve", False, "", "table-1.late-token-000000")
    assert (late.code, late.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "the match at this table has already started",
    )
    assert refusal(decide_leave, table, 0, TOKENS[0]).code is grpc.StatusCode.FAILED_PRECONDITION


def test_only_the_seats_own_token_leaves_it() -> None:
    table = new_table(seated=2)
    assert refusal(decide_leave, table, 0, TOKENS[1]).code is grpc.StatusCode.UNAUTHENTICATED
    appended(table, decide_leave(table, 0, TOKENS[0]))
    assert 0 not in table.seat_token_digests


def request_for(table: Table, action_id: str = "a1", **changes: object) -> ActionRequest:
    seat = table.state.seat_to_act()
    fields: dict[str, object] = {
        "seat": seat,
        "holder": tokens.digest(TOKENS[seat]),
        "substitute": False,
        "action": legal_actions(table.state, seat)[0],
        "action_id": action_id,
        "sequence": table.version,
    }
    fields.update(changes)
    return ActionRequest(**fields)  # type: ignore[arg-type]


def test_a_join_with_a_request_id_is_answered_once_and_then_by_its_seat() -> None:
    table = new_table(seated=1)
    digest = tokens.digest("request-0123456789")
    entries = appended(table, decide_join(table, None, "p", True, "", TOKENS[1], digest))
    assert entries[0].secrets.request_id_sha256 == digest
    assert table.joined_requests == {digest: 1}
    with pytest.raises(AlreadyJoined) as again:
        decide_join(table, None, "p", True, "", TOKENS[1], digest)
    assert again.value.seat == 1
    # After the match started too (the join that filled the last seat is retried).
    appended(table, decide_join(table, None, "q", True, "", TOKENS[2]))
    appended(table, decide_join(table, None, "r", True, "", TOKENS[3]))
    assert table.started
    with pytest.raises(AlreadyJoined):
        decide_join(table, None, "p", True, "", TOKENS[1], digest)


def test_an_unclaimed_seat_is_released_once_and_only_from_its_holder() -> None:
    table = new_table(seated=2)
    holder = tokens.digest(TOKENS[1])
    assert decide_release(table, 1, tokens.digest(TOKENS[0])) is None  # not that seat's holder
    entries = appended(table, decide_release(table, 1, holder))
    assert [entry.event for entry in entries] == [ev.SeatLeft(1)]
    assert decide_release(table, 1, holder) is None  # released already
    appended(table, decide_join(table, 1, "newcomer", True, "", TOKENS[2]))
    assert decide_release(table, 1, holder) is None  # someone else's seat now


def test_an_action_is_decided_once_and_its_id_answers_a_retry() -> None:
    table = new_table(seated=4)
    request = request_for(table)
    entries = appended(table, decide_action(table, request))
    assert entries[0].action_id == "a1" and entries[0].actor == request.seat
    with pytest.raises(AlreadyAnswered) as answered:
        decide_action(table, request)
    assert answered.value.sequence == entries[0].sequence


def test_an_action_is_refused_when_stale_superseded_or_not_the_seats() -> None:
    table = new_table(seated=4)
    stale = refusal(decide_action, table, request_for(table, sequence=table.version - 1))
    assert stale.code is grpc.StatusCode.ABORTED and stale.reason.startswith("stale:")
    replaced = refusal(decide_action, table, request_for(table), superseded=True)
    assert (replaced.code, replaced.reason) == (grpc.StatusCode.ABORTED, SUPERSEDED)
    stranger = refusal(decide_action, table, request_for(table, holder=b"nobody"))
    assert stranger.code is grpc.StatusCode.UNAUTHENTICATED
    other = table.state.game.seating.next(table.state.seat_to_act())
    out_of_turn = refusal(
        decide_action,
        table,
        request_for(table, seat=other, holder=tokens.digest(TOKENS[other])),
    )
    assert out_of_turn.code is grpc.StatusCode.FAILED_PRECONDITION  # the engine's refusal


def test_the_clock_times_out_only_the_turn_it_was_set_for() -> None:
    table = new_table(seated=4)
    assert decide_timeout(table, table.version - 1) is None
    decided = decide_timeout(table, table.version)
    assert decided is not None and isinstance(decided.drafts[0].event, ev.TurnTimedOut)


def test_a_substitute_comes_once_and_the_player_takes_the_seat_back() -> None:
    table = new_table(seated=4)
    seat = table.state.seat_to_act()
    assert (
        decide_substitution(table, seat, SubstitutionReason.TIMEOUTS, "t.s", after_timeouts=2)
        is None
    )  # no run of timeouts yet
    assert (
        decide_substitution(
            table, seat, SubstitutionReason.DISCONNECTED, "t.s", after_timeouts=2, connected=True
        )
        is None
    )
    substitute_token = "table-1.substitute-token-000"
    decided = decide_substitution(
        table, seat, SubstitutionReason.DISCONNECTED, substitute_token, after_timeouts=2
    )
    appended(table, decided)
    assert table.substitute_token_digests[seat] == tokens.digest(substitute_token)
    again = decide_substitution(
        table, seat, SubstitutionReason.DISCONNECTED, substitute_token, after_timeouts=2
    )
    assert again is None
    # The player's own actions are refused while the substitute plays; the substitute's are not.
    mine = refusal(decide_action, table, request_for(table))
    assert (mine.code, mine.reason) == (grpc.StatusCode.FAILED_PRECONDITION, SUBSTITUTED)
    theirs = request_for(table, holder=tokens.digest(substitute_token), substitute=True)
    assert decide_action(table, theirs).drafts
    concede = refusal(
        decide_action,
        table,
        request_for(
            table, action=Concede(), substitute=True, holder=tokens.digest(substitute_token)
        ),
    )
    assert concede.code is grpc.StatusCode.PERMISSION_DENIED
    assert decide_reclaim(table, seat, b"someone else") is None
    appended(table, decide_reclaim(table, seat, tokens.digest(TOKENS[seat])))
    assert seat not in table.substitute_token_digests
    assert decide_reclaim(table, seat, tokens.digest(TOKENS[seat])) is None


def test_closing_ends_the_match_once() -> None:
    table = new_table(seated=4)
    entries = appended(table, decide_close(table))
    assert isinstance(entries[0].event, ev.MatchEnded) and table.finished
    with pytest.raises(IllegalAction, match="already over"):
        decide_close(table)


def test_a_table_adopts_the_decided_state_without_folding_again() -> None:
    table = new_table(seated=4)
    decided = decide_action(table, request_for(table))
    appended(table, decided)
    assert table.state is decided.state


# ------------------------------------------------------------- each refusal, as a client reads it


def assert_refused(
    error: errors.RequestError,
    reason: Reason,
    message: str,
    field: str = "",
    metadata: dict[str, str] | None = None,
) -> None:
    """The refusal's status (the catalogue's for ``reason``), code, words, field and facts."""
    assert (error.code, error.reason_code, error.reason, error.field, error.metadata) == (
        grpc.StatusCode[reason.status],
        reason.value,
        message,
        field,
        metadata or {},
    )


def rated_table(*accounts: str) -> Table:
    """A rated table where ``accounts[seat]`` holds each seat (an empty name leaves it free)."""
    table = Table("table-1")
    created = new_match(Rules(), seed=bytes(32))
    appended(
        table, decide_new_table(created, name="Ladder", private=False, join_code="", rated=True)
    )
    for seat, account in enumerate(accounts):
        if account:
            appended(
                table,
                decide_join(table, seat, account, False, "", TOKENS[seat], account_id=account),
            )
    return table


def test_a_new_table_lists_what_it_was_made_as_and_keeps_the_request_id_digest() -> None:
    key = bytes(range(32))
    created = new_match(Rules(), seed=bytes(32))
    plain = decide_new_table(created, name="Pond", private=False, join_code="", note_key=key)
    assert plain.drafts[0].listing == Listing("Pond", False, False, False)
    # no join code, no request id: only the sealed notes' key is kept
    assert plain.drafts[0].secrets == Secrets(note_key=key)
    digest = tokens.digest("request-0123456789")
    made = decide_new_table(
        created,
        name="Quick",
        private=False,
        join_code="",
        quick_match=True,
        request_digest=digest,
        rated=True,
        note_key=key,
    )
    assert made.drafts[0].listing == Listing("Quick", False, True, True)
    assert made.drafts[0].secrets == Secrets(request_id_sha256=digest, note_key=key)


def test_each_refusal_of_a_join_says_its_reason_and_field() -> None:
    private = new_table(private=True)
    assert_refused(
        refusal(decide_join, private, None, "Eve", False, "", TOKENS[0]),
        Reason.JOIN_CODE_REQUIRED,
        "this private table needs its join code",
        "join_code",
    )
    assert_refused(
        refusal(decide_join, private, None, "Eve", False, "WRONG23456", TOKENS[0]),
        Reason.WRONG_JOIN_CODE,
        "that is not this table's join code",
        "join_code",
    )
    assert_refused(
        refusal(decide_join, new_table(), 4, "Eve", False, "", TOKENS[0]),
        Reason.NO_SUCH_SEAT,
        "this table has 4 seats",
        "seat",
    )
    assert_refused(
        refusal(decide_join, rated_table(), None, "Eve", False, "", TOKENS[0]),
        Reason.RATED_NEEDS_ACCOUNT,
        "only accounts sit at a rated table: join with your account key "
        "(authorization: Bearer <key>)",
    )
    started = new_table(seated=4)
    assert_refused(
        refusal(decide_join, started, None, "Eve", False, "", "table-1.late-token-000000"),
        Reason.MATCH_STARTED,
        "the match at this table has already started",
    )
    assert_refused(
        refusal(decide_leave, started, 0, TOKENS[0]),
        Reason.MATCH_STARTED,
        "the match has started: seats cannot be left now (you may concede)",
    )


def test_a_join_is_recorded_as_its_accounts_seat_and_a_plain_join_as_nobodys() -> None:
    table = new_table()
    appended(table, decide_join(table, None, "Eve", False, "", TOKENS[0]))
    appended(table, decide_join(table, None, "Ann", False, "", TOKENS[1], account_id="acct-ann"))
    assert table.seat_accounts == {1: "acct-ann"}
    bot = decide_join(table, None, "Robo", True, "", TOKENS[2])
    assert bot.drafts[0].event == ev.SeatTaken(2, "Robo", True)


def test_at_a_rated_table_an_account_plays_for_one_side_only() -> None:
    # acct-a holds North (North and South play together): South is its, East and West are not.
    table = rated_table("acct-a")
    assert_refused(
        refusal(decide_join, table, 1, "a", False, "", TOKENS[1], account_id="acct-a"),
        Reason.ACCOUNT_ON_BOTH_SIDES,
        "at a rated table an account plays for one side only, and you hold a seat of the "
        "other side",
    )
    first_free = decide_join(table, None, "a", False, "", TOKENS[2], account_id="acct-a")
    assert first_free.drafts[0].event == ev.SeatTaken(2, "a", False)
    # Another account is barred from no seat: the first free one is East.
    other = decide_join(table, None, "b", False, "", TOKENS[1], account_id="acct-b")
    assert other.drafts[0].event == ev.SeatTaken(1, "b", False)
    # Once its side is full, no free seat is left for it.
    full_side = rated_table("acct-a", "", "acct-a")
    assert_refused(
        refusal(decide_join, full_side, None, "a", False, "", TOKENS[1], account_id="acct-a"),
        Reason.ACCOUNT_ON_BOTH_SIDES,
        "the free seats here are on the side against yours",
    )
    # On an unrated table the same account may sit anywhere.
    unrated = new_table()
    appended(unrated, decide_join(unrated, 0, "a", False, "", TOKENS[0], account_id="acct-a"))
    assert decide_join(unrated, 1, "a", False, "", TOKENS[1], account_id="acct-a").drafts


def test_each_refusal_of_an_action_says_its_reason_field_and_facts() -> None:
    table = new_table(seated=4)
    at = table.version
    assert_refused(
        refusal(decide_action, table, request_for(table, sequence=at + 2)),
        Reason.SEQUENCE_AHEAD,
        f"this answers sequence {at + 2}, which the table has not reached (it is at {at})",
        "sequence",
        {"sequence": str(at + 2), "table_sequence": str(at)},
    )
    assert_refused(
        refusal(decide_action, table, request_for(table, sequence=at - 1)),
        Reason.STALE_SEQUENCE,
        f"stale: this answers sequence {at - 1}, but the table is at {at}",
        "",
        {"sequence": str(at - 1), "table_sequence": str(at)},
    )
    # The engine's refusal names the field inside the request's action.
    assert_refused(
        refusal(decide_action, table, request_for(table, action=MakeBid(14))),
        Reason.BID_OUT_OF_RANGE,
        "a bid is a number of tricks from 0 (Nil) to 13",
        "action.bid.tricks",
    )
    seat = table.state.seat_to_act()
    substitute_token = "table-1.substitute-token-000"
    appended(
        table,
        decide_substitution(
            table, seat, SubstitutionReason.DISCONNECTED, substitute_token, after_timeouts=0
        ),
    )
    substitute = tokens.digest(substitute_token)
    assert_refused(
        refusal(
            decide_action,
            table,
            request_for(table, action=Concede(), substitute=True, holder=substitute),
        ),
        Reason.SUBSTITUTE_MAY_NOT_CONCEDE,
        "a substitute may not concede for the seat's player",
    )
    appended(table, decide_reclaim(table, seat, tokens.digest(TOKENS[seat])))
    assert_refused(
        refusal(decide_action, table, request_for(table, substitute=True, holder=substitute)),
        Reason.SEAT_TOKEN_INVALID,
        seats.TAKEN_BACK,
    )
    appended(table, decide_close(table))
    over = ActionRequest(0, tokens.digest(TOKENS[0]), False, MakeBid(1), "late", table.version)
    assert_refused(refusal(decide_action, table, over), Reason.MATCH_OVER, "the match is over")


def test_a_seats_token_checks_say_why_a_token_no_longer_works() -> None:
    table = new_table(seated=2)
    # A free seat has no token: any token is refused (not an error of the check itself).
    assert_refused(
        refusal(decide_leave, table, 3, TOKENS[3]), Reason.SEAT_TOKEN_INVALID, seats.NOT_VALID
    )
    appended(table, decide_leave(table, 1, TOKENS[1]))
    appended(table, decide_join(table, 1, "newcomer", True, "", TOKENS[2]))
    appended(table, decide_join(table, 2, "c", True, "", TOKENS[3]))
    appended(table, decide_join(table, 3, "d", True, "", TOKENS[0]))
    gone = tokens.digest(TOKENS[1])
    seat_one = ActionRequest(1, gone, False, MakeBid(1), "a", table.version)
    assert_refused(
        refusal(decide_action, table, seat_one), Reason.SEAT_TOKEN_INVALID, seats.GIVEN_UP
    )


def test_the_clock_times_out_nothing_at_a_table_that_waits_for_players() -> None:
    table = new_table(seated=2)
    assert decide_timeout(table, table.version) is None


def test_a_substitute_for_timeouts_comes_at_the_run_set_and_never_when_it_is_zero() -> None:
    table = new_table(seated=4)
    seat = table.state.seat_to_act()
    appended(table, decide_timeout(table, table.version))
    assert table.state.timeout_streaks[seat] == 1
    timeouts = SubstitutionReason.TIMEOUTS
    assert decide_substitution(table, seat, timeouts, "t.s", after_timeouts=2) is None
    assert decide_substitution(table, seat, timeouts, "t.s", after_timeouts=0) is None
    decided = decide_substitution(table, seat, timeouts, "t.s", after_timeouts=1)
    assert decided is not None
    assert decided.drafts[0].event == ev.SeatSubstituted(seat, timeouts)
