"""The committed generated code (client_sdk/src/spades/v1/, server/src/spades_server/v1/) must
match protos/."""

from __future__ import annotations

from pathlib import Path

import gen_protos  # tools/gen_protos.py (tools/ is on pytest's pythonpath and mypy_path)

HINT = "generated code is stale: run `make protos` and commit it"


def _contents(root: Path, names: list[Path]) -> dict[str, bytes]:
    return {str(name): (root / name).read_bytes() for name in names}


def test_generated_stubs_are_up_to_date(tmp_path: Path) -> None:
    fresh = _contents(tmp_path, gen_protos.generate(tmp_path))
    committed_root = gen_protos.REPO_ROOT
    committed = _contents(committed_root, gen_protos.generated_files(committed_root))

    missing = sorted(fresh.keys() - committed.keys())
    extra = sorted(committed.keys() - fresh.keys())
    assert not missing, f"{HINT} (missing: {missing})"
    assert not extra, f"{HINT} (no longer generated from any .proto, delete: {extra})"
    differing = sorted(name for name in fresh if fresh[name] != committed[name])
    assert not differing, f"{HINT} (differs: {differing})"


def test_the_server_log_format_is_not_in_the_sdk() -> None:
    sdk = gen_protos.REPO_ROOT / "client_sdk" / "src" / "spades"
    assert not list(sdk.rglob("log_pb2*")), "spades.server.v1 belongs to the server only"
