"""Reading a turn without a model: :func:`analyze_query`.

Before memory is searched for a turn, the turn is read for what it asks: whether it asks
anything at all (small talk is not searched), what kind of question it is, the time it names,
its terms and the names it mentions. The kind sets the weights of the search's channels (see
:class:`~cogitator_memory.recall.RetrieverSettings`):

- ``temporal``: asks when, how long, in what order, or names a time ("what did I say last
  Tuesday?", "how many weeks between the launch and the deadline?");
- ``update``: asks for the state now of something that may have changed ("what is my current
  rate?", "do I still use Flask?");
- ``aggregate``: asks for a count, a list or a summary across the conversation ("how many
  columns did I add across my requests?", "summarize how the project went");
- ``preference``: asks for a recommendation or about likes ("what would you suggest?",
  "which do I prefer?");
- ``general``: anything else.

The rules are English word patterns; a turn in another language is read as ``general`` with
its terms, names and times (the time words are English too, see ``docs/time.md``).

Reading takes time in proportion to the turn's length (about 3 ms per 1,000 characters), and a
turn is at most :data:`MAX_QUERY_CHARS` characters long. :func:`analyze_query_async` reads a
long turn in a worker thread, so that an event loop is never held for long.
"""

from __future__ import annotations

import asyncio
import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Literal, TypeAlias

from ..errors import InvalidArgumentError
from ..search.tokenizer import ENGLISH_STOPWORDS, index_terms
from ..vectors.records import MAX_CONTENT_CHARS
from ._forms import word_family
from .time import EventTime, TimeInterval, TimeMention, find_event_times, find_times

QueryKind: TypeAlias = Literal["temporal", "aggregate", "update", "preference", "general"]


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: The longest turn (characters) a search or a context build reads: the longest keyword query
#: a store searches (:data:`~cogitator_memory.vectors.MAX_CONTENT_CHARS`), some 25,000 tokens.
MAX_QUERY_CHARS: int = MAX_CONTENT_CHARS
#: The time words of a query read at most (the first ones): a question names a few times; a
#: pasted text naming thousands would only cost time and memory to read them all.
MAX_QUERY_TIMES = 64
#: :func:`analyze_query_async` reads a turn longer than this (characters) in a worker thread.
THREAD_ABOVE_CHARS: int = 1_000

#: Every kind of question, in the order their rules are tried.
QUERY_KINDS: tuple[QueryKind, ...] = ("update", "temporal", "aggregate", "preference", "general")

#: Words that carry no subject of their own in a question (on top of the English stopwords the
#: keyword index drops): left out of :attr:`QueryAnalysis.terms`.
QUESTION_WORDS: frozenset[str] = _word_set(
    """
    how when where why whose while also just very really please tell know remember remind recall
    said say saying mention mentioned talk talked discuss discussed told ask asked let lets us
    any some something anything thing things one ones get got give make made way much many
    again ever yet so too well about up out over more most other only same than
    """
)

#: Words of a question that frame it rather than name its subject ("do you *think*", "*given*
#: my plan"): left out of the word families added to the terms (see :func:`expanded_terms`).
FRAME_WORDS: frozenset[str] = _word_set("think thought given give gave")

#: Words that make a turn small talk when it holds nothing else.
SMALL_TALK: frozenset[str] = _word_set(
    """
    hi hello hey hiya howdy yo greetings morning afternoon evening night good day bye goodbye
    cya later see soon thanks thank thx ty cheers ok okay k kk sure yes yeah yep yup no nope nah
    great cool nice awesome perfect fine alright right lol haha hah hmm wow oh ah welcome
    appreciate appreciated doing going how are is you your u r what up sup all well fine bad
    too much lot lots very so nice meet pleasure glad happy there it i am me a the to for and just again
    guys everyone everybody folks buddy friend mate dear then bro
    """
)

