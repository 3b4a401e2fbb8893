"""Every catalogued reason code is provoked by a test: a test fails when one is not.

A code counts as provoked when a test under ``tests/`` names it outright (``"CODE"`` or
``Reason.CODE``) as an argument of one of the refusal assertions
(``tests.support.refusals.REFUSAL_ASSERTIONS``), or names it in a test function (its
parametrisation included, or a module constant it uses) whose refusal assertion takes its code
from a variable (a table of cases). A code merely mentioned (in a string, a comment, a check of
the catalogue itself) does not count: it must be the code a refusal was asserted to carry.

And every refusal a test asserts is checked to have changed nothing: its status check stands
inside ``nothing_written`` (or is one of the helpers that provoke and check both), or the test
reads the log itself after it (its head, the stream's length or version, its events), where
another writer is running and the test checks what the refusal alone must leave.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

from spades.reasons import CODES
from tests.support.refusals import REFUSAL_ASSERTIONS

#: The checks of a refusal's status alone (tests/support/refusals.py).
STATUS_CHECKS = {
    "assert_call_refused",
    "assert_action_refused",
    "assert_status_details",
    "assert_status",
}
#: Reads of the log (tests/support) a test makes to check what a refusal left.
LOG_READS = {"log_head", "head_position", "stream_length", "stream_version", "log_events"}
CONTENDED = (
    "its refused_once_contended checks the log's head around the refused call, once the"
    " competing replica's append is committed"
)
#: Tests whose refusals cannot be checked to have changed nothing, with why.
UNCHECKED: dict[str, str] = {
    "tests/integrity/test_damaged_when_served.py::assert_refused_as_damaged": (
        "the log is damaged on purpose: reading it is the refusal, and no server object is at"
        " hand (the server is a process)"
    ),
    "tests/server/test_account_request_ids.py::"
    "test_one_request_id_for_two_names_through_two_replicas_makes_one_account": (
        "two replicas race: the winner writes while the loser is refused; the test checks the"
        " loser's account was never made"
    ),
    "tests/server/test_sessions.py::"
    "test_a_connect_stream_opened_with_a_session_ends_when_it_is_revoked": (
        "the refusal ends a stream because the test's own revocation wrote session_ended"
    ),
    "tests/server/test_refusals_contention.py::"
    "test_an_account_that_keeps_changing_under_a_call_is_account_contended": CONTENDED,
    "tests/server/test_refusals_contention.py::"
    "test_a_challenge_that_keeps_changing_under_a_call_is_challenge_contended": CONTENDED,
    "tests/server/test_refusals_contention.py::"
    "test_a_tournament_that_keeps_changing_under_an_entry_is_tournament_contended": CONTENDED,
}

TESTS = Path(__file__).resolve().parents[1]

#: Codes no request can provoke through the public API, with why (reviewed by a person).
UNREACHABLE: dict[str, str] = {
    "TABLE_FULL": (
        "decisions.decide_join refuses a join at a started table (MATCH_STARTED) before it"
        " looks for a free seat, and the engine starts the match as the last seat is taken"
        " (commands.take_seat): a table with no free seat has always started"
    ),
    "POOL_CONTENDED": (
        "a rating pool changes only by the rating keeper, after a rated table ends"
        " (processes/rating_keeper.py), which logs the refusal: no call changes a pool, so"
        " no caller is ever answered with it"
    ),
    # The engine's own refusals the server never lets it make (they stay in the catalogue:
    # a program running the engine itself, as the SDK's bots do, can meet them).
    "SUBSTITUTE_MAY_NOT_CONCEDE": (
        "a substitute's seat token is made by the server for its own house bot"
        " (processes/absent.py, house.py) and given to no one else, and the house bots never"
        " concede"
    ),
    "NOT_SUBSTITUTED": (
        "the engine's reclaim is called only by decisions.decide_reclaim, which returns no"
        " decision when no substitute plays the seat"
    ),
    "SEAT_EMPTY": (
        "the engine's leave_seat is called only by decide_leave and decide_release, after"
        " checking that the caller's token holds the seat"
    ),
    "NO_SEED": (
        "only a view (a state without its seed) cannot deal; the server deals from the full"
        " state, which always has its seed (new_match)"
    ),
    "NO_ONE_TO_ACT": (
        "between commands every phase in play has a seat on turn (state._advance); the turn is"
        " empty only within a command's fold, or once the match has ended or before it"
        " started, which MATCH_OVER and MATCH_NOT_STARTED answer first (legal.turn_refusal);"
        " the clock acts only on a turn (decisions.decide_timeout)"
    ),
    "NO_AUTOMATIC_ACTION": (
        "the clock acts only for a seat on turn, and a seat on turn always has legal actions"
        " of one of the four kinds the automatic choice answers (automatic.automatic_choice)"
    ),
}


@functools.cache
def parsed(source: str) -> ast.Module:
    """A module's tree, parsed once for both scans of every test module."""
    return ast.parse(source)


def _called_name(call: ast.Call) -> str:
    function = call.func
    if isinstance(function, ast.Attribute):
        return function.attr
    return function.id if isinstance(function, ast.Name) else ""


def _reason_code_argument(call: ast.Call) -> ast.expr | None:
    """The argument a refusal assertion takes its reason code from (by position or name)."""
    for keyword in call.keywords:
        if keyword.arg == "reason_code":
            return keyword.value
    position = REFUSAL_ASSERTIONS[_called_name(call)]
    return call.args[position] if len(call.args) > position else None


