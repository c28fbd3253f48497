"""Token counting: the estimate's behaviour, its pre-tokenizer, and its error on known counts."""

from __future__ import annotations

import random
import re
import sys
from typing import Any

import pytest

from cogitator_memory import tokens
from cogitator_memory.threads.records import EntryContent, Message, NewMemoryEntry, ToolCall, ToolResult
from cogitator_memory.tokens import (
    IMAGE_TOKENS_HIGH,
    IMAGE_TOKENS_LOW,
    MESSAGE_OVERHEAD,
    NAME_OVERHEAD,
    TOOL_CALL_OVERHEAD,
    count_content_tokens,
    count_entry_tokens,
    count_message_tokens,
    count_messages_tokens,
    count_tokens,
    count_tool_calls_tokens,
    count_tool_results_tokens,
    truncate_to_tokens,
)

PROSE = (
    "Certainly! To create an effective schedule leading up to the deadline, we'll need to break "
    "down your project into manageable tasks and set milestones for each phase. First, clearly "
    "define what your project entails, then divide each component into smaller, specific tasks."
)
CODE = "def add(a: int, b: int) -> int:\n    return a + b\n\nprint(add(2, 3))\n"
CHINESE_RUN = "我建议先列一个清单把需要完成的事情按时间顺序排好第一周可以联系搬家公司比较三到四家的报价" * 4

# Counts of tiktoken's cl100k_base (tiktoken 0.14, ranks rebuilt by benchmarks/reference_tokenizer.py
# and checked against tiktoken's pinned SHA-256), computed once and written down here so that the
# tests need neither tiktoken nor the network.
CL100K_COUNTS = [
    ("hello world", 2),
    ("The quick brown fox jumps over the lazy dog.", 10),
    (
        "Can you help me plan a trip to Lisbon in May? I'd like to see the old town, eat pastéis de "
        "nata and take a day trip to Sintra.",
        36,
    ),
    (
        "def fibonacci(n: int) -> list[int]:\n    a, b = 0, 1\n    out = []\n    for _ in range(n):\n"
        "        out.append(a)\n        a, b = b, a + b\n    return out\n",
        52,
    ),
    ("const total = items.reduce((sum, item) => sum + item.price * item.qty, 0);", 22),
    ('{"query": "weather in Berlin", "units": "metric", "days": 3, "include_hourly": false}', 27),
    ("你好！很高兴为你提供帮助。关于你提到的搬家计划，我建议先列一个清单。", 40),
    ("Здравствуйте! Спасибо за вопрос. Что касается переезда, я бы посоветовал сначала составить список дел.", 46),
    ("مرحبًا! شكرًا على سؤالك. بالنسبة للانتقال إلى منزل جديد، أنصحك أولًا بإعداد قائمة بالمهام.", 69),
    ("नमस्ते! आपके सवाल के लिए धन्यवाद। घर बदलने की तैयारी के बारे में मेरी सलाह है।", 78),
    ("こんにちは！ご質問ありがとうございます。引っ越しの準備についてですが、まずはやることリストを作りましょう。", 46),
]

# Pieces of cl100k's own pattern (run with the ``regex`` module), written down likewise.
CL100K_PIECES = [
    (
        "I'm here_now  \n\n  x = 12345;\t",
        ["I", "'m", " here", "_now", "  \n\n", " ", " x", " =", " ", "123", "45", ";", "\t"],
    ),
    ("don't STOP—it's 3.14!  ", ["don", "'t", " STOP", "—it", "'s", " ", "3", ".", "14", "!", "  "]),
    ("héllo wörld_42 (ok)\r\n", ["héllo", " wörld", "_", "42", " (", "ok", ")\r\n"]),
    ("1½ cups, 5 m² and Ⅻ①", ["1½", " cups", ",", " ", "5", " m", "²", " and", " ", "Ⅻ①"]),
]


def test_empty_text_is_zero_and_any_text_at_least_one() -> None:
    assert count_tokens("") == 0
    assert count_tokens(" ") == 1
    assert count_tokens("a") == 1
    assert count_tokens("\n") == 1


@pytest.mark.parametrize(("text", "expected"), CL100K_COUNTS, ids=[t[:16] for t, _ in CL100K_COUNTS])
def test_close_to_cl100k_on_known_counts(text: str, expected: int) -> None:
    estimate = count_tokens(text)
    # Under-counting is the harmful direction (a prompt that overflows): allow less of it.
    assert expected * 0.9 - 1 <= estimate <= expected * 1.2 + 1, (estimate, expected)