# Asks when or how long: temporal even with an update's words ("when did I move?").
_WHEN = re.compile(
    r"\b(?:when\s+(?:did|do|does|was|were|is|are|will|would|have|has|had|should|can|could|am)|"
    r"what\s+(?:time|date|day|year|month)|which\s+(?:day|date|year|month|week)|how\s+long|how\s+old|"
    r"how\s+many\s+(?:days|weeks|months|years|hours|minutes)|how\s+soon|how\s+recently)\b",
    re.I,
)
_TEMPORAL = re.compile(
    r"\b(?:when|(?:in\s+)?(?:what|which|the)\s+order|in\s+order|chronolog\w*|timeline|sequence|earlier|"
    # "before the trip", "after I moved"; not "before?" or "ever ... before." closing a sentence
    r"(?:before|after)(?!\s*(?:[?.!,;:]|$))|"
    r"first\s+time|last\s+time|since|until|till|deadline|ago|date[sd]?|schedule[sd]?)\b",
    re.I,
)
# "between X and Y" on one line (what ``\bbetween\s+.+\s+and\b`` finds): see _between_and.
_BETWEEN = re.compile(r"\bbetween(\s+)", re.I)
_AND = re.compile(r"(?<!\s)\s+and\b", re.I)
_UPDATE = re.compile(
    r"\b(?:current(?:ly)?|now|still|any\s*more|latest|most\s+recent(?:ly)?|newest|up[-\s]?to[-\s]?date|"
    r"changed?|changes|updated?|switched|moved|these\s+days|at\s+the\s+moment|so\s+far|nowadays|"
    r"used\s+to|no\s+longer|originally|previously|replaced|revised)\b",
    re.I,
)
# Asks to count or list every instance: an aggregate question even with other kinds' words
# ("how many times did I change my plan before the launch?").
_AGGREGATE_STRONG = re.compile(
    r"\b(?:how\s+many\s+(?:times|different|separate|distinct)|how\s+often|what\s+(?:are|were)\s+all|"
    r"(?:list|name|tell\s+me|give\s+me|show\s+me)\s+(?:all|every|each)|every\s+(?:time|single)|each\s+time|"
    r"all\s+the\s+(?:times|ways|things|places|people)|in\s+total|altogether|combined|summar\w+|overview|recap)\b",
    re.I,
)
_AGGREGATE = re.compile(
    r"\b(?:how\s+many|how\s+much|in\s+total|total|count|number\s+of|list|all\s+(?:the|of|my)|every|"
    r"each|across|throughout|summar\w+|overview|recap|altogether|combined|overall|sum)\b",
    re.I,
)
_PREFERENCE = re.compile(
    r"\b(?:prefer\w*|favou?rite|like|likes|love|loves|enjoy\w*|hate|dislike\w*|recommend\w*|"
    r"suggest\w*|advi[cs]e|should\s+i|would\s+you|what\s+(?:would|should)|best\s+for\s+me|"
    r"ideas?\s+for|taste|style)\b",
    re.I,
)
# A name: a capitalised word that does not open a sentence, a run of them, a word with inner
# capitals, digits or dots (camelCase, Flask-Login, Render.com, v2), or a quoted phrase.
_QUOTED = re.compile(r"[\"“”«»]([^\"“”«»]{2,80})[\"“”«»]|(?<![A-Za-z])'([^']{2,80})'(?![A-Za-z])")
_WORD = re.compile(r"[^\W_](?:[\w'’.\-]*[^\W_])?")
_SENTENCE_ENDS = frozenset(".!?:;")
_NOT_NAMES: frozenset[str] = _word_set(
    """
    i i'm i've i'd i'll im ive a an the what which who whom whose when where why how can could would
    should will do does did is are was were have has had my me mine our we you your please hi hello
    hey thanks thank ok okay yes no so and but or if then also tell give show list summarize
    monday tuesday wednesday thursday friday saturday sunday january february march april may june
    july august september october november december today tomorrow yesterday
    """
)


_POSSESSIVE = re.compile(r"['’][sS]$|(?<=[sS])['’]$")
#: Words that are no name when written in capitals ("ONLY", "NOT", "ALL"): the stopwords, the
#: question words, small talk and a few words of emphasis.
_COMMON_WORDS: frozenset[str] = (
    ENGLISH_STOPWORDS
    | QUESTION_WORDS
    | SMALL_TALK
    | _NOT_NAMES
    | _word_set(
        """
        only not never always must important note please all every each none nothing everything
        exactly really very first last new free warning stop wait yes no one two three four five
        six seven eight nine ten items points things words sentences
        """
    )
)


@dataclass(frozen=True, slots=True)
class QueryAnalysis:
    """What a turn asks, read without a model (see :func:`analyze_query`).

    ``search`` is ``False`` for small talk ("thanks!", "good morning") and for a turn with no
    terms at all; ``kind`` is the kind of question; ``times`` the time expressions found in it,
    read from ``anchor`` in ``time_zone``, and ``interval`` the time they cover together (from
    the earliest start to the latest end), ``None`` when it names none; ``terms`` the keyword
    terms (English stopwords and question words left out, in order, no repeats); ``entities``
    the names it mentions (capitalised words past the first of a sentence, words like
    ``Flask-Login`` or ``Render.com``, quoted phrases), as written; ``event_times`` the times
    it names from an event ("the week before the trip", :func:`~cogitator_memory.recall.time.find_event_times`),
    which a search places in the calendar once it knows when the event was
    (:meth:`~cogitator_memory.recall.time.EventTime.interval`).
    """

    text: str
    search: bool
    kind: QueryKind
    anchor: datetime
    time_zone: str
    times: tuple[TimeMention, ...] = ()
    interval: TimeInterval | None = None
    terms: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    event_times: tuple[EventTime, ...] = ()


