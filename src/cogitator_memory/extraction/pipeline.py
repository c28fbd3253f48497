"""The one extraction pipeline: windows, model calls, answers, and the loop over the windows.

An extraction reads conversation entries into records with a model, one window of messages a
call. :class:`ExtractionPipeline` is what every extractor does the same way; a reader
(:class:`~cogitator_memory.items.extract.MemoryExtractor` for memory items,
:class:`~cogitator_memory.graph.extract.GraphExtractor` for entities and relations) only gives
its prompt and reads the answers into its records:

- the entries are checked and cut into windows of about ``window_tokens`` tokens
  (:meth:`ExtractionPipeline.plan`, :func:`~cogitator_memory.extraction.windows.plan_windows`);
- each window is one model call (the reader's system prompt, the window's messages in one user
  turn), asked for at most ``max_tokens`` tokens an answer. The JSON array of the answer is read
  past any text around it; an answer cut at its length limit is continued up to
  :data:`EXTRACTION_CONTINUATIONS` times, and one holding no array asked again, the window failing
  with :class:`ExtractionAnswerError` after :data:`EXTRACTION_ATTEMPTS` such answers
  (:meth:`ExtractionPipeline.ask`, over :func:`~cogitator_memory.models.asking.ask_json_array`);
- :meth:`ExtractionPipeline.run` goes through the windows in order. A window whose answers held no
  array (or another failure the reader names as passing) is passed and the next one read; any other
  failure (the model's, the store's) stops the call. Either way, once the windows are done, the
  first failure is raised as the reader's :class:`ExtractionWindowError`, whose ``report`` holds
  what every window did.

Each window's counts start as :class:`WindowCounts`; a report's totals come from
:class:`ReportTotals`. Reading an element's fields and quotes is :mod:`cogitator_memory.items.reading`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from functools import partial
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, TypeVar

from ..errors import MemoryStoreError
from ..models.asking import ask_json_array, ask_text, check_summarize
from ..models.json_array import JsonArrayRead
from ..models.records import SummarizeFn, SummarizeOptions, check_max_tokens
from ..recall.time import zone_name, zone_of
from ..threads.records import MemoryEntry, Message
from .windows import Window, check_entries, check_window_tokens, plan_windows

#: How many times the model is asked to go on after an answer cut at its length limit, per window.
EXTRACTION_CONTINUATIONS = 4
#: How many answers without a JSON array a window gets before it fails.
EXTRACTION_ATTEMPTS = 3
#: The size of a window, in tokens of the messages shown.
DEFAULT_WINDOW_TOKENS = 4000
#: The answer length each call asks for.
DEFAULT_EXTRACTION_MAX_TOKENS = 8000

WindowStatus: TypeAlias = Literal["read", "failed", "not_read"]


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


class ExtractionWindowError(MemoryStoreError):
    """An extractor could not read or write a window: what each reader's window error is
    (:class:`~cogitator_memory.items.extract.WindowError`,
    :class:`~cogitator_memory.graph.extract.GraphWindowError`).

    ``window`` is its number (from 1) of ``windows``, ``entry_ids`` the entries it showed, and
    ``__cause__`` what failed. ``report`` is the report of the whole call, set once the windows
    are done. ``what`` names the extraction in the message.
    """

    what: ClassVar[str] = "extraction"
    report: Any

    def __init__(self, window: int, windows: int, entry_ids: Sequence[str], cause: BaseException) -> None:
        self.window = window
        self.windows = windows
        self.entry_ids = list(entry_ids)
        self.report = None
        where = f"{self.entry_ids[0]} to {self.entry_ids[-1]}" if self.entry_ids else "no entries"
        super().__init__(
            f"{self.what} window {window} of {windows} (entries {where}) failed: {type(cause).__name__}: {cause}"
        )
        self.__cause__ = cause


# ----- counts --------------------------------------------------------------------------------------


@dataclass
class WindowCounts:
    """What every reader's window report starts with: the window's ``number`` (from 1), the
    ``entry_ids`` it showed and its estimated ``tokens``; its ``status`` (``read``, ``failed`` or
    ``not_read``: an earlier window stopped the call); ``calls`` to the model, of which
    ``continuations`` went on after a cut answer and ``retries`` asked again after an answer
    without an array; ``complete``, false when the last answer was still cut; ``error``, why the
    window failed (the reader's :class:`ExtractionWindowError`)."""

    number: int
    entry_ids: list[str]
    tokens: int
    status: WindowStatus = "not_read"
    calls: int = 0
    continuations: int = 0
    retries: int = 0
    complete: bool = False
    error: ExtractionWindowError | None = None


class _Quote(Protocol):
    @property
    def holds(self) -> bool: ...


class _Quoted(Protocol):
    @property
    def quotes(self) -> Sequence[_Quote]: ...


class _QuoteCounts(Protocol):
    quotes_verified: int
    quotes_rejected: int


def count_quotes(counts: _QuoteCounts, records: Iterable[_Quoted]) -> None:
    """Add the quotes of ``records`` to a window's ``quotes_verified`` (they hold) and
    ``quotes_rejected`` (they do not)."""
    for record in records:
        held = sum(q.holds for q in record.quotes)
        counts.quotes_verified += held
        counts.quotes_rejected += len(record.quotes) - held


class ReportTotals:
    """The totals over every window of a report (mixed into each reader's report dataclass,
    whose ``windows`` are :class:`WindowCounts`)."""

    windows: Sequence[WindowCounts]

    def _sum(self, name: str) -> int:
        return sum(int(getattr(w, name)) for w in self.windows)

    @property
    def calls(self) -> int:
        """Model calls, over every window."""
        return self._sum("calls")

    @property
    def continuations(self) -> int:
        """Calls that went on after a cut answer, over every window."""
        return self._sum("continuations")

    @property
    def quotes_verified(self) -> int:
        """Quotes found in the messages they named, over every window."""
        return self._sum("quotes_verified")

    @property
    def quotes_rejected(self) -> int:
        """Quotes not found in the messages they named, over every window."""
        return self._sum("quotes_rejected")


# ----- the pipeline --------------------------------------------------------------------------------

C = TypeVar("C", bound=WindowCounts)
E = TypeVar("E", bound=ExtractionWindowError)
#: One step of a window (reading it, writing it): every step of a window runs, even after one failed.
Step: TypeAlias = Callable[[], Awaitable[None]]


class _Report(Protocol[C, E]):
    @property
    def windows(self) -> list[C]: ...

    @property
    def errors(self) -> list[E]: ...


@dataclass(frozen=True)
class ExtractionPlan:
    """The windows of one extraction call (:meth:`ExtractionPipeline.plan`), with the time zone
    that dates their messages (``zone``, and ``zone_name`` as the messages say it)."""

    windows: list[Window]
    zone: tzinfo
    zone_name: str


class ExtractionPipeline:
    """The model calls of one reader (see the module docstring).

    ``summarize`` reaches the model (asked for ``model``, else its own, and for at most
    ``max_tokens`` tokens an answer); ``prompt`` is the reader's system prompt, ``retry_prompt``
    the user turn after an answer without an array, ``continuation(read)`` the one after a cut
    answer, and ``answer`` what the window's closing line asks for (``items``, ``entities and
    relations``). ``window_tokens`` is the size of a window. Every argument is checked here
    (:class:`~cogitator_memory.errors.InvalidArgumentError` naming it).
    """

    def __init__(
        self,
        *,
        summarize: SummarizeFn,
        prompt: str,
        retry_prompt: str,
        continuation: Callable[[JsonArrayRead], str],
        answer: str,
        window_tokens: int = DEFAULT_WINDOW_TOKENS,
        max_tokens: int = DEFAULT_EXTRACTION_MAX_TOKENS,
        model: str | None = None,
    ) -> None:
        check_summarize(summarize)
        check_window_tokens(window_tokens)
        check_max_tokens(max_tokens)
        self.summarize = summarize
        self.retry_prompt = retry_prompt
        self.continuation = continuation
        self.answer = answer
        self.window_tokens = window_tokens
        self.options = SummarizeOptions(model=model, prompt=prompt, max_tokens=max_tokens)

    def plan(self, entries: Sequence[MemoryEntry | Mapping[str, Any]], time_zone: str | tzinfo) -> ExtractionPlan:
        """``entries`` checked (dicts validated) and cut into windows, their messages dated in
        ``time_zone``."""
        zone = zone_of(time_zone)
        name = zone_name(time_zone)
        windows = plan_windows(check_entries(entries), self.window_tokens, zone, name, answer=self.answer)
        return ExtractionPlan(windows, zone, name)

    async def ask(
        self, window: Window, counts: WindowCounts, on_read: Callable[[JsonArrayRead], None] | None = None
    ) -> JsonArrayRead:
        """The JSON array the model answers for ``window``: asked again after an answer without an
        array (:class:`ExtractionAnswerError` after :data:`EXTRACTION_ATTEMPTS`), continued after a
        cut one (up to :data:`EXTRACTION_CONTINUATIONS` times); ``on_read`` sees each answer's
        elements as they come, so a later failure keeps them. Counts the calls in ``counts`` and
        sets its ``complete``; returns everything read (``cut`` when the last answer still was)."""

        def no_array(answers: list[str]) -> ExtractionAnswerError:
            return ExtractionAnswerError(window.number, answers)

        total = await ask_json_array(
            partial(ask_text, self.summarize, options=self.options),
            [Message(role="user", content=window.text)],
            retry_prompt=self.retry_prompt,
            continuation=self.continuation,
            attempts=EXTRACTION_ATTEMPTS,
            continuations=EXTRACTION_CONTINUATIONS,
            no_array=no_array,
            counts=counts,
            on_read=on_read,
        )
        counts.complete = not total.cut
        return total

    @staticmethod
    async def run(
        windows: Sequence[Window],
        report: _Report[C, E],
        steps: Callable[[Window, C], Sequence[Step]],
        *,
        passing: tuple[type[BaseException], ...],
        window_error: Callable[[int, int, list[str], BaseException], E],
    ) -> None:
        """Run the ``steps`` of every window in order (``report.windows`` holds their counts, one
        a window). Every step of a window runs; the first failure is the window's, marked on its
        counts (``status``, ``error``) and added to ``report.errors`` as ``window_error(number,
        windows, entry_ids, failure)``. A failure of a ``passing`` kind lets the next window be
        read; any other stops the call. Once done, the first window error (its ``report`` set,
        as every other's) is raised."""
        for window, counts in zip(windows, report.windows, strict=True):
            failure: BaseException | None = None
            stop = False
            for step in steps(window, counts):
                try:
                    await step()
                except passing as exc:
                    failure = failure or exc
                except Exception as exc:
                    failure, stop = failure or exc, True
            if failure is None:
                counts.status = "read"
                continue
            error = window_error(window.number, len(windows), window.entry_ids, failure)
            counts.status, counts.error = "failed", error
            report.errors.append(error)
            if stop:
                break
        if report.errors:
            for error in report.errors:
                error.report = report
            raise report.errors[0]


__all__ = [
    "DEFAULT_EXTRACTION_MAX_TOKENS",
    "DEFAULT_WINDOW_TOKENS",
    "EXTRACTION_ATTEMPTS",
    "EXTRACTION_CONTINUATIONS",
    "ExtractionAnswerError",
    "ExtractionPipeline",
    "ExtractionPlan",
    "ExtractionWindowError",
    "ReportTotals",
    "Step",
    "WindowCounts",
    "WindowStatus",
    "count_quotes",
]
