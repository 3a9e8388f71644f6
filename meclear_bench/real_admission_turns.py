"""A small stratified sample of A-MAC's LoCoMo turn candidates, for a run on a real model.

``python -m meclear_bench.real_admission_turns --locomo DIR --split test --per-label 1
--out OUT [meclear admission-bench flags]`` takes, for every conversation of the split,
``--per-label`` cited turns (Store) and as many uncited turns (Do-Not-Store) of A-MAC's
public protocol (:mod:`.admission_locomo_turns`: every dialogue turn a candidate, Store iff
a QA question cites it) and decides them with every method as ``meclear admission-bench
--cases`` does (journalled in ``OUT``, resumable, ``--agent-model`` / ``--base-url``; the
candidates keep their own reason type, ``not_needed_later``, which a case file cannot
carry). The turns of each label are taken evenly
spaced over the conversation (nothing random: the same data give the same file), so the
sample is half Store, spread over every test conversation, whatever the protocol's own
Store share (about one turn in four). A real call takes seconds on a small CPU, so a real
model decides a sample; the whole protocol is :mod:`.admission_locomo_headline`'s.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Sequence

from .admission_locomo import BenchCandidate
from .admission_locomo_turns import turn_candidates
from .admission_sample import interleaved

__all__ = ["main", "turn_sample"]


def _spread(group: Sequence[BenchCandidate], n: int) -> list[BenchCandidate]:
    """``n`` of ``group`` at evenly spaced positions (the middle of each of n equal parts)."""
    n = min(n, len(group))
    return [group[int((i + 0.5) * len(group) / n)] for i in range(n)]


def turn_sample(
    candidates: Sequence[BenchCandidate], split: str, per_label: int
) -> list[BenchCandidate]:
    """Per conversation of ``split``, ``per_label`` cited and ``per_label`` uncited turns.

    Args:
        candidates: A-MAC turn candidates (:func:`.admission_locomo_turns.turn_candidates`).
        split: ``dev``, ``test`` or ``all``.
        per_label: Turns of each label per conversation (at least 1).

    Returns:
        The sample, conversation by conversation, each in dialogue order.

    Raises:
        ValueError: ``per_label`` is below 1.
    """
    if per_label < 1:
        raise ValueError(f"per_label must be at least 1 (got {per_label})")
    groups: dict[tuple[str, str], list[BenchCandidate]] = defaultdict(list)
    for c in candidates:
        if split == "all" or c.split == split:
            groups[(c.source, c.label)].append(c)
    keep = {c.id for group in groups.values() for c in _spread(group, per_label)}
    return [c for c in candidates if c.id in keep]


def main(argv: Sequence[str] | None = None) -> int:
    """Decide the sample (module docstring) with ``meclear admission-bench``'s machinery.

    Every flag but ``--per-label`` is ``meclear admission-bench``'s (``--locomo``,
    ``--split``, ``--out``, ``--methods``, ``--agent-model``, ``--base-url``,
    ``--agent-kwargs``, ``--bootstrap``, ``--retry-failed``, ``--report-only``, ...): the
    decisions go to ``journal.jsonl`` in ``--out`` as they finish, a rerun resumes, and
    ``results.json`` / ``report.md`` are rewritten after each case.

    Args:
        argv: Command-line arguments (default: ``sys.argv``).

    Returns:
        The exit status (2 on a configuration error, as ``meclear admission-bench``).
    """
    from meclear_integrations.cli import build_parser
    from meclear_integrations.core.errors import ConfigurationError

    from .admission_eval import METHODS
    from .cli.admission_bench import _journalled_run, _methods

    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--per-label", type=int, default=1)
    mine, rest = own.parse_known_args(argv)
    args = build_parser().parse_args(["admission-bench", *rest])
    if args.locomo is None:
        print("error: --locomo is required", file=sys.stderr)
        return 2
    try:
        sample = turn_sample(turn_candidates(args.locomo), args.split, mine.per_label)
        store = sum(c.label == "store" for c in sample)
        selection = (
            f"A-MAC's protocol (every dialogue turn a candidate, Store iff a QA question "
            f"cites it): {mine.per_label} cited and {mine.per_label} uncited turn(s) per "
            f"{args.split} conversation, evenly spaced ({len(sample)} turns, {store} Store)"
        )
        result = _journalled_run(
            args,
            sample,
            interleaved(sample, lambda c: c.label),
            _methods(args, METHODS),
            f"{args.locomo} (A-MAC turns, {args.split} split)",
            None,
            selection,
        )
    except ConfigurationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    done = "" if result.complete else f", PARTIAL: {result.n_finished} finished"
    print(f"A-MAC turn sample, {result.n_cases} candidates ({result.model}{done})")
    for m in result.methods:
        k = m.metrics
        print(
            f"  {m.method:<11} bal.acc {100 * k.balanced_accuracy:5.1f}%  macro-F1 "
            f"{100 * k.macro_f1:5.1f}%  errors {k.errors}  calls/case {m.calls_per_case:.2f}"
        )
    print(f"wrote {args.out / 'results.json'} and {args.out / 'report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
