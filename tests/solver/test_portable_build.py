"""The solver's search built without the machine's instruction-set flags gives the same values.

`make solver` compiles the search for this machine (tools/build_solver.py: the hardware popcount,
and BMI2 where ``pext`` is fast), and the table's key then takes a path of its own (the holders
of each suit's cards gathered with ``pext``). The plain C path is what a machine without those
flags runs, and nothing else here runs it: this test builds it into a copy of the package
(``build_solver.py --into DIR --portable``) and values the same seeded positions with both
builds, under four rule sets (partners; cutthroat; jokers, spades led any time; counter-clockwise,
Nil tricks for the partner, a bag limit of 5), both objectives. Which flags a processor gets is
checked on its own."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import build_solver
import pytest

from spades.engine import Direction, Rules
from spades.solver import Objective, solve
from tests.support.endings import ending

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE = REPO_ROOT / "client_sdk" / "src" / "spades"

RULES = (
    Rules(),
    Rules(players=3),
    Rules(jokers=True, spades_must_be_broken=False),
    Rules(direction=Direction.COUNTER_CLOCKWISE, nil_tricks_count_for_partner=True, bag_limit=5),
)


def values_of_endings() -> list[dict[str, int]]:
    """Every card's value, both objectives, at seeded endings of 2 to 8 tricks."""
    rng = random.Random("portable build")
    values = []
    for rules in RULES:
        for tricks in range(2, 9):
            for _ in range(4):
                state = ending(rules, tricks, rng)
                for objective in Objective:
                    found = solve(state, objective)
                    values.append({str(card): value for card, value in found.items()})
    return values


def test_the_portable_build_values_every_card_as_the_machines_build(tmp_path: Path) -> None:
    shutil.copytree(
        PACKAGE,
        tmp_path / "spades",
        ignore=shutil.ignore_patterns("_search.*.so", "_search*.pyd", "__pycache__"),
    )
    built = subprocess.run(
        [sys.executable, "tools/build_solver.py", "--into", str(tmp_path), "--portable"],
        cwd=REPO_ROOT,
        check=False,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    script = (
        "import json, spades.solver._search as compiled\n"
        "from tests.solver.test_portable_build import values_of_endings\n"
        "print(compiled.__file__)\n"
        "print(json.dumps(values_of_endings()))\n"
    )
    # This test module imports tools/build_solver.py, which pytest finds on its pythonpath.
    path = [str(tmp_path), str(REPO_ROOT), str(REPO_ROOT / "tools")]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    ran = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        env=environment,
        check=False,
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0, ran.stderr
    module, printed = ran.stdout.splitlines()
    assert Path(module).is_relative_to(tmp_path)  # the portable build answered
    portable = json.loads(printed)
    assert len(portable) == len(RULES) * 7 * 4 * 2
    assert portable == values_of_endings()


def _cpuinfo(vendor: str, family: int, flags: str) -> str:
    return f"vendor_id\t: {vendor}\ncpu family\t: {family}\nflags\t\t: fpu {flags} sse2\n"


@pytest.mark.parametrize(
    ("vendor", "family", "flags", "chosen"),
    [
        ("GenuineIntel", 6, "popcnt bmi1 bmi2", ["-mpopcnt", "-mbmi2"]),
        ("AuthenticAMD", 0x19, "popcnt bmi2", ["-mpopcnt", "-mbmi2"]),  # Zen 3: pext is fast
        ("AuthenticAMD", 0x17, "popcnt bmi2", ["-mpopcnt"]),  # Zen 1 and 2: pext in microcode
        ("GenuineIntel", 6, "popcnt", ["-mpopcnt"]),
        ("GenuineIntel", 6, "sse4_1", []),
    ],
)
def test_the_machines_flags_name_bmi2_only_where_pext_is_fast(
    vendor: str, family: int, flags: str, chosen: list[str]
) -> None:
    assert build_solver.machine_flags(_cpuinfo(vendor, family, flags), "x86_64") == chosen
    assert build_solver.machine_flags(_cpuinfo(vendor, family, flags), "aarch64") == []
