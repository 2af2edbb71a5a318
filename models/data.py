"""Where the real data lives: `../shared/data` beside the repository (as on every developer's machine and in CI)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"
KTH_SP2 = DATA_DIR / "KTH-SP2.swf"
CTC_SP2 = DATA_DIR / "CTC-SP2-1996-3.1-cln.swf.gz"
PWA_TRACES = tuple(DATA_DIR / "pwa" / name for name in (
    "SDSC-SP2-1998-4.2-cln.swf.gz", "SDSC-DS-2004-2.1-cln.swf.gz", "Sandia-Ross-2001-1.1-cln.swf.gz",
    "LANL-CM5-1994-4.1-cln.swf.gz"))
SIX_TRACES = (KTH_SP2, CTC_SP2, *PWA_TRACES)  # the traces issue 39's backfilling is chosen and judged on
AZURE_VM_CPU = DATA_DIR / "azure-vm-cpu"
AZURE_CAPACITY = DATA_DIR / "azure-capacity"
AZURE_CAPACITY_COLUMNS = ("TimeStamp", "Column1", "TotalCores")  # the capacity files: one row per (hour, VM type)


def read_text(path: str | Path) -> str:
    """A UTF-8 text file's contents, decompressed first when it is gzip (told by its magic bytes, not its name)."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8-sig")


def recorded_path(path: str | Path) -> str:
    """A path as a JSON record shows it: a relative path as given, an absolute one (the defaults under DATA_DIR are)
    relative to the working directory, so that a committed record does not carry this machine's directories."""
    text = str(path)
    if not os.path.isabs(text):
        return text
    try:
        return os.path.relpath(text)
    except ValueError:  # on another drive (Windows): no relative path exists
        return text
