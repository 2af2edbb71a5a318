"""CUC's option names (forecasters, error laws, splits, greedy orders, BO objectives), importing nothing: the CLI's
parser reads them without loading a model."""

FORECASTERS = ("tsdec", "ar1")
# the law's errors: whole inner windows (o' + T <= o), per step the newest seen, the training windows' moments, or
# `max`: per step the larger cut-down of newest (θ's kappa) and moments (kappa 1) (models.cuc.protocol.MaxLaw)
ERROR_SETS = ("full", "newest", "moments", "max")
# `select`: per series and p, the law of SELECTABLE that BO's validation samples favour (models.cuc.run.choose_law)
SELECT = "select"
SELECTABLE = ("newest", "moments")
ERROR_CHOICES = (*ERROR_SETS, SELECT)
SPLITS = ("clean", "published")  # a gap of T hours between the training targets and the test scopes, or none
ORDERS = ("ratio", "value")  # Alg. 3 line 1 as the seed writes it (c_i / d_i), or by the utility c_i d_i
OBJECTIVES = ("sample", "mean", "ucb")
