"""``MemoryExtractor``: memory items read out of a conversation by a model, on quotes that are checked.

It is the item reader of the one extraction pipeline
(:class:`~cogitator_memory.extraction.pipeline.ExtractionPipeline`, which the graph extractor uses
too): the entries are cut into windows of about ``window_tokens`` tokens, each window is one model
call (:data:`~cogitator_memory.items.prompts.EXTRACTION_PROMPT` as the system prompt, the messages
numbered and dated in one user turn), an answer cut at its length limit keeps the items it
finished and the model is asked to go on (:func:`~cogitator_memory.items.prompts.extraction_continuation_prompt`),
up to :data:`EXTRACTION_CONTINUATIONS` times, and an answer holding no array is asked again, the
window failing with :class:`ExtractionAnswerError` after :data:`EXTRACTION_ATTEMPTS` such answers.

What is the items' own is how an answer becomes items. The model answers a JSON array of items,
each naming the message numbers it quotes. :func:`parse_extraction` reads that answer: the array is
found past any text around it (:func:`~cogitator_memory.models.read_json_array`), a null or blank
field counts as absent, an element that does not fit is dropped, an item naming a message the
window did not show is dropped, and every quote is checked against the entry of its message with
the lineage rules (:func:`~cogitator_memory.lineage.verify_evidence`: whitespace aside, case
counting). An item is ``verified`` only when all its quotes hold and they say its value
(:func:`~cogitator_memory.items.reading.supports`: two thirds of the value's content words are in
the quotes, so a quote of "I live in Lisbon" does not make "always answer in French" verified);
its trust is that of the least trusted entry a holding quote is in (:func:`trust_of_entry`),
``model`` when none holds; its time words are resolved
(:func:`~cogitator_memory.recall.resolve_time`) from the message that said them. The fields,
quotes and trust of an element are read with :mod:`cogitator_memory.items.reading`, as the graph
reader's are. The items are written through :class:`~cogitator_memory.items.MemoryItems`, whose
rules decide what becomes active: nothing unverified does. A window's items are written even when
a later answer of it failed. See ``docs/items.md``.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from functools import partial
from typing import Any, Literal, TypeAlias, cast

from ..errors import InvalidArgumentError
from ..extraction.pipeline import (
    DEFAULT_EXTRACTION_MAX_TOKENS,
    DEFAULT_WINDOW_TOKENS,
    EXTRACTION_ATTEMPTS,
    EXTRACTION_CONTINUATIONS,
    ExtractionAnswerError,
    ExtractionPipeline,
    ExtractionWindowError,
    ReportTotals,
    Step,
    WindowCounts,
    WindowStatus,
    count_quotes,
)
from ..extraction.windows import Window
from ..lineage import entry_text
from ..models.json_array import JsonArrayRead
from ..models.records import SummarizeFn
from ..recall.time import resolve_time
from ..threads import tree
from ..threads.records import MemoryEntry
from .prompts import (
    EXTRACTION_PROMPT,
    EXTRACTION_RETRY_PROMPT,
    MIN_WINDOW_TOKENS,
    extraction_continuation_prompt,
)
from .reading import (
    DEFAULT_CONFIDENCE,
    ExtractedQuote,
    QuoteReader,
    UnfitElement,
    answer_to_read,
    confidence_field,
    read_elements,
    text_field,
    trust_of_entry,
    weigh_quotes,
)
from .records import (
    ITEM_KINDS,
    ItemKind,
    MemoryItem,
    MemoryScope,
    NewMemoryItem,
    Trust,
    check_new_item,
    check_scope,
)
from .service import MemoryItems

ExtractionMode: TypeAlias = Literal["apply", "shadow"]
#: ``before_write(items)``: the items a window is about to write; returns (or resolves to) those to write.
BeforeWrite: TypeAlias = Callable[
    [list[NewMemoryItem]],
    Sequence[NewMemoryItem | Mapping[str, Any]] | Awaitable[Sequence[NewMemoryItem | Mapping[str, Any]]],
]

_SPACE = re.compile(r"\s+")
logger = logging.getLogger(__name__)


# ----- errors ------------------------------------------------------------------------------------


class WindowError(ExtractionWindowError):
    """:meth:`MemoryExtractor.extract` could not read or write a window.

    ``window`` is its number (from 1) of ``windows``, ``entry_ids`` the entries it showed, and
    ``__cause__`` what failed (:class:`ExtractionAnswerError`, the model's or the store's error).
    ``report`` is the :class:`ExtractionReport` of the whole call: the items every window wrote
    (those verified in this window before it failed included) and every window's error.
    """

    report: ExtractionReport | None


# ----- reading answers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ExtractedItem:
    """One item of a model's answer, read and checked (see :func:`parse_extraction`).

    ``verified`` is true when every quote holds and the quotes say the value
    (:func:`~cogitator_memory.items.reading.supports`); ``trust`` is the least trusted entry of the
    quotes that hold (``model`` when none does). ``valid_from`` and ``valid_to`` are the start and
    the end of the intervals the answer's time words name, read from the message that said them;
    ``time_words`` keeps those words.
    """

    kind: ItemKind
    subject: str
    attribute: str | None
    value: str
    confidence: float
    quotes: tuple[ExtractedQuote, ...]
    trust: Trust
    verified: bool
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    time_words: Mapping[str, str] = field(default_factory=dict)

    def to_new_item(self, scope: MemoryScope | Mapping[str, Any]) -> NewMemoryItem:
        """The item to write in ``scope``; the time words go in ``metadata["time_words"]``."""
        data: dict[str, Any] = {
            "kind": self.kind,
            "subject": self.subject,
            "attribute": self.attribute,
            "value": self.value,
            "evidence": [q.evidence() for q in self.quotes],
            "trust": self.trust,
            "verified": self.verified,
            "confidence": self.confidence,
            "scope": scope,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
        }
        if self.time_words:
            data["metadata"] = {"time_words": dict(self.time_words)}
        return check_new_item("item", data)


@dataclass
class _Parsed:
    items: list[ExtractedItem] = field(default_factory=list)
    #: Elements that did not fit (a required field missing or of the wrong kind...).
    dropped: int = 0
    #: Items dropped because they named a message the window did not show.
    unknown_messages: int = 0
    #: Time words that named no time.
    dates_unresolved: int = 0


_PLACEHOLDER_SCOPE = MemoryScope(agent_id="extraction")


def _squash(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


class _Reader:
    """Reads the elements of one window's answers against the entries it showed."""

    def __init__(self, entries: Mapping[int, MemoryEntry], user_id: str | None, zone: tzinfo) -> None:
        self.entries = entries
        self.zone = zone
        self.quotes = QuoteReader(entries, user_id)
        self._folded: dict[str, str] = {}

    def read(self, elements: Sequence[Any]) -> _Parsed:
        parsed = _Parsed()
        read = read_elements(elements, partial(self._item, parsed=parsed))
        parsed.items, parsed.dropped, parsed.unknown_messages = read.records, read.dropped, read.unknown_messages
        return parsed

    def _item(self, element: Mapping[str, Any], parsed: _Parsed) -> ExtractedItem | None:
        kind = text_field(element, "kind", required=True)
        if kind not in ITEM_KINDS:
            raise UnfitElement("unknown kind")
        subject = text_field(element, "subject", required=True)
        value = text_field(element, "value", required=True)
        attribute = text_field(element, "attribute")
        confidence = confidence_field(element)
        quotes = self.quotes.read(element.get("quotes"))
        if quotes is None:
            return None
        trust, verified = weigh_quotes(quotes, cast("str", value))
        words_from, words_to = text_field(element, "valid_from"), text_field(element, "valid_to")
        valid_from = self._when(words_from, quotes, parsed, end=False)
        valid_to = self._when(words_to, quotes, parsed, end=True)
        if valid_from is not None and valid_to is not None and valid_to <= valid_from:
            valid_to = None
        time_words = {k: v for k, v in (("valid_from", words_from), ("valid_to", words_to)) if v is not None}
        item = ExtractedItem(
            kind=kind,
            subject=cast("str", subject),
            attribute=attribute,
            value=cast("str", value),
            confidence=confidence,
            quotes=quotes,
            trust=trust,
            verified=verified,
            valid_from=valid_from,
            valid_to=valid_to,
            time_words=time_words,
        )
        try:  # the limits of an item (text lengths, NUL, surrogates) decide whether it fits
            item.to_new_item(_PLACEHOLDER_SCOPE)
        except InvalidArgumentError:
            raise UnfitElement("the item breaks the limits of an item") from None
        return item

    def _folded_text(self, entry: MemoryEntry) -> str:
        text = self._folded.get(entry.id)
        if text is None:
            text = self._folded[entry.id] = _squash(entry_text(entry)).casefold()
        return text

    def _when(
        self, words: str | None, quotes: Sequence[ExtractedQuote], parsed: _Parsed, *, end: bool
    ) -> datetime | None:
        """The start (or ``end``) of the interval ``words`` name, read from the message that said
        them: the first quoted message holding the words (those with holding quotes first), else
        the message of the first quote."""
        if words is None:
            return None
        needle = _squash(words).casefold()
        ordered = [q for q in quotes if q.holds] + [q for q in quotes if not q.holds]
        said = self.entries[quotes[0].message]
        for quote in ordered:
            entry = self.entries[quote.message]
            if needle in self._folded_text(entry):
                said = entry
                break
        interval = resolve_time(words, said.created_at, self.zone)
        if interval is None:
            parsed.dates_unresolved += 1
            return None
        return interval.end if end else interval.start


