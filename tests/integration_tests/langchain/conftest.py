"""The fixtures and hooks of ``tests/unit_tests/langchain`` (one definition, both tiers)."""

from tests.unit_tests.langchain import conftest as _unit

globals().update({k: v for k, v in vars(_unit).items() if not k.startswith("__")})
