"""The forecasters' and their error models' names, importing nothing: the CLI's parser reads them without a model."""

MODELS = ("ar1", "ar1x", "ari11", "var1", "markov", "markovx", "tsdec", "autopilot")
ERROR_MODELS = ("normal", "skewnorm", "empirical", "gmm")
FIT_METHODS = ("mle", "ols")