def parse_extraction(
    text: str,
    entries_by_ref: Mapping[int, MemoryEntry],
    *,
    user_id: str | None = None,
    time_zone: str | tzinfo = "UTC",
) -> list[ExtractedItem]:
    """The items of one extraction answer, read against the entries its messages showed.

    ``entries_by_ref`` maps each message number the model was shown to its entry. The JSON array
    is found past any text and brackets around it; an element that is not JSON, not an object, or
    does not fit an item (no kind of :data:`~cogitator_memory.items.ITEM_KINDS`, no subject, value
    or quote, a confidence outside 0..1, a field of the wrong type, text past an item's limits) is
    left out; null and blank fields count as absent. An item quoting a message number not in
    ``entries_by_ref`` is left out. Quotes are checked, trust and dates set, as the module docstring
    says (``user_id`` for :func:`trust_of_entry`, ``time_zone`` for the dates).
    """
    answer = answer_to_read(text, entries_by_ref, user_id, time_zone)
    return _Reader(answer.entries, answer.user_id, answer.zone).read(answer.elements).items


# ----- the report ----------------------------------------------------------------------------------


@dataclass
class WindowReport(WindowCounts):
    """What happened to one window.

    ``status``: ``read``, ``failed`` (``error`` says why; what it verified before failing was
    written) or ``not_read`` (an earlier window stopped the call). ``calls`` counts model calls,
    ``continuations`` the calls that went on after a cut answer and ``retries`` those that asked
    again after an answer without an array; ``complete`` is false when the last answer was still
    cut. ``items_read`` items fit, ``items_dropped`` elements did not (not JSON, not an item, or
    naming a message not shown: ``unknown_messages``); ``elements_unreadable`` counts those of
    them that were not JSON objects at all (broken JSON, also logged as a warning),
    ``quotes_verified`` and ``quotes_rejected`` count the quotes of the items read,
    ``items_unsupported`` the items read whose quotes all hold but do not say their value (written
    unverified), ``dates_unresolved`` the time words that named no time, and ``items_written`` the
    items written (after ``before_write``).
    """

    error: WindowError | None = None
    items_read: int = 0
    items_dropped: int = 0
    unknown_messages: int = 0
    elements_unreadable: int = 0
    quotes_verified: int = 0
    quotes_rejected: int = 0
    items_unsupported: int = 0
    dates_unresolved: int = 0
    items_written: int = 0


