"""The stochastic variant of seed 002 (Sec. 5, Thm 5.2, App. E): a prior over SoWs, its LP, bundles and prices."""
