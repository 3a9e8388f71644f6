"""Fixtures of the real-model benchmark tests: a small synthetic LoCoMo-format conversation
whose memories state their answers (so the text-reading stand-in can answer), and helpers
to run ``meclear bench`` against the stand-in served on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FACTS_A = [
    ["Ana went hiking in the Alps with her cousin Lea.", "D1:1"],
    ["Ana adopted a cat named Miso from the shelter.", "D1:2"],
    ["Ana bakes sourdough bread every Sunday morning.", "D1:3"],
    ["Ana moved to Lisbon from Porto for a new job.", "D1:4"],
    ["Ana plays the cello in a community orchestra.", "D1:5"],
    ["Ana is reading the novel Dune this month.", "D1:6"],
]
FACTS_B = [
    ["Ben ran the city marathon in Berlin last spring.", "D2:1"],
    ["Ben visited Madrid for a football match.", "D2:2"],
    ["Ben plays the guitar in a small jazz band.", "D2:3"],
    ["Ben bought a red bicycle for commuting to work.", "D2:4"],
    ["Ben adopted a dog named Rex from a farm.", "D2:5"],
    ["Ben is reading the novel Emma by Jane Austen.", "D2:6"],
]
QA = [
    ("Where did Ana go hiking?", "the Alps", "D1:1", 4),
    ("What is the name of Ana's cat?", "Miso", "D1:2", 1),
    ("What instrument does Ana play?", "cello", "D1:5", 1),
    ("What novel is Ana reading?", "Dune", "D1:6", 1),
    ("Where did Ben run the city marathon?", "Berlin", "D2:1", 4),
    ("Where did Ben visit for a football match?", "Madrid", "D2:2", 4),
    ("What instrument does Ben play?", "guitar", "D2:3", 1),
    ("What is the name of Ben's dog?", "Rex", "D2:5", 1),
    ("What novel is Ben reading?", "Emma", "D2:6", 1),
]


def conversation() -> dict[str, Any]:
    """One conversation in LoCoMo's per-conversation (flattened) layout."""
    return {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "hi"}],
        "session_2_date_time": "10:00 am on 21 June, 2023",
        "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "hey"}],
        "session_1_observation": {"Ana": FACTS_A, "Ben": []},
        "session_2_observation": {"Ana": [], "Ben": FACTS_B},
        "qa": [{"question": q, "answer": a, "evidence": [e], "category": c} for q, a, e, c in QA],
    }


def write_conversations(folder: Path, ids: tuple[str, ...] = ("1", "2")) -> Path:
    """The synthetic conversation under each id (two bootstrap clusters by default)."""
    folder.mkdir(parents=True, exist_ok=True)
    for cid in ids:
        (folder / f"{cid}.json").write_text(json.dumps(conversation()), encoding="utf-8")
    return folder


def model_flags(url: str, cache: Path) -> list[str]:
    """``meclear bench`` flags for the stand-in served at ``url``."""
    return [
        "--agent-model",
        "text-reader",
        "--base-url",
        url,
        "--cache",
        str(cache),
        "--concurrency",
        "2",
        "--no-progress",
        "--no-figures",
        "--bootstrap",
        "200",
    ]


def comparable(results: Any) -> Any:
    """``results`` without what legitimately differs between equal runs (wall times, the
    run's own call totals, where it was written)."""
    if isinstance(results, dict):
        return {
            k: comparable(v)
            for k, v in results.items()
            if "wall" not in k
            and k not in ("calls", "calls_this_invocation", "merged_from", "shard", "source")
        }
    if isinstance(results, list):
        return [comparable(v) for v in results]
    return results


def load_results(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))
