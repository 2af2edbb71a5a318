"""Prediction engine: job runtime distributions learned causally from job history (seed 004 Part 2, seed 002 Sec. 6)."""