def _zone_name(time_zone: str | tzinfo) -> str:
    if isinstance(time_zone, str):
        return time_zone
    return str(getattr(time_zone, "key", None) or time_zone)


def query_terms(text: str) -> list[str]:
    """The keyword terms of a question: :func:`~cogitator_memory.search.index_terms` without
    :data:`QUESTION_WORDS`, repeats dropped, in order."""
    return list(dict.fromkeys(t for t in index_terms(text) if t not in QUESTION_WORDS))


def expanded_terms(terms: Sequence[str]) -> list[str]:
    """``terms`` and, after them, the other forms of each that the stemmer does not join
    (irregular verbs and derivations: ``bought`` -> ``buy``, ``decide`` -> ``decision``; see
    :data:`~cogitator_memory.recall._forms.FAMILIES`), :data:`FRAME_WORDS` not expanded,
    repeats dropped."""
    extra = [form for term in terms if term not in FRAME_WORDS for form in word_family(term)]
    return list(dict.fromkeys([*terms, *extra]))


def is_small_talk(text: str) -> bool:
    """Whether ``text`` is small talk: every word of it is a greeting, a thank-you, an
    acknowledgement or filler (see :data:`SMALL_TALK`), and it asks for nothing by name."""
    words = [w.casefold().replace("’", "'") for w in _WORD.findall(text)]
    if not words:
        return True
    return all(w in SMALL_TALK or w.rstrip("s") in SMALL_TALK for w in words) and len(words) <= 12


def _ends_sentence(gap: str) -> bool:
    """Whether the text between two words ends a sentence: its last character but whitespace
    is one of ``.!?:;``, or a line ends in the whitespace after it. Each gap is read once, so
    reading every word of a text takes time in proportion to its length."""
    kept = gap.rstrip()
    return kept[-1:] in _SENTENCE_ENDS or "\n" in gap[len(kept) :]


def find_entities(text: str) -> list[str]:
    """The names a text mentions, as written, without repeats (see :class:`QueryAnalysis`)."""
    found: list[str] = []
    for match in _QUOTED.finditer(text):
        phrase = (match.group(1) or match.group(2) or "").strip()
        if phrase:
            found.append(phrase)
    run: list[str] = []
    run_end = 0
    last_end = 0  # where the word before ends: a sentence ends in the gap after it, if anywhere

    def flush() -> None:
        if run:
            found.append(" ".join(run))
            run.clear()

    for match in _WORD.finditer(text):
        word = match.group(0)
        folded = word.casefold().replace("’", "'")
        opens = match.start() == 0 or _ends_sentence(text[last_end : match.start()])
        last_end = match.end()
        shaped = any(c.isdigit() for c in word) and any(c.isalpha() for c in word)
        shaped = shaped or bool(re.search(r"[a-z][A-Z]|[A-Za-z][.\-][A-Za-z]", word))
        capital = word[:1].isupper() and folded not in _NOT_NAMES
        shouted = len(word) > 1 and word[1:].isupper()  # an acronym, or a word written in capitals
        if shouted and not shaped and folded in _COMMON_WORDS:
            capital = False  # "Mention ONLY three": emphasis, not a name
        is_name = shaped or (capital and (not opens or shouted))
        if not is_name:
            flush()
            continue
        if run and text[run_end : match.start()].strip() != "":
            flush()
        owner = _POSSESSIVE.sub("", word)
        run.append(owner or word)
        run_end = match.end()
        if owner != word:  # "Natalie's plan": the name is Natalie, and it ends there
            flush()
    flush()
    return list(dict.fromkeys(found))


def _between_and(text: str) -> bool:
    """Whether ``text`` says "between X and Y": "between", space, a phrase on one line, space,
    "and" (as ``\\bbetween\\s+.+\\s+and\\b`` would find, which takes time in proportion to the
    square of a long line with many "between"s; this takes time in proportion to the text)."""
    spaces = [m.span(1) for m in _BETWEEN.finditer(text)]
    if not spaces:
        return False
    ands = [m.start() for m in _AND.finditer(text)]  # where the spaces before each "and" start
    lines = [m.start() for m in re.finditer("\n", text)]
    for start, end in spaces:
        at = bisect_left(ands, start)
        if at < len(ands) and ands[at] == start and text[start + 1 : end - 1].strip("\n"):
            return True  # "between \t and": the phrase is one of the spaces, not a line end
        after = bisect_right(ands, end - 1)  # an "and" whose spaces start past the phrase's start
        line = bisect_left(lines, end)
        line_end = lines[line] if line < len(lines) else len(text)
        if after < len(ands) and ands[after] <= line_end:
            return True  # the phrase runs from ``end`` to those spaces, and no line ends in it
    return False


