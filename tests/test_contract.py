"""The wire contract: ``make lint`` runs ``buf breaking`` against the committed image
``protos/contract.binpb``. Here: the protos as they are keep it, and a change that would break a
client built against it (a field renumbered) is caught, so the check cannot pass vacuously."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUF = ROOT / ".tools" / "node_modules" / ".bin" / "buf"
CONTRACT = ROOT / "protos" / "contract.binpb"


def breaking(workspace: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BUF), "breaking", "--against", str(CONTRACT)],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_protos_keep_the_contract() -> None:
    kept = breaking(ROOT)
    assert kept.returncode == 0, kept.stdout + kept.stderr


def test_a_renumbered_field_breaks_the_contract(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "protos", tmp_path / "protos")
    shutil.copy(ROOT / "buf.yaml", tmp_path / "buf.yaml")
    play = tmp_path / "protos" / "spades" / "v1" / "play.proto"
    text = play.read_text()
    assert "  string action_id = 1;" in text
    play.write_text(text.replace("  string action_id = 1;", "  string action_id = 99;", 1))
    broken = breaking(tmp_path)
    assert broken.returncode != 0
    assert "action_id" in broken.stdout + broken.stderr
