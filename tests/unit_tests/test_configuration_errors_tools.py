"""Configuration errors of the benchmark, simulation, ledger, triggers and CLI are the package's.

Each is a ``ConfigurationError`` (a ``MeClearError``) and still the ``ValueError`` or
``TypeError`` it was, so ``except ValueError`` / ``except TypeError`` code keeps working.
"""

from __future__ import annotations

import pytest

from meclear_bench import BenchSettings, build_method, load_builtin_cases
from meclear_bench.bootstrap import ClusterBootstrap
from meclear_bench.scale_games import ScaleFamily, scale_game
from meclear_bench.shards import merge_runs, parse_shard
from meclear_bench.split import split_cases
from meclear_bench.stream_run import make_trigger
from meclear_integrations.cli.soak import run_soak
from meclear_integrations.core.errors import ConfigurationError, ConfigurationTypeError
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.ledger.review import rank_proposals, wilson_lower_bound
from meclear_integrations.simulation import JudgeSignal
from meclear_integrations.triggers import (
    AnyOf,
    EveryN,
    EverySeconds,
    OnNegativeFeedback,
    Sampling,
    TokenBudget,
)


@pytest.mark.parametrize(
    "call",
    [
        lambda: parse_shard("5/4"),
        lambda: merge_runs([]),
        lambda: build_method("no-such-method", BenchSettings()),
        lambda: build_method("loo:paper", BenchSettings()),
        lambda: split_cases(load_builtin_cases(), "test"),
        lambda: ClusterBootstrap(["c1"], ["q1", "q2"]),
        lambda: make_trigger("no-such-policy", None, seed=0),
        lambda: run_soak(queries=0),
        lambda: JudgeSignal.parse("oracle"),
        lambda: JudgeSignal.parse("noisy:high"),
        lambda: scale_game(1, ScaleFamily("redundant", copies=2), seed=0),
        lambda: wilson_lower_bound(1, 2, confidence=1.5),
        lambda: rank_proposals([], min_queries=0),
        lambda: HarmLedger("sqlite://", namespace=""),
        lambda: Sampling(1.5),
        lambda: EveryN(0),
        lambda: EverySeconds(0),
        lambda: TokenBudget(0),
        lambda: OnNegativeFeedback(window=0),
        lambda: AnyOf(),
    ],
    ids=[
        "shard",
        "merge-nothing",
        "unknown-method",
        "preset-on-baseline",
        "split-without-locomo",
        "bootstrap-lengths",
        "unknown-policy",
        "soak-bounds",
        "unknown-judge",
        "judge-level",
        "scale-k",
        "wilson-confidence",
        "review-min-queries",
        "ledger-namespace",
        "sampling-rate",
        "every-n",
        "every-seconds",
        "token-budget",
        "feedback-window",
        "empty-composite",
    ],
)
def test_value_errors_are_configuration_errors(call) -> None:
    with pytest.raises(ConfigurationError) as raised:
        call()
    assert isinstance(raised.value, ValueError)


def test_type_errors_are_configuration_type_errors() -> None:
    with pytest.raises(ConfigurationTypeError) as raised:
        AnyOf(EveryN(2), "always")  # type: ignore[arg-type]
    assert isinstance(raised.value, TypeError)
    from meclear_integrations.core import MeClearEngine
    from meclear_integrations.simulation import redundant_harm_example

    case = redundant_harm_example()
    report = MeClearEngine().clear(case.memories, case.evaluator())
    with HarmLedger("sqlite://") as ledger:
        run = ledger.record(report, query=case.query)
        with pytest.raises(ConfigurationTypeError) as raised:
            ledger.feedback(run.run_id, correct="no")  # type: ignore[arg-type]
        assert isinstance(raised.value, TypeError)
        with pytest.raises(ConfigurationError, match="not in the context"):
            ledger.feedback(run.run_id, correct=False, memory_ids=["not-retrieved"])
