"""``meclear-surrogate``: the engine with the surrogate candidate source, nothing else changed."""

from __future__ import annotations

from meclear_bench import BenchSettings, build_method
from meclear_bench.methods.meclear import MeClearMethod
from meclear_integrations.core.surrogate import SurrogateCandidates


def test_the_variant_is_the_default_plus_the_surrogate() -> None:
    settings = BenchSettings()
    for preset in ("default", None):
        spec = "meclear-surrogate" + (f":{preset}" if preset else "")
        method = build_method(spec, settings)
        base = build_method("meclear" + (f":{preset}" if preset else ""), settings)
        assert isinstance(method, MeClearMethod) and isinstance(base, MeClearMethod)
        assert method.name == spec
        assert method.config.verification.surrogate == SurrogateCandidates()
        assert base.config.verification.surrogate is None
        unchanged = method.config.verification.model_copy(update={"surrogate": None})
        assert method.config.updated(verification=unchanged) == base.config
