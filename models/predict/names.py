"""The predictors', predictive schedulers' and correctors' names, importing nothing: the CLI's parser reads them."""

PREDICTORS = ("requested", "tsafrir", "last5", "exact", "learned", "learned-gmm", "learned-calibrated")
PREDICTIVE_SCHEDULERS = ("easy-requested", "easy-exact", "easy-pp", "easy-learned")
CORRECTORS = ("conditional", "reqtime", "doubling")
