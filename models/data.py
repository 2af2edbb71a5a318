"""Where the real data lives: `../shared/data` beside the repository (as on every developer's machine and in CI)."""

from __future__ import annotations

import gzip
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"
KTH_SP2 = DATA_DIR / "KTH-SP2.swf"
CTC_SP2 = DATA_DIR / "CTC-SP2-1996-3.1-cln.swf.gz"
AZURE_VM_CPU = DATA_DIR / "azure-vm-cpu"
AZURE_CAPACITY = DATA_DIR / "azure-capacity"
AZURE_CAPACITY_COLUMNS = ("TimeStamp", "Column1", "TotalCores")  # the capacity files: one row per (hour, VM type)


def read_text(path: str | Path) -> str:
    """A UTF-8 text file's contents, decompressed first when it is gzip (told by its magic bytes, not its name)."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8-sig")
