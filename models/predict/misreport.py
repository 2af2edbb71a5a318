"""The audit's family for feature submissions: the requested duration scaled, or one tag changed to a known value.

Each alternative is what a tenant could have told the engine instead: the requested duration scaled by each of
`SCALES` (0.25 to 4), or one of `executable`, `queue` and `tags` changed to every other value the model's training
set holds. Its SoW is built exactly as the server builds the declared one (`feature_sow`), from the same model's
law for the changed features, with the same arrival law and value steps.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import ValidationError

from mechanism.platform import Platform
from models.audit import Alternative
from models.predict.online import JobFeatures, Model, feature_sow

SCALES = (0.25, 0.5, 0.75, 1.25, 1.5, 2.0, 3.0, 4.0)  # of the requested duration


def feature_family(features: JobFeatures, model: Model) -> Iterator[JobFeatures]:
    """The changed declarations, each once (a scale that rounds back to the request is left out)."""
    seen = {features}
    changes: list[dict[str, Any]] = [{"requested_seconds": max(1, round(features.requested_seconds * s))}
                                     for s in SCALES]
    changes += [{"executable": v} for v in model.known.executable]
    changes += [{"queue": v} for v in model.known.queue]
    changes += [{"tags": v} for v in model.known.tags]
    for change in changes:
        alt = features.model_copy(update=change)
        if alt not in seen:
            seen.add(alt)
            yield alt


def feature_alternatives(tenant: str, features: JobFeatures, arrival: Sequence[tuple[int, float]],
                         steps: Sequence[Sequence[float]], model: Model, round_seconds: float,
                         platform: Platform) -> Iterator[Alternative]:
    """`feature_family` as SoWs built from `model`'s laws; members whose SoW the platform refuses are left out."""
    for alt in feature_family(features, model):
        prediction = model.predict(tenant, alt)
        try:
            sow = feature_sow(alt, arrival, steps, prediction, round_seconds, platform)
        except ValidationError:
            continue
        yield Alternative({"features": alt.model_dump(mode="json"), "sow": sow.model_dump(mode="json")}, sow)