@pytest.mark.parametrize(("text", "pieces"), CL100K_PIECES)
def test_pre_tokenizer_cuts_like_cl100k(text: str, pieces: list[str]) -> None:
    assert tokens._PIECE.findall(text) == pieces
    assert tokens._pattern(text).findall(text) == pieces


def test_common_words_are_one_token_each() -> None:
    assert count_tokens(" the and of to in") == 5
    assert count_tokens("hello") == 1
    assert 1 <= count_tokens("1234567") <= 3  # cl100k: "123", "456", "7"


def test_count_grows_with_text() -> None:
    one = count_tokens(PROSE)
    assert 40 <= one <= 70
    assert abs(count_tokens(PROSE + " " + PROSE) - 2 * one) <= 2
    assert count_tokens(PROSE * 10) > count_tokens(PROSE * 5) > one
    previous = 0
    words = PROSE.split(" ")
    for n in range(1, len(words) + 1, 5):
        current = count_tokens(" ".join(words[:n]))
        assert current >= previous - 1  # monotone up to rounding
        previous = current


def _fuzzed_texts(count: int, seed: int) -> list[str]:
    """Texts of words, marks and every kind of whitespace next to one another."""
    rng = random.Random(seed)
    alphabet = [*"ab Zé\t\n\r  .,'-_0123²½Ⅻ我中한Щ!?\"(){}", "\u00a0", "\u2003", "\u3000", "\x0b", "\x1c"]
    alphabet += ["\x85", "\u2028", "'s", "'ll", " the", "\r\n", "  \n", " \n ", "hello", "42"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30))) for _ in range(count)]


@pytest.mark.parametrize(
    "text", [PROSE, CODE, CHINESE_RUN, *(t for t, _ in CL100K_COUNTS), *(t for t, _ in CL100K_PIECES)]
)
def test_words_cut_between_the_pieces_of_the_pattern(text: str) -> None:
    # count_tokens prices a text word by word (parts cut at single spaces): the parts, each with
    # the space before it, must be cut into exactly the pieces of the whole text.
    for sample in [text, *_fuzzed_texts(300, seed=len(text))]:
        words = tokens._words(sample)
        pieces = tokens._PIECE.findall(words[0])
        for word in words[1:]:
            pieces += tokens._PIECE.findall(" " + word)
        assert pieces == tokens._PIECE.findall(sample), sample


def test_every_kind_of_whitespace_is_known_to_the_word_cut() -> None:
    # A space after any whitespace must be seen (it may belong to a whitespace run).
    spaces = {chr(code) for code in range(sys.maxunicode + 1) if chr(code).isspace()}
    assert {ch for ch in spaces if re.fullmatch(r"\s", ch)} == spaces
    for ch in spaces:
        assert tokens._space_after_whitespace(f"a{ch} b"), repr(ch)
    assert not tokens._space_after_whitespace("a b\nc\td")


def test_counts_by_words_are_the_counts_by_pieces() -> None:
    texts = [*_fuzzed_texts(3000, seed=7), PROSE, CODE, CHINESE_RUN, PROSE * 20, "word " * 300]
    texts += [f"The quick brown fox, #{i}: 'ok' it's {i * 7} done.\n\n  - item {i}" for i in range(300)]
    for round_ in range(2):  # words new, then words known
        for text in texts:
            exact = tokens._total(tokens._exact_total(text))
            assert count_tokens(text) == exact, (round_, text)
    tokens._SPACED.clear()
    tokens._LEADING.clear()
    letters = "abcdefghijklmnopqrstuvwxyz"
    long_new = " ".join(f"w{letters[i // 26]}{letters[i % 26]}x," for i in range(400))  # new words: by pieces
    assert count_tokens(long_new) == tokens._total(tokens._exact_total(long_new))
    assert 0 < len(tokens._SPACED) <= tokens._NEW_WORDS_PRICED


