"""A small memory question for the real-model tier: one current fact, two stale copies."""

from __future__ import annotations

QUESTION = "What is the name of Ana's cat?"
REFERENCE = "Miso"
MEMORIES = [
    ("m1", "Ana adopted a cat named Miso in March 2024.", "2024-03-02"),
    ("m2", "Ana's cat is called Rex, she said in 2019.", "2019-05-10"),
    ("m3", "Ana bakes sourdough bread every Sunday.", "2024-01-14"),
    ("m4", "Old note: Ana's cat is named Rex.", "2019-06-01"),
]

WALL_SECONDS = 900.0
"""The clearance's wall bound here: a CPU-bound tiny model answers in seconds, not the live
default's 60 s for a whole clearance."""


def clearance() -> object:
    """The engine configuration of the tier (the package default, a wider wall bound)."""
    from meclear_integrations import ClearanceConfig

    return ClearanceConfig(budget={"max_wall_seconds": WALL_SECONDS})
