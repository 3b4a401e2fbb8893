"""`make demo`: a real server, four bots, one match told hand by hand, a clean exit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from spades.records import events_of, load_record


def test_the_demo_tells_a_whole_match_and_exits_cleanly(tmp_path: Path) -> None:
    records = tmp_path / "records"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "spades_server.app.demo",
            "--target",
            "100",
            "--max-hands",
            "2",
            "--records",
            str(records),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Spades demo: a server on 127.0.0.1:" in out
    assert "Players: North: Heuristic North (bot)" in out
    assert "Hand 1, dealt by" in out
    assert "  Bids: " in out
    assert "  Trick  1: " in out and "  Trick 13: " in out
    header = ["Side", "Bids", "Tricks", "Points", "Bags", "Total", "Bags", "held", "Needs", "How"]
    assert any(line.split() == header for line in out.splitlines()), out
    assert "cards (hidden)" not in out  # a spectator's empty deal lines are left out
    assert "Winner: " in out and "Seed revealed: " in out
    written = [line for line in out.splitlines() if line.startswith("Record written to ")]
    assert len(written) == 1
    path = Path(written[0].removeprefix("Record written to "))
    assert path.parent == records
    assert any(type(event).__name__ == "MatchEnded" for event in events_of(load_record(path)))
    assert out.rstrip().endswith("Server stopped.")
    assert "Traceback" not in done.stderr
