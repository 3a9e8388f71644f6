"""Small contexts with known harm for ledger tests."""

from __future__ import annotations

from meclear_integrations import ClearanceConfig, ClearanceReport, MeClearEngine, Memory


def memories(*ids: str, text: str = "text of") -> list[Memory]:
    return [Memory(id=i, content=f"{text} {i}") for i in ids]


def evaluator(gold: set[str], faults: set[str]):
    """Passes when a gold memory is present and no fault is."""

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        ids = {m.id for m in coalition}
        return 1.0 if ids & gold and not ids & faults else 0.0

    return evaluate


def clear(context: list[Memory], gold: set[str], faults: set[str], prior=()) -> ClearanceReport:
    return MeClearEngine(ClearanceConfig()).clear(
        context, evaluator(gold, faults), prior_harmful=prior
    )
