"""The predictors', predictive schedulers' and correctors' names, importing nothing: the CLI's parser reads them."""

PREDICTORS = ("requested", "tsafrir", "last5", "exact", "learned", "learned-gmm", "learned-doubling",
              "learned-calibrated", "learned-aci", "learned-user", "learned-aci-user", "learned-user-95",
              "learned-boosted", "learned-boosted-wide", "learned-oracle-50", "learned-oracle-80", "learned-oracle-95")
# not in `predict evaluate`'s default list (slower, newer, or oracles for bounds): scored on request
ON_REQUEST = ("learned-gmm", "learned-doubling", "learned-aci", "learned-user", "learned-aci-user", "learned-user-95",
              "learned-boosted", "learned-boosted-wide", "learned-oracle-50", "learned-oracle-80", "learned-oracle-95")
PREDICTIVE_SCHEDULERS = ("easy-requested", "easy-exact", "easy-pp", "easy-learned")
CORRECTORS = ("conditional", "reqtime", "doubling")
