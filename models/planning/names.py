"""The planners' names, importing nothing: the CLI's parser reads them without loading a solver."""

METHODS = ("det-p50", "det-p75", "det-p100", "det-mode", "cospis", "milp-p50", "milp-indexed", "soru-p50", "manual")
