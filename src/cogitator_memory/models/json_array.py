"""The one reader of JSON arrays in model answers, and the prompt that continues a cut one.

Models asked for a JSON array answer with more than the array: a sentence first, a code fence, a
message number in brackets (``[3]``), a note after. And an answer cut at its length limit ends in
the middle of an element. :func:`read_json_array` reads what can be trusted from such text:

* It looks at every ``[`` of the text. The span from a ``[`` to its matching ``]`` (or to the end
  of the text, when the answer was cut) is split into elements at the commas outside strings and
  brackets, so brackets, commas and escaped quotes inside strings never confuse it.
* Each finished element (one a comma or the closing ``]`` ends) is parsed as JSON on its own: an
  element that is not JSON (or, with ``objects=True``, not an object) is left out and counted in
  ``skipped``, and the others are kept.
* An array is a span that keeps at least one element, an empty ``[]``, or a span the text ends in
  whose first element opened like one it would keep (an answer cut inside its first element); a
  bracket around prose (``[see above]``, or ``[3]`` when objects are asked for) is not one, and
  neither is a bracket inside an array. Of several arrays the one keeping the most elements is
  read (the longer one on a tie, then the first).
* When the text ends before the array's ``]``, the array is cut: ``complete`` is false and the
  elements finished so far are kept. The last, unfinished element is kept only when it is an
  object, array or string that closed before the cut, since a number or word may have been cut.

:func:`continuation_prompt` asks the model to go on after the last element it finished; the
elements of the answer to it are added with :meth:`JsonArrayRead.then`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgumentError


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(strict=False, parse_constant=_reject_constant)
_MISSING = object()


@dataclass(frozen=True)
class JsonArrayRead:
    """What :func:`read_json_array` found.

    ``elements`` are the kept elements in order; ``complete`` is true when the array's closing
    ``]`` was there (false when the answer was cut, or held no array); ``skipped`` counts the
    finished elements left out; ``found`` says whether the text held an array at all.
    """

    elements: list[Any] = field(default_factory=list)
    complete: bool = False
    skipped: int = 0
    found: bool = False

    @property
    def cut(self) -> bool:
        """Whether an array was found but its end was not: the answer stopped inside it."""
        return self.found and not self.complete

    def then(self, more: JsonArrayRead) -> JsonArrayRead:
        """This read followed by the read of a continuation: elements of both, the end of ``more``."""
        return JsonArrayRead(
            elements=[*self.elements, *more.elements],
            complete=more.complete,
            skipped=self.skipped + more.skipped,
            found=self.found or more.found,
        )


_VALUE_START = frozenset('{["-0123456789tfn')


@dataclass
class _Span:
    start: int
    end: int
    closed: bool
    kept: list[Any]
    skipped: int
    empty: bool
    opens_value: bool

    @property
    def is_array(self) -> bool:
        """Whether the span is an array: it keeps an element, is ``[]``, or was cut inside its
        first element (which opened like one it would keep)."""
        return bool(self.kept) or self.empty or (not self.closed and not self.skipped and self.opens_value)


def _decode(text: str) -> Any:
    """The JSON value ``text`` holds entirely, or ``_MISSING``."""
    try:
        return _DECODER.decode(text)
    except ValueError:
        return _MISSING


def _decode_tail(text: str) -> Any:
    """The first value of a cut element when it closed itself (object, array or string), else ``_MISSING``."""
    try:
        value, _ = _DECODER.raw_decode(text)
    except ValueError:
        return _MISSING
    return value if isinstance(value, dict | list | str) else _MISSING


def _scan(text: str, start: int, objects: bool) -> _Span:
    """Split the span opening at ``text[start] == '['`` into elements and parse each."""
    pieces: list[str] = []
    depth = 0
    in_string = escaped = False
    piece_start = pos = start + 1
    end = len(text)
    closed = False
    while pos < end:
        char = text[pos]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            if depth:
                depth -= 1
            elif char == "]":
                pieces.append(text[piece_start:pos])
                closed = True
                pos += 1
                break
        elif char == "," and depth == 0:
            pieces.append(text[piece_start:pos])
            piece_start = pos + 1
        pos += 1
    kept: list[Any] = []
    skipped = 0
    for piece in pieces:
        body = piece.strip()
        if not body:
            continue
        value = _decode(body)
        if value is _MISSING or (objects and not isinstance(value, dict)):
            skipped += 1
        else:
            kept.append(value)
    if not closed:
        tail = text[piece_start:].strip()
        if tail:
            value = _decode_tail(tail)
            if value is not _MISSING and (isinstance(value, dict) or not objects):
                kept.append(value)
        pos = end
    empty = closed and not any(p.strip() for p in pieces)
    first = text[start + 1 : start + 80].lstrip()[:1]
    opens_value = first == "{" if objects else first in _VALUE_START
    return _Span(start, pos, closed, kept, skipped, empty, opens_value)


def read_json_array(text: str, *, objects: bool = False) -> JsonArrayRead:
    """The JSON array in a model's answer, read as the module docs say.

    With ``objects=True`` only JSON objects count as elements (others are skipped), and a span
    of anything else is not taken for the array.

    >>> read = read_json_array('Found two [1]:\\n```json\\n[{"a": 1}, {"b": "x]"}, {"c": 3')
    >>> read.elements, read.complete
    ([{'a': 1}, {'b': 'x]'}], False)
    """
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"expected a string, got {type(text).__name__}")
    best: _Span | None = None
    pos = text.find("[")
    while pos != -1:
        span = _scan(text, pos, objects)
        if span.is_array:
            if best is None or (len(span.kept), span.end - span.start) > (len(best.kept), best.end - best.start):
                best = span
            pos = text.find("[", span.end)
        else:
            pos = text.find("[", pos + 1)
    if best is None:
        return JsonArrayRead()
    return JsonArrayRead(elements=best.kept, complete=best.closed, skipped=best.skipped, found=True)


def continuation_prompt(read: JsonArrayRead, *, noun: str = "element", plural: str | None = None) -> str:
    """The message that asks a model to go on with an array its answer was cut in.

    It names how many ``noun`` the answer finished and quotes the last one (its first 1000
    characters), and asks for a new JSON array of only the ones after it, ``[]`` when none are
    left. Read the answer with :func:`read_json_array` and join it with :meth:`JsonArrayRead.then`.
    """
    if not isinstance(noun, str) or not noun.strip():
        raise InvalidArgumentError("noun", "must be a non-empty string")
    many = plural or f"{noun}s"
    count = len(read.elements)
    if count == 0:
        return (
            f"Your answer was cut off at its length limit before its first {noun} was complete. "
            f"Answer again with the whole JSON array of {many}, keeping each {noun} short."
        )
    last = json.dumps(read.elements[-1], ensure_ascii=False)
    if len(last) > 1000:
        last = last[:1000] + " …"
    done = f"{count} {noun if count == 1 else many}"
    return (
        f"Your answer was cut off at its length limit after {done} of the JSON array. "
        f"The last complete one, {noun} {count}, was:\n{last}\n"
        f"Continue after {noun} {count}: answer with a JSON array of only the {many} that come after it, "
        f"without repeating any you already gave, or [] if there are none left."
    )


__all__ = ["JsonArrayRead", "continuation_prompt", "read_json_array"]