def query_kind(text: str, times: tuple[TimeMention, ...] = ()) -> QueryKind:
    """The kind of question ``text`` is: ``temporal`` when it names a time (``times``); else
    ``aggregate`` when it asks to count or list every instance ("how many times", "how often",
    "what are all the ...", "list every ..."); ``temporal`` when it asks when or how long
    ("when did I move?", "how old was I"); else the rules in :data:`QUERY_KINDS` order."""
    if times:
        return "temporal"
    if _AGGREGATE_STRONG.search(text):
        return "aggregate"
    if _WHEN.search(text):
        return "temporal"
    if _UPDATE.search(text):
        return "update"
    if _TEMPORAL.search(text) or _between_and(text):
        return "temporal"
    if _AGGREGATE.search(text):
        return "aggregate"
    if _PREFERENCE.search(text):
        return "preference"
    return "general"


def check_query(name: str, value: object) -> str:
    """``value`` if it is a string of at most :data:`MAX_QUERY_CHARS` characters, else an
    :class:`~cogitator_memory.errors.InvalidArgumentError` naming ``name`` (a search's ``query``,
    a build's ``current_input``)."""
    if not isinstance(value, str):
        raise InvalidArgumentError(name, f"must be a string, got {type(value).__name__}")
    if len(value) > MAX_QUERY_CHARS:
        raise InvalidArgumentError(
            name, f"has {len(value):,} characters, more than the {MAX_QUERY_CHARS:,} a query may have"
        )
    return value


def analyze_query(input: str, anchor: datetime | None = None, time_zone: str | tzinfo = "UTC") -> QueryAnalysis:
    """Read a turn the way recall does: whether to search, the kind, the time, terms and names.

    ``anchor`` is the moment the turn is read at (``build(as_of=...)``; now by default; naive is
    UTC): "yesterday" in the turn is the day before it, in ``time_zone`` (an IANA name or a
    tzinfo). Raises :class:`~cogitator_memory.errors.InvalidArgumentError` naming the argument
    for a non-string input or one over :data:`MAX_QUERY_CHARS` characters, an anchor that is not
    a datetime or an unknown zone. The time taken grows in proportion to the input's length; in
    a coroutine, :func:`analyze_query_async` keeps a long input off the event loop.
    """
    check_query("input", input)
    if anchor is None:
        anchor = datetime.now(UTC)
    elif not isinstance(anchor, datetime):
        raise InvalidArgumentError("anchor", f"must be a datetime, got {type(anchor).__name__}")
    elif anchor.tzinfo is None:
        anchor = anchor.replace(tzinfo=UTC)
    times = tuple(find_times(input, anchor, time_zone, limit=MAX_QUERY_TIMES))
    zone = _zone_name(time_zone)
    terms = tuple(expanded_terms(query_terms(input)))
    if not input.strip() or is_small_talk(input):
        return QueryAnalysis(input, False, "general", anchor, zone, times, None, terms, ())
    interval = None
    if times:
        start = min(t.interval.start for t in times)
        end = max(t.interval.end for t in times)
        finest = min(times, key=lambda t: t.interval.duration).interval.precision
        interval = TimeInterval(start, end, finest)
    entities = tuple(find_entities(input))
    events = tuple(find_event_times(input))
    search = bool(terms or entities or times)
    kind: QueryKind = "temporal" if events else query_kind(input, times)
    return QueryAnalysis(input, search, kind, anchor, zone, times, interval, terms, entities, events)


async def analyze_query_async(
    input: str, anchor: datetime | None = None, time_zone: str | tzinfo = "UTC"
) -> QueryAnalysis:
    """:func:`analyze_query` for a coroutine: an input over :data:`THREAD_ABOVE_CHARS` characters
    is read in a worker thread (:func:`asyncio.to_thread`), so the event loop goes on serving
    other calls meanwhile; a shorter one, read in a few milliseconds, is read in place. Raises
    what :func:`analyze_query` raises."""
    if isinstance(input, str) and THREAD_ABOVE_CHARS < len(input) <= MAX_QUERY_CHARS:
        return await asyncio.to_thread(analyze_query, input, anchor, time_zone)
    return analyze_query(input, anchor, time_zone)


__all__ = [
    "FRAME_WORDS",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TIMES",
    "QUERY_KINDS",
    "QUESTION_WORDS",
    "SMALL_TALK",
    "THREAD_ABOVE_CHARS",
    "QueryAnalysis",
    "QueryKind",
    "analyze_query",
    "analyze_query_async",
    "check_query",
    "expanded_terms",
    "find_entities",
    "is_small_talk",
    "query_kind",
    "query_terms",
]
