"""The docs site's structure: every page is in the navigation, every API page renders one
subpackage's public surface (its ``__all__``), and the site builds offline.

``mkdocs build --strict`` itself runs in CI (.ci/run); these checks are the cheap part of it.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")  # the docs extra (in dev)

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CONFIG = ROOT / "mkdocs.yml"


def _nav_pages(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    return []


def _config() -> dict:
    return yaml.safe_load(CONFIG.read_text(encoding="utf-8"))


def test_every_page_is_in_the_navigation_and_every_entry_exists() -> None:
    nav = _nav_pages(_config()["nav"])
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert len(pages) > 30
    assert pages == set(nav), (pages - set(nav), set(nav) - pages)


API_PAGES = sorted((DOCS / "api").glob("*.md"))


def test_the_api_reference_covers_the_user_facing_subpackages() -> None:
    rendered = {
        target
        for page in API_PAGES
        for target in re.findall(r"^::: (\S+)$", page.read_text(encoding="utf-8"), flags=re.M)
    }
    for name in ("core", "langchain", "llama_index", "ledger", "triggers", "jobs", "admission"):
        assert f"meclear_integrations.{name}" in rendered
    for name in ("telemetry", "exports", "judges"):
        assert f"meclear_integrations.{name}" in rendered


@pytest.mark.parametrize("page", API_PAGES, ids=lambda p: p.name)
def test_api_pages_render_public_surfaces(page: Path) -> None:
    """Each ``::: module`` renders what the module's ``__all__`` exports (``filters: public``)."""
    targets = re.findall(r"^::: (\S+)$", page.read_text(encoding="utf-8"), flags=re.M)
    if page.name == "index.md":
        assert not targets
        return
    assert targets, f"{page.name} renders no module"
    for target in targets:
        try:
            module = importlib.import_module(target)
        except ImportError as error:  # an extra not installed
            pytest.skip(str(error))
        exported = getattr(module, "__all__", None)
        assert exported, f"{target} has no __all__: its API page would list plumbing"
        assert all(hasattr(module, name) for name in exported), target


def test_the_site_builds_offline_and_from_all() -> None:
    config = _config()
    plugins = {next(iter(p)) if isinstance(p, dict) else p for p in config["plugins"]}
    assert plugins == {"search", "mkdocstrings"}  # nothing that downloads (social, privacy...)
    assert config["theme"]["font"] is False  # no web-font request
    mkdocstrings = next(p["mkdocstrings"] for p in config["plugins"] if isinstance(p, dict))
    python = mkdocstrings["handlers"]["python"]
    assert python["options"]["filters"] == "public"
    assert "inventories" not in python  # no remote objects.inv
    assert config["strict"] is True
