"""Stream benchmark results: costs, recovery, accuracy, review, the repeat-cost target.

Per configuration (method x trigger policy): model calls per query (online clearance, and
offline feedback replays), the share of queries triggered, answer accuracy over the whole
stream, recovery of the failing queries an oracle could fix, and the review against the
injected faults (``review(min_queries=N)`` at the end of the stream): precision over the
proposed records, recall per injected fault (a fault counts as found when acting on the
proposals removes its harm: its record for a direct fault, both records of a redundant
pair, either record of a joint pair) over all injected faults and over the *eligible* ones
(retrieved, about the query and failing it for at least N distinct query texts), and
recall per record.

The repeat-cost target compares, under the same trigger policy, ``meclear+ledger`` with
``meclear`` (cold) on the same failing queries that come after a verified clearance of one
of their faults (``warm`` in the ledger run): the ratio of their model calls and the
difference of their recoveries, with 95% two-level cluster-bootstrap intervals
(conversations, then queries).

Every figure is SIMULATED (the simulated evidence world stands in for the agent and judge).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from .bootstrap import ClusterBootstrap, percentile_interval
from .stream_build import StreamBuild
from .stream_run import ConfigRun, QueryOutcome

__all__ = ["REPEAT_COST_TARGET", "stream_results", "write_stream_outputs"]

REPEAT_COST_TARGET = 0.25
"""Later faulty queries should cost at most this share of a cold clearance."""
REVIEW_TARGET = {"precision": 0.95, "recall": 0.8}


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def _bootstrap(outcomes: list[QueryOutcome], replicates: int, seed: int) -> ClusterBootstrap:
    return ClusterBootstrap(
        [o.conversation for o in outcomes],
        [f"{o.conversation}/{o.position}" for o in outcomes],
        replicates=replicates,
        seed=seed,
    )


def _interval(values: np.ndarray, outcomes: list[QueryOutcome], replicates: int, seed: int):
    if not outcomes or replicates == 0:
        return None
    boot = _bootstrap(outcomes, replicates, seed)
    return boot.interval(values, np.ones(len(outcomes)))


def _review(run: ConfigRun, build: StreamBuild) -> dict[str, Any]:
    faults = {s.conversation: s.faults for s in build.streams}
    proposed = tp = records = found_records = 0
    groups = found = eligible_groups = found_eligible = 0
    for review in run.reviews:
        chosen = set(review.proposed)
        injected = {f.memory_id for f in faults[review.conversation]}
        proposed += len(chosen)
        tp += len(chosen & injected)
        records += len(injected)
        found_records += len(chosen & injected)
        by_target: dict[int, list[Any]] = defaultdict(list)
        for f in faults[review.conversation]:
            by_target[f.target].append(f)
        eligible = set(review.eligible)
        for members in by_target.values():
            ids = {f.memory_id for f in members}
            structure = members[0].structure
            hit = bool(ids & chosen) if structure == "joint" else ids <= chosen
            groups += 1
            found += hit
            if (structure == "joint" and ids & eligible) or ids <= eligible:
                eligible_groups += 1
                found_eligible += hit
    return {
        "proposals": proposed,
        "true_proposals": tp,
        "precision": _rate(tp, proposed),
        "faults": groups,
        "faults_found": found,
        "recall": _rate(found, groups),
        "eligible_faults": eligible_groups,
        "recall_eligible": _rate(found_eligible, eligible_groups),
        "fault_records": records,
        "record_recall": _rate(found_records, records),
    }


def _config_block(run: ConfigRun, build: StreamBuild, replicates: int, seed: int) -> dict:
    o = run.outcomes
    n = len(o)
    online = np.array([x.model_calls for x in o], dtype=float)
    offline = np.array([x.offline_calls for x in o], dtype=float)
    correct = np.array([x.correct for x in o], dtype=float)
    fixable = [x for x in o if x.failing and x.recoverable]
    recovered = np.array([x.correct for x in fixable], dtype=float)
    modes: dict[str, int] = defaultdict(int)
    for x in o:
        modes[x.mode] += 1
    block: dict[str, Any] = {
        "method": run.method,
        "policy": run.policy,
        "queries": n,
        "model_calls_per_query": float(online.mean()) if n else None,
        "offline_calls_per_query": float(offline.mean()) if n else None,
        "total_calls_per_query": float((online + offline).mean()) if n else None,
        "model_calls_per_query_ci": _interval(online, o, replicates, seed),
        "triggered_share": _rate(sum(x.triggered for x in o), n),
        "accuracy": float(correct.mean()) if n else None,
        "accuracy_ci": _interval(correct, o, replicates, seed),
        "failing_queries": sum(x.failing for x in o),
        "recoverable_failing_queries": len(fixable),
        "recovery": float(recovered.mean()) if fixable else None,
        "recovery_ci": _interval(recovered, fixable, replicates, seed),
        "modes": dict(sorted(modes.items())),
        "ledger": run.ledger_path,
    }
    if run.reviews:
        block["review"] = _review(run, build)
    return block


def _pair_block(
    pairs: list[tuple[QueryOutcome, QueryOutcome]], replicates: int, seed: int
) -> dict[str, Any]:
    block: dict[str, Any] = {"pairs": len(pairs)}
    if not pairs:
        return block
    rows = [w for w, _ in pairs]
    warm_calls = np.array([w.model_calls for w, _ in pairs], dtype=float)
    cold_calls = np.array([c.model_calls for _, c in pairs], dtype=float)
    warm_ok = np.array([w.correct for w, _ in pairs], dtype=float)
    cold_ok = np.array([c.correct for _, c in pairs], dtype=float)
    ratio = float(warm_calls.sum() / cold_calls.sum()) if cold_calls.sum() else None
    ratio_ci = diff_ci = None
    if replicates:
        boot = _bootstrap(rows, replicates, seed)
        ratio_ci = boot.interval(warm_calls, cold_calls)
        diff_ci = percentile_interval(boot.ratio(warm_ok - cold_ok, np.ones(len(rows))))
    block.update(
        ledger_calls_per_query=float(warm_calls.mean()),
        cold_calls_per_query=float(cold_calls.mean()),
        ratio=ratio,
        ratio_ci=ratio_ci,
        recovery_ledger=float(warm_ok.mean()),
        recovery_cold=float(cold_ok.mean()),
        recovery_difference=float((warm_ok - cold_ok).mean()),
        recovery_difference_ci=diff_ci,
        ledger_guided_share=sum(w.mode == "ledger_guided" for w in rows) / len(rows),
    )
    return block


def _repeat_cost(
    warm_run: ConfigRun, cold_run: ConfigRun, replicates: int, seed: int
) -> dict[str, Any]:
    """Compare ledger-guided and cold clearance on the same failing queries.

    The queries failed after a verified clearance of one of their faults. The comparison runs
    over those an oracle could fix (``recoverable``: the target) and over
    all of them (a query whose gold memory was pushed out cannot be fixed by clearing; the
    shortcut's failed attempt then adds its T calls to the cold run).
    """
    cold = {(x.conversation, x.position): x for x in cold_run.outcomes}
    pairs = [
        (x, cold[(x.conversation, x.position)])
        for x in warm_run.outcomes
        if x.warm and x.failing and (x.conversation, x.position) in cold
    ]
    fixable = [(w, c) for w, c in pairs if w.recoverable]
    block: dict[str, Any] = {
        "policy": warm_run.policy,
        "target": REPEAT_COST_TARGET,
        "recoverable": _pair_block(fixable, replicates, seed),
        "all": _pair_block(pairs, replicates, seed),
    }
    main = block["recoverable"]
    block["target_met"] = bool(
        main.get("ratio_ci") is not None
        and main["ratio_ci"][1] <= REPEAT_COST_TARGET
        and main.get("recovery_difference_ci") is not None
        and main["recovery_difference_ci"][0] >= 0.0
    )
    return block


def _cost_by_occurrence(runs: list[ConfigRun], policy: str) -> dict[str, dict[str, float]]:
    """Mean model calls of failing queries by the occurrence number of their fault."""
    out: dict[str, dict[str, float]] = {}
    for run in runs:
        if run.policy != policy or run.method == "none":
            continue
        seen: dict[tuple[str, str], int] = defaultdict(int)
        sums: dict[int, list[float]] = defaultdict(list)
        for x in run.outcomes:
            if not x.fault_ids:
                continue
            key = (x.conversation, min(x.fault_ids))
            seen[key] += 1
            if x.failing:
                sums[min(seen[key], 4)].append(x.model_calls)
        out[run.method] = {str(k): float(np.mean(v)) for k, v in sorted(sums.items())}
    return out


def stream_results(
    build: StreamBuild,
    runs: list[ConfigRun],
    *,
    replicates: int = 2000,
    seed: int = 0,
    target_policy: str = "judge",
    review_min_queries: int = 2,
    command: str = "",
    judge: str = "reference",
    temperature: float | None = None,
) -> dict[str, Any]:
    """The results document of a stream benchmark run.

    Args:
        build: The streams.
        runs: Every (method, policy) configuration's run.
        replicates: The bootstrap replicates.
        seed: The bootstrap seed.
        target_policy: The policy the headline compares.
        review_min_queries: ``review``'s ``min_queries``.
        command: The command that reproduces the run.
        judge: The success signal's name.
        temperature: The simulated reader's temperature.

    Returns:
        The document.
    """
    configs = {f"{r.method} / {r.policy}": _config_block(r, build, replicates, seed) for r in runs}
    by_key = {(r.method, r.policy): r for r in runs}
    repeat: dict[str, Any] = {}
    for policy in dict.fromkeys(r.policy for r in runs):
        warm, cold = by_key.get(("meclear+ledger", policy)), by_key.get(("meclear", policy))
        if warm is not None and cold is not None:
            repeat[policy] = _repeat_cost(warm, cold, replicates, seed)
    return {
        "simulated": True,
        "note": "SIMULATED evidence world: a stand-in for an LLM agent and judge, not "
        "real-model results",
        "command": command,
        "funnel": build.funnel,
        "judge": judge,
        "temperature": temperature,
        "cost": "agent + judge model calls a user pays (deduplicated per query)",
        "review_min_queries": review_min_queries,
        "configs": configs,
        "repeat_cost": repeat,
        "repeat_cost_target_policy": target_policy,
        "cost_by_occurrence": _cost_by_occurrence(runs, target_policy),
        "targets": {"repeat_cost_ratio": REPEAT_COST_TARGET, "review": REVIEW_TARGET},
    }


def _fmt(x: float | None, pct: bool = False) -> str:
    if x is None:
        return "-"
    return f"{100 * x:.1f}%" if pct else f"{x:.2f}"


def _ci(ci: Any, pct: bool = False) -> str:
    if not ci:
        return ""
    return f" [{_fmt(ci[0], pct)}, {_fmt(ci[1], pct)}]"


def render_stream_markdown(results: dict[str, Any]) -> str:
    """The report.md of a stream run.

    Args:
        results: The stream run's results.

    Returns:
        The Markdown.
    """
    lines = [
        "# Stream benchmark (SIMULATED)",
        "",
        results["note"] + ".",
        "",
        f"Judge: {results.get('judge', 'reference')}; world temperature: "
        f"{results.get('temperature') if results.get('temperature') is not None else 'each query'}"
        "'s own; costs: agent + judge model calls a user pays (deduplicated per query).",
        "",
        f"Command: `{results['command']}`" if results["command"] else "",
        "",
        "| method / policy | calls/query | offline/query | triggered | accuracy | recovery |"
        f" review P (N={results['review_min_queries']}) | review R (all / eligible) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, b in results["configs"].items():
        review = b.get("review") or {}
        lines.append(
            f"| {name} | {_fmt(b['model_calls_per_query'])}{_ci(b['model_calls_per_query_ci'])}"
            f" | {_fmt(b['offline_calls_per_query'])} | {_fmt(b['triggered_share'], True)}"
            f" | {_fmt(b['accuracy'], True)}{_ci(b['accuracy_ci'], True)}"
            f" | {_fmt(b['recovery'], True)} ({b['recoverable_failing_queries']})"
            f" | {_fmt(review.get('precision'), True)} ({review.get('proposals', '-')})"
            f" | {_fmt(review.get('recall'), True)} / {_fmt(review.get('recall_eligible'), True)}"
            " |"
        )
    lines += ["", "## Repeat clearances (ledger-guided vs cold, same queries)", ""]
    lines.append(
        "Failing queries that come after a verified clearance of one of their faults; "
        "`recoverable`: those an oracle removal of the faults fixes (the target), `all`: "
        f"every one. Target: ratio <= {REPEAT_COST_TARGET} (upper 95% bound) at equal "
        "recovery."
    )
    lines.append("")
    for policy, r in results["repeat_cost"].items():
        for scope in ("recoverable", "all"):
            b = r[scope]
            if not b.get("pairs"):
                lines.append(f"- {policy} ({scope}): no such query")
                continue
            lines.append(
                f"- {policy} ({scope}, {b['pairs']} queries, "
                f"{_fmt(b['ledger_guided_share'], True)} ledger-guided): "
                f"{_fmt(b['ledger_calls_per_query'])} vs {_fmt(b['cold_calls_per_query'])} "
                f"model calls per query, ratio {_fmt(b['ratio'])}{_ci(b['ratio_ci'])}; "
                f"recovery {_fmt(b['recovery_ledger'], True)} vs "
                f"{_fmt(b['recovery_cold'], True)}, difference "
                f"{_fmt(b['recovery_difference'], True)}{_ci(b['recovery_difference_ci'], True)}"
            )
        lines.append(f"  target met ({policy}): {r['target_met']}")
    lines += ["", "## Funnel", "", "```", json.dumps(results["funnel"], indent=2), "```", ""]
    return "\n".join(lines)


def _figure(runs: list[ConfigRun], results: dict[str, Any], path: Path) -> Path:
    from .figures import load_pyplot

    plt = load_pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    policies = list(dict.fromkeys(r.policy for r in runs if r.method != "none"))
    colors = {p: f"C{i % 10}" for i, p in enumerate(policies)}
    for run in runs:
        if run.method == "none":
            continue
        by_conv: dict[str, list[float]] = defaultdict(list)
        for x in run.outcomes:
            by_conv[x.conversation].append(x.model_calls + x.offline_calls)
        longest = max(len(v) for v in by_conv.values())
        curve = []
        for t in range(longest):
            values = [np.mean(v[: t + 1]) for v in by_conv.values() if len(v) > t]
            curve.append(float(np.mean(values)))
        style = "-" if run.method == "meclear+ledger" else "--"
        left.plot(
            range(1, longest + 1),
            curve,
            style,
            color=colors[run.policy],
            label=f"{run.method} / {run.policy}",
        )
    left.set_xlabel("query of the conversation's stream")
    left.set_ylabel("model calls per query so far\n(online + offline, mean over conversations)")
    left.set_title("Cost over the stream (SIMULATED)")
    left.legend(fontsize=7)
    occ = results["cost_by_occurrence"]
    labels = ["1st", "2nd", "3rd", "4th+"]
    width = 0.8 / max(1, len(occ))
    for j, (method, values) in enumerate(occ.items()):
        xs = [i + j * width for i in range(len(labels))]
        ys = [values.get(str(i + 1), float("nan")) for i in range(len(labels))]
        right.bar(xs, ys, width, label=method)
    right.set_xticks([i + 0.4 - width / 2 for i in range(len(labels))], labels)
    right.set_xlabel("occurrence of the fault in the stream (failing queries)")
    right.set_ylabel("model calls per query")
    right.set_title(f"Repeat faults, policy {results['repeat_cost_target_policy']} (SIMULATED)")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_stream_outputs(
    out_dir: Path, build: StreamBuild, runs: list[ConfigRun], results: dict[str, Any], *,
    figures: bool = True,
) -> dict[str, Path]:  # fmt: skip
    """results.json, report.md, queries.jsonl and (with ``figures``) stream_calls.png.

    Args:
        out_dir: The output directory.
        build: The streams.
        runs: The configurations' runs.
        results: The results document.
        figures: Draw the figure.

    Returns:
        Output name -> file written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {
        "results": out_dir / "stream_results.json",
        "report": out_dir / "stream_report.md",
        "queries": out_dir / "stream_queries.jsonl",
    }
    written["results"].write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    written["report"].write_text(render_stream_markdown(results), encoding="utf-8")
    with open(written["queries"], "w", encoding="utf-8") as handle:
        for run in runs:
            for x in run.outcomes:
                row = {"method": run.method, "policy": run.policy, **x.model_dump(mode="json")}
                handle.write(json.dumps(row) + "\n")
    if figures:
        written["figure"] = _figure(runs, results, out_dir / "stream_calls.png")
    return written
