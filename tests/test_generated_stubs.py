"""The committed generated code in client_sdk/src/spades/v1/ must match protos/."""

from __future__ import annotations

from pathlib import Path

import gen_protos  # tools/gen_protos.py (tools/ is on pytest's pythonpath and mypy_path)

HINT = "generated code in client_sdk/src/spades/v1/ is stale: run `make protos` and commit it"


def _contents(out_dir: Path, names: list[Path]) -> dict[str, bytes]:
    pkg = out_dir / gen_protos.PROTO_PACKAGE_DIR
    return {str(name): (pkg / name).read_bytes() for name in names}


def test_generated_stubs_are_up_to_date(tmp_path: Path) -> None:
    fresh = _contents(tmp_path, gen_protos.generate(tmp_path))
    committed_dir = gen_protos.DEFAULT_OUT
    committed = _contents(committed_dir, gen_protos.generated_files(committed_dir))

    missing = sorted(fresh.keys() - committed.keys())
    extra = sorted(committed.keys() - fresh.keys())
    assert not missing, f"{HINT} (missing: {missing})"
    assert not extra, f"{HINT} (no longer generated from any .proto, delete: {extra})"
    differing = sorted(name for name in fresh if fresh[name] != committed[name])
    assert not differing, f"{HINT} (differs: {differing})"