def _new_word(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.4:
        return f"#{rng.randint(0, 10**7)}"  # a number in a known form
    if roll < 0.7:
        return f"{rng.choice(['z', 'Q', 'ö', '我', '('])}{rng.randint(0, 10**4)}{rng.choice(['', ',', 'x', '.'])}"
    return "".join(rng.choice("qxzjkvéK") for _ in range(rng.randint(1, 9)))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_texts_of_known_and_new_words_are_priced_like_their_pieces(seed: int) -> None:
    """Known words with new ones among them (numbers, names, one word twice, more new words than
    are priced one by one, most words new): the count is the count by pieces, and the words'
    summed prices are the pieces' up to the order of the sum."""
    rng = random.Random(seed)
    known = [*PROSE.split(" "), "#12", "v2.0", "x1", ""]
    for _ in range(3):
        count_tokens(PROSE + " #12 v2.0 x1  x1")
    for _ in range(1500):
        words = [rng.choice(known) for _ in range(rng.randint(1, 40))]
        for _ in range(rng.choice([0, 1, 1, 2, 3, 9, 12, 30])):
            words.insert(rng.randrange(len(words) + 1), _new_word(rng))
        if rng.random() < 0.2:
            words.insert(rng.randrange(len(words) + 1), rng.choice(words))
        text = " ".join(words)
        if not text:
            continue
        exact = tokens._exact_total(text)
        by_words = tokens._words_total(text)
        if by_words is not None:
            assert by_words == pytest.approx(exact, rel=1e-12, abs=1e-12), text
        assert count_tokens(text) == tokens._total(exact), text


def test_a_number_is_priced_by_its_form() -> None:
    """A word with digits is priced as the word with every digit 0 (digits are pieces of their
    own, one token each): the cache of words finds it by that form, and keeps it."""
    prices = tokens._Prices()
    assert prices["#1234"] is tokens._MISSING and "#1234" not in prices  # no form known
    prices["#0000"] = 2.5
    prices["end"] = 1.0
    assert prices["#1234"] == 2.5 and prices.get("#1234") == 2.5  # found by its form, kept
    assert prices["#12345"] is tokens._MISSING  # another form
    assert prices["ends"] is tokens._MISSING and prices.get("ends") is None  # no digits
    text = "The answer is #{} here."
    for first in (11111, 222222, 3):  # the forms met first
        count_tokens(text.format(first))
    for number in (98765, 424242, 7):
        assert count_tokens(text.format(number)) == tokens._total(tokens._exact_total(text.format(number)))
        assert tokens._SPACED.get(f"#{number}") == tokens._SPACED["#" + "0" * len(str(number))]


def test_counts_stay_the_same_when_the_caches_are_full(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_SPACED", tokens._Prices())
    for cache in ("_LEADING", "_CACHE"):
        monkeypatch.setattr(tokens, cache, {})
    monkeypatch.setattr(tokens, "_WORD_CACHE_LIMIT", 40)
    monkeypatch.setattr(tokens, "_CACHE_LIMIT", 40)
    texts = [*_fuzzed_texts(500, seed=11), *(f"{PROSE} #{i} {i * 13}" for i in range(100))]
    for text in texts:
        assert count_tokens(text) == tokens._total(tokens._exact_total(text)), text
        assert len(tokens._SPACED) <= 40 and len(tokens._LEADING) <= 40 and len(tokens._CACHE) <= 40


def test_scripts_are_priced_differently() -> None:
    # Same number of characters, very different token counts (as in cl100k).
    assert count_tokens("hello world, this is fine") < count_tokens("你好世界这是很好的一个测试句子啊哈哈哈哈哈哈")
    assert count_tokens("Привет, как дела?") > count_tokens("Hello, how are you?")


@pytest.mark.parametrize("text", [PROSE, CODE, CHINESE_RUN, "x" * 500, "word " * 200, "a\n" * 100])
@pytest.mark.parametrize("budget", [1, 2, 5, 17, 40, 1000])
def test_truncate_is_a_prefix_within_budget(text: str, budget: int) -> None:
    cut = truncate_to_tokens(text, budget)
    assert text.startswith(cut)
    assert count_tokens(cut) <= budget
    if count_tokens(text) <= budget:
        assert cut == text
    else:
        assert len(cut) < len(text)


@pytest.mark.parametrize("text", [PROSE, CODE, CHINESE_RUN])
@pytest.mark.parametrize("budget", [3, 10, 30])
def test_truncate_with_ellipsis_counts_it(text: str, budget: int) -> None:
    cut = truncate_to_tokens(text, budget, ellipsis="…")
    assert count_tokens(cut) <= budget
    if count_tokens(text) <= budget:
        assert cut == text
    else:
        assert cut.endswith("…")
        assert text.startswith(cut[:-1])


@pytest.mark.parametrize("budget", [5, 10, 20, 33])
def test_truncate_keeps_as_much_as_fits(budget: int) -> None:
    cut = truncate_to_tokens(PROSE, budget)
    # Close to the budget, not far below it, and the next word would not have fit.
    assert budget - 1 <= count_tokens(cut) <= budget
    next_word = PROSE[len(cut) :].split()[0]
    assert count_tokens(cut + " " + next_word) > budget


def test_truncate_cuts_inside_a_long_piece() -> None:
    # A run of Han characters without punctuation is one piece; it must still be cut to fit.
    cut = truncate_to_tokens(CHINESE_RUN, 10)
    assert cut and CHINESE_RUN.startswith(cut)
    assert 7 <= count_tokens(cut) <= 10


def test_truncate_edge_budgets() -> None:
    assert truncate_to_tokens(PROSE, 0) == ""
    assert truncate_to_tokens(PROSE, -5) == ""
    assert truncate_to_tokens("", 10) == ""
    assert truncate_to_tokens("short", 10) == "short"
    assert truncate_to_tokens(PROSE, 2, ellipsis=" [and much more text follows]") == ""


def _message(**fields: Any) -> Message:
    return Message.model_validate({"role": "user", "content": "Describe this picture.", **fields})


def test_message_framing_and_name() -> None:
    text = "Describe this picture."
    plain = count_message_tokens(_message())
    assert plain == MESSAGE_OVERHEAD + count_tokens(text)
    named = count_message_tokens(_message(name="alice"))
    assert named == plain + NAME_OVERHEAD + count_tokens("alice")
    assert count_message_tokens({"role": "user", "content": text}) == plain


def test_images_are_counted_by_detail() -> None:
    base = count_message_tokens(_message())
    parts = [{"type": "text", "text": "Describe this picture."}]
    low = {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}
    high = {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "high"}}
    auto = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    inline = {"type": "image_base64", "image_base64": {"data": "iVBORw0KGgo=", "media_type": "image/png"}}
    assert count_message_tokens(_message(content=[*parts, low])) == base + IMAGE_TOKENS_LOW
    assert count_message_tokens(_message(content=[*parts, high])) == base + IMAGE_TOKENS_HIGH
    assert count_message_tokens(_message(content=[*parts, auto])) == base + IMAGE_TOKENS_HIGH
    assert count_message_tokens(_message(content=[*parts, inline])) == base + IMAGE_TOKENS_HIGH
    assert count_content_tokens(_message(content=[low, low])) == 2 * IMAGE_TOKENS_LOW
    # The image's URL or bytes are not priced as text.
    assert count_content_tokens(_message(content=[inline])) == IMAGE_TOKENS_HIGH
    assert (IMAGE_TOKENS_LOW, IMAGE_TOKENS_HIGH) == (85, 765)


def test_tool_call_name_and_arguments_are_counted() -> None:
    small = ToolCall(id="call_1", name="search", arguments={"q": "x"})
    large = ToolCall(
        id="call_1",
        name="search",
        arguments={
            "query": "hotels in Lisbon near the river with a pool",
            "max_results": 25,
            "filters": {"stars": [4, 5]},
        },
    )
    assert count_tool_calls_tokens(None) == 0
    assert count_tool_calls_tokens([]) == 0
    assert count_tool_calls_tokens([small]) >= TOOL_CALL_OVERHEAD + count_tokens("search") + 3
    assert count_tool_calls_tokens([large]) >= count_tool_calls_tokens([small]) + 20
    assert count_tool_calls_tokens([small, large]) == count_tool_calls_tokens([small]) + count_tool_calls_tokens(
        [large]
    )
    message = Message(role="assistant", content="", tool_calls=[large])
    assert count_message_tokens(message) == MESSAGE_OVERHEAD + count_tool_calls_tokens([large])
    longer_name = ToolCall(id="call_1", name="search_the_hotel_catalogue_by_city", arguments={"q": "x"})
    assert count_tool_calls_tokens([longer_name]) > count_tool_calls_tokens([small])


def test_tool_results_are_counted() -> None:
    result = ToolResult(call_id="call_1", result={"temperature": 21.5, "conditions": "sunny with light wind"})
    failed = ToolResult(call_id="call_2", error="the weather service did not answer within 30 seconds")
    assert count_tool_results_tokens(None) == 0
    assert count_tool_results_tokens([result]) > MESSAGE_OVERHEAD + 8
    assert count_tool_results_tokens([failed]) > MESSAGE_OVERHEAD + 8
    text = ToolResult(call_id="call_3", result="plain text result")
    assert count_tool_results_tokens([text]) == MESSAGE_OVERHEAD + count_tokens("plain text result")


def test_messages_add_reply_priming() -> None:
    first = _message()
    second = Message(role="assistant", content="It shows a cat on a red sofa.")
    assert count_messages_tokens([]) == 0
    assert count_messages_tokens([first, second]) == count_message_tokens(first) + count_message_tokens(second) + 3


def test_entry_tokens_of_messages_and_events() -> None:
    message = NewMemoryEntry(thread_id="t", message={"role": "user", "content": PROSE})
    assert count_entry_tokens(message) == count_message_tokens(message.message)  # type: ignore[arg-type]
    summary = "The user planned a move to Lisbon in May and asked for a packing list."
    compaction = EntryContent(type="compaction", event={"summary": summary})
    assert count_entry_tokens(compaction) == MESSAGE_OVERHEAD + count_tokens(summary)
    custom = EntryContent(type="custom", event={"name": "note", "data": {"text": "remember the passport renewal"}})
    assert count_entry_tokens(custom) >= count_tokens("remember the passport renewal")
    assert count_entry_tokens(EntryContent(type="custom", event={"name": "note"})) == 0
    label = EntryContent(type="label", event={"label": "checkpoint"})
    assert count_entry_tokens(label) == 0


def test_entry_tokens_of_tool_data() -> None:
    call = ToolCall(id="call_1", name="get_weather", arguments={"city": "Lisbon", "days": 3})
    result = ToolResult(call_id="call_1", result={"forecast": ["sun", "sun", "rain"]})
    assistant = EntryContent(message=Message(role="assistant", content="Let me check."), tool_calls=[call])
    assert count_entry_tokens(assistant) == count_message_tokens(assistant.message) + count_tool_calls_tokens([call])  # type: ignore[arg-type]
    # Calls carried by the message itself are not counted twice.
    inline = EntryContent(
        message=Message(role="assistant", content="Let me check.", tool_calls=[call]), tool_calls=[call]
    )
    assert count_entry_tokens(inline) == count_entry_tokens(assistant)
    reply = Message(role="tool", content="", tool_call_id="call_1")
    tool = EntryContent(type="tool_result", message=reply, tool_results=[result])
    assert count_tool_results_tokens([result]) > MESSAGE_OVERHEAD
    assert count_entry_tokens(tool) == count_message_tokens(reply) + count_tool_results_tokens([result])


@pytest.mark.parametrize("seed", range(5))
def test_entry_tokens_of_plain_messages_are_their_message_tokens(seed: int) -> None:
    # A message of text alone is counted on a short way; it must count what the message counts,
    # for any text and role, and entries with more than text must still count all of it.
    rng = random.Random(seed)
    words = ["the", "Lisbon", "move", "in", "May", "#12", "3.5kg", "naïve", "东京", "\n", "  ", "done.", "(x)", ""]
    for _ in range(50):
        text = " ".join(rng.choice(words) for _ in range(rng.randrange(0, 30)))
        role = rng.choice(["system", "user", "assistant", "tool"])
        entry = NewMemoryEntry(thread_id="t", message={"role": role, "content": text})
        assert count_entry_tokens(entry) == count_message_tokens(entry.message) == MESSAGE_OVERHEAD + count_tokens(text)  # type: ignore[arg-type]
    named = NewMemoryEntry(thread_id="t", message={"role": "user", "content": PROSE, "name": "ana"})
    assert count_entry_tokens(named) == count_message_tokens(named.message) > MESSAGE_OVERHEAD + count_tokens(PROSE)  # type: ignore[arg-type]
    answer = NewMemoryEntry(
        thread_id="t", type="tool_result", message={"role": "tool", "content": "42", "tool_call_id": "call_1"}
    )
    assert count_entry_tokens(answer) == MESSAGE_OVERHEAD + count_tokens("42") + 2
    parts = NewMemoryEntry(thread_id="t", message={"role": "user", "content": [{"type": "text", "text": PROSE}]})
    assert count_entry_tokens(parts) == MESSAGE_OVERHEAD + count_tokens(PROSE)
    result = ToolResult(call_id="call_1", result="sunny")
    with_results = NewMemoryEntry(thread_id="t", message={"role": "tool", "content": "ok"}, tool_results=[result])
    assert count_entry_tokens(with_results) == MESSAGE_OVERHEAD + count_tokens("ok") + count_tool_results_tokens(
        [result]
    )
