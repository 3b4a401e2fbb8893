"""Generate Python protobuf/gRPC code (plus mypy stubs) from protos/.

Single source of truth for the generation command, used by `make protos` and by
tests/test_generated_stubs.py (which generates into a temp dir and compares).

Two proto packages, two homes: the public contract `spades.v1` goes to the SDK
(client_sdk/src/spades/v1/), the server's private log format `spades.server.v1` to the server
(server/src/spades_server/v1/), so no client ships the server's log envelope.

Usage: python tools/gen_protos.py [ROOT]   (default: the repository)
Output lands under ROOT in the folders of PACKAGES. Stale generated files there are removed first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = REPO_ROOT / "protos"
#: Each proto package's folder under protos/ -> where its Python code goes (relative to ROOT).
PACKAGES: dict[Path, Path] = {
    Path("spades") / "v1": Path("client_sdk") / "src" / "spades" / "v1",
    Path("spades") / "server" / "v1": Path("server") / "src" / "spades_server" / "v1",
}
GENERATED_GLOBS = ("*_pb2.py", "*_pb2.pyi", "*_pb2_grpc.py", "*_pb2_grpc.pyi")


def proto_files() -> list[Path]:
    """The .proto sources, relative to PROTO_ROOT, in a stable order."""
    sources = [path for package in PACKAGES for path in (PROTO_ROOT / package).glob("*.proto")]
    return sorted(p.relative_to(PROTO_ROOT) for p in sources)


def generated_files(root: Path) -> list[Path]:
    """Generated files currently present under root's output folders, relative to root."""
    found = {
        path
        for out in PACKAGES.values()
        for pattern in GENERATED_GLOBS
        for path in (root / out).glob(pattern)
    }
    return sorted(p.relative_to(root) for p in found)


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


def generate(root: Path) -> list[Path]:
    """Regenerate under root; return the generated files (relative to root)."""
    root = root.resolve()
    for stale in generated_files(root):
        (root / stale).unlink()
    protos = proto_files()
    if not protos:
        print(f"gen_protos: no .proto files under {PROTO_ROOT}", file=sys.stderr)
        return []
    env = dict(os.environ)
    # protoc finds protoc-gen-mypy / protoc-gen-mypy_grpc on PATH: make the venv's bin
    # dir visible even when the venv is not activated.
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    with tempfile.TemporaryDirectory() as scratch:
        # protoc writes by proto package; each package's files then move to their home.
        subprocess.run(protoc_command(Path(scratch), protos), cwd=REPO_ROOT, env=env, check=True)
        for package, out in PACKAGES.items():
            (root / out).mkdir(parents=True, exist_ok=True)
            for pattern in GENERATED_GLOBS:
                for made in (Path(scratch) / package).glob(pattern):
                    shutil.copyfile(made, root / out / made.name)
    return generated_files(root)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(args[0]) if args else REPO_ROOT
    for path in generate(root):
        print(root / path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
