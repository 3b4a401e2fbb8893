"""The mypyc build of the engine: used only while fresh, and it plays exactly as the sources do.

``make test`` builds it (``make engine``) and runs the engine's suites twice, once on the build
and once on the sources (``SPADES_ENGINE=python``). Here: the stamp logic that keeps a stale
build from running, and random matches played on both engines side by side, compared move for
move (every legal-action list and every event), the pure-Python engine in a child process.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.machinery
import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spades.engine import (
    Direction,
    MatchState,
    Rules,
    act,
    apply,
    compiled,
    legal_actions,
    seated_match,
    time_out,
)
from tests.support.rules import SEARCH_PHASES, rule_sets

REPO_ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------- the stamp


def _fake_build(directory: Path) -> None:
    """Sources as the engine's, an "extension module" per compiled module, and the stamp."""
    for name in compiled.COMPILED_MODULES:
        shutil.copy(compiled.ENGINE_DIRECTORY / f"{name}.py", directory / f"{name}.py")
        (directory / f"{name}{importlib.machinery.EXTENSION_SUFFIXES[0]}").touch()
    (directory / compiled.STAMP_NAME).write_text(json.dumps(compiled.stamp_of(directory)))


def test_a_fresh_build_is_used(tmp_path: Path) -> None:
    _fake_build(tmp_path)
    assert compiled.why_not_compiled(tmp_path) is None


def test_a_source_changed_after_the_build_makes_it_stale(tmp_path: Path) -> None:
    _fake_build(tmp_path)
    with (tmp_path / "legal.py").open("a") as source:
        source.write("\n# an edit after the build\n")
    assert compiled.why_not_compiled(tmp_path) == "stale: legal.py changed since the build"


def test_a_build_without_its_stamp_or_a_module_is_not_used(tmp_path: Path) -> None:
    _fake_build(tmp_path)
    (tmp_path / compiled.STAMP_NAME).unlink()
    assert compiled.why_not_compiled(tmp_path) == f"the build has no readable {compiled.STAMP_NAME}"
    _fake_build(tmp_path)
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (tmp_path / f"state{suffix}").unlink()
    assert compiled.why_not_compiled(tmp_path) == "the build is incomplete (no state)"


def test_no_build_or_the_environment_means_the_sources(tmp_path: Path) -> None:
    assert compiled.why_not_compiled(tmp_path) == "not built (make engine)"
    _fake_build(tmp_path)
    assert compiled.why_not_compiled(tmp_path, "python") == "SPADES_ENGINE=python"


def test_the_engine_runs_compiled_where_make_test_built_it() -> None:
    # CI runs `make test`, which builds the engine first: there the build must be fresh and used.
    if os.environ.get(compiled.ENVIRONMENT_VARIABLE) == "python":
        assert not compiled.COMPILED
        return
    if not compiled.built_modules():
        pytest.skip("the engine is not built here (make engine); CI builds it")
    assert compiled.COMPILED, compiled.REASON
    assert MatchState.__module__ == "spades.engine.state"
    assert not sys.modules["spades.engine.state"].__file__.endswith(".py")  # type: ignore[union-attr]


# ---------------------------------------------------------------------- move for move


def play_transcript(rules: Rules, seed: bytes, choices: int, steps: int) -> list[str]:
    """A random match, one line per step: who acts, what they may do, what they chose, the
    events (with a timed-out turn now and then, so the clock's path is compared too)."""
    rng = random.Random(choices)
    state, events = seated_match(rules, seed=seed)
    lines = [repr(events)]
    for _ in range(steps):
        if state.is_over:
            break
        seat = state.seat_to_act()
        legal = legal_actions(state, seat)
        if rng.random() < 0.05:
            state, events = time_out(state)
            lines.append(f"{seat} timed out: {events!r}")
            continue
        action = rng.choice(legal)
        if rng.random() < 0.5:
            events = act(state, seat, action)
        else:
            state, events = apply(state, seat, action)
        lines.append(f"{seat} {[str(a) for a in legal]} {action} {events!r}")
    lines.append(f"{state.scores} {state.bags} {state.phase} {state.end!r}")
    return lines


def _rules_as_json(rules: Rules) -> dict[str, Any]:
    fields = {field.name: getattr(rules, field.name) for field in dataclasses.fields(rules)}
    fields["direction"] = rules.direction.value
    fields["clock"] = dataclasses.asdict(rules.clock)
    return fields


def _rules_from_json(fields: dict[str, Any]) -> Rules:
    from spades.engine.rules import Clock

    fields = dict(fields, direction=Direction(fields["direction"]), clock=Clock(**fields["clock"]))
    return Rules(**fields)


def serve() -> None:
    """The child: plays each request's match and answers with its transcript's line digests."""
    for line in sys.stdin:
        request = json.loads(line)
        transcript = play_transcript(
            _rules_from_json(request["rules"]),
            bytes.fromhex(request["seed"]),
            request["choices"],
            request["steps"],
        )
        answer = {
            "compiled": compiled.COMPILED,
            "lines": [hashlib.sha256(text.encode()).hexdigest() for text in transcript],
        }
        print(json.dumps(answer), flush=True)


@pytest.fixture(scope="module")
def pure_engine() -> Iterator[subprocess.Popen[str]]:
    if not compiled.COMPILED:
        pytest.skip(f"no compiled engine to compare with the sources: {compiled.REASON}")
    environment = dict(os.environ, **{compiled.ENVIRONMENT_VARIABLE: "python"})
    child = subprocess.Popen(
        [sys.executable, "-c", "from tests.engine.test_compiled import serve; serve()"],
        cwd=REPO_ROOT,
        env=environment,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    yield child
    assert child.stdin is not None
    child.stdin.close()
    child.wait(timeout=30)


@settings(max_examples=40, deadline=None, phases=SEARCH_PHASES)
@given(
    rules=rule_sets(),
    seed=st.binary(min_size=32, max_size=32),
    choices=st.integers(0, 2**32),
)
def test_the_compiled_and_the_pure_engine_agree_move_for_move(
    pure_engine: subprocess.Popen[str], rules: Rules, seed: bytes, choices: int
) -> None:
    assert pure_engine.stdin is not None and pure_engine.stdout is not None
    request = {"rules": _rules_as_json(rules), "seed": seed.hex(), "choices": choices, "steps": 400}
    pure_engine.stdin.write(json.dumps(request) + "\n")
    pure_engine.stdin.flush()
    answer = json.loads(pure_engine.stdout.readline())
    assert answer["compiled"] is False  # the child really ran the sources
    mine = play_transcript(rules, seed, choices, 400)
    digests = [hashlib.sha256(text.encode()).hexdigest() for text in mine]
    for step, (ours, theirs) in enumerate(zip(digests, answer["lines"], strict=True)):
        assert ours == theirs, f"the engines differ at step {step}: compiled did {mine[step]}"
