"""SWF reader: header keys, the 18 fields, cleaning rules with counts, malformed lines with line numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.data import KTH_SP2
from models.hpc.swf import (
    CLEANING_RULES,
    FIELDS,
    SwfParseError,
    clean,
    load_workload,
    machine_nodes,
    parse_swf,
    read_swf,
)

KTH = KTH_SP2

HEADER = """; Version: 2.2
; Computer: test machine
; MaxNodes: 8
; MaxProcs: 16
;   a comment line without a key
;
"""


def line(job: int, submit: int, run: int, alloc: int, req_procs: int = -1, req_time: int = 100) -> str:
    return f"{job} {submit} 5 {run} {alloc} -1 -1 {req_procs} {req_time} -1 1 3 4 -1 1 -1 -1 -1"


def test_header_keys_are_read_and_comments_without_key_ignored() -> None:
    trace = parse_swf((HEADER + line(1, 0, 10, 2)).splitlines())
    assert trace.header["MaxNodes"] == "8"
    assert trace.header["MaxProcs"] == "16"
    assert trace.header["Computer"] == "test machine"
    assert len(trace.records) == 1


def test_all_eighteen_fields_are_parsed_in_order() -> None:
    text = "7 11 12 13 14 15.5 16 17 18 19 1 21 22 23 24 25 26 27"
    (rec,) = parse_swf([text]).records
    assert len(FIELDS) == 18
    assert (rec.job_number, rec.submit_time, rec.wait_time, rec.run_time) == (7, 11, 12, 13)
    assert rec.allocated_processors == 14
    assert rec.average_cpu_time == 15.5
    assert (rec.requested_processors, rec.requested_time, rec.status) == (17, 18, 1)
    assert (rec.queue, rec.partition, rec.preceding_job, rec.think_time) == (24, 25, 26, 27)
    assert rec.line == 1


def test_blank_lines_are_skipped_and_line_numbers_count_every_line() -> None:
    lines = ["; MaxNodes: 4", "", line(1, 0, 10, 2), "", line(2, 5, 10, 2)]
    trace = parse_swf(lines)
    assert [r.line for r in trace.records] == [3, 5]


def test_wrong_field_count_names_the_line() -> None:
    with pytest.raises(SwfParseError, match=r"line 3: expected 18 fields, found 3"):
        parse_swf(["; MaxNodes: 4", line(1, 0, 10, 2), "1 2 3"])


def test_non_numeric_field_names_line_field_and_value() -> None:
    bad = line(1, 0, 10, 2).replace(" 10 ", " ten ", 1)
    with pytest.raises(SwfParseError, match=r"line 1: field run_time='ten' is not a number"):
        parse_swf([bad])


def test_fractional_value_in_integer_field_is_rejected() -> None:
    bad = line(1, 0, 10, 2).replace("1 0 5", "1 0.5 5", 1)
    with pytest.raises(SwfParseError, match=r"line 1: field submit_time='0.5' must be an integer"):
        parse_swf([bad])


def test_machine_nodes_prefers_override_then_maxprocs_then_maxnodes() -> None:
    assert machine_nodes({"MaxNodes": "8", "MaxProcs": "16"}) == 16
    assert machine_nodes({"MaxNodes": "8"}) == 8
    assert machine_nodes({"MaxNodes": "8"}, override=3) == 3


def test_machine_nodes_of_a_partitioned_header_is_its_total() -> None:
    assert machine_nodes({"MaxProcs": "1664 (72, 1368, 224)"}) == 1664
    with pytest.raises(ValueError, match=r"MaxProcs='1664 \(72' is not an integer"):
        machine_nodes({"MaxProcs": "1664 (72"})


def test_machine_nodes_errors_name_the_key_and_value() -> None:
    with pytest.raises(ValueError, match="neither MaxNodes nor MaxProcs"):
        machine_nodes({})
    with pytest.raises(ValueError, match=r"MaxNodes='x' is not an integer"):
        machine_nodes({"MaxNodes": "x"})
    with pytest.raises(ValueError, match=r"MaxNodes=0 must be > 0"):
        machine_nodes({"MaxNodes": "0"})
    with pytest.raises(ValueError, match=r"nodes=0 must be > 0"):
        machine_nodes({"MaxNodes": "8"}, override=0)


def test_cleaning_rules_are_applied_and_counted() -> None:
    lines = [
        "; MaxNodes: 8",
        line(1, 0, 10, 2),  # kept as is
        line(2, 1, 0, 2),  # runtime 0: dropped
        line(3, 2, 10, -1, req_procs=-1),  # no size at all: dropped (size taken from requested first)
        line(4, 3, 10, 9),  # above the machine: dropped
        line(5, 4, 10, -1, req_procs=3),  # size from requested processors
        line(6, 5, 10, 2, req_time=-1),  # requested time missing: set to runtime
        line(7, 6, 50, 2, req_time=20),  # requested below runtime: raised
        line(8, -5, 10, 2),  # negative submit: dropped
    ]
    workload, report = clean(parse_swf(lines))
    assert set(report.counts) == set(CLEANING_RULES)
    assert report.counts == {
        "size_from_requested": 2,
        "dropped_nonpositive_runtime": 1,
        "dropped_nonpositive_size": 1,
        "dropped_size_above_machine": 1,
        "dropped_negative_submit": 1,
        "requested_missing_set_to_runtime": 1,
        "requested_raised_to_runtime": 1,
    }
    assert (report.records, report.kept, report.nodes) == (8, 4, 8)
    by_id = {j.id: j for j in workload.jobs}
    assert sorted(by_id) == [1, 5, 6, 7]
    assert by_id[5].size == 3
    assert by_id[6].requested == 10
    assert by_id[7].requested == 50


def test_jobs_are_sorted_by_submit_then_id() -> None:
    lines = ["; MaxNodes: 8", line(2, 10, 5, 1), line(1, 10, 5, 1), line(3, 0, 5, 1)]
    workload, _ = clean(parse_swf(lines))
    assert [j.id for j in workload.jobs] == [3, 1, 2]


def test_read_swf_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "t.swf"
    path.write_text(HEADER + line(1, 0, 10, 2) + "\n" + line(2, 3, 10, 4) + "\n")
    workload, report = load_workload(path)
    assert report.kept == 2
    assert workload.nodes == 16  # MaxProcs
    assert [j.id for j in workload.jobs] == [1, 2]
    assert read_swf(path).header["Version"] == "2.2"


def test_kth_sp2_header_and_counts() -> None:
    assert KTH.exists(), f"the real trace must be beside the repository at {KTH}"
    workload, report = load_workload(KTH)
    assert workload.nodes == 100
    assert report.records == 28481
    assert report.kept == 28481
    assert all(v == 0 for v in report.counts.values())


@pytest.mark.parametrize("token", ["nan", "NaN", "inf", "-inf", "1e400"])
@pytest.mark.parametrize("field", ["run_time", "average_cpu_time"])
def test_non_finite_values_are_refused_naming_line_field_and_value(token: str, field: str) -> None:
    tokens = line(1, 0, 10, 2).split()
    tokens[FIELDS.index(field)] = token
    with pytest.raises(SwfParseError, match=rf"line 2: field {field}='{token}' is not a finite number"):
        parse_swf(["; MaxNodes: 4", " ".join(tokens)])


def test_processor_counts_are_compared_with_maxprocs_on_an_smp_header() -> None:
    # SWF field 5 counts processors; MaxProcs (SWF 2.1, "to support SMP nodes") is the machine in those units.
    # Here 2 nodes of 8 processors: an 8-processor job fits, and R = 16 processors (seed 001 Table 1: #CPU).
    lines = ["; MaxNodes: 2", "; MaxProcs: 16", line(1, 0, 10, 8), line(2, 1, 10, 16)]
    workload, report = clean(parse_swf(lines))
    assert workload.nodes == report.nodes == 16
    assert report.kept == 2 and report.counts["dropped_size_above_machine"] == 0


# ---------------------------------------------------------------- bounds at their edges (mutation testing)


def test_comments_without_a_single_word_key_before_a_colon_are_not_header_entries() -> None:
    # SWF header entries are '; Key: value' with a one-word key; a comment that is one word without a colon,
    # or has a colon after several words, is prose.
    lines = [";Remark", "; note that: the clock was reset", "; MaxNodes: 4", line(1, 0, 10, 2)]
    assert parse_swf(lines).header == {"MaxNodes": "4"}
    # any run of leading ';' opens a comment
    assert parse_swf([";;  MaxProcs: 16"]).header == {"MaxProcs": "16"}


def test_a_machine_of_one_node_is_accepted_from_the_override_and_from_the_header() -> None:
    assert machine_nodes({"MaxNodes": "8"}, override=1) == 1
    assert machine_nodes({"MaxProcs": "1"}) == 1
    assert machine_nodes({"MaxNodes": "1"}) == 1
    with pytest.raises(ValueError, match=r"header MaxProcs=-1 must be > 0"):
        machine_nodes({"MaxProcs": "-1", "MaxNodes": "8"})


def clean_one(record: str, nodes: int = 4) -> tuple[list[tuple[int, int, int, int]], dict[str, int]]:
    """Clean one SWF line on an R-node header; the kept jobs as (submit, runtime, size, requested)."""
    workload, report = clean(parse_swf([f"; MaxNodes: {nodes}", record]))
    touched = {k: v for k, v in report.counts.items() if v}
    return [(j.submit, j.runtime, j.size, j.requested) for j in workload.jobs], touched


def test_zero_allocated_processors_count_as_missing_and_one_is_kept() -> None:
    assert clean_one(line(1, 0, 10, 0, req_procs=3)) == ([(0, 10, 3, 100)], {"size_from_requested": 1})
    assert clean_one(line(1, 0, 10, 1, req_procs=3)) == ([(0, 10, 1, 100)], {})


def test_a_size_of_zero_after_rule_one_is_dropped_and_a_size_equal_to_the_machine_kept() -> None:
    assert clean_one(line(1, 0, 10, 0, req_procs=0)) == (
        [], {"size_from_requested": 1, "dropped_nonpositive_size": 1})
    assert clean_one(line(1, 0, 10, 4)) == ([(0, 10, 4, 100)], {})
    assert clean_one(line(1, 0, 10, 5)) == ([], {"dropped_size_above_machine": 1})


def test_a_runtime_of_one_second_is_kept_and_zero_dropped() -> None:
    assert clean_one(line(1, 0, 1, 2)) == ([(0, 1, 2, 100)], {})
    assert clean_one(line(1, 0, 0, 2)) == ([], {"dropped_nonpositive_runtime": 1})


def test_a_submit_time_of_minus_one_is_dropped_and_zero_kept() -> None:
    assert clean_one(line(1, -1, 10, 2)) == ([], {"dropped_negative_submit": 1})
    assert clean_one(line(1, 0, 10, 2)) == ([(0, 10, 2, 100)], {})


def test_a_requested_time_of_zero_is_missing_and_one_is_a_real_limit() -> None:
    assert clean_one(line(1, 0, 10, 2, req_time=0)) == ([(0, 10, 2, 10)], {"requested_missing_set_to_runtime": 1})
    assert clean_one(line(1, 0, 1, 2, req_time=1)) == ([(0, 1, 2, 1)], {})
    assert clean_one(line(1, 0, 2, 2, req_time=1)) == ([(0, 2, 2, 2)], {"requested_raised_to_runtime": 1})
    assert clean_one(line(1, 0, 10, 2, req_time=10)) == ([(0, 10, 2, 10)], {})


def test_the_three_memory_and_cpu_time_fields_take_fractions() -> None:
    tokens = line(1, 0, 10, 2).split()
    for name, value in (("average_cpu_time", "1.5"), ("used_memory", "2.25"), ("requested_memory", "3.75")):
        tokens[FIELDS.index(name)] = value
    (rec,) = parse_swf([" ".join(tokens)]).records
    assert (rec.average_cpu_time, rec.used_memory, rec.requested_memory) == (1.5, 2.25, 3.75)


@pytest.mark.parametrize(
    "name", [f for f in FIELDS if f not in {"average_cpu_time", "used_memory", "requested_memory"}])
def test_every_other_field_refuses_a_fraction_naming_it(name: str) -> None:
    tokens = line(1, 0, 10, 2).split()
    tokens[FIELDS.index(name)] = "7.5"
    with pytest.raises(SwfParseError, match=rf"line 1: field {name}='7.5' must be an integer"):
        parse_swf([" ".join(tokens)])
