"""Offline (clairvoyant) schedulers: the hindsight welfare optimum by CP-SAT, MILP and brute force."""
