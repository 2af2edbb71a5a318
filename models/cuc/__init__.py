"""CUC (seed 003): scheduling pre-collected jobs under a quantile of the forecast available capacity."""
