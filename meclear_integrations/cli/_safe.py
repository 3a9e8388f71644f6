"""Every CLI output of stored text neutralises control characters.

Memory ids and texts, queries, reasons and actors in the ledger are hostile input: a
memory id carrying an escape sequence (clipboard write, line erase, hidden text) printed
raw by ``meclear ledger review`` would act on the reader's terminal. :func:`safe_output`
wraps ``sys.stdout`` and ``sys.stderr`` for the duration of a command, so every table, JSON
and CSV line any command prints goes through :func:`~meclear_integrations.core.text.terminal_safe`
(the progress bar on stderr keeps its carriage return); :func:`safe_text` is the same filter
for what a command writes to a file (``--out``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from ..core.text import terminal_safe

__all__ = ["SafeStream", "framed_lines", "safe_output", "safe_text"]


def safe_text(text: str) -> str:
    r"""``text`` with control characters shown as ``\uXXXX`` (newlines and tabs kept).

    Args:
        text: what a command prints or writes.

    Returns:
        The neutralised text.
    """
    return terminal_safe(text)


class SafeStream:
    """A text stream that neutralises control characters before writing.

    Args:
        stream: the stream written to (``sys.stdout``...).
        keep: control characters passed through (a carriage return on stderr for progress bars).
    """

    def __init__(self, stream: TextIO, *, keep: str = "") -> None:
        self._stream = stream
        self._keep = keep

    @property
    def wrapped(self) -> TextIO:
        """The stream written to."""
        return self._stream

    def write(self, text: str) -> int:
        """Write ``text`` neutralised; returns the length of ``text`` (as a stream does)."""
        self._stream.write(terminal_safe(text, keep=self._keep))
        return len(text)

    def writelines(self, lines: Any) -> None:
        """Write each line neutralised."""
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def safe_output() -> Iterator[None]:
    """Neutralise control characters on stdout and stderr inside the block.

    Yields:
        Nothing; the streams are restored on exit.
    """
    out, err = sys.stdout, sys.stderr
    sys.stdout = SafeStream(out)
    sys.stderr = SafeStream(err, keep="\r")
    try:
        yield
    finally:
        if isinstance(sys.stdout, SafeStream):
            sys.stdout = out
        if isinstance(sys.stderr, SafeStream):
            sys.stderr = err


def framed_lines(framed: Sequence[Any]) -> str:
    """The review table's note on memories set aside because suspects were kept.

    Args:
        framed: ``ledger.review.FramedCandidate`` entries.

    Returns:
        Lines to append to the table (empty when there are none).
    """
    if not framed:
        return ""
    lines = ["", "not proposed: every verified removal kept instruction-like (suspect) memories"]
    for f in framed:
        lines.append(
            f"  {f.memory_id}: removed for {f.harmful_queries} queries while suspects "
            f"{', '.join(f.suspect_ids)} stayed; look at the interaction (runs "
            f"{', '.join(r[:8] for r in f.run_ids[:3])})"
        )
    return "\n".join(lines)
