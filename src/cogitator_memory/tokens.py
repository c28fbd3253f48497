"""Token counting without tiktoken.

The estimate follows how cl100k-style BPE tokenizers work. The text is first cut into the very
pieces cl100k's pre-tokenizer makes (a word with its leading space or mark, up to three digits,
a punctuation run with the newlines after it, a whitespace run: the same pattern, in Python's
``re``), since no BPE token crosses a piece. Each piece is then priced by what it is:

- an ASCII word by its length, its case (lower, Title, UPPER, camelCase) and what precedes it
  (nothing, a space, a mark such as ``.`` or ``_``), from a table of the mean cl100k tokens of
  such words measured on conversation text, Python and JavaScript source and JSON;
- digits (up to three), a contraction, or a whitespace run: one token;
- an ASCII punctuation run by its length (common ones like ``),`` or ``":`` are one token);
- any other piece by its characters, each at the rate of its script (about 0.43 tokens for a
  Cyrillic letter, 0.76 for Arabic, about one for Greek, Hebrew, Devanagari, Thai and kana;
  0.84 for the 715 Han characters and Hangul syllables that are single cl100k tokens, listed
  here, and about two for the others), plus a fixed part per piece.

Prices are fractions; a text's count is the rounded sum, so errors of single pieces average out
instead of adding up. Prices of pieces seen before come from a bounded cache. ``benchmarks/
bench_tokens.py`` measures the error against tiktoken's ``cl100k_base``; ``docs/tokens.md`` has
the figures (median error a few percent on prose, code, JSON and non-Latin text).

Messages add a few tokens of framing each (as chat formats do), tool calls their name and JSON
arguments, and images a fixed price by detail (85 tokens for ``low``, 765 otherwise, OpenAI's
price of a 1024x1024 image).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import compress, islice, repeat
from operator import getitem
from typing import Any, cast

from .threads.records import (
    CompactionEvent,
    CustomEvent,
    EntryContent,
    ImageBase64Part,
    ImageURLPart,
    Message,
    TextPart,
    ToolCall,
    ToolResult,
)

#: Tokens of framing per message (role, separators).
MESSAGE_OVERHEAD = 4
#: Extra tokens when a message carries a ``name``.
NAME_OVERHEAD = 1
#: Tokens of framing per tool call (id, type, separators).
TOOL_CALL_OVERHEAD = 8
#: Tokens of an image sent with ``detail="low"``.
IMAGE_TOKENS_LOW = 85
#: Tokens of any other image (OpenAI's price of a 1024x1024 image at high detail).
IMAGE_TOKENS_HIGH = 765

# Numbers that are not decimal digits (Unicode No and Nl: ², ½, Ⅻ, ①...): Python's \w counts them as
# word characters, cl100k's \p{N} as numbers, not letters.
_OTHER_NUMBERS = (
    "\u00b2-\u00b3\u00b9\u00bc-\u00be\u09f4-\u09f9\u0b72-\u0b77\u0bf0-\u0bf2\u0c78-\u0c7e\u0d58-\u0d5e"
    "\u0d70-\u0d78\u0f2a-\u0f33\u1369-\u137c\u16ee-\u16f0\u17f0-\u17f9\u19da\u2070\u2074-\u2079"
    "\u2080-\u2089\u2150-\u2182\u2185-\u2189\u2460-\u249b\u24ea-\u24ff\u2776-\u2793\u2cfd\u3007"
    "\u3021-\u3029\u3038-\u303a\u3192-\u3195\u3220-\u3229\u3248-\u324f\u3251-\u325f\u3280-\u3289"
    "\u32b1-\u32bf\ua6e6-\ua6ef\ua830-\ua835\U00010107-\U00010133\U00010140-\U00010178"
    "\U0001018a-\U0001018b\U000102e1-\U000102fb\U00010320-\U00010323\U00010341\U0001034a"
    "\U000103d1-\U000103d5\U00010858-\U0001085f\U00010879-\U0001087f\U000108a7-\U000108af"
    "\U000108fb-\U000108ff\U00010916-\U0001091b\U000109bc-\U000109bd\U000109c0-\U000109cf"
    "\U000109d2-\U000109ff\U00010a40-\U00010a48\U00010a7d-\U00010a7e\U00010a9d-\U00010a9f"
    "\U00010aeb-\U00010aef\U00010b58-\U00010b5f\U00010b78-\U00010b7f\U00010ba9-\U00010baf"
    "\U00010cfa-\U00010cff\U00010e60-\U00010e7e\U00010f1d-\U00010f26\U00010f51-\U00010f54"
    "\U00010fc5-\U00010fcb\U00011052-\U00011065\U000111e1-\U000111f4\U0001173a-\U0001173b"
    "\U000118ea-\U000118f2\U00011c5a-\U00011c6c\U00011fc0-\U00011fd4\U00012400-\U0001246e"
    "\U00016b5b-\U00016b61\U00016e80-\U00016e96\U0001d2e0-\U0001d2f3\U0001d360-\U0001d378"
    "\U0001e8c7-\U0001e8cf\U0001ec71-\U0001ecab\U0001ecad-\U0001ecaf\U0001ecb1-\U0001ecb4"
    "\U0001ed01-\U0001ed2d\U0001ed2f-\U0001ed3d\U0001f100-\U0001f10c"
)

# cl100k's pre-tokenizer,
#   '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
# in Python's re: \p{L} is [^\W\d_] less the other numbers, \p{N} is \d and those, and
# "neither letter nor number" is a non-word character or "_".
_PIECE = re.compile(
    r"'(?i:[sdmt]|ll|ve|re)"
    r"|(?:[^\r\n\w]|_)?+[^\W\d_" + _OTHER_NUMBERS + r"]++"
    r"|[\d" + _OTHER_NUMBERS + r"]{1,3}+"
    r"| ?(?:[^\s\w]|_)++[\r\n]*+"
    r"|\s++\Z|\s*[\r\n]|\s+(?!\S)|\s"
)
# The same without the other numbers, much faster in Python's re, for the texts that hold none.
_PIECE_FAST = re.compile(
    r"'(?i:[sdmt]|ll|ve|re)"
    r"|(?:[^\r\n\w]|_)?+[^\W\d_]++"
    r"|\d{1,3}+"
    r"| ?(?:[^\s\w]|_)++[\r\n]*+"
    r"|\s++\Z|\s*[\r\n]|\s+(?!\S)|\s"
)
_OTHER_NUMBER_CHARS = frozenset(
    chr(code) for span in re.findall(r".-.|.", _OTHER_NUMBERS, re.S) for code in range(ord(span[0]), ord(span[-1]) + 1)
)


def _pattern(text: str) -> re.Pattern[str]:
    """The pre-tokenizer for ``text``: the fast one unless the text holds an other number."""
    if text.isascii() or _OTHER_NUMBER_CHARS.isdisjoint(text):
        return _PIECE_FAST
    return _PIECE


# Mean cl100k tokens of an ASCII word piece, by what precedes the letters (0 nothing, 1 a space,
# 2 another mark), their case (0 lower, 1 Title, 2 UPPER, 3 mixed) and their number (1..24);
# longer words add _WORD_SLOPE per letter. Measured on text apart from the benchmark's samples.
# fmt: off
_WORD_TOKENS: tuple[tuple[float, ...], ...] = (
    (1.00, 1.01, 1.04, 1.04, 1.04, 1.16, 1.18, 1.29, 1.40, 1.63, 1.63, 2.11, 2.18, 2.18, 2.47, 2.67, 3.30, 3.30, 3.30, 3.50, 3.77, 3.89, 4.01, 4.13),  # prefix 0, case 0
    (1.00, 1.03, 1.03, 1.03, 1.06, 1.17, 1.17, 1.32, 1.54, 1.73, 1.79, 1.79, 1.79, 1.86, 2.31, 2.31, 2.31, 2.54, 2.66, 2.78, 2.90, 3.02, 3.14, 3.26),  # prefix 0, case 1
    (1.02, 1.12, 1.20, 1.20, 1.48, 1.48, 1.98, 2.64, 2.66, 3.19, 3.30, 3.74, 4.35, 4.71, 4.71, 4.71, 4.99, 5.22, 5.33, 5.33, 5.33, 5.33, 5.33, 5.33),  # prefix 0, case 2
    (1.02, 1.92, 2.23, 2.75, 3.31, 3.31, 3.31, 3.31, 3.31, 3.31, 3.31, 3.60, 3.60, 3.60, 4.25, 4.25, 4.52, 4.52, 4.52, 4.52, 5.14, 5.14, 5.14, 5.14),  # prefix 0, case 3
    (1.00, 1.00, 1.00, 1.00, 1.01, 1.02, 1.02, 1.03, 1.05, 1.09, 1.09, 1.13, 1.13, 1.22, 1.28, 1.48, 2.29, 2.29, 2.65, 2.65, 2.71, 2.83, 2.95, 3.07),  # prefix 1, case 0
    (1.00, 1.00, 1.01, 1.01, 1.04, 1.16, 1.16, 1.20, 1.47, 1.47, 1.52, 1.52, 1.52, 1.52, 1.70, 1.79, 1.91, 2.03, 2.15, 2.27, 2.39, 2.51, 2.63, 2.75),  # prefix 1, case 1
    (1.00, 1.00, 1.30, 1.78, 2.04, 2.04, 2.04, 2.19, 2.41, 2.41, 2.89, 3.12, 3.12, 3.12, 3.12, 3.12, 3.12, 3.12, 3.20, 3.32, 3.44, 3.56, 3.68, 3.80),  # prefix 1, case 2
    (1.02, 1.03, 1.14, 1.82, 1.82, 1.82, 1.82, 1.82, 1.82, 1.82, 1.98, 1.98, 2.30, 2.30, 2.59, 2.59, 2.59, 2.59, 2.59, 3.41, 3.49, 3.60, 3.60, 4.35),  # prefix 1, case 3
    (1.04, 1.06, 1.12, 1.12, 1.21, 1.24, 1.27, 1.53, 1.69, 1.93, 2.38, 2.38, 2.64, 2.94, 3.22, 3.22, 3.22, 3.22, 3.64, 3.86, 3.98, 4.10, 4.22, 4.34),  # prefix 2, case 0
    (1.01, 1.24, 1.33, 1.33, 1.39, 1.94, 1.98, 2.15, 2.36, 2.54, 2.96, 2.96, 2.96, 2.99, 3.11, 3.23, 3.35, 3.47, 3.59, 3.71, 3.83, 3.95, 4.07, 4.19),  # prefix 2, case 1
    (1.02, 1.19, 1.28, 1.43, 1.43, 1.78, 2.33, 2.52, 2.68, 2.85, 3.30, 3.72, 4.23, 4.23, 4.23, 4.23, 4.23, 4.35, 4.47, 4.59, 4.71, 4.83, 4.95, 5.07),  # prefix 2, case 2
    (1.02, 1.14, 1.71, 1.97, 1.97, 1.97, 1.97, 2.03, 2.11, 2.11, 2.11, 2.34, 2.70, 2.70, 3.09, 3.09, 3.33, 3.59, 3.64, 3.64, 3.70, 3.70, 3.82, 5.42),  # prefix 2, case 3
)
_WORD_SLOPE: tuple[float, ...] = (0.25, 0.25, 0.15, 0.4, 0.25, 0.25, 0.25, 0.15, 0.15, 0.25, 0.25, 0.15)
# fmt: on

# Mean tokens of an ASCII punctuation run by (leading space, newlines after it) and length 1..12;
# longer runs add 0.6 per character.
# fmt: off
_PUNCT_TOKENS: tuple[tuple[float, ...], ...] = (
    (1.00, 1.00, 1.02, 1.33, 1.63, 2.56, 2.56, 2.56, 3.94, 5.32, 5.32, 7.69),  # space 0, newline 0
    (1.00, 1.01, 1.66, 1.66, 2.01, 2.56, 2.85, 3.25, 3.69, 3.69, 4.62, 7.59),  # space 0, newline 1
    (1.00, 1.00, 1.12, 1.68, 2.32, 3.10, 3.33, 3.33, 3.33, 3.43, 3.43, 3.47),  # space 1, newline 0
    (1.00, 1.03, 1.10, 1.92, 2.22, 2.67, 3.12, 3.37, 3.60, 4.10, 4.20, 4.79),  # space 1, newline 1
)
# fmt: on

# Script of a non-ASCII character, by the first code point of its block: 0 ASCII letter or digit,
# 1 other ASCII, 2 Latin with diacritics, 3 modifiers and combining marks, 4 Greek, 5 Cyrillic,
# 6 Armenian and Hebrew, 7 Arabic, 8 Indic scripts, 9 Thai and Lao, 10 other scripts,
# 11 general punctuation and symbols, 12 CJK punctuation and kana, 13 Han, 14 Hangul, 15 emoji;
# 16 is a Han character or Hangul syllable of _CJK_ONE_TOKEN.
# fmt: off
_BLOCK_STARTS = (
    0x80, 0x2B0, 0x370, 0x400, 0x530, 0x600, 0x780, 0x900, 0xE00, 0xF00,
    0x1E00, 0x1F00, 0x2000, 0x2E80, 0x3100, 0x3400, 0xA000, 0xAC00, 0xD800, 0xF900,
    0xFB00, 0xFE00, 0xFF00, 0xFFF0, 0x1F000, 0x20000, 0x30000,
)
# fmt: on
_BLOCK_SCRIPTS = (2, 3, 4, 5, 6, 7, 10, 8, 9, 10, 2, 4, 11, 12, 13, 13, 10, 14, 15, 13, 7, 11, 12, 15, 15, 13, 15)
# Han characters and Hangul syllables that are one cl100k token each (script 16); the
# others cost two or three.
_CJK_ONE_TOKEN = frozenset(
    "一万三上下不与专业东两个中串为主么义之也书了事二于五些交产享京人亿今介从他付代以们件价任份企优会传但位体何余作你使例供価"
    "保信修倍值停像元先入全公共关其具内円册再写出击分列则初利别到制前力功加务动動包化北区十午华单南即历原去县参及友反发取变口"
    "只可台右号司合同名后向否含听启告员周命和品哈商問器四回因国图土在地场址型城基報場填增声处备复外多大天失头女好如始子字存学"
    "安宋完定实审客家容密对导将小少尔就局展山岁州工左已市布常平年并广序库应店度建开异式引张当录形影径待後得微心必志态思性总息"
    "您情意感成我或户所手打找技投报拉持指按换据排接控推提播支收改放政效数整文料断新方族无日时明易星是時景更最月有服期木未本机"
    "权束条来板构析果查标样核格案检模次款止正此步歳段每比民気水求江汽没治法注活流海消清游源火点無然片版物特率环现球理生用由电"
    "男画界番登的监目直相省看県真知码确示社票私种科秒称移程稍税稿空立站章端笑符第等签简算管箱米类系素索约级线组经结给络统编网"
    "置美老考者而联能自至色节若英藏行表装西要見见规视角解言計記話読计认议记论设证评试话询该详语误说请读调象责败账货购费资起超"
    "路身车转软载辑输达过运近还这进连述退送选通速造連道邮部都配释里重量金钟钮链销错键长開間関门闭问间队阳陆限院除雅集雷需非面"
    "音页项预频题额首验高黑가간값같개거검것게결경계고공과관구그글기나내는능니다당대도동되된드든들등디때라래러력로록료류른를름"
    "리마만메면명모목문미바반받발방배버번변보복부분비사산상색생서설성세션소수스습시식신아안않야어없에여연열예오와요용우운원위"
    "으은을음의이인일임입있자작장재적전정제져조종주중지진째처체초최추출치크클태터턴트튼파포프필하한할함해호화환회후"
)

# Tokens per character of each script in a word piece, and per piece (fitted by least squares);
# the same for a piece of marks and symbols.
# fmt: off
_WORD_RATES: tuple[float, ...] = (
    0.289, 0.242, 0.878, 1.000, 0.985, 0.429, 1.079, 0.762, 1.101,
    0.924, 1.000, 0.400, 0.916, 2.206, 1.967, 1.500, 0.843,
)
# fmt: on
_WORD_BASE: float = 0.216
# fmt: off
_MARK_RATES: tuple[float, ...] = (
    0.500, 1.402, 1.000, 1.000, 1.000, 1.000, 1.000, 1.410, 1.439,
    0.895, 1.000, 0.800, 0.032, 1.000, 1.000, 1.500, 1.000,
)
# fmt: on
_MARK_BASE: float = -0.314


def _script(ch: str) -> int:
    code = ord(ch)
    if code < 0x80:
        return 0 if ch.isalnum() else 1
    script = _BLOCK_SCRIPTS[bisect_right(_BLOCK_STARTS, code) - 1]
    if script in (13, 14) and ch in _CJK_ONE_TOKEN:
        return 16
    return script


def _ascii_cost(piece: str) -> float:
    first = piece[0]
    if first.isalpha():
        prefix, letters = 0, piece
    elif first == "'" and len(piece) <= 3:
        return 1.0  # a contraction ('s, 'll, 've...)
    elif len(piece) > 1 and piece[1].isalpha():
        prefix, letters = (1 if first == " " else 2), piece[1:]
    elif first.isdigit() or piece.isspace():
        return 1.0
    else:
        space = 1 if first == " " else 0
        core = piece[space:]
        stripped = core.rstrip("\r\n")
        row = _PUNCT_TOKENS[space * 2 + (1 if len(stripped) < len(core) else 0)]
        size = len(stripped)
        if size <= len(row):
            return row[size - 1] if size else 1.0
        return row[-1] + 0.6 * (size - len(row))
    if letters.islower():
        case = 0
    elif len(letters) == 1 or (letters[0].isupper() and letters[1:].islower()):
        case = 1
    elif letters.isupper():
        case = 2
    else:
        case = 3
    index = prefix * 4 + case
    row = _WORD_TOKENS[index]
    size = len(letters)
    if size <= len(row):
        return row[size - 1]
    return row[-1] + _WORD_SLOPE[index] * (size - len(row))


def _unicode_cost(piece: str) -> float:
    last = piece[-1]
    if last.isalpha():
        rates, cost = _WORD_RATES, _WORD_BASE
    elif last.isdigit() or piece.isspace():
        return 1.0
    else:
        rates, cost = _MARK_RATES, _MARK_BASE
    for ch in piece:
        cost += rates[_script(ch)]
    return max(cost, 1.0)


def _piece_cost(piece: str) -> float:
    """Estimated cl100k tokens of one pre-token piece (a fraction: the mean of such pieces)."""
    return _ascii_cost(piece) if piece.isascii() else _unicode_cost(piece)


_CACHE: dict[str, float] = {}
_CACHE_LIMIT = 20_000
_CACHED_PIECE_CHARS = 48


def _cost(piece: str) -> float:
    cost = _CACHE.get(piece)
    if cost is None:
        cost = _piece_cost(piece)
        if len(piece) <= _CACHED_PIECE_CHARS:
            _remember(_CACHE, _CACHE_LIMIT, piece, cost)
    return cost


def _remember(cache: dict[str, float], limit: int, key: str, cost: float) -> None:
    """Keep ``cost`` under ``key``; a full cache first forgets the quarter it was given first."""
    if len(cache) >= limit:
        for old in list(islice(cache, limit // 4)):
            del cache[old]
    cache[key] = cost


def _total(total: float) -> int:
    return max(1, int(total + 0.5))


def _exact_total(text: str) -> float:
    """The sum of the prices of the pieces of ``text``, in order: what the count rounds."""
    pieces: list[str] = _pattern(text).findall(text)
    try:
        # Every piece seen before: the sum runs at C speed (a piece not cached is a None).
        return sum(cast("Iterable[float]", map(_CACHE.get, pieces)))
    except TypeError:
        return sum(map(_cost, pieces))


class _Prices(dict[str, float]):
    """Prices of words after a space. Looked up with ``[]``, a word not seen before is priced
    as the word with every digit 0 when that one is known (as :func:`_word_cost` prices it:
    digits are pieces of their own, one token each), and kept ("#1234" priced as "#0000", in
    the look-up of a text's words at C speed); any other is :data:`_MISSING`. ``get`` gives
    ``None`` for a word not kept, as in any dict."""

    def __missing__(self, word: str) -> float:
        plain = word.translate(_DIGITS_TO_ZERO)
        if plain == word:
            return _MISSING
        cost = self.get(plain)
        if cost is None:
            return _MISSING
        _keep(self, word, cost)
        return cost


#: The price of a word not seen before: a NaN, as a single object (a search for it finds this
#: object, and no price, which is never a NaN).
_MISSING = float("nan")
# The prices of words as :func:`count_tokens` cuts texts at single spaces: a word after a space
# (the space is its first piece's prefix), and the first word of a text. Longer words are priced
# each time, so that the caches stay small.
_SPACED: _Prices = _Prices()
_LEADING: dict[str, float] = {}
_WORD_CACHE_LIMIT = 50_000
_CACHED_WORD_CHARS = 64
#: New words a text of mostly new words prices on its way (see :func:`_words_total`).
_NEW_WORDS_PRICED = 8


# Whitespace other than a space, tab, newline or carriage return: what Python's ``\s`` (and
# ``str.isspace``) matches besides them.
_RARE_SPACES = (
    "\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)
_RARE_SPACE_THEN_SPACE = re.compile(f"[{_RARE_SPACES}] ")
_RARE_ASCII_SPACES = _RARE_SPACES[:6]


def _space_after_whitespace(text: str) -> bool:
    """Whether a space of ``text`` follows whitespace (two spaces, a newline and an indent...)."""
    if text.isprintable():  # no whitespace but spaces
        return "  " in text
    if "  " in text or "\n " in text or "\t " in text or "\r " in text:
        return True
    if text.isascii() and not any(map(text.__contains__, _RARE_ASCII_SPACES)):
        return False
    return _RARE_SPACE_THEN_SPACE.search(text) is not None


def _words(text: str) -> list[str]:
    """``text`` cut at the spaces no piece crosses, each part but the first without its space.

    No cl100k piece crosses a single space that follows a character other than whitespace:
    pieces holding spaces are whitespace runs (which begin at whitespace) or begin with the
    space, and no pattern looks behind. So a part, with the space before it, is cut into the
    very pieces the whole text gives there. A space after whitespace (two spaces, a newline and
    an indent...) may be inside a whitespace run: the words on both sides stay one part.
    """
    words = text.split(" ")
    if not _space_after_whitespace(text):
        return words
    # The words that are empty or end with whitespace, and so join the next one (the last
    # characters looked up at C speed; the joins made from the end, where each leaves the
    # places before it as they were).
    ends = map(_JOINS_NEXT.__contains__, map(getitem, words, repeat(_LAST)))
    for at in reversed(list(compress(range(len(words) - 1), ends))):
        words[at : at + 2] = [words[at] + " " + words[at + 1]]
    return words


_LAST = slice(-1, None)
# What a word ends with when the space after it follows whitespace: nothing, or whitespace.
_JOINS_NEXT = frozenset(["", " ", "\t", "\n", "\r", *_RARE_SPACES])


def _word_cost(word: str, spaced: bool) -> float:
    """The summed prices of the pieces of ``word`` (after a space when ``spaced``), kept."""
    cache = _SPACED if spaced else _LEADING
    if word.isalpha():
        cost = _cost(" " + word if spaced else word)  # letters (after a space) are one piece
    elif word[-1:] in _CLOSING_MARKS and word[:-1].isalpha():
        # Letters and a mark after them ("end.", "well,"): two pieces.
        cost = _cost(" " + word[:-1] if spaced else word[:-1]) + _cost(word[-1])
    else:
        # Digits are pieces of their own, each priced 1 whatever the digit: a word is priced
        # like the word with every digit 0 (so "#1234" and "#5678" are priced once).
        plain = word.translate(_DIGITS_TO_ZERO)
        found = cache.get(plain) if plain != word else None
        if found is None:
            cost = _exact_total(" " + plain if spaced else plain)
            _keep(cache, plain, cost)
        else:
            cost = found
    _keep(cache, word, cost)
    return cost


_DIGITS_TO_ZERO = str.maketrans("123456789", "000000000")
_CLOSING_MARKS = frozenset('.,;:!?)]}"*')


def _words_total(text: str) -> float | None:
    """:func:`_exact_total` summed by the parts of :func:`_words` (the same pieces, the prices
    of the parts kept), at C speed for parts seen before; ``None`` when many are new, which are
    then left to :func:`_exact_total` (a few of them priced and kept on the way, so that texts
    like it find them later)."""
    words = text.split(" ")
    # (What _words does, its test for the commonest texts written out: printable, so no
    # whitespace but spaces, and no two spaces in a row.)
    if (not text.isprintable() or "  " in text) and _space_after_whitespace(text):
        words = _words(text)
    first = words[0]
    lead = _LEADING.get(first)
    if lead is None:
        lead = _word_cost(first, False) if first else 0.0
    rest = words[1:]
    # The prices of the parts looked up and summed at C speed; a part not seen before is
    # _MISSING (see _Prices), a NaN, which makes the sum a NaN.
    spaced = _SPACED
    total = sum(map(spaced.__getitem__, rest), lead)
    if total == total:
        return total  # every part seen before
    # Some parts are new: the first few are priced one by one (and kept), the others together
    # (joined by spaces, which no piece crosses either), unless most are new. Only the new
    # parts are visited (found at C speed: only _MISSING itself is taken for _MISSING).
    prices = list(map(spaced.__getitem__, rest))
    priced = 0
    later: list[str] = []
    most = len(rest) // 4
    at = -1
    for _ in range(prices.count(_MISSING)):
        at = prices.index(_MISSING, at + 1)
        word = rest[at]
        cost = spaced[word]  # a part met twice is priced the first time
        if cost is _MISSING:
            if priced < _NEW_WORDS_PRICED:
                cost = _word_cost(word, True)
                priced += 1
            else:
                later.append(word)
                if len(later) > most:
                    return None
                cost = 0.0  # summed below with the others (adding 0.0 changes no sum)
        prices[at] = cost
    total = sum(prices, lead)
    if later:
        total += _exact_total(" " + " ".join(later))
    return total


def _keep(cache: dict[str, float], word: str, cost: float) -> None:
    if len(word) <= _CACHED_WORD_CHARS:
        _remember(cache, _WORD_CACHE_LIMIT, word, cost)


def count_tokens(text: str) -> int:
    """Estimated cl100k tokens of ``text`` (0 for an empty string, at least 1 otherwise)."""
    if not text:
        return 0
    total = _words_total(text)
    # Words sum their prices in another order than pieces do, which moves the last bits of the
    # total: by at most 2n(2**-53) of it for n pieces (fewer than the characters). Where that
    # could round the count otherwise (a total this close to k + 0.5), the pieces are summed.
    if total is None or abs(total % 1.0 - 0.5) <= total * len(text) * 1e-15:
        total = _exact_total(text)
    return max(1, int(total + 0.5))  # _total(total), written out


def _fit_piece(piece: str, budget: float) -> int:
    """How many leading characters of ``piece`` fit ``budget`` (for a piece too long to keep whole)."""
    low, high = 0, len(piece)
    while low < high:
        mid = (low + high + 1) // 2
        if _piece_cost(piece[:mid]) <= budget:
            low = mid
        else:
            high = mid - 1
    return low


def truncate_to_tokens(text: str, max_tokens: int, *, ellipsis: str = "") -> str:
    """The longest prefix of ``text`` whose estimate fits ``max_tokens``, cut between pieces.

    ``ellipsis`` is appended when the text was cut, and counted in the budget. A single piece
    longer than what is left (a long run of Han characters, a long identifier) is cut inside.
    The result never counts more than ``max_tokens`` (an empty string when nothing fits).
    """
    if max_tokens <= 0 or not text:
        return ""
    if count_tokens(text) <= max_tokens:
        return text
    budget = max_tokens - (count_tokens(ellipsis) if ellipsis else 0)
    if budget <= 0:
        return ""
    used = 0.0
    end = 0
    for match in _pattern(text).finditer(text):
        cost = _cost(match.group())
        if used + cost > budget:
            left = budget - used
            if left >= 1.0:
                end = match.start() + _fit_piece(match.group(), left)
            break
        used += cost
        end = match.end()
    # The estimate of a prefix is nearly the sum of its pieces; make sure, and step back if not.
    while end > 0:
        head = text[:end].rstrip()
        if not head:
            return ""
        result = head + ellipsis
        if count_tokens(result) <= max_tokens:
            return result
        end = len(head) - 1
    return ""


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(value)


def count_tool_calls_tokens(tool_calls: Iterable[ToolCall] | None) -> int:
    """Tokens of tool calls: name, JSON arguments and framing."""
    if not tool_calls:
        return 0
    total = 0
    for call in tool_calls:
        total += TOOL_CALL_OVERHEAD + count_tokens(call.name) + count_tokens(_json_text(call.arguments))
    return total


def count_tool_results_tokens(tool_results: Iterable[ToolResult] | None) -> int:
    """Tokens of tool results: the result (as JSON when not text), the error, and framing."""
    if not tool_results:
        return 0
    total = 0
    for result in tool_results:
        total += MESSAGE_OVERHEAD + count_tokens(_json_text(result.result))
        if result.error:
            total += count_tokens(result.error)
    return total


def count_content_tokens(message: Message) -> int:
    """Tokens of a message's content: its text parts and its images."""
    content = message.content
    if isinstance(content, str):
        return count_tokens(content)
    total = 0
    for part in content:
        if isinstance(part, TextPart):
            total += count_tokens(part.text)
        elif isinstance(part, ImageURLPart):
            total += IMAGE_TOKENS_LOW if part.image_url.detail == "low" else IMAGE_TOKENS_HIGH
        elif isinstance(part, ImageBase64Part):
            total += IMAGE_TOKENS_HIGH
    return total


def count_message_tokens(message: Message | dict[str, Any]) -> int:
    """Tokens a message costs in a prompt: content, images, tool calls, name and framing."""
    if not isinstance(message, Message):
        message = Message.model_validate(message)
    total = MESSAGE_OVERHEAD + count_content_tokens(message)
    if message.name:
        total += NAME_OVERHEAD + count_tokens(message.name)
    if message.tool_calls:
        total += count_tool_calls_tokens(message.tool_calls)
    if message.tool_call_id:
        total += 2
    return total


def count_messages_tokens(messages: Sequence[Message | dict[str, Any]]) -> int:
    """Tokens of a list of messages, with the 3 tokens that prime a reply."""
    if not messages:
        return 0
    return sum(count_message_tokens(m) for m in messages) + 3


def count_entry_tokens(entry: EntryContent) -> int:
    """Tokens of an entry as a prompt would carry it.

    The message (text, images, tool calls), the entry's own tool calls and tool results; for a
    compaction, its summary; for a custom event, its data; other events cost nothing.
    """
    fields = entry.__dict__
    message = fields["message"]
    if (
        type(message) is Message
        and fields["tool_calls"] is None
        and fields["tool_results"] is None
        and fields["event"] is None
    ):
        # The common entry, a message of text alone: what the general way below counts.
        m = message.__dict__
        content = m["content"]
        if type(content) is str and m["name"] is None and m["tool_calls"] is None and m["tool_call_id"] is None:
            return MESSAGE_OVERHEAD + count_tokens(content)
    total = 0
    if entry.message is not None:
        total += count_message_tokens(entry.message)
        if entry.tool_calls and not entry.message.tool_calls:
            total += count_tool_calls_tokens(entry.tool_calls)
    elif entry.tool_calls:
        total += count_tool_calls_tokens(entry.tool_calls)
    if entry.tool_results:
        total += count_tool_results_tokens(entry.tool_results)
    event = entry.event
    if isinstance(event, CompactionEvent):
        total += MESSAGE_OVERHEAD + count_tokens(event.summary)
    elif isinstance(event, CustomEvent) and event.data:
        total += count_tokens(_json_text(event.data))
    return total


__all__ = [
    "IMAGE_TOKENS_HIGH",
    "IMAGE_TOKENS_LOW",
    "MESSAGE_OVERHEAD",
    "count_content_tokens",
    "count_entry_tokens",
    "count_message_tokens",
    "count_messages_tokens",
    "count_tokens",
    "count_tool_calls_tokens",
    "count_tool_results_tokens",
    "truncate_to_tokens",
]
