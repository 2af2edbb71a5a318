"""Robust menu-based bundle prices of the stochastic variant (seed 002 Lemma E.2, Thm 5.2)."""

from __future__ import annotations

from mechanism.sow import SoW


def check_duration_revealed(sow: SoW) -> None:
    """Thm 5.2 needs sigma(a, d) = d: raise ValueError unless every outcome's signal is its duration."""
    for i, (o, sig) in enumerate(zip(sow.outcomes, sow.signals, strict=True)):
        if sig != str(o.duration):
            raise ValueError(
                f"outcomes[{i}] has signal {sig!r} under signal_mode {sow.signal_mode!r}, but pricing 'stochastic' "
                f"needs the duration revealed at arrival (sigma(a, d) = d, Thm 5.2): use signal_mode 'duration'")
