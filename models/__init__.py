"""Pure solvers, models and studies: offline optima, the HPC study, predictors, forecasters, planners (not replayed)."""
