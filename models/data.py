"""Where the real data lives: `../shared/data` beside the repository (as on every developer's machine and in CI)."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"
KTH_SP2 = DATA_DIR / "KTH-SP2.swf"
CTC_SP2 = DATA_DIR / "CTC-SP2-1996-3.1-cln.swf.gz"
AZURE_VM_CPU = DATA_DIR / "azure-vm-cpu"
AZURE_CAPACITY = DATA_DIR / "azure-capacity"
