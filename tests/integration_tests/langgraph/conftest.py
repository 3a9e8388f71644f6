"""The fixtures of ``tests/unit_tests/langgraph`` (one definition, both tiers)."""

from tests.unit_tests.langgraph import conftest as _unit

globals().update({k: v for k, v in vars(_unit).items() if not k.startswith("__")})
