"""Questions that need more than one piece: a second hop, and hits spread over sessions.

**The hop.** A question like "how many columns did I add to the transactions table across my
requests?" is answered by several turns, said weeks apart; the first search finds one or two
of them, and the others share words with those more than with the question ("ALTER TABLE",
the column names). The ``hop`` channel searches the turns again (BM25) with the question's terms
and the telling terms of the first search's best turns (those rare in the conversation, held
by several of them first), and ranks what it finds beside the other channels, the first
search's best turns left out.

**Sessions.** A question about how something went "across our conversations" or "over time"
(a summary, an order of events) is answered by turns of many sessions; the best hits of a plain
search crowd into the one that matched best. :func:`session_spread` orders the best hits so
that each session's next hit pays for those of its session before it. Sessions are runs of
turns without a pause of ``session_gap_hours`` (:func:`sessions`).

**Exchanges.** A question asking for a summary ("summarize what I learned about ...") is
answered by what was said on both sides: on the BEAM dev chats two in three of the evidence
turns of such questions are the assistant's replies, and most of the user's come with their
reply. For those (:func:`asks_summary`), each hit brings the other turn of its exchange next to
it (:func:`exchanges`), and the user's turns are not favoured over the replies.

**Facets.** A question naming several things at once ("considering my form validation code,
lazy loading setup, GA4 tracking and bounce rate monitoring, how ...") is answered by a turn
about each; a search of the whole question finds the turns about the things most of its words
name. Its first sentence split at commas, semicolons, "and" and "or" gives the things named
(:func:`facets`: three or more, each with a term of its own); the ``facet`` channel searches the
turns (BM25) for each and takes their best turns in turn, the first of each, then the second...
(:func:`facet_ranking`). On the BEAM dev chats it lifted multi-session questions' R@10 from .610
to .638 and the held-out chats' from .654 to .664 (``docs/benchmarks.md``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

_TALKS = r"(?:conversations?|sessions?|discussions?|chats?|messages?|requests?|questions?|exchanges?|time)"
#: A question asking about something across the conversation, over time or in order.
_SPREAD = re.compile(
    rf"\b(?:(?:across|throughout|through|over|during|in)\s+(?:(?:all|each|every|the|our|my|these|those|"
    rf"different|various|several|many|past|previous|last|few)\s+)*{_TALKS}|over\s+the\s+(?:past|last)\s+\w+|"
    r"in\s+(?:what|which|the)\s+order|in\s+order|chronolog\w*|progressed|progression|evolv\w*|evolution|"
    r"summar\w+|overview|recap)\b",
    re.I,
)
#: A question asking for a summary of what was said ("summarize", "an overview", "recap").
_SUMMARY = re.compile(r"\b(?:summar\w+|overview|recap)\b", re.I)
#: The characters of a question read for whether it asks across the conversation.
READ_CHARS = 2000


#: Where a question's first sentence is cut into the things it names (:func:`facets`).
_FACET_CUT = re.compile(r"[,;]\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+", re.I)
#: The fewest things a question must name for the ``facet`` channel to search each.
MIN_FACETS = 3
#: The most things of one question the ``facet`` channel searches (the first ones).
MAX_FACETS = 8


def facets(question: str) -> list[str]:
    """The things ``question`` names in a list (see the module docs): the pieces of its first
    sentence (up to ``?``, read in its first :data:`READ_CHARS` characters) cut at commas,
    semicolons, "and" and "or", the first :data:`MAX_FACETS`; none when fewer than
    :data:`MIN_FACETS`."""
    head = re.split(r"[?.!]\s", question[:READ_CHARS] + " ", maxsplit=1)[0]
    parts = [p.strip() for p in _FACET_CUT.split(head) if p.strip()]
    return parts[:MAX_FACETS] if len(parts) >= MIN_FACETS else []


def facet_ranking(
    corpus: Any, facet_terms: Sequence[Sequence[str]], depth: int, keep: Callable[[str], bool] | None
) -> list[str]:
    """The ``facet`` channel's ranking: the BM25 search of each facet's terms, taken in turn
    (the best of each, then the second of each...), each turn once, at most ``depth``; none when
    fewer than :data:`MIN_FACETS` facets have terms."""
    searched = [corpus.search_terms(list(terms), limit=depth, keep=keep) for terms in facet_terms if terms]
    if len(searched) < MIN_FACETS:
        return []
    out: dict[str, None] = {}
    for place in range(depth):
        for found in searched:
            if place < len(found):
                out.setdefault(found[place][0], None)
    return list(out)[:depth]


def asks_across(question: str) -> bool:
    """Whether ``question`` asks about something across the conversation (see the module docs),
    read in its first :data:`READ_CHARS` characters."""
    return _SPREAD.search(question, 0, READ_CHARS) is not None


def asks_summary(question: str) -> bool:
    """Whether ``question`` asks for a summary of what was said ("summarize how the project
    went", "give me an overview of ..."), read in its first :data:`READ_CHARS` characters: its
    answer is in exchanges, a question and the reply to it, more than in single turns."""
    return _SUMMARY.search(question, 0, READ_CHARS) is not None


def exchanges(order: Sequence[str], partner: Callable[[str], str | None], limit: int) -> list[str]:
    """The first ``limit`` of ``order`` (hit ids, best first) with each hit followed by its
    ``partner`` (the other turn of its exchange, ``None`` for none), each id once."""
    out: list[str] = []
    seen: set[str] = set()
    for rid in order:
        if len(out) >= limit:
            break
        other = partner(rid)
        pair = (rid,) if other is None else (rid, other)
        for one in pair:
            if one not in seen:
                seen.add(one)
                out.append(one)
    return out[:limit]


def hop_terms(
    corpus: Any, seeds: Sequence[str], asked: Collection[str], count: int, most_share: float = 0.1
) -> list[str]:
    """The ``count`` terms of the ``seeds`` (document ids of ``corpus``) that best tell them
    apart: not among ``asked``, held by another document and by at most ``most_share`` of them
    (or by two), ranked by the number of seeds holding them times their inverse document
    frequency."""
    if count < 1 or not seeds:
        return []
    held: dict[str, int] = {}
    for rid in seeds:
        doc = corpus.docs.get(rid)
        if doc is None:
            continue
        for term in doc.term_set:
            if term not in asked:
                held[term] = held.get(term, 0) + 1
    size, freqs = corpus.doc_freqs(held)
    if size < 2:
        return []
    most = max(2, int(size * most_share))
    scored: list[tuple[float, str]] = []
    for term, seeds_holding in held.items():
        df = freqs[term]
        if 1 < df <= most:  # a term only the seed holds finds nothing else
            scored.append((-seeds_holding * math.log(size / df), term))
    scored.sort()
    return [term for _score, term in scored[:count]]


def hop_ranking(
    corpus: Any,
    asked: Sequence[str],
    seeds: Sequence[str],
    count: int,
    depth: int,
    keep: Callable[[str], bool] | None,
) -> list[str]:
    """The second hop's ranking: BM25 of ``asked`` and the :func:`hop_terms` of ``seeds``,
    the seeds left out."""
    extra = hop_terms(corpus, seeds, frozenset(asked), count)
    if not extra:
        return []
    left_out = frozenset(seeds)
    found = corpus.search_terms([*asked, *extra], limit=depth + len(left_out), keep=keep)
    return [rid for rid, _score in found if rid not in left_out][:depth]


def sessions(corpus: Any, gap_hours: float) -> Mapping[str, int]:
    """Each turn's session (0, 1, ... in time order): a new one starts after a pause of more
    than ``gap_hours`` between turns said one after the other (kept per state of the corpus)."""
    key = f"sessions:{gap_hours}"
    found: Mapping[str, int] | None = corpus.derived.get(key)
    if found is None:
        ids = list(corpus.docs)
        times = sorted((corpus.docs[rid].record.created_at, i) for i, rid in enumerate(ids))
        out: dict[str, int] = {}
        session = 0
        previous = None
        for at, i in times:
            if previous is not None and (at - previous).total_seconds() > gap_hours * 3600:
                session += 1
            out[ids[i]] = session
            previous = at
        corpus.derived[key] = found = out
    return found


def session_spread(
    scored: list[tuple[float, str]], session_of: Callable[[str], int | None], spread: float, pool: int
) -> list[tuple[float, str]]:
    """``scored`` (best first) with the best ``pool`` taken greedily, each hit's score divided by
    ``1 + spread * n``, ``n`` the hits of its session taken before it (a hit of no known session
    pays nothing), best of those scores first; the rest after them, as they were."""
    if spread <= 0 or pool < 2 or len(scored) < 2:
        return scored
    left = scored[:pool]
    sessions_of = [session_of(rid) for _score, rid in left]
    taken: dict[int, int] = {}
    out: list[tuple[float, str]] = []
    while left:
        best_at = 0
        best_value = -math.inf
        for i, (score, _rid) in enumerate(left):
            session = sessions_of[i]
            value = score / (1.0 + spread * taken.get(session, 0)) if session is not None else score
            if value > best_value:
                best_at, best_value = i, value
        _score, rid = left.pop(best_at)
        session = sessions_of.pop(best_at)
        if session is not None:
            taken[session] = taken.get(session, 0) + 1
        out.append((best_value, rid))
    return out + scored[pool:]


__all__ = [
    "MAX_FACETS",
    "MIN_FACETS",
    "READ_CHARS",
    "asks_across",
    "asks_summary",
    "exchanges",
    "facet_ranking",
    "facets",
    "hop_ranking",
    "hop_terms",
    "session_spread",
    "sessions",
]
