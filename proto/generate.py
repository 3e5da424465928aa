"""Regenerate the Python code of ``proto/grstats.proto``: ``python proto/generate.py [OUT_DIR]``.

The folder ``proto/`` is installed as :mod:`grstats.proto`, so protoc must see the file as
``grstats/proto/grstats.proto``: then the generated modules import each other as
``grstats.proto.grstats_pb2``, and the file registers in protobuf's descriptor pool under a
name no other package uses. This script stages a copy at that path in a temporary directory,
runs protoc there and writes the three files to ``proto/`` (with OUT_DIR, to
``OUT_DIR/proto``: the staleness test compares them with the committed ones).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

HERE = Path(__file__).resolve().parent
PROTO = "grstats/proto/grstats.proto"
GENERATED = ("grstats_pb2.py", "grstats_pb2.pyi", "grstats_pb2_grpc.py")


def generate(out_dir: Path) -> None:
    """Write grstats_pb2.py, grstats_pb2.pyi and grstats_pb2_grpc.py under ``out_dir/proto``."""
    with tempfile.TemporaryDirectory(prefix="grstats-proto-") as work:
        staged = Path(work, "in", PROTO)
        staged.parent.mkdir(parents=True)
        shutil.copyfile(HERE / "grstats.proto", staged)
        made = Path(work, "out")
        made.mkdir()
        args = [
            "protoc",
            f"-I{Path(work, 'in')}",
            f"--python_out={made}",
            f"--pyi_out={made}",
            f"--grpc_python_out={made}",
            str(staged),
        ]
        if protoc.main(args) != 0:
            raise SystemExit(f"protoc failed on {PROTO}")
        (out_dir / "proto").mkdir(parents=True, exist_ok=True)
        for name in GENERATED:
            shutil.copyfile(made / "grstats" / "proto" / name, out_dir / "proto" / name)


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent)
