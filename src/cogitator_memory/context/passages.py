"""Parts of long turns that fit a budget: the passage holding most of the input's terms
(:func:`best_passage`) and a turn's opening, cut after a whole sentence (:func:`opening`), as
hybrid recall sends them (see :mod:`cogitator_memory.context.hybrid`)."""

from __future__ import annotations

import re

from ..recall.corpus import is_word_char
from ..tokens import count_tokens
from .history import TokenCache

_WORDS = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"[.!?…][\"')\]]*(?=\s)|\n")


def _line_scores(text: str, terms: frozenset[str]) -> tuple[list[str], list[int]]:
    """The lines of ``text`` and how many of ``terms`` (as whole words, case folded) each holds:
    each term is looked for with ``str.find`` and kept where no word character is next to it."""
    lines = text.split("\n")
    scores = [0] * len(lines)
    words = [t for t in terms if _WORDS.fullmatch(t)]
    if not words:
        return lines, scores
    folded = text.casefold()
    if len(folded) != len(text):  # folding changed the length: line by line
        folded_lines = [line.casefold() for line in lines]
        return lines, [len(set(_WORDS.findall(line)).intersection(words)) for line in folded_lines]
    size = len(folded)
    for word in words:
        line = counted = 0  # the line of ``counted``, the last place the line breaks were counted to
        at = folded.find(word)
        while at >= 0:
            after = at + len(word)
            if (at == 0 or not is_word_char(folded[at - 1])) and (after == size or not is_word_char(folded[after])):
                line += folded.count("\n", counted, at)
                counted = at
                scores[line] += 1
                end = folded.find("\n", after)  # the word counts once a line: on to the next line
                if end < 0:
                    break
                at = folded.find(word, end + 1)
            else:
                at = folded.find(word, at + 1)
    return lines, scores


def best_passage(text: str, terms: frozenset[str], budget: int, tokens: TokenCache | None = None) -> str:
    """The part of a long ``text`` about ``budget`` tokens long that holds most of ``terms``:
    the line holding most of them, with the lines around it while they fit, ``...`` where text
    was left out. A text within the budget is returned whole. ``tokens`` keeps the cut of a line
    longer than the budget (the same line is cut the same way at every build that sends it)."""
    if len(text) <= budget * 3 or (len(text) <= budget * 8 and count_tokens(text) <= budget):
        return text
    lines, scores = _line_scores(text, terms)
    best = scores.index(max(scores))  # the first line of the highest score
    costs: dict[int, int] = {}

    def cost(i: int) -> int:  # about 3.5 characters a token: the passage is counted exactly later
        if i not in costs:
            costs[i] = int(len(lines[i]) / 3.5) + 1
        return costs[i]

    first = last = best
    used = cost(best)
    while True:
        grown = False
        for i in (last + 1, first - 1):
            if 0 <= i < len(lines) and used + cost(i) <= budget:
                used += cost(i)
                first, last = min(first, i), max(last, i)
                grown = True
        if not grown:
            break
    body = "\n".join(lines[first : last + 1])
    if cost(best) > budget:
        body = (tokens or TokenCache()).cut(lines[best][: budget * 8], budget)[0]
    return ("... " if first > 0 else "") + body + (" ..." if last < len(lines) - 1 or cost(best) > budget else "")


def opening(text: str, limit: int, tokens: TokenCache) -> tuple[str, int]:
    """The opening of ``text`` within ``limit`` tokens, cut after its last whole sentence there
    (else after its last whole word) and marked `` [...]``; ``("", 0)`` when not even a word fits."""
    head, _count = tokens.cut(text[: limit * 8], limit)
    if len(head) >= len(text):
        return text, count_tokens(text)
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    if ends:
        head = head[: ends[-1]]
    else:
        space = head.rstrip().rfind(" ")
        head = head[:space] if space > 0 else ""
    head = head.rstrip()
    if not head:
        return "", 0
    short = head + " [...]"
    return short, count_tokens(short)


__all__ = ["best_passage", "opening"]
