"""A tqdm progress bar for long CLI loops: on stderr, off when stderr is no terminal."""

from __future__ import annotations

from typing import Any

__all__ = ["Bar"]


class Bar:
    """A progress bar over ``total`` items; a no-op when disabled or not on a terminal.

    Args:
        total: items the loop will finish.
        desc: the bar's label.
        unit: what one item is.
        enabled: False (``--no-progress``) never shows the bar.
    """

    def __init__(self, total: int, *, desc: str, unit: str, enabled: bool = True) -> None:
        """Open the bar (tqdm hides it by itself when stderr is not a TTY)."""
        self._bar: Any = None
        if enabled:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit, disable=None, leave=False)

    def update(self, n: int = 1) -> None:
        """Advance by ``n`` items.

        Args:
            n: items just finished.
        """
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        """Remove the bar."""
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