@dataclass
class ExtractionReport(ReportTotals):
    """What one :meth:`MemoryExtractor.extract` call did: the items written (as stored, in the
    order written), a :class:`WindowReport` per window, and the :class:`WindowError` of every
    window that failed. Its totals over every window: ``calls``, ``continuations``,
    ``quotes_verified``, ``quotes_rejected`` and those below."""

    items: list[MemoryItem] = field(default_factory=list)
    windows: list[WindowReport] = field(default_factory=list)
    errors: list[WindowError] = field(default_factory=list)

    @property
    def items_unsupported(self) -> int:
        """Items whose quotes all hold but do not say their value, over every window."""
        return self._sum("items_unsupported")

    @property
    def items_dropped(self) -> int:
        """Answer elements left out, over every window."""
        return self._sum("items_dropped")

    @property
    def elements_unreadable(self) -> int:
        """Answer elements that were not JSON objects (broken JSON), over every window."""
        return self._sum("elements_unreadable")


# ----- the extractor -------------------------------------------------------------------------------


class MemoryExtractor:
    """Reads memory items out of conversation entries with a model and writes them (see the
    module docstring).

    ``items`` is the :class:`~cogitator_memory.items.MemoryItems` service the items are written
    through; ``summarize`` the :data:`~cogitator_memory.models.SummarizeFn` that reaches the model
    (asked for ``model``, else its own, and for at most ``max_tokens`` tokens an answer).
    ``window_tokens`` is the size of a window. ``mode="apply"`` (the default) writes items under
    the activation rules of :class:`~cogitator_memory.items.MemoryItems`; ``mode="shadow"`` writes
    every new item as suggested, for a person to review and activate. ``before_write(items)``, sync or async, sees
    the :class:`~cogitator_memory.items.NewMemoryItem` list of each window before it is written and
    returns those to write (filtered or changed).
    """

    def __init__(
        self,
        *,
        items: MemoryItems,
        summarize: SummarizeFn,
        window_tokens: int = DEFAULT_WINDOW_TOKENS,
        max_tokens: int = DEFAULT_EXTRACTION_MAX_TOKENS,
        model: str | None = None,
        mode: ExtractionMode = "apply",
        before_write: BeforeWrite | None = None,
    ) -> None:
        if not isinstance(items, MemoryItems):
            raise InvalidArgumentError("items", f"must be a MemoryItems service, got {type(items).__name__}")
        self._pipeline = ExtractionPipeline(
            summarize=summarize,
            prompt=EXTRACTION_PROMPT,
            retry_prompt=EXTRACTION_RETRY_PROMPT,
            continuation=extraction_continuation_prompt,
            answer="items",
            window_tokens=window_tokens,
            max_tokens=max_tokens,
            model=model,
        )
        if mode not in ("apply", "shadow"):
            raise InvalidArgumentError("mode", f"must be 'apply' or 'shadow', got {mode!r}")
        if before_write is not None and not callable(before_write):
            raise InvalidArgumentError("before_write", "must be a function of the items, or None")
        self.items = items
        self.summarize = summarize
        self.window_tokens = window_tokens
        self.max_tokens = max_tokens
        self.model = model
        self.mode: ExtractionMode = mode
        self.before_write = before_write

    async def extract(
        self,
        entries: Sequence[MemoryEntry | Mapping[str, Any]],
        *,
        scope: MemoryScope | Mapping[str, Any],
        user_id: str | None = None,
        time_zone: str | tzinfo = "UTC",
        before_write: BeforeWrite | None = None,
    ) -> ExtractionReport:
        """Read ``entries`` (in the order given) window by window and write their items in ``scope``.

        ``user_id`` (default: the scope's user) is the user whose messages count as ``user``
        (:func:`trust_of_entry`); ``time_zone`` dates the messages shown and reads time words.
        Each window's items are written once it is read, in one batch (all or nothing).
        ``before_write(items)``, sync or async, is this call's hook, run after the extractor's
        own: it gets the items a window is about
        to write, once the model has answered, and returns those to write (a caller drops there
        the items whose entries were deleted or redacted while the model answered). A window
        whose answers hold no array (:class:`ExtractionAnswerError`) is passed and the next one read; a model or store failure
        stops the call. Either way, once the windows are done, the first failure is raised as a
        :class:`WindowError` whose ``report`` holds everything written. Events, redacted entries
        and entries without text are not shown.
        """
        checked_scope = check_scope("scope", scope)
        user = tree.check_optional_id("user_id", user_id)
        if before_write is not None and not callable(before_write):
            raise InvalidArgumentError("before_write", "must be a function of the items, or None")
        hooks = [hook for hook in (self.before_write, before_write) if hook is not None]
        if user is None:
            user = checked_scope.user_id
        plan = self._pipeline.plan(entries, time_zone)
        report = ExtractionReport(windows=[WindowReport(w.number, w.entry_ids, w.tokens) for w in plan.windows])

        def steps(window: Window, stats: WindowReport) -> list[Step]:
            found: list[ExtractedItem] = []  # what the window read, written even when reading failed
            reader = _Reader(window.entries_by_ref, user, plan.zone)
            return [
                partial(self._read_window, window, reader, stats, found),
                partial(self._write, found, checked_scope, stats, report, hooks),
            ]

        await ExtractionPipeline.run(
            plan.windows, report, steps, passing=(ExtractionAnswerError,), window_error=WindowError
        )
        return report

    async def _read_window(
        self, window: Window, reader: _Reader, stats: WindowReport, found: list[ExtractedItem]
    ) -> None:
        """Ask for the window's items (:meth:`~cogitator_memory.extraction.pipeline.ExtractionPipeline.ask`);
        the items read go into ``found`` as they come, so a later failure keeps them."""
        await self._pipeline.ask(window, stats, partial(self._take, reader=reader, stats=stats, found=found))

    @staticmethod
    def _take(read: JsonArrayRead, reader: _Reader, stats: WindowReport, found: list[ExtractedItem]) -> None:
        parsed = reader.read(read.elements)
        if read.skipped:
            stats.elements_unreadable += read.skipped
            logger.warning(
                "extraction window %d: %d element(s) of the model's answer were not JSON objects and were left out",
                stats.number,
                read.skipped,
            )
        stats.items_read += len(parsed.items)
        stats.items_dropped += read.skipped + parsed.dropped + parsed.unknown_messages
        stats.unknown_messages += parsed.unknown_messages
        stats.dates_unresolved += parsed.dates_unresolved
        count_quotes(stats, parsed.items)
        stats.items_unsupported += sum(all(q.holds for q in i.quotes) and not i.verified for i in parsed.items)
        found.extend(parsed.items)

    async def _write(
        self,
        found: list[ExtractedItem],
        scope: MemoryScope,
        stats: WindowReport,
        report: ExtractionReport,
        hooks: Sequence[BeforeWrite],
    ) -> None:
        if not found:
            return
        checked = [item.to_new_item(scope) for item in found]
        for hook in hooks:
            result = hook(list(checked))
            if inspect.isawaitable(result):
                result = await result
            if isinstance(result, str | bytes | Mapping) or not isinstance(result, Sequence):
                raise InvalidArgumentError("before_write", f"must return a list of items, got {type(result).__name__}")
            checked = [check_new_item(f"before_write[{i}]", item) for i, item in enumerate(result)]
        written = await self.items.add_many(checked, shadow=self.mode == "shadow")  # one batch, all or nothing
        report.items.extend(written)
        stats.items_written += len(written)


__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_EXTRACTION_MAX_TOKENS",
    "DEFAULT_WINDOW_TOKENS",
    "EXTRACTION_ATTEMPTS",
    "EXTRACTION_CONTINUATIONS",
    "EXTRACTION_PROMPT",
    "MIN_WINDOW_TOKENS",
    "BeforeWrite",
    "ExtractedItem",
    "ExtractedQuote",
    "ExtractionAnswerError",
    "ExtractionMode",
    "ExtractionReport",
    "MemoryExtractor",
    "WindowError",
    "WindowReport",
    "WindowStatus",
    "extraction_continuation_prompt",
    "parse_extraction",
    "trust_of_entry",
]
