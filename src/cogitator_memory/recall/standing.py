"""Standing words: what the user asked to hold from now on, found for any question they touch.

"Always include version numbers when I ask about libraries", "I prefer minimal dependencies",
"never use tabs": a turn like this answers every later question on its subject ("which
libraries does the project use?"), though it shares few words with it and was said long before.
The ``standing`` channel finds the user's turns saying such a thing (a word of
:data:`STANDING_WORDS` among their terms, then a phrase of :data:`STANDING` in their first
:data:`READ_CHARS` characters, read once per turn and kept) and ranks them by the weight of the
question's terms they hold (their inverse document frequencies) and by their cosine with the
question, fused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..index.terms import recall_terms
from ..search.fusion import reciprocal_rank_fusion

#: A turn stating a lasting instruction or preference.
STANDING = re.compile(
    r"\b(?:always|never|whenever|I(?:['’]d|\s+would)?\s+(?:really\s+|generally\s+|usually\s+|much\s+|"
    r"strongly\s+|also\s+)?(?:prefer|rather|favou?r|dislike|hate|avoid))\b",
    re.I,
)
#: Words one of which a standing turn holds (as the keyword index reads them): only the turns
#: holding one are read for :data:`STANDING` (once each), not every turn of the conversation.
STANDING_WORDS: tuple[str, ...] = tuple(
    dict.fromkeys(recall_terms("always never whenever prefer rather favor favour dislike hate avoid"))
)
_WORDS = frozenset(STANDING_WORDS)
#: The characters of a turn read for a standing phrase.
READ_CHARS = 2000


def is_standing(doc: Any) -> bool:
    """Whether a document of a corpus is a user's turn stating a lasting instruction or
    preference (read once, kept on the document)."""
    found: bool | None = doc.standing
    if found is None:
        message = doc.record.message
        found = doc.standing = bool(
            message is not None
            and message.role == "user"
            and not doc.term_set.isdisjoint(_WORDS)  # walks the smaller
            and STANDING.search(doc.text[:READ_CHARS])
        )
    return found


def standing_turns(corpus: Any) -> list[str]:
    """The ids of the standing turns of ``corpus``, in its order (kept per state of the corpus;
    each turn is read once in its life, see :func:`is_standing`)."""
    found: list[str] | None = corpus.derived.get("standing")
    if found is None:
        docs = corpus.docs
        found = corpus.derived["standing"] = [rid for rid in corpus.order if is_standing(docs[rid])]
    return found


def standing_ranking(
    corpus: Any,
    asked: Sequence[str],
    cosines: Mapping[str, float],
    depth: int,
    keep: Callable[[str], bool] | None,
    rrf_k: float,
) -> list[str]:
    """The standing turns of ``corpus`` (those ``keep`` keeps), best first: the fusion of the
    weight of the ``asked`` terms they hold (the sum of their inverse document frequencies) and
    their ``cosines``."""
    found = [rid for rid in standing_turns(corpus) if keep is None or keep(rid)]
    if not found:
        return []
    size, held_by = corpus.doc_freqs(asked)
    weight = {t: math.log(1 + size / df) for t, df in held_by.items() if df}
    asked_set = weight.keys()
    docs = corpus.docs
    held: dict[str, float] = {}
    for rid in found:
        shared = asked_set & docs[rid].term_set
        if shared:
            held[rid] = sum(weight[t] for t in shared)
    by_words = sorted(held, key=lambda r: -held[r])
    by_meaning = sorted((rid for rid in found if rid in cosines), key=lambda r: -cosines[r])
    rankings = [r for r in (by_words, by_meaning) if r]
    if not rankings:  # nothing ties them to the question
        return []
    return [rid for rid, _score in reciprocal_rank_fusion(rankings, k=rrf_k)][:depth]


__all__ = ["READ_CHARS", "STANDING", "STANDING_WORDS", "is_standing", "standing_ranking", "standing_turns"]
