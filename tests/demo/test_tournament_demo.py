"""`make demo-tournament`: a real server, bot accounts in a duplicate round robin, the
standings live, the record written, verified, and a clean exit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from spades.records.tournament import load_tournament_record, verify_tournament


def test_the_tournament_demo_plays_to_the_end_and_writes_a_verified_record(
    tmp_path: Path,
) -> None:
    records = tmp_path / "records"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "spades_server.app.tournament_demo",
            "--entrants",
            "2",
            "--boards",
            "1",
            "--records",
            str(records),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Spades tournament demo: a server on 127.0.0.1:" in out
    assert "Demo Cup: final standings" in out
    assert "Heuristic 1" in out and "Random 1" in out
    assert "2 tables, " in out and "Server stopped." in out
    assert "Task exception was never retrieved" not in done.stderr
    written = [line for line in out.splitlines() if line.startswith("Record written to ")]
    assert len(written) == 1
    path = Path(written[0].removeprefix("Record written to "))
    assert path.parent == records
    checked = verify_tournament(load_tournament_record(path))
    assert sorted(line.name for line in checked.standings.lines) == ["Heuristic 1", "Random 1"]
