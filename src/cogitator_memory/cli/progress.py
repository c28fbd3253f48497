"""Progress of long commands on stderr: a line redrawn in place on a terminal, plain lines otherwise.

The command line reports its long work (reading and writing entries in ``import``, ``export``
and ``show``) through one :class:`Progress`. It writes nothing unless it is on: by default when
stderr is a terminal, forced with ``--progress`` (then also into a file or a pipe, as plain
lines) or silenced with ``--no-progress``. Stdout, where the command's result goes, is never
touched, so ``export > file`` and ``show | less`` stay clean.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TextIO

#: Seconds a step runs before a terminal shows its progress (quick commands show none).
TERMINAL_DELAY = 0.3
#: Seconds between two redraws on a terminal.
TERMINAL_INTERVAL = 0.1
#: Seconds between two lines when the progress goes to a file or a pipe.
PLAIN_INTERVAL = 1.0


class Progress:
    """Reports the steps of a command and how far each is (see the module docstring).

    ``enabled`` ``None`` means "when ``stream`` is a terminal". On a terminal the current step
    is one line redrawn with a carriage return, shown only once the step has run for
    :data:`TERMINAL_DELAY` seconds and cleared when it ends; elsewhere each step writes a line
    when it starts, one every :data:`PLAIN_INTERVAL` seconds, and one when it ends.
    """

    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.terminal = bool(isatty is not None and isatty())
        self.enabled = self.terminal if enabled is None else enabled
        self._label = ""
        self._unit = ""
        self._total: int | None = None
        self._done = 0
        self._started = 0.0
        self._last = 0.0
        self._drawn = False

    def start(self, label: str, total: int | None = None, unit: str = "entries") -> None:
        """Begin a step: ``label`` (``"importing"``), ``total`` units when known."""
        self.end()
        self._label, self._total, self._unit, self._done = label, total, unit, 0
        self._started = self._last = time.monotonic()
        if self.enabled and not self.terminal:
            self._write_line(self._text())

    def update(self, done: int) -> None:
        """Say that ``done`` units of the step are done."""
        self._done = done
        if not self.enabled or not self._label:
            return
        now = time.monotonic()
        if self.terminal:
            if now - self._started >= TERMINAL_DELAY and now - self._last >= TERMINAL_INTERVAL:
                self._last = now
                self._redraw(self._text())
        elif now - self._last >= PLAIN_INTERVAL:
            self._last = now
            self._write_line(self._text())

    def end(self) -> None:
        """End the current step (clear its line on a terminal; a last line elsewhere)."""
        if not self._label:
            return
        if self.enabled:
            if self.terminal:
                self.clear()
            else:
                seconds = time.monotonic() - self._started
                self._write_line(f"{self._text()}, done in {seconds:.1f}s")
        self._label = ""

    def clear(self) -> None:
        """Take the progress line off a terminal (before an error message, say)."""
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False

    def _text(self) -> str:
        if self._total is None:
            return f"{self._label}: {self._done:,} {self._unit}" if self._done else f"{self._label}..."
        share = f" ({100 * self._done // self._total}%)" if self._total else ""
        return f"{self._label}: {self._done:,}/{self._total:,} {self._unit}{share}"

    def _redraw(self, text: str) -> None:
        self.stream.write(f"\r{text}\x1b[K")
        self.stream.flush()
        self._drawn = True

    def _write_line(self, text: str) -> None:
        self.stream.write(f"{text}\n")
        self.stream.flush()


def progress_of(args: argparse.Namespace) -> Progress:
    """The command's :class:`Progress` on stderr (``--progress`` / ``--no-progress``, else on a terminal)."""
    reporter: Progress | None = getattr(args, "reporter", None)
    if reporter is None:
        reporter = Progress(enabled=getattr(args, "progress", None))
        args.reporter = reporter
    return reporter


def progress_flag(command: argparse.ArgumentParser) -> None:
    """Add ``--progress`` / ``--no-progress`` to a command's parser (read by :func:`progress_of`)."""
    command.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="report progress on stderr (default: only when stderr is a terminal)",
    )


__all__ = ["PLAIN_INTERVAL", "TERMINAL_DELAY", "TERMINAL_INTERVAL", "Progress", "progress_flag", "progress_of"]
