"""Benchmarks (`make bench`): they report numbers and assert nothing."""
