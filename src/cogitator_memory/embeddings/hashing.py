"""``HashingEmbedder``: deterministic vectors from hashed words and character n-grams.

No model, no dependency, no network: for tests and offline use. Each text is split into
lower-cased Unicode words; every word, every pair of neighbouring words and every character
n-gram of each word (with its boundaries, ``" cat "`` gives ``" ca"``, ``"cat"``, ``"at "``)
is hashed (BLAKE2b, so the same on every machine and every run) to one of ``dimensions``
buckets with a sign, weighted, summed and L2-normalised. Texts that share words or word pieces
get similar vectors; it knows no synonyms, so it is no substitute for a real model's quality.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re

from ..errors import InvalidArgumentError
from .base import BaseEmbeddingService

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder(BaseEmbeddingService):
    """A deterministic, dependency-free embedding service (the feature hashing trick).

    ``dimensions`` (default 256) is the vector size; ``char_ngrams`` the sizes of the character
    n-grams (default 3 and 4); ``seed`` changes every bucket, for independent embedders. The
    weights of words, word pairs and character n-grams are ``word_weight``, ``bigram_weight``
    and ``char_weight`` (a word's n-grams share ``char_weight`` between them). Vectors have unit
    length. ``embed`` and ``embed_batch`` follow the shared input rules (empty text refused).
    """

    provider = "hashing"

    def __init__(
        self,
        dimensions: int = 256,
        *,
        char_ngrams: tuple[int, ...] = (3, 4),
        word_weight: float = 1.0,
        bigram_weight: float = 0.5,
        char_weight: float = 1.0,
        seed: int = 0,
        batch_size: int = 1024,
    ) -> None:
        super().__init__(dimensions=dimensions, batch_size=batch_size)
        if not char_ngrams or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in char_ngrams):
            raise InvalidArgumentError("char_ngrams", f"must be positive integers, got {char_ngrams!r}")
        for name, value in (
            ("word_weight", word_weight),
            ("bigram_weight", bigram_weight),
            ("char_weight", char_weight),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or not math.isfinite(value):
                raise InvalidArgumentError(name, f"must be a finite number >= 0, got {value!r}")
        if word_weight == bigram_weight == char_weight == 0:
            raise InvalidArgumentError("word_weight", "at least one weight must be above 0")
        self.char_ngrams = tuple(char_ngrams)
        self.word_weight = float(word_weight)
        self.bigram_weight = float(bigram_weight)
        self.char_weight = float(char_weight)
        self.seed = int(seed)
        self._salt = self.seed.to_bytes(8, "little", signed=True)

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8, salt=self._salt).digest()
        number = int.from_bytes(digest, "little")
        return (number >> 1) % self.dimensions, (1.0 if number & 1 else -1.0)

    def vector(self, text: str) -> list[float]:
        """The vector of ``text``, computed synchronously (no input check beyond the type)."""
        if not isinstance(text, str):
            raise InvalidArgumentError("text", f"expected a string, got {type(text).__name__}")
        vec = [0.0] * self.dimensions

        def add(feature: str, weight: float) -> None:
            if weight:
                index, sign = self._bucket(feature)
                vec[index] += sign * weight

        words = [w.lower() for w in _WORD.findall(text)]
        if not words:
            # No word characters (punctuation, emoji): hash the characters themselves.
            words = [c for c in text.lower() if not c.isspace()]
        for word in words:
            add("w:" + word, self.word_weight)
            padded = f" {word} "
            grams = [padded[i : i + n] for n in self.char_ngrams for i in range(len(padded) - n + 1)]
            if grams:
                share = self.char_weight / len(grams)
                for gram in grams:
                    add("c:" + gram, share)
        for first, second in itertools.pairwise(words):
            add(f"b:{first} {second}", self.bigram_weight)
        norm = math.sqrt(sum(v * v for v in vec))
        if norm == 0.0:
            # Only possible when every feature cancelled out; fall back to one fixed bucket.
            index, sign = self._bucket("t:" + text)
            vec[index] = sign
            return vec
        return [v / norm for v in vec]

    async def _embed_chunk(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(text) for text in texts]

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimensions={self.dimensions}, seed={self.seed})"


__all__ = ["HashingEmbedder"]
