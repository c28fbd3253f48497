"""A recall set of chats between two people: two long histories of the Chit-Chat Challenge.

BEAM's chats are between a user and an assistant; issue 34 asks for the other kind too. The
conversations come from the PyPI package ``chitchat-dataset`` 0.9.0 (MIT, the BYU PCC lab's
Chit-Chat Challenge: 7,168 conversations between two people with each message's sender and
time), read from the ``dataset.json`` its wheel ships. Two pairs of senders talked together
many times over weeks; each pair's conversations, in order of time, make one history:

* ``ccc-a`` (the tuning history): 62 conversations, 23 April to 16 May 2018;
* ``ccc-b`` (held out): 45 conversations, 6 to 16 May 2018.

The senders are anonymous ids; each gets an invented first name (fixed in the questions file,
beside the conversation ids; the texts' own nicknames are left as they are), carried in
:attr:`~benchmarks.beam.Message.name`. Both people are role ``"user"``: neither is an
assistant, and a chat between two people names its participants (the OpenAI message format's
``name`` is for participants of the same role), which is how the retriever tells them apart
(:mod:`cogitator_memory.recall.speakers`).

``load_histories(roles=True)`` (``--set chitchat-roles`` of the recall benchmarks) stores the
same turns the way a store that keeps no names would: the history's first speaker as role
``"user"``, the other as ``"assistant"``, no ``name``. Issue 34 found evaluations loading
conversations between two people that way, and the retriever must then tell a peer from an
assistant by how they talk (:mod:`cogitator_memory.recall.speakers`).

One stored message is one turn: a sender's consecutive messages joined with newlines (the data
set's own unit: one person's run of chat bubbles, often one thought split over several, and
what a chat with an assistant stores as one message), numbered from 0 through the history,
conversation after conversation, dated (``anchor``) by the time, UTC, of its first message.
Some conversations of a history overlap (people chatted in several windows at once), so a
turn can be dated before the turn it follows. The questions, written by reading the conversations, with the ids of their
evidence turns, are in ``benchmarks/data/chitchat_questions.json`` (its top level names the
conversations used and the source).
"""

from __future__ import annotations

import importlib.util
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .beam import Chat, Message, Question

QUESTIONS = Path(__file__).resolve().parent / "data" / "chitchat_questions.json"
"""The questions, their evidence turn ids, and the conversations of each history."""

TYPES = ("single_fact", "other_words", "short_turn", "multi_turn", "temporal", "update")
"""The question types: a fact one person said, asked in its own words (``single_fact``) or in
other words (``other_words``); an answer in a short turn whose topic is in the turn next to it
(``short_turn``); an answer needing several turns (``multi_turn``); a question naming a date or
a period, or counting days, answerable through when things were said (``temporal``); something
that changed between conversations, asked as it stands at the end (``update``)."""

TUNING = "ccc-a"
"""The history settings are chosen on; the other is held out."""


def dataset_path() -> Path:
    """The ``dataset.json`` of the installed ``chitchat-dataset`` package (``pip install
    chitchat-dataset``, in the ``bench`` extra)."""
    spec = importlib.util.find_spec("chitchat_dataset")
    if spec is None or spec.origin is None:
        raise ImportError("the two-person chat set needs the chitchat-dataset package: pip install chitchat-dataset")
    return Path(spec.origin).resolve().parent / "dataset.json"


def _stamp(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def history_messages(
    conversations: dict[str, Any], ids: list[str], speakers: dict[str, str], *, roles: bool = False
) -> list[Message]:
    """The turns of the conversations ``ids`` (in order of their first message's time), each
    a :class:`Message` named after its sender (with ``roles``, unnamed: the first of
    ``speakers`` as ``"user"``, the other as ``"assistant"``); empty turns are skipped."""
    first = next(iter(speakers))
    ordered = sorted(ids, key=lambda c: conversations[c]["messages"][0][0]["timestamp"])
    messages: list[Message] = []
    for cid in ordered:
        for turn in conversations[cid]["messages"]:
            text = "\n".join(t for m in turn if (t := str(m.get("text") or "").strip()))
            if not text:
                continue
            sender = turn[0]["sender"]
            if sender not in speakers:
                raise ValueError(f"conversation {cid}: sender {sender} is not one of the history's two speakers")
            when = _stamp(turn[0]["timestamp"])
            if roles:
                role = "user" if sender == first else "assistant"
                messages.append(Message(len(messages), role, text, when))
            else:
                messages.append(Message(len(messages), "user", text, when, speakers[sender]))
    return messages


def load_histories(questions: Path = QUESTIONS, data: Path | None = None, *, roles: bool = False) -> list[Chat]:
    """The two histories with their questions (the tuning one first); with ``roles``, the
    speakers as ``"user"`` and ``"assistant"`` without names (see the module docs)."""
    spec = json.loads(questions.read_text())
    conversations = json.loads((data or dataset_path()).read_text())
    chats: list[Chat] = []
    for history in spec["histories"]:
        messages = history_messages(conversations, history["conversations"], history["speakers"], roles=roles)
        chat = Chat(history["name"], messages)
        known = len(messages)
        for item in history["questions"]:
            evidence = frozenset(int(i) for i in item["evidence"])
            if item["type"] not in TYPES or not evidence or max(evidence) >= known or min(evidence) < 0:
                raise ValueError(f"{history['name']}: bad question {item['question']!r}")
            chat.questions.append(Question(chat.name, item["type"], item["question"], evidence))
        chats.append(chat)
    return sorted(chats, key=lambda c: c.name != TUNING)
