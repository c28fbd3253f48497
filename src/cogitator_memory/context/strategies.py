"""How the history partition is chosen: the ``recent`` run and the ``relevant`` ranking.

Both are fitters for :meth:`ContextAssembler.assemble <cogitator_memory.context.ContextAssembler.assemble>`:
they get the history blocks in conversation order and the room of the ``recent`` partition.

- :func:`fit_recent` keeps the newest entries as one unbroken run back from the newest. A tool
  result too large for the room left stays as a short note in its place and the run goes on;
  any other entry that does not fit ends the run. When the run is cut, it starts at a user
  message, so a reply never appears without the message it answers: both or neither. A cut run
  holding no user message at all (the newest user message alone is over the room, or a tool loop
  is longer than the room) keeps nothing, and says so in a warning.
- :func:`fit_relevant` ranks units (an entry, or an assistant's tool calls with their results) by
  their similarity to the input, keeps the best that fit and returns them in conversation order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..threads.records import MemoryEntry
from ..vectors.similarity import cosine, cosines, numpy_or_none
from .assembler import Fit
from .history import TokenCache, is_tool_result, tool_note
from .records import ContextBlock, DropReason

#: A unit scoring below this similarity is ``not-selected`` by ``relevant`` (it points away from
#: the input); every other unit is kept while it fits.
MIN_RELEVANCE = 0.0


def _is_user(block: ContextBlock) -> bool:
    entries = block.item if isinstance(block.item, list) else [block.item]
    first = entries[0] if entries else None
    return isinstance(first, MemoryEntry) and first.message is not None and first.message.role == "user"


def fit_recent(blocks: Sequence[ContextBlock], room: int, *, complete: bool, counter: TokenCache) -> Fit:
    """The unbroken run of the newest blocks that fits ``room`` (blocks in conversation order,
    each holding one entry). ``complete`` says the blocks reach the start of the history; when
    they do not, the run is treated as cut even if every block fits. A cut run starts at its
    first user message; without one it keeps nothing (a reply never goes without the message
    it answers) and the fit carries a warning."""
    fit = Fit()
    kept_rev: list[ContextBlock] = []
    left = max(0, room)
    i = len(blocks) - 1
    while i >= 0:
        block = blocks[i]
        if block.tokens <= left:
            kept_rev.append(block)
            left -= block.tokens
            i -= 1
            continue
        entry = block.item
        if isinstance(entry, MemoryEntry):
            shrunk = tool_note(entry, block.tokens)
            if shrunk is not None:
                tokens = counter.tokens(shrunk)
                if tokens <= left:
                    note = ContextBlock(
                        "recent", shrunk.message.text if shrunk.message else "", tokens, block.source_id, shrunk
                    )
                    kept_rev.append(note)
                    fit.dropped.append((block, "oversized"))
                    left -= tokens
                    i -= 1
                    continue
        break
    cut = i >= 0 or not complete
    for block in blocks[: i + 1]:
        fit.dropped.append((block, "oversized" if block.tokens > room else "budget"))
    kept = kept_rev[::-1]
    if cut and kept:
        start = next((j for j, b in enumerate(kept) if _is_user(b)), len(kept))
        if start == len(kept):
            asked = next((b for b in reversed(blocks[: i + 1]) if _is_user(b)), None)
            what = f"the user message it answers ({asked.tokens} tokens)" if asked is not None else "its user message"
            fit.warnings.append(
                f"the history left out {len(kept)} newer entries: {what} does not fit the room of {room} tokens,"
                " and a reply is never sent without it"
            )
        for block in kept[:start]:
            fit.dropped.append((block, "budget"))
        kept = kept[start:]
    fit.kept = kept
    fit.used = sum(b.tokens for b in kept)
    return fit


def group_units(entries: Sequence[MemoryEntry]) -> list[list[MemoryEntry]]:
    """Entries in conversation order, grouped so that a tool result stays with the call it answers."""
    units: list[list[MemoryEntry]] = []
    open_calls: set[str] = set()
    for entry in entries:
        message = entry.message
        if is_tool_result(entry) and units and message is not None and message.tool_call_id in open_calls:
            units[-1].append(entry)
            continue
        units.append([entry])
        calls = (message.tool_calls if message is not None else None) or entry.tool_calls or []
        open_calls = {c.id for c in calls}
    return units


def fit_relevant(blocks: Sequence[ContextBlock], room: int) -> Fit:
    """The best-scoring blocks that fit ``room``, returned in the order given (conversation
    order). Blocks scoring below :data:`MIN_RELEVANCE` are ``not-selected``; on equal scores the
    newer block goes first."""
    fit = Fit()
    left = max(0, room)
    order = sorted(range(len(blocks)), key=lambda i: (-(blocks[i].score or 0.0), -i))
    chosen: list[int] = []
    for i in order:
        block = blocks[i]
        reason: DropReason | None = None
        if (block.score if block.score is not None else 0.0) < MIN_RELEVANCE:
            reason = "not-selected"
        elif block.tokens > left:
            reason = "oversized" if block.tokens > room else "budget"
        if reason is not None:
            fit.dropped.append((block, reason))
            continue
        chosen.append(i)
        left -= block.tokens
    chosen.sort()
    fit.kept = [blocks[i] for i in chosen]
    fit.used = sum(b.tokens for b in fit.kept)
    return fit


def as_array(vector: Sequence[float]) -> Any:
    """The vector as a unit-length float32 numpy array when numpy is installed, else a list."""
    np = numpy_or_none()
    if np is None:  # pragma: no cover
        return list(vector)
    arr = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(arr))
    return arr / norm if norm > 0 else arr


__all__ = ["MIN_RELEVANCE", "as_array", "cosine", "cosines", "fit_recent", "fit_relevant", "group_units"]
