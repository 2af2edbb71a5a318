"""Generate Python protobuf and gRPC code from proto/ into server/gen/."""

from __future__ import annotations

import pathlib
import sys

from grpc_tools import protoc

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
OUT = ROOT / "server" / "gen"


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "__init__.py").write_text(
        '"""Generated protobuf code (do not edit; made by scripts/gen_proto.py)."""\n'
        "import pathlib as _pathlib\nimport sys as _sys\n\n"
        "# The generated modules import each other as `sowsched.v1.*`.\n"
        "_here = str(_pathlib.Path(__file__).resolve().parent)\n"
        "if _here not in _sys.path:\n    _sys.path.insert(0, _here)\n"
    )
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))
    if not protos:
        return 0
    import grpc_tools

    include = str(pathlib.Path(grpc_tools.__file__).parent / "_proto")
    args = ["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={OUT}", f"--pyi_out={OUT}",
            f"--grpc_python_out={OUT}", *protos]
    code = protoc.main(args)
    for pkg_dir in {p.parent for p in OUT.rglob("*_pb2.py")}:
        d = pkg_dir
        while d != OUT:
            (d / "__init__.py").touch()
            d = d.parent
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
