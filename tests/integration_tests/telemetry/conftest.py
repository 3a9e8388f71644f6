"""The fixtures and hooks of ``tests/unit_tests/telemetry`` (one definition, both tiers)."""

from tests.unit_tests.telemetry import conftest as _unit

globals().update({k: v for k, v in vars(_unit).items() if not k.startswith("__")})
