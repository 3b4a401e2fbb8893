"""Mutation testing of the rules, the decisions and the journal with mutmut (``make mutation``).

mutmut changes one thing at a time in the modules of :data:`MUTATED` (a ``<`` for a ``<=``, a
constant, a dropped call, ...) and runs the tests that reach the changed function; a mutant
that no test notices "survives" and points at a behaviour no test pins down. docs/testing.md
has the last run's figures and a verdict for each survivor.

mutmut names a mutant by its file's path under ``src/``, and imports the mutated copies from
``mutants/src``; this repository keeps its distributions in ``client_sdk/src`` and
``server/src``, so the run happens in a stage, ``var/mutation`` (git-ignored), laid out as
mutmut expects: ``src/spades`` and ``src/spades_server`` (copies of the two packages),
``tests``, ``tools`` and this repository's ``pyproject.toml`` with a ``[tool.mutmut]`` table
written from the constants below. Each run brings the stage up to date (a file is copied again
only when it changed, so mutmut keeps the results of what did not change).

The engine runs from its sources (``SPADES_ENGINE=python``: a mutant of the mypyc build could
not be made), under ``nice``, one test process at a time.

Usage: python tools/mutation.py [run | results | show MUTANT | MUTMUT ARGUMENTS...]
       python tools/mutation.py summary      (counts per module and the survivors' names)
       python tools/mutation.py --fresh run  (forget every earlier result first)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
STAGE = REPO_ROOT / "var" / "mutation"

#: The packages, as (source in this repository, place in the stage).
PACKAGES = (
    (REPO_ROOT / "client_sdk" / "src" / "spades", STAGE / "src" / "spades"),
    (REPO_ROOT / "server" / "src" / "spades_server", STAGE / "src" / "spades_server"),
)

#: The modules mutated (paths in the stage): the engine's legality, tricks and scoring; the
#: server's decisions and seat checks; the journal's encoding of the log.
MUTATED = (
    "src/spades/engine/legal.py",
    "src/spades/engine/tricks.py",
    "src/spades/engine/scoring.py",
    "src/spades_server/domain/decisions.py",
    "src/spades_server/domain/seats.py",
    "src/spades_server/store/journal.py",
)

#: The fast tests that judge them (no server, no network).
TESTS = (
    "tests/engine",
    "tests/server/test_decisions.py",
    "tests/server/test_journal.py",
)

#: pytest arguments for every run: the test of the mypyc build runs tools/ from the repository
#: (it would not see a mutant), and no cache is written beside the stage's tests.
PYTEST_ARGS = ("--ignore=tests/engine/test_compiled.py", "-p", "no:cacheprovider", "-q")

MUTMUT = Path(sys.executable).parent / "mutmut"


def _mutmut_table() -> str:
    def strings(values: tuple[str, ...]) -> str:
        return "[" + ", ".join(json.dumps(value) for value in values) + "]"

    return (
        "\n\n# Written by tools/mutation.py for its stage (var/mutation): not in the repository.\n"
        "[tool.mutmut]\n"
        f'source_paths = ["src"]\n'
        f"only_mutate = {strings(MUTATED)}\n"
        f"pytest_add_cli_args_test_selection = {strings(TESTS)}\n"
        f"pytest_add_cli_args = {strings(PYTEST_ARGS)}\n"
        'also_copy = ["tools"]\n'
    )


def _sync(source: Path, target: Path) -> bool:
    """Copy the tree ``source`` to ``target``: only files that changed; none of the compiled
    builds (``*.so``, their stamps) nor caches; files gone from ``source`` are removed. Whether
    anything changed."""
    changed = False
    wanted: set[Path] = set()
    for path in source.rglob("*"):
        if "__pycache__" in path.parts or path.is_dir():
            continue
        if path.suffix == ".so" or path.name.endswith("-build.json"):
            continue
        relative = path.relative_to(source)
        wanted.add(relative)
        copy = target / relative
        if copy.exists() and copy.read_bytes() == path.read_bytes():
            continue
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, copy)
        changed = True
    if target.exists():
        for path in target.rglob("*"):
            relative = path.relative_to(target)
            if path.is_file() and "__pycache__" not in path.parts and relative not in wanted:
                path.unlink()
                changed = True
    return changed


def prepare_stage() -> None:
    for source, target in PACKAGES:
        _sync(source, target)
    if _sync(REPO_ROOT / "tests", STAGE / "tests"):
        # Which tests reach which function is measured again (a new test may kill a survivor).
        (STAGE / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    _sync(REPO_ROOT / "tools", STAGE / "tools")
    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8") + _mutmut_table()
    stage_pyproject = STAGE / "pyproject.toml"
    if not stage_pyproject.exists() or stage_pyproject.read_text(encoding="utf-8") != pyproject:
        stage_pyproject.write_text(pyproject, encoding="utf-8")
    # mutmut copies tests/ and tools/ into mutants/ at every run, but a source file only
    # when mutants/ lacks it: a changed source is dropped there, to be mutated again.
    for source, target in PACKAGES:
        mutated = STAGE / "mutants" / target.relative_to(STAGE)
        for path in source.rglob("*.py"):
            relative = path.relative_to(source)
            copy = mutated / relative
            meta = copy.with_name(copy.name + ".meta")
            if copy.exists() and (target / relative).stat().st_mtime > copy.stat().st_mtime:
                copy.unlink()
                meta.unlink(missing_ok=True)


def summary() -> int:
    """Per module: mutants, killed, survived (and any other outcome); then every survivor."""
    ran = subprocess.run(
        [str(MUTMUT), "results", "--all", "true"],
        cwd=STAGE,
        capture_output=True,
        text=True,
        check=False,
    )
    outcomes: dict[str, Counter[str]] = {}
    survivors: list[str] = []
    for line in ran.stdout.splitlines():
        name, _, outcome = line.strip().rpartition(": ")
        if not name:
            continue
        module = name.split(".x", 1)[0]
        outcomes.setdefault(module, Counter())[outcome] += 1
        if outcome == "survived":
            survivors.append(name)
    total: Counter[str] = Counter()
    for module, counts in sorted(outcomes.items()):
        total += counts
        print(f"{module}: {sum(counts.values())} mutants, {dict(counts)}")
    killed = total["killed"] + total["timeout"]
    print(f"all: {sum(total.values())} mutants, {killed} killed, {dict(total)}")
    if total:
        print(f"killed: {100 * killed / sum(total.values()):.1f}%")
    for name in survivors:
        print("survived:", name)
    return ran.returncode


def main(arguments: list[str]) -> int:
    if arguments[:1] == ["--fresh"]:
        shutil.rmtree(STAGE, ignore_errors=True)
        arguments = arguments[1:]
    arguments = arguments or ["run"]
    STAGE.mkdir(parents=True, exist_ok=True)
    prepare_stage()
    if arguments == ["summary"]:
        return summary()
    if arguments[0] == "run" and not any(a.startswith("--max-children") for a in arguments):
        arguments = ["run", "--max-children", "1", *arguments[1:]]
    environment = dict(os.environ, SPADES_ENGINE="python")
    return subprocess.run(
        ["nice", "-n", "15", str(MUTMUT), *arguments], cwd=STAGE, env=environment, check=False
    ).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
