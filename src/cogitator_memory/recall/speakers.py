"""Who said it: the weight of a turn's speaker, read from the question and the conversation.

A question may ask about what one speaker said: "what did you recommend?" asks about the
assistant's turns, "what did I tell you?" about the user's, "what did Melanie paint?" about
Melanie's (a participant named in ``message.name`` or the entry's ``metadata["speaker"]``).
Those turns score ``speaker_weight`` more (:class:`~cogitator_memory.recall.RetrieverSettings`).

A question naming no speaker falls back on the kind of conversation: in a chat between a user
and an assistant, what is asked about later is mostly what the user told, so the user's turns
score ``user_weight`` more; in a conversation between peers, which of them a store maps to
"user" says nothing, and no speaker is favoured. A conversation is between peers when it names
two speakers or more, or, unnamed, when its "assistant" talks like the user: its median turn is
under :data:`PEER_LENGTH_RATIO` times the user's and over 1 / :data:`TERSE_RATIO` of it (each
role with :data:`MIN_ROLE_TURNS` turns or more). An assistant answers at length (on the BEAM
chats its median turn is 3.4-16.6 times the user's), or, terse ("Done.", "Reminder set."), at a
small fraction of it, and stays an assistant; two people chatting write turns of a length (0.7-1.5
times on the two-person chats of the benchmarks), which is how a conversation between two
people reads when a store keeps them as "user" and "assistant" without their names.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..threads.records import MemoryEntry

#: Verbs of telling, as after "did": "did you recommend".
_TELL = (
    r"(?:recommend|suggest|advise|propose|say|tell|explain|mention|help|give|provide|outline|share|show|"
    r"offer|point|walk|describe|warn|remind|teach|note|answer|reply|respond)"
)
#: Verbs of telling said in the past: "you recommended", "have you told".
_TOLD = (
    r"(?:recommended|suggested|advised|proposed|said|told|explained|mentioned|helped|gave|given|provided|"
    r"outlined|shared|showed|shown|offered|pointed|walked|described|warned|reminded|taught|noted|"
    r"answered|replied|responded)"
)
#: The question asks about what the assistant said before: "how did you recommend", "what you
#: suggested" (not "what would you suggest?", which asks for something new).
_ASKS_ASSISTANT = re.compile(
    rf"\bdid\s+you\s+(?:\w+\s+){{0,2}}?{_TELL}\b|\b(?:have|had)\s+you\s+(?:\w+\s+)?{_TOLD}\b|"
    rf"\byou\s+(?:had\s+|have\s+)?{_TOLD}\b",
    re.I,
)
#: The question asks about the user's turns: "did I say", "I mentioned", "what I told you".
_ASKS_USER = re.compile(
    r"\bdid\s+I\s+(?:\w+\s+)?(?:say|tell|mention|share|describe|explain|note|ask)\b|"
    r"\b(?:have|had)\s+I\s+(?:\w+\s+)?(?:said|told|mentioned|shared|described|explained|noted|asked)\b|"
    r"\bI\s+(?:had\s+|have\s+)?(?:said|told|mentioned|shared|described|explained|noted|asked)\b",
    re.I,
)
_WORD = re.compile(r"\w+")
#: The characters of a question read for whom it asks about (a long input is mostly pasted text).
READ_CHARS = 2000
#: An unnamed "assistant" whose median turn is under this many times the user's (and not
#: terse, see :data:`TERSE_RATIO`) is a peer.
PEER_LENGTH_RATIO = 2.0
#: An "assistant" whose median turn is a this-many-th of the user's or less is a terse assistant,
#: not a peer. (Over the few hundred candidates of one search two people's medians differ more
#: than over their whole chat: a bound of 2 took some of the two-person tuning history's searches
#: for an assistant's, 4 none.)
TERSE_RATIO = 4.0
#: Turns of each role needed before their lengths tell a peer from an assistant.
MIN_ROLE_TURNS = 5


@dataclass(frozen=True, slots=True)
class Participants:
    """Who speaks in a conversation: the roles of its turns, the names given to speakers
    (casefolded name -> the names' words, for finding them in a question), and whether its
    "assistant" talks like the user (``alike``: turns of a length, see the module docs)."""

    roles: frozenset[str]
    names: Mapping[str, tuple[str, ...]]
    alike: bool = False

    @property
    def named(self) -> bool:
        """Whether the conversation is between named people (two speaker names or more)."""
        return len(self.names) >= 2

    @property
    def peers(self) -> bool:
        """Whether the conversation is between peers: named people, or a "user" and an
        "assistant" whose turns run alike (no speaker is favoured, "you" is no assistant)."""
        return self.named or self.alike


def speaker_name(entry: MemoryEntry) -> str | None:
    """The name of who said a turn: ``message.name``, else ``metadata["speaker"]`` (a string)."""
    message = entry.message
    if message is not None and message.name:
        return message.name
    meta = entry.metadata
    if meta:
        found = meta.get("speaker")
        if isinstance(found, str) and found.strip():
            return found
    return None


def said_by(entry: MemoryEntry) -> str:
    """Who said a turn, as a recalled line names them: the speaker's name (:func:`speaker_name`:
    a conversation between people), its whitespace runs made one space, else the role (or the
    entry's type)."""
    name = speaker_name(entry)
    if name is not None:
        return " ".join(name.split())
    message = entry.message
    return message.role if message is not None else entry.type


def participants(entries: Iterable[MemoryEntry], lengths: Iterable[int] | None = None) -> Participants:
    """The roles and speaker names of ``entries``, and whether the user's and the assistant's
    turns run alike; ``lengths`` (one per entry, in any unit: words, terms) measures the turns,
    else their words are counted."""
    roles: set[str] = set()
    names: dict[str, tuple[str, ...]] = {}
    sizes: dict[str, list[int]] = {"user": [], "assistant": []}
    sized = iter(lengths) if lengths is not None else None
    for entry in entries:
        size = next(sized) if sized is not None else None
        message = entry.message
        if message is None:
            continue
        roles.add(message.role)
        kept = sizes.get(message.role)
        if kept is not None:
            kept.append(size if size is not None else len(message.text.split()))
        name = speaker_name(entry)
        if name is not None:
            key = name.strip().casefold()
            if key not in names:
                names[key] = tuple(_WORD.findall(key))
    return Participants(frozenset(roles), names, _alike(sizes["user"], sizes["assistant"]))


def _alike(user: list[int], assistant: list[int]) -> bool:
    """Whether the assistant's turns run like the user's (see the module docs)."""
    if len(user) < MIN_ROLE_TURNS or len(assistant) < MIN_ROLE_TURNS:
        return False
    said, answered = max(1.0, statistics.median(user)), max(1.0, statistics.median(assistant))
    return answered < PEER_LENGTH_RATIO * said and said < TERSE_RATIO * answered


@dataclass(frozen=True, slots=True)
class Asked:
    """The speakers a question asks about: roles (``"user"``, ``"assistant"``) and names
    (casefolded); both empty when it names none."""

    roles: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.roles or self.names)