def _code_named(node: ast.AST) -> str | None:
    """The code ``node`` names outright ("CODE" or Reason.CODE), or None."""
    if isinstance(node, ast.Constant) and node.value in CODES:
        return str(node.value)
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Reason"
        and node.attr in CODES
    ):
        return node.attr
    return None


def _codes_in(node: ast.AST) -> Iterator[str]:
    for each in ast.walk(node):
        code = _code_named(each)
        if code is not None:
            yield code


def provoked_in(source: str) -> set[str]:
    """The codes a test module asserts a refusal carries (see the module's docstring)."""
    tree = parsed(source)
    constants = {
        target.id: statement.value
        for statement in tree.body
        if isinstance(statement, ast.Assign)
        for target in statement.targets
        if isinstance(target, ast.Name)
    }
    found: set[str] = set()
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        from_a_variable = False
        for call in ast.walk(function):
            if not isinstance(call, ast.Call) or _called_name(call) not in REFUSAL_ASSERTIONS:
                continue
            argument = _reason_code_argument(call)
            if argument is None:
                continue
            code = _code_named(argument)
            if code is not None:
                found.add(code)
            elif isinstance(argument, ast.Name | ast.Subscript | ast.Attribute):
                from_a_variable = True
        if from_a_variable:
            found.update(_codes_in(function))
            for name in ast.walk(function):
                if isinstance(name, ast.Name) and name.id in constants:
                    found.update(_codes_in(constants[name.id]))
    return found


def provoked_by_the_tests() -> set[str]:
    found: set[str] = set()
    for path in sorted(TESTS.rglob("*.py")):
        if path.name.startswith("test_") and path != Path(__file__).resolve():
            found |= provoked_in(path.read_text())
    return found


def test_every_catalogued_code_is_provoked_by_a_test() -> None:
    provoked = provoked_by_the_tests()
    missing = CODES - provoked - set(UNREACHABLE)
    assert not missing, f"no test provokes (and asserts) these reason codes: {sorted(missing)}"
    reached = sorted(set(UNREACHABLE) & provoked)
    assert not reached, f"listed unreachable, but a test provokes them: {reached}"
    assert set(UNREACHABLE) <= CODES


def _is_nothing_written(node: ast.AST) -> bool:
    return isinstance(node, ast.AsyncWith | ast.With) and any(
        isinstance(item.context_expr, ast.Call)
        and _called_name(item.context_expr) == "nothing_written"
        for item in node.items
    )


def unchecked_in(source: str) -> list[tuple[str, int]]:
    """(function, line) of each status check of a refusal that stands outside
    ``nothing_written`` in a function that does not read the log after it."""
    tree = parsed(source)
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, function: ast.AST | None, guarded: bool) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function, guarded = node, False
        guarded = guarded or _is_nothing_written(node)
        if (
            isinstance(node, ast.Call)
            and _called_name(node) in STATUS_CHECKS
            and not guarded
            and isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
            and not any(
                isinstance(read, ast.Call)
                and _called_name(read) in LOG_READS
                and read.lineno > node.lineno
                for read in ast.walk(function)
            )
        ):
            found.append((function.name, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, function, guarded)

    visit(tree, None, False)
    return found


def test_every_asserted_refusal_is_checked_to_change_nothing() -> None:
    unchecked = [
        f"{path.relative_to(TESTS.parent)}:{line} ({function})"
        for path in sorted(TESTS.rglob("test_*.py"))
        if path != Path(__file__).resolve()
        for function, line in unchecked_in(path.read_text())
        if f"{path.relative_to(TESTS.parent)}::{function}" not in UNCHECKED
    ]
    assert unchecked == [], "check the refusal inside nothing_written (tests/support/refusals.py)"


def test_the_scan_sees_a_refusal_left_unchecked() -> None:
    source = """
async def test_a(server, client):
    async with nothing_written(server):
        assert_call_refused(error, Code.NOT_FOUND, "TABLE_NOT_FOUND")
    await refused_unchanged(server, call, Code.NOT_FOUND, "TABLE_NOT_FOUND")

async def test_b(server, client):
    assert_action_refused(result, Code.FAILED_PRECONDITION, "MUST_FOLLOW_SUIT")
    assert await log_head(server) == head

async def test_c(server, client):
    assert await log_head(server) == head
    assert_call_refused(error, Code.NOT_FOUND, "TABLE_NOT_FOUND")
"""
    assert unchecked_in(source) == [("test_c", 13)]


def test_the_scan_counts_an_asserted_refusal_and_nothing_else() -> None:
    source = """
async def test_a(server, client):
    await refused_unchanged(server, call, Code.NOT_FOUND, "TABLE_NOT_FOUND")
    assert_action_refused(result, Code.FAILED_PRECONDITION, Reason.MUST_FOLLOW_SUIT)
    print("SEAT_TAKEN")  # named, but no refusal is asserted to carry it

CASES = [("NO_SUCH_SEAT", 9)]

@parametrize("reason", ["WRONG_PHASE"])
def test_b(reason):
    for code, seat in CASES:
        assert_call_refused(error, status, code)

def test_c():
    assert "NOT_YOUR_TURN" in CODES
"""
    assert provoked_in(source) == {
        "TABLE_NOT_FOUND",
        "MUST_FOLLOW_SUIT",
        "WRONG_PHASE",
        "NO_SUCH_SEAT",
    }
