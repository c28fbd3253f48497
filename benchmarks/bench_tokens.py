"""Token counting: the estimate of ``cogitator_memory.tokens`` against tiktoken's ``cl100k_base``.

Four kinds of text, a few hundred samples each, of lengths from a few words to a few pages:

- ``prose``: messages of user/assistant conversations (``data/prose.json``, cut from the BEAM
  chat data set to lengths between 20 and 1,600 characters);
- ``code``: windows of whole lines of Python and JavaScript (``data/code_*.txt``);
- ``json``: tool-call arguments made by a seeded generator (compact, spaced and indented JSON
  with strings, numbers, paths, URLs, dates, nested lists and objects, some non-ASCII text);
- ``non-latin``: windows of Chinese, Japanese, Korean, Russian, Arabic, Hindi, Hebrew, Greek and
  Thai text (``data/nonlatin_*.txt``).

For each kind: the median absolute relative error, the median signed error (negative = the
estimate counts fewer tokens than cl100k), and the p90 of the absolute error; the targets are a
median absolute error of at most 10% and no kind under-counted by more than 20% (median signed
error >= -20%). Then ``count_tokens`` throughput beside tiktoken's ``encode`` on the same text.
The reference is built offline by ``benchmarks/reference_tokenizer.py`` (npm ``js-tiktoken``).
"""

from __future__ import annotations

import json
import math
import random
import statistics
import string
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cogitator_memory import tokens
from cogitator_memory.tokens import count_messages_tokens, count_tokens

from .common import Row
from .reference_tokenizer import HOW, load_cl100k

DATA = Path(__file__).parent / "data"
KINDS = ("prose", "code", "json", "non-latin")
LANGUAGES = ("zh", "ja", "ko", "ru", "ar", "hi", "he", "el", "th")
MEDIAN_ABS_TARGET = 0.10
UNDER_COUNT_LIMIT = -0.20


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


def prose_samples() -> list[str]:
    """Conversation messages (user and assistant) of varied length."""
    samples: list[str] = json.loads((DATA / "prose.json").read_text(encoding="utf-8"))
    return samples


def code_samples(count: int = 300, seed: int = 7) -> list[str]:
    """Windows of whole lines of the Python and JavaScript files."""
    rng = random.Random(seed)
    files = [
        (DATA / name).read_text(encoding="utf-8").splitlines(keepends=True)
        for name in ("code_python.txt", "code_js.txt")
    ]
    out = []
    for i in range(count):
        lines = files[i % len(files)]
        start = rng.randrange(len(lines))
        target = _log_uniform(rng, 30, 2500)
        text = ""
        for line in lines[start:]:
            if text and len(text) + len(line) > target:
                break
            text += line
        if text.strip():
            out.append(text)
    return out


_WORDS = [
    "search",
    "query",
    "user",
    "order",
    "invoice",
    "weather",
    "forecast",
    "meeting",
    "report",
    "summary",
    "draft",
    "email",
    "calendar",
    "event",
    "file",
    "path",
    "config",
    "deploy",
    "build",
    "release",
    "branch",
    "commit",
    "issue",
    "ticket",
    "customer",
    "product",
    "price",
    "status",
]
_KEYS = [
    "query",
    "location",
    "units",
    "limit",
    "offset",
    "path",
    "content",
    "recursive",
    "city",
    "country",
    "date",
    "start_date",
    "end_date",
    "timezone",
    "user_id",
    "email",
    "subject",
    "body",
    "to",
    "cc",
    "attachments",
    "include_archived",
    "sort_by",
    "order",
    "filters",
    "tags",
    "priority",
    "assignee",
    "title",
    "description",
    "url",
    "method",
    "headers",
    "timeout",
    "retries",
    "language",
    "format",
    "max_results",
]
_UNICODE = (
    "Zürich",
    "São Paulo",
    "München",
    "Kraków",
    "東京",
    "北京市",
    "Москва",
    "القاهرة",
    "café crème",
    "naïve résumé",
)


def _json_value(rng: random.Random, depth: int) -> Any:
    kind = rng.random()
    if depth < 2 and kind < 0.12:
        return {rng.choice(_KEYS): _json_value(rng, depth + 1) for _ in range(rng.randint(1, 4))}
    if depth < 2 and kind < 0.22:
        return [_json_value(rng, depth + 1) for _ in range(rng.randint(1, 5))]
    if kind < 0.30:
        return rng.randint(0, 10 ** rng.randint(1, 7))
    if kind < 0.35:
        return round(rng.uniform(-500, 500), rng.randint(1, 4))
    if kind < 0.40:
        return rng.choice([True, False, None])
    if kind < 0.47:
        return f"{rng.randint(2019, 2026)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z"
    if kind < 0.54:
        parts = [rng.choice(_WORDS) for _ in range(rng.randint(1, 4))]
        return "/" + "/".join(parts) + rng.choice([".py", ".md", ".json", "/", ".csv"])
    if kind < 0.60:
        return f"https://{rng.choice(_WORDS)}.example.com/{rng.choice(_WORDS)}?id={rng.randint(1, 99999)}"
    if kind < 0.66:
        return rng.choice(_UNICODE)
    if kind < 0.72:
        return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(rng.randint(6, 32)))
    words = [rng.choice(_WORDS) for _ in range(rng.randint(1, 25))]
    sentence = " ".join(words)
    return sentence[0].upper() + sentence[1:] + rng.choice(["", ".", "?", "!"])


