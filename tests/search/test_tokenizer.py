"""The Unicode tokenizer: scripts, case, CJK, stopwords."""

from __future__ import annotations

import pytest

from cogitator_memory.search import ENGLISH_STOPWORDS, Tokenizer, index_terms, tokenize


def test_latin_words_digits_and_case() -> None:
    assert tokenize("Hello, World! It's 2026-11-29.") == ["hello", "world", "it", "s", "2026", "11", "29"]


def test_accents_are_kept_and_normalised() -> None:
    decomposed = "Cafe\u0301"  # e + combining acute
    assert tokenize(decomposed) == ["café"] == tokenize("CAFÉ")
    assert tokenize("Straße") == ["strasse"]  # case folding
    assert tokenize("ｆｕｌｌ　ｗｉｄｔｈ") == ["full", "width"]  # NFKC


def test_other_scripts() -> None:
    assert tokenize("Привет, Мир") == ["привет", "мир"]
    assert tokenize("Γειά σου κόσμε") == ["γειά", "σου", "κόσμε"]
    assert tokenize("مرحبا بالعالم") == ["مرحبا", "بالعالم"]
    assert tokenize("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]  # combining vowel signs stay in the word
    assert tokenize("안녕하세요 세계") == ["안녕하세요", "세계"]  # Hangul is spaced: words


def test_cjk_bigrams_and_chars() -> None:
    assert tokenize("東京都") == ["東京", "京都"]
    assert tokenize("東京都", cjk="chars") == ["東", "京", "都"]
    assert tokenize("猫") == ["猫"]
    assert tokenize("我爱iPhone手机") == ["我爱", "iphone", "手机"]
    assert tokenize("ひらがなカタカナ") == ["ひら", "らが", "がな", "なカ", "カタ", "タカ", "カナ"]


def test_punctuation_symbols_and_emoji_separate() -> None:
    assert tokenize("a+b=c 🚀launch… (x)") == ["a", "b", "c", "launch", "x"]
    assert tokenize("") == [] and tokenize("!!! ???") == []


def test_stopwords() -> None:
    assert tokenize("The cat is on the mat", stopwords=ENGLISH_STOPWORDS) == ["cat", "mat"]
    assert index_terms("The cat is on the mat") == ["cat", "mat"]
    assert Tokenizer(stopwords="english")("What is it") == []
    assert Tokenizer(stopwords={"cat"})("the cat") == ["the"]
    assert Tokenizer()("the cat") == ["the", "cat"]


def test_bad_mode() -> None:
    with pytest.raises(ValueError, match="cjk"):
        tokenize("x", cjk="words")  # type: ignore[arg-type]


def test_the_fast_split_gives_what_reading_char_by_char_gives() -> None:
    # Text without CJK characters or combining marks is split with str.translate; every text
    # must come out as the character-by-character reading gives it.
    import random
    import unicodedata

    from cogitator_memory.search.tokenizer import _tokenize_chars

    pieces = [
        "abc",
        "Hello",
        "WORLD",
        "42",
        "3.14",
        "don't",
        "e-mail",
        "snake_case",
        "  ",
        "\t",
        "\n",
        ",",
        "!",
        "café",
        "naïve",
        "Straße",
        "ﬁne",
        "ＦＵＬＬ",
        "İstanbul",
        "Ωμέγα",
        "привет",
        "مرحبا",
        "नमस्ते",
        "한국어",
        "東京都",
        "カタカナ",
        "ひらがな",
        "😀",
        "👍🏽",
        "½",
        "²",
        "Ⅻ",
        "\u00a0",
        "\u2003",
        "\u200b",
        "e\u0301",
        "\u0301",
        "a\u0308b",
        "#",
        "—",
        "“quoted”",
        "x̃",
        "ก่อน",
        "ລາວ",
        "1,000",
        "the",
        "and",
    ]
    rng = random.Random(7)
    for _ in range(4000):
        text = "".join(rng.choice(pieces) + rng.choice(["", " ", "-", "/"]) for _ in range(rng.randint(0, 12)))
        normal = unicodedata.normalize("NFKC", text).casefold()
        for cjk in ("bigrams", "chars"):
            assert tokenize(text, cjk=cjk) == _tokenize_chars(normal, cjk, frozenset()), text
        assert index_terms(text) == _tokenize_chars(normal, "bigrams", ENGLISH_STOPWORDS), text


def test_ascii_text_splits_as_the_character_by_character_path_does() -> None:
    import random
    import string
    import unicodedata

    from cogitator_memory.search.tokenizer import ENGLISH_STOPWORDS, _tokenize_chars

    rng = random.Random(7)
    alphabet = string.printable + "''" + "The the AND and I'm"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        assert text.isascii()
        normal = unicodedata.normalize("NFKC", text).casefold()
        for stop in (frozenset(), ENGLISH_STOPWORDS):
            assert tokenize(text, stopwords=stop) == _tokenize_chars(normal, "bigrams", stop), repr(text)
