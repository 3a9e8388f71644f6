"""The missing-extra message: the extra of the missing module, found through the chain of
causes; an ImportError no extra explains is left to raise (a bug keeps its traceback)."""

from __future__ import annotations

import sys

import pytest

from meclear_integrations.cli import main
from meclear_integrations.cli.extras import EXTRA_OF, missing_extra_message


def _chained(name: str) -> ImportError:
    try:
        try:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        except ModuleNotFoundError as inner:
            raise ImportError("figures need it") from inner
    except ImportError as outer:
        return outer


def test_the_extra_of_the_missing_module() -> None:
    message = missing_extra_message(_chained("matplotlib.pyplot"), "explain")
    assert message == (
        "meclear explain needs the 'bench' extra (no module 'matplotlib.pyplot'): "
        "pip install 'meclear-integrations[bench]'"
    )


def test_an_own_hint_is_kept_and_an_unknown_module_is_a_bug() -> None:
    own = ImportError("the harm ledger needs SQLAlchemy:\n pip install 'x[ledger]'")
    assert missing_extra_message(own, "ledger") == (
        "meclear ledger: the harm ledger needs SQLAlchemy: pip install 'x[ledger]'"
    )
    unknown = ModuleNotFoundError(
        "No module named 'nothing_provides_me'", name="nothing_provides_me"
    )
    assert missing_extra_message(unknown, "soak") is None


def test_every_extra_named_is_declared() -> None:
    tomllib = pytest.importorskip("tomllib")
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    assert set(EXTRA_OF.values()) <= set(declared)


def test_a_command_meeting_a_missing_module_exits_2_with_one_line(monkeypatch, capsys) -> None:
    import meclear_integrations.cli.demo as demo

    def needs_tqdm(args) -> int:
        import tqdm  # noqa: F401  (hidden below)

        return 0

    monkeypatch.setitem(sys.modules, "tqdm", None)
    parser_args = {"handler": needs_tqdm}
    original = demo.register

    def register(sub):
        original(sub)
        sub.choices["demo"].set_defaults(**parser_args)

    monkeypatch.setattr(demo, "register", register)
    assert main(["demo"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "error: meclear demo needs the 'bench' extra (no module 'tqdm'): "
        "pip install 'meclear-integrations[bench]'\n"
    )
