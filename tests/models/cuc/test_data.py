"""The capacity loader on tiny CSV and gzip CSV files."""

import gzip
from pathlib import Path

import pytest

from models.cuc.data import load_capacity

TINY = "TimeStamp,Column1,TotalCores\n2017-01-01 01:00,b,20\n2017-01-01 00:00,a,5\n2017-01-01 00:00,b,10\n" \
       "2017-01-01 01:00,a,6\n"


def test_tiny_csv_and_gzip(tmp_path: Path) -> None:
    plain = tmp_path / "c.csv"
    plain.write_text(TINY)
    packed = tmp_path / "c.csv.gz"
    packed.write_bytes(gzip.compress(TINY.encode()))
    for path in (plain, packed):
        data = load_capacity(path)
        assert data.vm_types == ("a", "b")
        assert data.hours == ("2017-01-01 00:00", "2017-01-01 01:00")  # sorted in time
        assert data.of("a").tolist() == [5, 6] and data.of("b").tolist() == [10, 20]


def test_real_files_have_six_types_of_14_days() -> None:
    for year in (2017, 2019):
        data = load_capacity(Path(f"../shared/data/azure-capacity/capacity_azure{year}.csv"))
        assert len(data.vm_types) == 6 and len(data.hours) == 14 * 24


@pytest.mark.parametrize(("text", "match"), [
    ("TimeStamp,Column1\nx,a\n", "missing column"),
    ("TimeStamp,Column1,TotalCores\nx,a,abc\n", "is not a number"),
    ("TimeStamp,Column1,TotalCores\nx,a,-1\n", "must be finite and >= 0"),
    ("TimeStamp,Column1,TotalCores\nx,a,1\ny,a,2\nx,b,3\n", "has 1 hours"),
    ("TimeStamp,Column1,TotalCores\n", "no capacity rows"),
])
def test_bad_files(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        load_capacity(path)


def test_unknown_type_names_the_known_ones(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text(TINY)
    with pytest.raises(ValueError, match=r"vm-type='z' is not in the data \(known: a, b\)"):
        load_capacity(path).of("z")
