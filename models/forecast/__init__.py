"""Forecasting a VM's foreground CPU with prediction intervals (seed 004 Part 1; the forecasters CUC reuses)."""