def json_samples(count: int = 300, seed: int = 11) -> list[str]:
    """Tool-call arguments as a model writes them: compact, spaced or indented JSON objects."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        args = {rng.choice(_KEYS): _json_value(rng, 0) for _ in range(_log_uniform(rng, 1, 14))}
        style = rng.random()
        if style < 0.45:
            out.append(json.dumps(args, ensure_ascii=False))
        elif style < 0.8:
            out.append(json.dumps(args, ensure_ascii=False, separators=(",", ":")))
        else:
            out.append(json.dumps(args, ensure_ascii=False, indent=2))
    return out


def nonlatin_samples(per_language: int = 34, seed: int = 13) -> list[tuple[str, str]]:
    """``(language, text)`` windows of each non-Latin text, cut at spaces where the script has them."""
    rng = random.Random(seed)
    out = []
    for lang in LANGUAGES:
        text = (DATA / f"nonlatin_{lang}.txt").read_text(encoding="utf-8")
        for _ in range(per_language):
            length = min(_log_uniform(rng, 8, 1500), len(text))
            start = rng.randrange(0, len(text) - length + 1)
            if lang not in ("zh", "ja", "th"):
                # Start and end on word boundaries, as a real message would.
                space = text.find(" ", start)
                start = space + 1 if 0 <= space < start + 20 else start
            window = text[start : start + length]
            if lang not in ("zh", "ja", "th") and " " in window.strip():
                window = window[: window.rstrip().rfind(" ")]
            if window.strip():
                out.append((lang, window.strip()))
    return out


def samples_by_kind() -> dict[str, list[str]]:
    """The test texts of each kind."""
    return {
        "prose": prose_samples(),
        "code": code_samples(),
        "json": json_samples(),
        "non-latin": [text for _, text in nonlatin_samples()],
    }


def _errors(texts: list[str], reference: Callable[[str], int]) -> list[float]:
    out = []
    for text in texts:
        ref = reference(text)
        if ref:
            out.append((count_tokens(text) - ref) / ref)
    return out


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def error_figures(kind: str, errors: list[float]) -> dict[str, Any]:
    """Median absolute, median signed and p90 absolute relative error, and whether targets are met."""
    absolute = [abs(e) for e in errors]
    median_abs = statistics.median(absolute)
    median_signed = statistics.median(errors)
    return {
        "kind": kind,
        "samples": len(errors),
        "median_abs": median_abs,
        "median_signed": median_signed,
        "p90_abs": _p90(absolute),
        "passed": median_abs <= MEDIAN_ABS_TARGET and median_signed >= UNDER_COUNT_LIMIT,
    }


def holdout_samples() -> list[tuple[str, str]]:
    """``(language, text)`` paragraphs on other topics than the non-Latin windows (see the docs)."""
    data: dict[str, list[str]] = json.loads((DATA / "nonlatin_holdout.json").read_text(encoding="utf-8"))
    return [(lang, text) for lang, texts in data.items() for text in texts]


def conversations(count: int = 60, seed: int = 17) -> list[list[dict[str, str]]]:
    """Chat message lists (2 to 12 messages, some with a sender name) made of the prose samples."""
    rng = random.Random(seed)
    prose = prose_samples()
    out = []
    for _ in range(count):
        messages = [{"role": "system", "content": "You are a helpful assistant."}]
        for i in range(rng.randint(1, 11)):
            message = {"role": "user" if i % 2 == 0 else "assistant", "content": rng.choice(prose)}
            if i % 2 == 0 and rng.random() < 0.3:
                message["name"] = rng.choice(["alice", "bob_smith", "Carol"])
            messages.append(message)
        out.append(messages)
    return out


def cookbook_tokens(encoding: Any, messages: list[dict[str, str]]) -> int:
    """OpenAI's published way to count a chat prompt for cl100k models (3 per message + every
    value's tokens + 1 per name, + 3 that prime the reply)."""
    total = 3
    for message in messages:
        total += 3
        for key, value in message.items():
            total += len(encoding.encode(value, disallowed_special=()))
            if key == "name":
                total += 1
    return total


def _throughput(fn: Callable[[str], Any], texts: list[str], repeat: int, cold: bool = False) -> float:
    chars = sum(len(t) for t in texts)
    best = math.inf
    for _ in range(repeat):
        if cold:
            tokens._CACHE.clear()
        start = time.perf_counter()
        for text in texts:
            fn(text)
        best = min(best, time.perf_counter() - start)
    return chars / best


