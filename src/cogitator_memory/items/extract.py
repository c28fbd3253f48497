"""``MemoryExtractor``: memory items read out of a conversation by a model, on quotes that are checked.

The entries are cut into windows of about ``window_tokens`` tokens. Each window is one model call
(:data:`~cogitator_memory.items.prompts.EXTRACTION_PROMPT` as the system prompt, the messages
numbered and dated in one user turn); the model answers a JSON array of items, each naming the
message numbers it quotes. :func:`parse_extraction` reads that answer: the array is found past any
text around it (:func:`~cogitator_memory.models.read_json_array`), a null or blank field counts as
absent, an element that does not fit is dropped, an item naming a message the window did not show
is dropped, and every quote is checked against the entry of its message with the lineage rules
(:func:`~cogitator_memory.lineage.verify_evidence`: whitespace aside, case counting). An item is
``verified`` only when all its quotes hold and they say its value
(:func:`~cogitator_memory.items.reading.supports`: two thirds of the value's content words are in
the quotes, so a quote of "I live in Lisbon" does not make "always answer in French" verified);
its trust is that of the least trusted entry a holding
quote is in (:func:`trust_of_entry`), ``model`` when none holds; its time words are resolved
(:func:`~cogitator_memory.recall.resolve_time`) from the message that said them. The items are
written through :class:`~cogitator_memory.items.MemoryItems`, whose rules decide what becomes
active: nothing unverified does.

An answer cut at its length limit keeps the items it finished and the model is asked to go on
(:func:`~cogitator_memory.items.prompts.extraction_continuation_prompt`), up to
:data:`EXTRACTION_CONTINUATIONS` times. An answer holding no array is asked again; after
:data:`EXTRACTION_ATTEMPTS` such answers the window fails with :class:`ExtractionAnswerError`. That
loop is :func:`~cogitator_memory.models.asking.ask_json_array`, and the fields, quotes and trust
of an element are read with :mod:`cogitator_memory.items.reading`; the graph extractor uses both
too. See ``docs/items.md``.
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

from ..errors import InvalidArgumentError, MemoryStoreError
from ..lineage import entry_text
from ..models.asking import ask_json_array, ask_text, check_summarize
from ..models.json_array import JsonArrayRead, read_json_array
from ..models.records import SummarizeFn, SummarizeOptions, check_max_tokens
from ..recall.time import resolve_time, zone_name, zone_of
from ..threads import tree
from ..threads.records import MemoryEntry, Message
from .prompts import (
    EXTRACTION_PROMPT,
    EXTRACTION_RETRY_PROMPT,
    MIN_WINDOW_TOKENS,
    Window,
    check_window_tokens,
    extraction_continuation_prompt,
    plan_windows,
)
from .reading import (
    DEFAULT_CONFIDENCE,
    ExtractedQuote,
    QuoteReader,
    UnfitElement,
    check_entries,
    check_entries_by_ref,
    confidence_field,
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

#: How many times the model is asked to go on after an answer cut at its length limit, per window.
EXTRACTION_CONTINUATIONS = 4
#: How many answers without a JSON array a window gets before it fails.
EXTRACTION_ATTEMPTS = 3
#: The size of a window, in tokens of the messages shown.
DEFAULT_WINDOW_TOKENS = 4000
#: The answer length each call asks for.
DEFAULT_EXTRACTION_MAX_TOKENS = 8000

ExtractionMode: TypeAlias = Literal["apply", "shadow"]
#: ``before_write(items)``: the items a window is about to write; returns (or resolves to) those to write.
BeforeWrite: TypeAlias = Callable[
    [list[NewMemoryItem]],
    Sequence[NewMemoryItem | Mapping[str, Any]] | Awaitable[Sequence[NewMemoryItem | Mapping[str, Any]]],
]

_SPACE = re.compile(r"\s+")
logger = logging.getLogger(__name__)


# ----- errors ------------------------------------------------------------------------------------


class ExtractionAnswerError(MemoryStoreError):
    """The model's answers for a window held no JSON array, :data:`EXTRACTION_ATTEMPTS` times running.

    ``window`` is the window's number (from 1), ``answers`` the answers that were read.
    """

    def __init__(self, window: int, answers: Sequence[str]) -> None:
        self.window = window
        self.answers = list(answers)
        last = self.answers[-1] if self.answers else ""
        super().__init__(
            f"the model's answers for extraction window {window} held no JSON array "
            f"({len(self.answers)} tries); the last began {last[:200]!r}"
        )


class WindowError(MemoryStoreError):
    """:meth:`MemoryExtractor.extract` could not read or write a window.

    ``window`` is its number (from 1) of ``windows``, ``entry_ids`` the entries it showed, and
    ``__cause__`` what failed (:class:`ExtractionAnswerError`, the model's or the store's error).
    ``report`` is the :class:`ExtractionReport` of the whole call: the items every window wrote
    (those verified in this window before it failed included) and every window's error.
    """

    def __init__(self, window: int, windows: int, entry_ids: Sequence[str], cause: BaseException) -> None:
        self.window = window
        self.windows = windows
        self.entry_ids = list(entry_ids)
        self.report: ExtractionReport | None = None
        where = f"{self.entry_ids[0]} to {self.entry_ids[-1]}" if self.entry_ids else "no entries"
        super().__init__(
            f"extraction window {window} of {windows} (entries {where}) failed: {type(cause).__name__}: {cause}"
        )
        self.__cause__ = cause


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
        for element in elements:
            try:
                item = self._item(element, parsed)
            except UnfitElement:
                parsed.dropped += 1
                continue
            if item is None:
                parsed.unknown_messages += 1
            else:
                parsed.items.append(item)
        return parsed

    def _item(self, element: object, parsed: _Parsed) -> ExtractedItem | None:
        if not isinstance(element, Mapping):
            raise UnfitElement("not an object")
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
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"must be a string, got {type(text).__name__}")
    entries = check_entries_by_ref(entries_by_ref)
    user = tree.check_optional_id("user_id", user_id)
    zone = zone_of(time_zone)
    return _Reader(entries, user, zone).read(read_json_array(text, objects=True).elements).items


# ----- the report ----------------------------------------------------------------------------------

WindowStatus: TypeAlias = Literal["read", "failed", "not_read"]


@dataclass
class WindowReport:
    """What happened to one window.

    ``status``: ``read``, ``failed`` (``error`` says why; what it verified before failing was
    written) or ``not_read`` (an earlier window stopped the call). ``calls`` counts model calls,
    ``continuations`` the calls that went on after a cut answer and ``retries`` those that asked
    again after an answer without an array; ``complete`` is false when the last answer was still
    cut. ``items_read`` items fit, ``items_dropped`` elements did not (not JSON, not an item, or
    naming a message not shown: ``unknown_messages``); ``elements_unreadable`` counts those of
    them that were not JSON objects at all (broken JSON, also logged as a warning), ``quotes_verified`` and ``quotes_rejected``
    count the quotes of the items read, ``items_unsupported`` the items read whose quotes all
    hold but do not say their value (written unverified), ``dates_unresolved`` the time words that named no time,
    and ``items_written`` the items written (after ``before_write``).
    """

    number: int
    entry_ids: list[str]
    tokens: int
    status: WindowStatus = "not_read"
    calls: int = 0
    continuations: int = 0
    retries: int = 0
    complete: bool = False
    items_read: int = 0
    items_dropped: int = 0
    unknown_messages: int = 0
    elements_unreadable: int = 0
    quotes_verified: int = 0
    quotes_rejected: int = 0
    items_unsupported: int = 0
    dates_unresolved: int = 0
    items_written: int = 0
    error: WindowError | None = None


@dataclass
class ExtractionReport:
    """What one :meth:`MemoryExtractor.extract` call did: the items written (as stored, in the
    order written), a :class:`WindowReport` per window, and the :class:`WindowError` of every
    window that failed."""

    items: list[MemoryItem] = field(default_factory=list)
    windows: list[WindowReport] = field(default_factory=list)
    errors: list[WindowError] = field(default_factory=list)

    def _sum(self, name: str) -> int:
        return sum(int(getattr(w, name)) for w in self.windows)

    @property
    def quotes_verified(self) -> int:
        """Quotes found in the entries they named, over every window."""
        return self._sum("quotes_verified")

    @property
    def quotes_rejected(self) -> int:
        """Quotes not found in the entries they named, over every window."""
        return self._sum("quotes_rejected")

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

    @property
    def calls(self) -> int:
        """Model calls, over every window."""
        return self._sum("calls")

    @property
    def continuations(self) -> int:
        """Calls that went on after a cut answer, over every window."""
        return self._sum("continuations")


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
        check_summarize(summarize)
        check_window_tokens(window_tokens)
        check_max_tokens(max_tokens)
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
        self._options = SummarizeOptions(model=model, prompt=EXTRACTION_PROMPT, max_tokens=max_tokens)

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
        zone = zone_of(time_zone)
        checked = check_entries(entries)
        windows = plan_windows(checked, self.window_tokens, zone, zone_name(time_zone))
        report = ExtractionReport(windows=[WindowReport(w.number, w.entry_ids, w.tokens) for w in windows])
        for window, stats in zip(windows, report.windows, strict=True):
            found: list[ExtractedItem] = []
            failure: BaseException | None = None
            stop = False
            try:
                await self._read_window(window, _Reader(window.entries_by_ref, user, zone), stats, found)
            except ExtractionAnswerError as exc:
                failure = exc
            except Exception as exc:
                failure, stop = exc, True
            try:
                await self._write(found, checked_scope, stats, report, hooks)
            except Exception as exc:
                failure, stop = failure or exc, True
            if failure is None:
                stats.status = "read"
                continue
            error = WindowError(window.number, len(windows), window.entry_ids, failure)
            stats.status, stats.error = "failed", error
            report.errors.append(error)
            if stop:
                break
        if report.errors:
            for error in report.errors:
                error.report = report
            raise report.errors[0]
        return report

    async def _read_window(
        self, window: Window, reader: _Reader, stats: WindowReport, found: list[ExtractedItem]
    ) -> None:
        """Ask for the window's items (:func:`~cogitator_memory.models.asking.ask_json_array`:
        asked again after an answer without an array, continued after a cut one); the items read
        go into ``found`` as they come, so a later failure keeps them."""

        def no_array(answers: list[str]) -> ExtractionAnswerError:
            return ExtractionAnswerError(stats.number, answers)

        total = await ask_json_array(
            partial(ask_text, self.summarize, options=self._options),
            [Message(role="user", content=window.text)],
            retry_prompt=EXTRACTION_RETRY_PROMPT,
            continuation=extraction_continuation_prompt,
            attempts=EXTRACTION_ATTEMPTS,
            continuations=EXTRACTION_CONTINUATIONS,
            no_array=no_array,
            counts=stats,
            on_read=partial(self._take, reader=reader, stats=stats, found=found),
        )
        stats.complete = not total.cut

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
        for item in parsed.items:
            held = sum(q.holds for q in item.quotes)
            stats.quotes_verified += held
            stats.quotes_rejected += len(item.quotes) - held
            if held == len(item.quotes) and not item.verified:
                stats.items_unsupported += 1
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
    "extraction_continuation_prompt",
    "parse_extraction",
    "trust_of_entry",
]
