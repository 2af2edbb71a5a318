"""Counter-based random streams: splitmix64 as published, the compiled and numpy paths agree, keys are pinned."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mechanism.rng import stream_key, uniform, uniforms

MASK = 2**64 - 1
GOLDEN = 0x9E3779B97F4A7C15
# The first outputs of the reference splitmix64 (Vigna, splitmix64.c) seeded with 0.
SPLITMIX64_FROM_0 = (0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F)


def splitmix64(state: int, count: int) -> list[int]:
    """The published generator, in plain integers: state += golden; then the two multiply-xorshift rounds."""
    out = []
    for _ in range(count):
        state = (state + GOLDEN) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        out.append(z ^ (z >> 31))
    return out


def test_the_reimplementation_matches_the_published_splitmix64_outputs() -> None:
    assert tuple(splitmix64(0, 3)) == SPLITMIX64_FROM_0


@pytest.mark.parametrize("key", [0, 1, 0x0123456789ABCDEF, MASK - GOLDEN, MASK])
def test_uniform_n_is_the_top_53_bits_of_the_n_plus_first_splitmix64_output_of_the_key(key: int) -> None:
    n = 70
    want = [(z >> 11) / 2.0**53 for z in splitmix64(key, n)]
    assert [uniform(np.uint64(key), i) for i in range(n)] == want  # the compiled kernel
    assert uniforms(key, n).tolist() == want  # the numpy path the literal procedure uses


def test_uniforms_of_key_zero_are_the_published_outputs() -> None:
    assert uniforms(0, 3).tolist() == [(z >> 11) / 2.0**53 for z in SPLITMIX64_FROM_0]


def test_uniforms_stay_in_the_unit_interval_at_the_extremes_of_the_53_bits() -> None:
    u = uniforms(MASK, 100_000)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert uniforms(7, 0).size == 0


def test_stream_keys_chain_the_seed_round_and_job_through_splitmix64() -> None:
    def mix(z: int) -> int:
        return splitmix64(z, 1)[0]

    for seed, round_, job in [(0, 0, 0), (7, 3, 5), (2**63 - 1, 10**6, 2**40)]:
        k = mix((seed * GOLDEN) & MASK)
        k = mix((k ^ (round_ + 0x632BE59BD9B4E019)) & MASK)
        assert stream_key(seed, round_, job) == mix((k ^ (job * 0x8CB92BA72F3D8DD7 + 1)) & MASK)


def test_stream_keys_are_pinned_so_a_restart_replays_the_same_quotes() -> None:
    # A restart rebuilds its state by replaying logged commands; the streams must not change between builds.
    assert stream_key(0, 0, 0) == 0x8A80FBE462BEB2F9
    assert stream_key(7, 3, 5) == 0xED62E9FD144283CE


def test_stream_keys_differ_across_seeds_rounds_and_jobs() -> None:
    keys = [stream_key(s, r, j) for s, r, j in itertools.product(range(4), range(30), range(30))]
    assert len(set(keys)) == len(keys)