def _error_row(name: str, fig: dict[str, Any], what: str, target: bool) -> Row:
    value = fig[what] * 100
    passed: bool | None = None
    target_text: str | None = None
    if target and what == "median_abs":
        passed, target_text = fig["median_abs"] <= MEDIAN_ABS_TARGET, "<= 10%"
    elif target and what == "median_signed":
        passed, target_text = fig["median_signed"] >= UNDER_COUNT_LIMIT, ">= -20% (under-count)"
    return Row(
        group="tokens",
        name=name,
        value=round(value, 2),
        unit="%",
        baseline=0.0,
        baseline_name="cl100k (exact)",
        target=target_text,
        passed=passed,
        extra={"samples": fig["samples"], "reference": HOW},
    )


async def run(quick: bool) -> list[Row]:
    """Error per kind of text against cl100k, and ``count_tokens`` throughput beside tiktoken's."""
    encoding = load_cl100k()

    def reference(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    rows: list[Row] = []
    kinds = samples_by_kind()
    for kind, texts in kinds.items():
        fig = error_figures(kind, _errors(texts, reference))
        rows.append(_error_row(f"{kind}: median abs error", fig, "median_abs", True))
        rows.append(_error_row(f"{kind}: median signed error", fig, "median_signed", True))
        rows.append(_error_row(f"{kind}: p90 abs error", fig, "p90_abs", False))
    per_language: dict[str, list[str]] = {}
    for lang, text in nonlatin_samples():
        per_language.setdefault(lang, []).append(text)
    for lang, texts in per_language.items():
        fig = error_figures(lang, _errors(texts, reference))
        rows.append(_error_row(f"non-latin/{lang}: median signed error", fig, "median_signed", False))
    held = [text for _, text in holdout_samples()]
    fig = error_figures("held-out", _errors(held, reference))
    rows.append(_error_row("non-latin held out: median abs error", fig, "median_abs", False))
    rows.append(_error_row("non-latin held out: median signed error", fig, "median_signed", False))
    chats = conversations()
    chat_errors = []
    for messages in chats:
        ref = cookbook_tokens(encoding, messages)
        chat_errors.append((count_messages_tokens(messages) - ref) / ref)
    fig = error_figures("messages", chat_errors)
    rows.append(_error_row("messages vs cookbook formula: median abs error", fig, "median_abs", True))
    rows.append(_error_row("messages vs cookbook formula: median signed error", fig, "median_signed", True))

    repeat = 3 if quick else 7
    for kind in KINDS:
        texts = kinds[kind]
        theirs = _throughput(reference, texts, repeat)
        for cold in (False, True):
            ours = _throughput(count_tokens, texts, repeat, cold=cold)
            rows.append(
                Row(
                    group="tokens",
                    name=f"count_tokens throughput, {kind}, {'cold' if cold else 'warm'} cache",
                    value=round(ours / 1e6, 2),
                    unit="Mchar/s",
                    baseline=round(theirs / 1e6, 2),
                    baseline_name="tiktoken encode (Rust)",
                    ratio=round(ours / theirs, 2),
                    target=None,
                    passed=None,
                    extra={"chars": sum(len(t) for t in texts), "texts": len(texts)},
                )
            )
    # What add_entry pays per message: one short text, many times.
    short = [text for text in kinds["prose"] if len(text) < 120][:50]
    calls = 200 if quick else 1000
    ours_ns = _per_call_ns(count_tokens, short, calls)
    theirs_ns = _per_call_ns(reference, short, calls)
    rows.append(
        Row(
            group="tokens",
            name="count_tokens, one short message (<120 chars)",
            value=round(ours_ns / 1000, 2),
            unit="us/call",
            baseline=round(theirs_ns / 1000, 2),
            baseline_name="tiktoken encode (Rust)",
            ratio=round(ours_ns / theirs_ns, 2),
            target=None,
            passed=None,
            extra={"texts": len(short)},
        )
    )
    return rows


def _per_call_ns(fn: Callable[[str], Any], texts: list[str], calls: int) -> float:
    best = math.inf
    for _ in range(5):
        start = time.perf_counter_ns()
        for i in range(calls):
            fn(texts[i % len(texts)])
        best = min(best, (time.perf_counter_ns() - start) / calls)
    return best


def report() -> None:
    """Print every row (for tuning): ``python -m benchmarks.bench_tokens``."""
    import asyncio

    for row in asyncio.run(run(quick=True)):
        baseline = f"  (tiktoken {row.baseline}, x{row.ratio})" if row.ratio is not None else ""
        met = "" if row.passed is None else ("  ok" if row.passed else "  FAIL")
        print(f"{row.name:<55} {row.value:>8} {row.unit}{baseline}{met}")


if __name__ == "__main__":
    report()
