"""Capacity planning and scheduling under duration and CPU uncertainty with dependencies (seed 000, COS)."""
