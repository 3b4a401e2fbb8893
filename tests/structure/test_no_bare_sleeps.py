"""No test waits for time to pass: a bare sleep fails here unless its file is allowed below.

A bare sleep is ``time.sleep``/``asyncio.sleep`` of a fixed duration (a number, a constant, or
arithmetic of those; ``sleep(0)`` too) that is not inside a loop: it lets time pass, or "proves
nothing happens", or orders tasks by counting event-loop turns. A sleep inside a loop polls a
state (the loop's condition, or a check that breaks out of it) and is not bare; neither is a
sleep of a computed duration (a benchmark's run, a bot's backoff). Instead of a bare sleep, a
test moves a ``tests.support.time.ManualClock`` (the server and the SDK take one), waits on the
state (``tests.support.time.wait_for_state``), or checks that the awaited call has not finished.
``tests/support/`` is where the tests' real waits live, so it is not checked.

The files below keep bare sleeps, each for the reason given; the count is how many, so a new
one fails too (and a file that sheds its sleeps must lower its count).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
SUPPORT = TESTS / "support"

#: File (relative to tests/) -> (how many bare sleeps it keeps, why they are not time passing).
ALLOWED: dict[str, tuple[int, str]] = {
    # Load that lasts: a benchmark runs for a while and lets its last results arrive.
    "benchmarks/bench_fanout.py": (2, "a benchmark lets the last notifications arrive"),
    "benchmarks/bench_server.py": (1, "a benchmark lets the last results arrive"),
    "benchmarks/bench_service_alone.py": (2, "a benchmark lets every feed (or task) start"),
    # Real time is the subject: an outage, a cut link, a bot's pace, a blocked thread.
    "cluster/test_log_outages.py": (2, "PostgreSQL stays down for OUTAGE real seconds"),
    "cluster/test_play.py": (2, "a bot's thinking time, so a match outlasts a few scrapes"),
    "web/test_browser.py": (1, "a bot's pace a person (and the page's sampling) can follow"),
    "sdk/test_thinking_bots.py": (1, "a decision blocks its thread: what the test is about"),
    # Another thread's progress that nothing shows: the writer thread, once it took a write
    # from its queue, blocks in SQLite's busy handler; no state says it got there.
    "eventlog/test_sqlite.py": (1, "the writer thread reaches SQLite's write lock"),
    # grpc's threads deliver a status to the client's core while the event loop is held, so
    # that the client's next write crosses it (grpc/grpc#36066); no state shows the delivery.
    "sdk/test_lost_status.py": (1, "grpc's threads deliver the status while the loop is held"),
    # A write that waits for its client's flow-control window shows no state: the server's
    # write to a client that does not read is "stuck" only by not finishing. The sleep lets
    # the older stream fill its window before a newer one replaces it (a lost race fails the
    # test; it cannot make it pass).
    "faults/test_slow_consumer.py": (1, "an older stream stuck in a write nothing shows"),
}


def _fixed(node: ast.expr) -> bool:
    """Whether ``node`` is a fixed duration: a number, an UPPER_CASE constant, or arithmetic."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float)
    if isinstance(node, ast.Name):
        return node.id.isupper()
    if isinstance(node, ast.Attribute):
        return node.attr.isupper()
    if isinstance(node, ast.UnaryOp):
        return _fixed(node.operand)
    if isinstance(node, ast.BinOp):
        return _fixed(node.left) and _fixed(node.right)
    return False


def _is_sleep(call: ast.Call) -> bool:
    function = call.func
    if isinstance(function, ast.Attribute):
        return function.attr == "sleep" and isinstance(function.value, ast.Name)
    return isinstance(function, ast.Name) and function.id == "sleep"


def bare_sleeps(source: str) -> list[int]:
    """The lines of ``source``'s bare sleeps (see the module's docstring)."""
    found: list[int] = []

    def visit(node: ast.AST, in_loop: bool) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            in_loop = False  # a function defined in a loop runs where it is called
        if (
            isinstance(node, ast.Call)
            and _is_sleep(node)
            and not in_loop
            and node.args
            and _fixed(node.args[0])
        ):
            found.append(node.lineno)
        looping = isinstance(node, ast.For | ast.AsyncFor | ast.While)
        for child in ast.iter_child_nodes(node):
            inside = in_loop or (looping and child in getattr(node, "body", []))
            visit(child, inside)

    visit(ast.parse(source), False)
    return found


def test_the_check_finds_what_it_names() -> None:
    source = (
        "import asyncio, time\n"
        "async def f(seconds):\n"
        "    await asyncio.sleep(0.5)\n"  # bare: line 3
        "    time.sleep(TIMEOUT * 2)\n"  # bare: line 4
        "    await asyncio.sleep(0)\n"  # bare (an event-loop turn): line 5
        "    await asyncio.sleep(seconds)\n"  # computed: not bare
        "    while not done():\n"
        "        await asyncio.sleep(0.01)\n"  # polls: not bare
        "    for _ in range(3):\n"
        "        async def g():\n"
        "            await asyncio.sleep(1)\n"  # bare, though defined in a loop: line 11
    )
    assert bare_sleeps(source) == [3, 4, 5, 11]


def test_no_test_sleeps_bare_but_those_allowed() -> None:
    counts: dict[str, tuple[int, list[int]]] = {}
    for path in sorted(TESTS.rglob("*.py")):
        if SUPPORT in path.parents:
            continue
        lines = bare_sleeps(path.read_text(encoding="utf-8"))
        if lines or path.relative_to(TESTS).as_posix() in ALLOWED:
            counts[path.relative_to(TESTS).as_posix()] = (len(lines), lines)
    wrong = [
        f"tests/{name}:{lines} has {count} bare sleeps; {ALLOWED.get(name, (0,))[0]} allowed"
        for name, (count, lines) in counts.items()
        if count != ALLOWED.get(name, (0, ""))[0]
    ]
    assert not wrong, "\n".join(wrong)
