"""How alike LoCoMo questions are under the ledger's lexical scope (threshold choice).

``python -m meclear_bench.scope_threshold --locomo DIR`` scores question pairs
with the lexical similarity of ``ledger.scope`` (Jaccard of normalised content words) and
reports, per threshold, the share of each kind of pair that would share a verified harm:
``in_scope`` under the ledger's rule (the Jaccard reaches the threshold *and* the two
questions' names agree, ``scope.names_agree``), and ``in_scope_without_names`` under the
Jaccard alone (the rule before schema version 3), with ``names_disagree``, the share of
pairs the name rule keeps apart whatever their words:

- ``paraphrase``: a question and its template rewording (the stream benchmark's
  ``PARAPHRASES``: "Remind me, ...", "... Do you remember?"): should be in scope;
- ``natural``: two different questions of a conversation whose gold evidence overlaps (a
  second question about the same fact): in scope is acceptable either way;
- ``unrelated``: two questions of a conversation whose evidence does not overlap: should
  not be in scope (a harm verified on one must not withhold the memory from the other).

Every pair of questions of a conversation is scored (about 150,000 pairs over the ten
conversations). LoCoMo is read from the path given; nothing of it is stored.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np

from meclear_integrations.ledger.scope import (
    LEXICAL_THRESHOLD,
    content_tokens,
    jaccard,
    name_tokens,
    names_agree,
)

from .locomo_data import load_locomo
from .stream_build import PARAPHRASES

__all__ = ["main", "measure"]

THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def measure(path: str, thresholds: Sequence[float] = THRESHOLDS) -> dict[str, Any]:
    """Score every question pair of every conversation (module docstring).

    Args:
        path: The LoCoMo file or directory.
        thresholds: The thresholds to report.

    Returns:
        Per kind of pair: its count, quantiles and the share at or above each threshold.
    """
    scores: dict[str, list[tuple[float, bool]]] = {"paraphrase": [], "natural": [], "unrelated": []}
    for conversation in load_locomo(path):
        questions = [q for q in conversation.questions if q.question.strip()]
        words = [(content_tokens(q.question), name_tokens(q.question)) for q in questions]
        for i, q in enumerate(questions):
            template = PARAPHRASES[q.index % len(PARAPHRASES)]
            text = q.question.strip()
            reworded = template.format(text=text, lower=text[:1].lower() + text[1:])
            scores["paraphrase"].append(_score(words[i], (content_tokens(reworded),
                                                          name_tokens(reworded))))  # fmt: skip
        for (i, a), (j, b) in combinations(enumerate(questions), 2):
            if a.question.strip() == b.question.strip():
                continue
            kind = "natural" if a.evidence & b.evidence else "unrelated"
            scores[kind].append(_score(words[i], words[j]))
    out: dict[str, Any] = {"threshold_in_use": LEXICAL_THRESHOLD, "kinds": {}}
    for kind, pairs in scores.items():
        array = np.asarray([value for value, _ in pairs])
        agree = np.asarray([ok for _, ok in pairs], dtype=bool)
        out["kinds"][kind] = {
            "pairs": int(array.size),
            "median": round(float(np.median(array)), 3) if array.size else None,
            "p99": round(float(np.percentile(array, 99)), 3) if array.size else None,
            "p99.9": round(float(np.percentile(array, 99.9)), 3) if array.size else None,
            "min": round(float(array.min()), 3) if array.size else None,
            "names_disagree": round(float((~agree).mean()), 5) if array.size else None,
            "in_scope": {
                f"{t:.1f}": round(float(((array >= t) & agree).mean()), 5) if array.size else None
                for t in thresholds
            },
            "in_scope_without_names": {
                f"{t:.1f}": round(float((array >= t).mean()), 5) if array.size else None
                for t in thresholds
            },
        }
    return out


def _score(
    a: tuple[frozenset[str], frozenset[str]], b: tuple[frozenset[str], frozenset[str]]
) -> tuple[float, bool]:
    """(Jaccard of the content words, whether the names agree) of two questions."""
    return jaccard(a[0], b[0]), names_agree(a[1], a[0], b[1], b[0])


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (module docstring).

    Args:
        argv: The arguments (None: ``sys.argv``).

    Returns:
        The exit code.
    """
    parser = argparse.ArgumentParser(
        prog="python -m meclear_bench.scope_threshold",
        description="Lexical similarity of LoCoMo question pairs under the ledger's scope.",
    )
    parser.add_argument("--locomo", required=True, help="LoCoMo file or directory")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.locomo), indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
