"""Generate Python protobuf/gRPC code (plus mypy stubs) from protos/spades/v1/*.proto.

Single source of truth for the generation command, used by `make protos` and by
tests/test_generated_stubs.py (which generates into a temp dir and compares).

Usage: python tools/gen_protos.py [OUT_DIR]   (default: client_sdk/src)
Output lands in OUT_DIR/spades/v1/. Stale generated files there are removed first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = REPO_ROOT / "protos"
PROTO_PACKAGE_DIR = Path("spades") / "v1"
DEFAULT_OUT = REPO_ROOT / "client_sdk" / "src"
GENERATED_GLOBS = ("*_pb2.py", "*_pb2.pyi", "*_pb2_grpc.py", "*_pb2_grpc.pyi")


def proto_files() -> list[Path]:
    """The .proto sources, relative to PROTO_ROOT, in a stable order."""
    sources = (PROTO_ROOT / PROTO_PACKAGE_DIR).glob("*.proto")
    return sorted(p.relative_to(PROTO_ROOT) for p in sources)


def generated_files(out_dir: Path) -> list[Path]:
    """Generated files currently present under out_dir/spades/v1, relative to that dir."""
    pkg = out_dir / PROTO_PACKAGE_DIR
    found = {p for pattern in GENERATED_GLOBS for p in pkg.glob(pattern)}
    return sorted(p.relative_to(pkg) for p in found)


def protoc_command(out_dir: Path, protos: list[Path]) -> list[str]:
    """The exact protoc invocation (run from PROTO_ROOT's parent)."""
    out = str(out_dir)
    return [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT.name}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--mypy_out={out}",
        f"--mypy_grpc_out={out}",
        *(str(Path(PROTO_ROOT.name) / p) for p in protos),
    ]


def generate(out_dir: Path) -> list[Path]:
    """Regenerate into out_dir; return the generated files (relative to out_dir/spades/v1)."""
    out_dir = out_dir.resolve()
    pkg = out_dir / PROTO_PACKAGE_DIR
    pkg.mkdir(parents=True, exist_ok=True)
    for stale in generated_files(out_dir):
        (pkg / stale).unlink()
    protos = proto_files()
    if not protos:
        print(f"gen_protos: no .proto files in {PROTO_ROOT / PROTO_PACKAGE_DIR}", file=sys.stderr)
        return []
    env = dict(os.environ)
    # protoc finds protoc-gen-mypy / protoc-gen-mypy_grpc on PATH: make the venv's bin
    # dir visible even when the venv is not activated.
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    subprocess.run(protoc_command(out_dir, protos), cwd=REPO_ROOT, env=env, check=True)
    return generated_files(out_dir)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = Path(args[0]) if args else DEFAULT_OUT
    for path in generate(out_dir):
        print(out_dir / PROTO_PACKAGE_DIR / path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
