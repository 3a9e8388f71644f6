"""``meclear-no-surrogate``: the engine without the surrogate candidates, nothing else changed."""

from __future__ import annotations

import pytest

from meclear_bench import BenchSettings, build_method
from meclear_bench.methods.meclear import MeClearMethod
from meclear_bench.methods.registry import method_names
from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.core.surrogate import SurrogateCandidates


@pytest.mark.parametrize("preset", ["default", "cheap", None])
def test_the_ablation_is_the_default_minus_the_surrogate(preset: str | None) -> None:
    settings = BenchSettings()
    suffix = f":{preset}" if preset else ""
    method = build_method("meclear-no-surrogate" + suffix, settings)
    base = build_method("meclear" + suffix, settings)
    assert isinstance(method, MeClearMethod) and isinstance(base, MeClearMethod)
    assert method.name == "meclear-no-surrogate" + suffix
    assert method.config.verification.surrogate is None
    assert base.config.verification.surrogate == SurrogateCandidates()
    restored = method.config.verification.model_copy(update={"surrogate": SurrogateCandidates()})
    assert method.config.updated(verification=restored) == base.config


def test_on_the_paper_preset_the_ablation_changes_nothing() -> None:
    settings = BenchSettings()
    method = build_method("meclear-no-surrogate:paper", settings)
    base = build_method("meclear:paper", settings)
    assert isinstance(method, MeClearMethod) and isinstance(base, MeClearMethod)
    assert method.config == base.config


def test_the_surrogate_is_no_longer_a_method_of_its_own() -> None:
    assert "meclear-no-surrogate" in method_names()
    assert "meclear-surrogate" not in method_names()
    with pytest.raises(ConfigurationError, match="unknown method 'meclear-surrogate'"):
        build_method("meclear-surrogate", BenchSettings())
