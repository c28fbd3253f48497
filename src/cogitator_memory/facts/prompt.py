"""Memory text in a prompt, framed as data: one line each, nothing that reads as structure.

What memory holds was written by people, models and tools (a model writes core facts through the
MCP ``remember`` tool; an extracted item's value is a model's words). Sent into a prompt as it is,
a value holding newlines, a ``## System:`` heading or a bidi override could pass for a section of
the prompt itself. :func:`prompt_line` makes any such text one plain line:

- control characters (``\\n``, ``\\r``, ``\\t``, ``\\x1b``, C1 controls...), line and paragraph
  separators and invisible format characters (bidi overrides and isolates, zero-width spaces,
  the byte order mark; the zero-width joiner and non-joiner stay, scripts need them) become a
  space, and every run of spaces one space, the ends trimmed;
- Markdown that makes structure is defused: a run of one to six ``#`` standing as a word (a
  heading marker) is dropped, fences (three or more backticks or tildes) become one, a ``>``
  opening the line is dropped, and the ``<|`` ``|>`` of chat special tokens are split;
- the line is cut to :data:`MAX_PROMPT_LINE_CHARS` characters, ``…`` marking the cut.

:func:`prompt_lines` does it for a list and keeps at most a given number of lines, saying how
many more there were. Core facts (:meth:`~cogitator_memory.facts.CoreFacts.format_for_prompt`,
at most :data:`MAX_PROMPT_CORE_FACTS`) and the facts of a context build (``Known facts:``) are
sent through them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from ..errors import InvalidArgumentError

#: The longest line one piece of memory becomes in a prompt, in characters (``…`` included).
MAX_PROMPT_LINE_CHARS = 300
#: The most core facts sent in a system prompt (the first by key; a last line counts the others).
MAX_PROMPT_CORE_FACTS = 50

_ELLIPSIS = "…"
#: Format characters scripts need inside words: zero-width non-joiner and joiner.
_KEPT_FORMAT = frozenset({"\u200c", "\u200d"})
_HEADING = re.compile(r"(?:(?<=\s)|^)#{1,6}(?=\s|$)")
_FENCE = re.compile(r"`{3,}|~{3,}")
_SPECIAL = re.compile(r"<\||\|>")


def _is_breaking(char: str) -> bool:
    category = unicodedata.category(char)
    if category == "Cf":
        return char not in _KEPT_FORMAT
    return category in ("Cc", "Zl", "Zp", "Cs")


def _check_count(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(name, f"must be a whole number of at least 1, got {value!r}")


def prompt_line(text: str, max_chars: int = MAX_PROMPT_LINE_CHARS) -> str:
    """``text`` as one line of data in a prompt (see the module docstring), at most ``max_chars``
    characters long."""
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"must be a string, got {type(text).__name__}")
    _check_count("max_chars", max_chars)
    if not text.isprintable() or not text.isascii():
        text = "".join(" " if _is_breaking(c) else c for c in text)
    line = " ".join(text.split())
    if "#" in line:
        line = " ".join(_HEADING.sub("", line).split())
    line = _FENCE.sub(lambda m: m.group(0)[0], line)
    line = _SPECIAL.sub(lambda m: " ".join(m.group(0)), line)
    line = line.lstrip("> ").strip() if line.startswith(">") else line
    if len(line) > max_chars:
        line = line[: max_chars - 1].rstrip() + _ELLIPSIS
    return line


def prompt_lines(texts: Iterable[str], limit: int, max_chars: int = MAX_PROMPT_LINE_CHARS) -> list[str]:
    """The first ``limit`` of ``texts`` as :func:`prompt_line` lines (empty ones left out), and
    when there were more, a last line saying how many were not shown."""
    _check_count("limit", limit)
    lines = [line for line in (prompt_line(t, max_chars) for t in texts) if line]
    if len(lines) <= limit:
        return lines
    return [*lines[:limit], f"({len(lines) - limit} more not shown)"]


__all__ = ["MAX_PROMPT_CORE_FACTS", "MAX_PROMPT_LINE_CHARS", "prompt_line", "prompt_lines"]
