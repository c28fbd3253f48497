"""Loading the BEAM 100K conversations for the retrieval benchmark (data is read, never committed).

The data folder holds ``N/chat.json`` and ``N/probing_questions.json`` (see the data README).
:func:`load_chats` returns every chat with its messages and the questions that name evidence
messages (``source_chat_ids``, a list or a dict of lists, flattened here).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "beam-100k"
"""Where the data sits on the project's machines (``../shared/data/beam-100k`` from the repo)."""

# BEAM appends a "->-> batch,turn" marker to user turns: an annotation of the data set, not
# conversation text, so it is cut before indexing.
_MARKER = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")


@dataclass(frozen=True)
class Message:
    """One message of a chat: its integer id (unique in the chat), role and text, and the date
    of the batch it belongs to (``time_anchor`` of the batch, ``None`` when it has none); a
    set of chats between named people (:mod:`benchmarks.chitchat`) gives who said it in ``name``
    (BEAM does not)."""

    id: int
    role: str
    content: str
    anchor: datetime | None = None
    name: str | None = None


def parse_anchor(value: object) -> datetime | None:
    """A BEAM ``time_anchor`` (``March-15-2024``) as midnight UTC of that day, else ``None``."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.strptime(value.strip(), "%B-%d-%Y").replace(tzinfo=UTC)
    except ValueError:
        return None


@dataclass(frozen=True)
class Question:
    """A probing question with the ids of the messages that hold its evidence."""

    chat: str
    type: str
    question: str
    evidence: frozenset[int]


@dataclass
class Chat:
    """A conversation and its questions that have evidence."""

    name: str
    messages: list[Message]
    questions: list[Question] = field(default_factory=list)

    def fingerprint(self) -> str:
        """A hash of the messages' ids and texts (the key of cached vectors)."""
        digest = hashlib.sha256()
        for message in self.messages:
            digest.update(f"{message.id}\x00{message.content}\x01".encode())
        return digest.hexdigest()[:16]


def data_dir(path: str | Path | None = None) -> Path:
    """The data folder: ``path``, else ``$COGMEM_BEAM_DIR``, else :data:`DEFAULT_DATA`."""
    chosen = Path(path) if path else Path(os.environ.get("COGMEM_BEAM_DIR") or DEFAULT_DATA)
    return chosen


def _flatten_ids(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, str) and value.strip().isdigit():
        return [int(value)]
    if isinstance(value, dict):
        return [i for v in value.values() for i in _flatten_ids(v)]
    if isinstance(value, list):
        return [i for v in value for i in _flatten_ids(v)]
    return []


def load_chat(folder: Path) -> Chat:
    """One chat folder: its messages (marker cut, empty texts skipped) and evidence questions."""
    batches = json.loads((folder / "chat.json").read_text())
    messages: list[Message] = []
    anchor: datetime | None = None
    for batch in batches:
        anchor = parse_anchor(batch.get("time_anchor")) or anchor
        for turn in batch.get("turns", []):
            for raw in turn:
                anchor = parse_anchor(raw.get("time_anchor")) or anchor
                text = _MARKER.sub("", str(raw.get("content") or "")).strip()
                if text:
                    messages.append(Message(int(raw["id"]), str(raw.get("role", "")), text, anchor))
    chat = Chat(folder.name, messages)
    known = {m.id for m in messages}
    probing = json.loads((folder / "probing_questions.json").read_text())
    for qtype, items in probing.items():
        for item in items:
            evidence = frozenset(i for i in _flatten_ids(item.get("source_chat_ids")) if i in known)
            if evidence:
                chat.questions.append(Question(folder.name, qtype, str(item["question"]), evidence))
    return chat


def load_chats(path: str | Path | None = None, limit: int | None = None) -> list[Chat]:
    """Every chat of the data folder, in numeric order (the first ``limit`` when given)."""
    root = data_dir(path)
    if not root.is_dir():
        raise FileNotFoundError(f"BEAM data not found at {root}: pass --data or set COGMEM_BEAM_DIR")
    folders = sorted((p for p in root.iterdir() if (p / "chat.json").is_file()), key=lambda p: (len(p.name), p.name))
    return [load_chat(p) for p in folders[:limit]]
