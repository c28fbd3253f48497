"""How the hybrid strategy cuts a long recalled turn: the line scores, the passage, the cuts kept."""

from __future__ import annotations

import random
import re

from cogitator_memory.context.history import TokenCache
from cogitator_memory.context.passages import _line_scores, best_passage
from cogitator_memory.tokens import count_tokens, truncate_to_tokens


def _scores_by_pattern(text: str, terms: frozenset[str]) -> list[int]:
    """How many of ``terms`` each line holds, as one pattern of the terms as whole words finds them."""
    words = sorted((t for t in terms if re.fullmatch(r"\w+", t)), key=len, reverse=True)
    if not words:
        return [0] * len(text.split("\n"))
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, words)) + r")(?!\w)")
    return [len({m.group() for m in pattern.finditer(line.casefold())}) for line in text.split("\n")]


def test_line_scores_count_the_terms_a_whole_word_pattern_finds_on_each_line() -> None:
    rng = random.Random(2)
    words = ["hotel", "hotels", "booking", "a", "_", "ß", "ss", "Straße", "straße", "İ", "i̇", "x1", "é"]
    seps = [" ", " ", "\n", "-", ", ", "\n\n", ""]
    terms_pool = ["hotel", "booking", "a", "ss", "straße", "strasse", "x1", "é", "i̇", "two words", "hotel!"]
    counted = 0
    for _ in range(2000):
        text = "".join(rng.choice(words) + rng.choice(seps) for _ in range(rng.randint(0, 12)))
        terms = frozenset(rng.sample(terms_pool, rng.randint(0, 4)))
        lines, scores = _line_scores(text, terms)
        assert lines == text.split("\n")
        assert scores == _scores_by_pattern(text, terms), (text, terms)
        counted += sum(scores)
    assert counted > 1000


def test_the_passage_is_the_line_with_most_terms_and_the_first_of_equals() -> None:
    filler = "nothing to see on this line at all, just words that go on for a while"
    lines = [filler] * 6
    lines[1] = "the hotel is near the station " + filler
    lines[4] = "the hotel booking was confirmed " + filler
    lines[5] = "the hotel booking again " + filler
    text = "\n".join(lines)
    passage = best_passage(text, frozenset({"hotel", "booking"}), 20, TokenCache())
    assert passage.startswith("... the hotel booking was confirmed")
    assert "station" not in passage and "again" not in passage
    assert count_tokens(passage) <= 20 + 4
    # no line holds a term: the first line, cut to the budget
    cold = best_passage(text, frozenset({"weather"}), 20, TokenCache())
    assert cold.startswith("nothing to see") and cold.endswith(" ...")
    # a text within the budget comes back whole
    assert best_passage("short text", frozenset({"hotel"}), 20) == "short text"


def test_a_cut_kept_by_the_token_cache_is_the_cut_of_truncate_to_tokens() -> None:
    cache = TokenCache(max_items=3)
    texts = [f"turn {i}: " + "the plan for the launch of the new cello recital " * (i + 1) for i in range(5)]
    for _ in range(2):  # the second time from what is kept (and what was cleared past max_items)
        for text in texts:
            for limit, ellipsis in ((20, " ..."), (7, ""), (200, " ...")):
                short, tokens = cache.cut(text, limit, ellipsis)
                assert short == truncate_to_tokens(text, limit, ellipsis=ellipsis)
                assert tokens == count_tokens(short) <= limit
    assert len(cache._cuts) <= 3
