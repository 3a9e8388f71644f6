"""The verified clearance rule (Eq. 17-20) along any method's order, and ranking helpers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..oracle import CaseOracle
from ..settings import ClearanceMode

__all__ = ["harm_ranking", "settle_clearance", "verified_clearance"]

GAIN_TOLERANCE = 1e-12


def verified_clearance(oracle: CaseOracle, order: Sequence[int]) -> tuple[list[int], list[dict]]:
    """Nested candidates C_j (Eq. 17) along ``order``; j^ = min argmax of verified gain (Eq. 20).

    A candidate j > 0 is admissible when its gain over v^(M) is positive and the cleared
    context satisfies the recovery predicate (Eq. 19). Returns the cleared positions and the
    candidates tried (size, value, gain, recovered, admissible).
    """
    base = oracle.value(oracle.full)
    tried: list[dict] = []
    best_j, best_gain = 0, 0.0
    for j in range(len(order) + 1):
        coalition = oracle.without(order[:j])
        value = oracle.value(coalition)
        gain = value - base
        recovered = oracle.recovers(coalition)
        admissible = j == 0 or (gain > GAIN_TOLERANCE and recovered)
        tried.append(
            {
                "size": j,
                "value": value,
                "gain": gain,
                "recovered": recovered,
                "admissible": admissible,
            }
        )
        if admissible and gain > best_gain + GAIN_TOLERANCE:
            best_j, best_gain = j, gain
    return list(order[:best_j]), tried


def settle_clearance(
    mode: ClearanceMode,
    *,
    verifies_in_paper: bool,
    oracle: CaseOracle,
    order: Sequence[int],
) -> tuple[list[int], list[dict]]:
    """What a method deletes under the run's clearance mode (see ``BenchSettings.clearance``)."""
    verify = mode == "verified" or (mode == "paper" and verifies_in_paper)
    if verify:
        return verified_clearance(oracle, order)
    return list(order), []


def harm_ranking(ids: Sequence[str], harm: Mapping[str, float]) -> list[str]:
    """Memories with positive harm (evidence of harm), most harmful first, ties by retrieval order.

    ``harm`` is oriented so that larger means more harmful (e.g. minus a Shapley value).
    """
    position = {mid: i for i, mid in enumerate(ids)}
    ranked = [mid for mid in ids if harm.get(mid, 0.0) > 1e-12]
    return sorted(ranked, key=lambda mid: (-harm[mid], position[mid]))