def asked_speakers(question: str, people: Participants) -> Asked:
    """Whom ``question`` asks about (see the module docs): participants it names as whole
    words, and in a conversation with an assistant, "you" / "I" with a verb of telling (in its
    first :data:`READ_CHARS` characters)."""
    question = question[:READ_CHARS]
    words = [w.casefold() for w in _WORD.findall(question)]
    names = frozenset(
        key
        for key, parts in people.names.items()
        if parts and any(words[i : i + len(parts)] == list(parts) for i in range(len(words) - len(parts) + 1))
    )
    roles: set[str] = set()
    if not people.peers and "assistant" in people.roles and _ASKS_ASSISTANT.search(question):
        roles.add("assistant")
    if not people.peers and _ASKS_USER.search(question):
        roles.add("user")
    return Asked(frozenset(roles), names)


def speaker_boost(
    entry: MemoryEntry, asked: Asked, people: Participants, speaker_weight: float, user_weight: float
) -> float:
    """The share more a turn scores for who said it (0 for none): ``speaker_weight`` when the
    question asks about its speaker; without one, ``user_weight`` for a user's turn in a chat
    with an assistant (not between peers)."""
    message = entry.message
    if message is None:
        return 0.0
    if asked:
        if message.role in asked.roles:
            return speaker_weight
        if asked.names:
            name = speaker_name(entry)
            if name is not None and name.strip().casefold() in asked.names:
                return speaker_weight
        return 0.0
    if message.role == "user" and not people.peers:
        return user_weight
    return 0.0


__all__ = [
    "MIN_ROLE_TURNS",
    "PEER_LENGTH_RATIO",
    "READ_CHARS",
    "TERSE_RATIO",
    "Asked",
    "Participants",
    "asked_speakers",
    "participants",
    "said_by",
    "speaker_boost",
    "speaker_name",
]
