"""Regenerate the Python code of ``proto/grstats.proto``: ``python proto/generate.py [OUT_DIR]``.

Run from the repository root (``make proto`` does): the code is generated with ``-I.`` so that
the generated modules import each other as ``proto.grstats_pb2``. With OUT_DIR the files are
written there instead (the staleness test compares them with the committed ones).
"""

from __future__ import annotations

import sys
from pathlib import Path

from grpc_tools import protoc

PROTO = "proto/grstats.proto"


def generate(out_dir: Path) -> None:
    """Write grstats_pb2.py, grstats_pb2.pyi and grstats_pb2_grpc.py under ``out_dir/proto``."""
    (out_dir / "proto").mkdir(parents=True, exist_ok=True)
    args = [
        "protoc",
        "-I.",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        PROTO,
    ]
    if protoc.main(args) != 0:
        raise SystemExit(f"protoc failed on {PROTO}")


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else Path())
