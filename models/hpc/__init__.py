"""HPC trace study (seed 001): rigid-job simulator, list scheduling with backfilling, CP-SAT schedulers, metrics."""
