"""Records of the embedding stores, and the store-independent rules on them (no I/O).

:class:`Embedding` is what a store keeps and returns, :class:`NewEmbedding` what it takes,
:class:`ScoredEmbedding` what a search returns and :class:`EmbeddingFilter` what narrows a
search. The argument checks and the filter rules (:func:`filter_matches`,
:func:`deletion_matches`) are plain functions every store shares, so every store agrees.

Scoping, written once here and applied by every store: with ``filter.agent_id`` given, an
embedding whose ``metadata["agent_id"]`` names another agent is left out, and one without an
``agent_id`` (absent or ``None``) is shared, so it is found; the same for ``user_id`` and
``thread_id``. Without the filter key there is no scoping on it.
"""

from __future__ import annotations

import math
import struct
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, TypeVar

from pydantic import Field, ValidationError

from ..errors import InvalidArgumentError
from ..threads import tree, values
from ..threads.records import AGENT_ID_KEY, THREAD_ID_KEY, USER_ID_KEY, LazyFieldRecord, Record, built_record

#: Longest ``content`` (characters) an embedding or a keyword query may have.
MAX_CONTENT_CHARS = 100_000
#: Largest vector size a store accepts (Qdrant's own limit).
MAX_DIMENSIONS = 65_536
#: Largest ``limit`` of a search.
MAX_SEARCH_LIMIT = 10_000
#: Most source ids one ``get_by_sources`` call takes.
MAX_SOURCE_IDS = 10_000
#: The metadata keys that scope an embedding to an agent, a user or a thread.
SCOPE_KEYS: tuple[str, ...] = (AGENT_ID_KEY, USER_ID_KEY, THREAD_ID_KEY)
#: The keys an :class:`EmbeddingFilter` (or its dict) may have.
FILTER_KEYS: frozenset[str] = frozenset({*SCOPE_KEYS, "source_type", "metadata", "metadata_not"})

MetadataValue = str | int | bool


class _VectorSize:
    """What ``repr`` shows in place of a vector: its size, not hundreds of numbers."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size

    def __repr__(self) -> str:
        return f"<{self.size} floats>" if self.size else "<no vector>"


class Embedding(LazyFieldRecord):
    """A stored embedding: the vector of ``content``, which comes from ``source_id`` of ``source_type``.

    ``metadata`` may scope it (``agent_id``, ``user_id``, ``thread_id``: strings) and holds any
    other JSON. ``id`` is ``emb_...`` unless the writer chose another. ``repr`` and ``str`` show
    the vector's size (``vector=<384 floats>``), not its values; a search asked for hits without
    vectors (``include_vectors=False``) returns them with an empty ``vector``.

    A store that keeps vectors packed (SQLite) hands out embeddings whose ``vector`` is made a
    list of floats when first read (see :func:`packed_embedding`); they read, dump and compare
    exactly as any other.
    """

    _lazy_field: ClassVar[str] = "vector"

    id: str
    source_id: str
    source_type: str
    content: str
    vector: list[float]
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime

    def _make_lazy(self) -> list[float]:
        packed: bytes | None = self.__dict__.get(_PACKED_VECTOR)
        if packed is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute 'vector'")
        return list(struct.unpack(f"<{len(packed) // 4}f", packed))

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield (name, _VectorSize(len(value))) if name == "vector" else (name, value)


class NewEmbedding(Record):
    """What :meth:`add_embedding` takes (a model or a dict with these keys); ``id`` is made when missing."""

    id: str | None = None
    source_id: str
    source_type: str
    content: str
    vector: list[float]
    metadata: dict[str, Any] | None = None


class ScoredEmbedding(Embedding):
    """A search hit: the embedding and its ``score`` (cosine in [-1, 1], or the BM25 score)."""

    score: float


#: The private key of an embedding's ``__dict__`` that holds its vector packed, until it is read.
_PACKED_VECTOR = "_vector_f32le"
_E = TypeVar("_E", bound=Embedding)


def packed_embedding(cls: type[_E], fields: dict[str, Any], packed: bytes) -> _E:
    """An embedding of ``cls`` (``Embedding`` or ``ScoredEmbedding``) from valid ``fields``,
    all but ``vector``, whose vector is ``packed`` (little-endian float32, as the SQLite store
    keeps it), made a list of floats only when first needed: most search hits are read for
    their content and score, and making a vector's hundreds of Python floats costs more than
    the rest of a hit."""
    fields[_PACKED_VECTOR] = packed
    return built_record(cls, fields, set(cls.__pydantic_fields__))


class EmbeddingFilter(Record):
    """What narrows a search: scope (``agent_id``, ``user_id``, ``thread_id``), ``source_type``,
    ``metadata`` (exact values of top-level metadata keys: strings, integers or booleans), and
    ``metadata_not`` (a top-level key to the values it must not hold, matched as exactly: an
    embedding whose key holds one of them is left out, one without the key passes; the context
    builder's semantic section leaves out the package's own indexes of turns and items this way).

    Unknown keys are refused. See the module docstring for how scoping works.
    """

    agent_id: str | None = None
    user_id: str | None = None
    thread_id: str | None = None
    source_type: str | None = None
    metadata: dict[str, MetadataValue] | None = None
    metadata_not: dict[str, list[MetadataValue]] | None = None

    def scope(self) -> dict[str, str]:
        """The scope keys this filter sets, with their values."""
        out: dict[str, str] = {}
        for key in SCOPE_KEYS:
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    def cache_key(self) -> tuple[Any, ...]:
        """A hashable key of the filter (for caches of matrices per scope)."""
        meta = tuple(sorted((k, type(v).__name__, v) for k, v in (self.metadata or {}).items()))
        left_out = tuple(
            sorted(
                (k, tuple(sorted((type(v).__name__, str(v)) for v in vs)))
                for k, vs in (self.metadata_not or {}).items()
            )
        )
        return (self.agent_id, self.user_id, self.thread_id, self.source_type, meta, left_out)

    @property
    def is_empty(self) -> bool:
        """Whether the filter lets every embedding through."""
        return not self.scope() and self.source_type is None and not self.metadata and not self.excluded()

    def excluded(self) -> dict[str, list[MetadataValue]]:
        """``metadata_not`` without the keys that name no value (they leave nothing out)."""
        return {k: list(vs) for k, vs in (self.metadata_not or {}).items() if vs}


# --- argument checks ------------------------------------------------------------------------

_FLOAT_ONLY = {float}


def _numpy_vector(name: str, value: Any, dimensions: int | None) -> tuple[list[float], Any] | None:
    """The checks of :func:`check_vector` done by numpy for a 1-d float array (its floats and
    their float64 array); ``None`` for any other value."""
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind != "f" or getattr(value, "ndim", None) != 1 or not 0 < len(value) <= MAX_DIMENSIONS:
        return None
    import numpy as np

    arr = np.asarray(value, dtype=np.float64)
    _check_float_array(name, arr, dimensions)
    out: list[float] = arr.tolist()
    return out, arr


def _check_float_array(name: str, arr: Any, dimensions: int | None) -> None:
    """Refuse a 1-d float64 array that is not finite, all zeros, or not of ``dimensions``."""
    np = sys.modules["numpy"]
    finite = np.isfinite(arr)
    if not finite.all():
        i = int(np.argmin(finite))
        raise InvalidArgumentError(name, f"item {i} is {arr[i]}: every value must be finite (no NaN or infinity)")
    if not arr.any():
        raise InvalidArgumentError(name, "is all zeros: it has no direction to compare by cosine")
    if dimensions is not None and arr.shape[0] != dimensions:
        raise InvalidArgumentError(name, f"has {arr.shape[0]} dimensions, the store holds vectors of {dimensions}")


def check_vector(name: str, value: object, dimensions: int | None) -> list[float]:
    """A non-empty vector of finite numbers, not all zero, of ``dimensions`` when known.

    Accepts a list or tuple of numbers (numpy's number scalars among them), or anything with
    ``tolist()`` (a numpy array). A vector of the wrong size is refused with both sizes in the message.
    """
    return _checked_vector(name, value, dimensions)[0]


class QueryVector(list[float]):
    """A checked search vector: its floats, and (as ``array``) the float64 numpy array they were
    checked as, or ``None`` when numpy did not check them. The numpy-backed stores search with
    the array rather than convert the list again."""

    __slots__ = ("array",)

    def __init__(self, values: Iterable[float], array: Any = None) -> None:
        super().__init__(values)
        self.array = array


def check_query_vector(name: str, value: object, dimensions: int | None) -> QueryVector:
    """:func:`check_vector` of a search's vector, as a :class:`QueryVector`."""
    return QueryVector(*_checked_vector(name, value, dimensions))


def _checked_vector(name: str, value: object, dimensions: int | None) -> tuple[list[float], Any]:
    """:func:`check_vector`'s floats, and their float64 array when numpy checked them (else ``None``)."""
    if hasattr(value, "tolist") and not isinstance(value, list | tuple):
        fast = _numpy_vector(name, value, dimensions)
        if fast is not None:
            return fast
        value = value.tolist()
    if not isinstance(value, list | tuple):
        raise InvalidArgumentError(name, f"must be a list of numbers, got {type(value).__name__}")
    if not value:
        raise InvalidArgumentError(name, "must not be empty")
    if len(value) > MAX_DIMENSIONS:
        raise InvalidArgumentError(name, f"has {len(value)} dimensions, more than the {MAX_DIMENSIONS} allowed")
    np = sys.modules.get("numpy")  # loaded by every vector store on connect; never imported here
    if np is not None and set(map(type, value)) == _FLOAT_ONLY:  # the common case, checked by numpy
        arr = np.asarray(value, dtype=np.float64)
        _check_float_array(name, arr, dimensions)
        return list(value), arr  # the same floats (float64 holds them exactly), in a list of our own
    out: list[float] = []
    nonzero = False
    # numpy's number scalars (what iterating over an array gives) count as numbers; its bool does not.
    scalars = (int, float) if np is None else (int, float, np.integer, np.floating)
    for i, x in enumerate(value):
        if isinstance(x, bool) or not isinstance(x, scalars):
            raise InvalidArgumentError(name, f"item {i} must be a number, got {type(x).__name__}")
        f = float(x)
        if not math.isfinite(f):
            raise InvalidArgumentError(name, f"item {i} is {f}: every value must be finite (no NaN or infinity)")
        if f != 0.0:
            nonzero = True
        out.append(f)
    if not nonzero:
        raise InvalidArgumentError(name, "is all zeros: it has no direction to compare by cosine")
    if dimensions is not None and len(out) != dimensions:
        raise InvalidArgumentError(name, f"has {len(out)} dimensions, the store holds vectors of {dimensions}")
    return out, None


def check_text(name: str, value: object, *, allow_empty: bool = True) -> str:
    """A string of at most :data:`MAX_CONTENT_CHARS` characters, without lone surrogates."""
    values.check_text(name, value)
    assert isinstance(value, str)
    if len(value) > MAX_CONTENT_CHARS:
        raise InvalidArgumentError(name, f"has {len(value)} characters, more than the {MAX_CONTENT_CHARS} allowed")
    if not allow_empty and not value.strip():
        raise InvalidArgumentError(name, "must not be empty")
    return value


def check_scope_metadata(name: str, value: object) -> dict[str, Any]:
    """Metadata as :func:`~cogitator_memory.threads.tree.check_metadata`, with string scope keys."""
    meta = tree.check_metadata(name, value)
    for key in SCOPE_KEYS:
        if meta.get(key) is not None and not isinstance(meta[key], str):
            raise InvalidArgumentError(f"{name}.{key}", f"must be a string, got {type(meta[key]).__name__}")
    return meta


def check_metadata_filter(name: str, value: object) -> dict[str, MetadataValue] | None:
    """``None`` or a dict of top-level metadata keys to exact string, integer or boolean values."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(name, f"must be a dict, got {type(value).__name__}")
    out: dict[str, MetadataValue] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(name, f"keys must be non-empty strings, got {key!r}")
        if not isinstance(item, str | int | bool):
            raise InvalidArgumentError(
                f"{name}.{key}", f"must be a string, integer or boolean, got {type(item).__name__}"
            )
        values.check_json(name, {key: item})
        out[key] = item
    return out


def check_metadata_exclusion(name: str, value: object) -> dict[str, list[MetadataValue]] | None:
    """``None`` or a dict of top-level metadata keys to lists of string, integer or boolean values."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(name, f"must be a dict, got {type(value).__name__}")
    out: dict[str, list[MetadataValue]] = {}
    for key, items in value.items():
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(name, f"keys must be non-empty strings, got {key!r}")
        if not isinstance(items, list | tuple):
            raise InvalidArgumentError(f"{name}.{key}", f"must be a list of values, got {type(items).__name__}")
        checked: list[MetadataValue] = []
        for item in items:
            one = check_metadata_filter(name, {key: item})
            assert one is not None
            checked.append(one[key])
        out[key] = checked
    return out


def check_filter(value: object) -> EmbeddingFilter:
    """An :class:`EmbeddingFilter` from a filter, a dict (unknown keys refused) or ``None``."""
    if value is None:
        return EmbeddingFilter()
    if isinstance(value, EmbeddingFilter):
        raw: dict[str, Any] = value.model_dump()
    elif isinstance(value, Mapping):
        raw = dict(value)
        unknown = sorted(str(k) for k in raw if k not in FILTER_KEYS)
        if unknown:
            raise InvalidArgumentError(
                "filter", f"unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(FILTER_KEYS))}"
            )
    else:
        raise InvalidArgumentError("filter", f"must be an EmbeddingFilter or a dict, got {type(value).__name__}")
    for key in (*SCOPE_KEYS, "source_type"):
        check = tree.check_filter_user if key == USER_ID_KEY else tree.check_optional_id
        raw[key] = check(f"filter.{key}", raw.get(key))
    raw["metadata"] = check_metadata_filter("filter.metadata", raw.get("metadata"))
    raw["metadata_not"] = check_metadata_exclusion("filter.metadata_not", raw.get("metadata_not"))
    return EmbeddingFilter.model_construct(**raw)


def check_new_embedding(name: str, value: object, dimensions: int | None) -> NewEmbedding:
    """A checked :class:`NewEmbedding` (from a model or a dict); the message names ``name.<field>``."""
    if isinstance(value, NewEmbedding):
        raw: dict[str, Any] = {
            "id": value.id,
            "source_id": value.source_id,
            "source_type": value.source_type,
            "content": value.content,
            "vector": value.vector,
            "metadata": value.metadata,
        }
    elif isinstance(value, Mapping):
        raw = dict(value)
        unknown = sorted(str(k) for k in raw if k not in NewEmbedding.model_fields)
        if unknown:
            raise InvalidArgumentError(name, f"unknown field(s) {', '.join(unknown)}")
        for required in ("source_id", "source_type", "content", "vector"):
            if required not in raw:
                raise InvalidArgumentError(f"{name}.{required}", "is required")
    else:
        raise InvalidArgumentError(name, f"must be a NewEmbedding or a dict, got {type(value).__name__}")
    checked = {
        "id": tree.check_optional_id(f"{name}.id", raw.get("id")),
        "source_id": tree.check_id(f"{name}.source_id", raw["source_id"]),
        "source_type": tree.check_id(f"{name}.source_type", raw["source_type"]),
        "content": check_text(f"{name}.content", raw["content"]),
        "vector": check_vector(f"{name}.vector", raw["vector"], dimensions),
        "metadata": check_scope_metadata(f"{name}.metadata", raw.get("metadata")),
    }
    try:
        return NewEmbedding.model_validate(checked)
    except ValidationError as exc:
        raise tree.validation_error(name, exc) from None


def check_limit(value: object) -> int:
    """A search limit: an integer from 1 to :data:`MAX_SEARCH_LIMIT`."""
    size = tree.check_limit("limit", value, allow_zero=False)
    if size > MAX_SEARCH_LIMIT:
        raise InvalidArgumentError("limit", f"must be at most {MAX_SEARCH_LIMIT}, got {size}")
    return size


def check_threshold(value: object) -> float:
    """A cosine threshold: a finite number in [-1, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidArgumentError("threshold", f"must be a number in [-1, 1], got {value!r}")
    if not -1.0 <= value <= 1.0:
        raise InvalidArgumentError("threshold", f"must be in [-1, 1], got {value}")
    return float(value)


def check_source_ids(value: object) -> list[str]:
    """Distinct source ids, in the order given (at most :data:`MAX_SOURCE_IDS`)."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidArgumentError("source_ids", "must be a list of ids")
    out: list[str] = []
    seen: set[str] = set()
    for item in value:
        sid = tree.check_id("source_ids", item)
        if sid not in seen:
            seen.add(sid)
            out.append(sid)
    if len(out) > MAX_SOURCE_IDS:
        raise InvalidArgumentError("source_ids", f"at most {MAX_SOURCE_IDS} ids, got {len(out)}")
    return out


# --- filter rules -----------------------------------------------------------------------------


def same_value(stored: object, wanted: MetadataValue) -> bool:
    """Exact metadata equality: same JSON type and value (``True`` is not ``1``)."""
    if isinstance(wanted, bool) or isinstance(stored, bool):
        return isinstance(stored, bool) and isinstance(wanted, bool) and stored is wanted
    if isinstance(wanted, int):
        return isinstance(stored, int) and stored == wanted
    return isinstance(stored, str) and stored == wanted


def filter_matches(source_type: str, metadata: Mapping[str, Any], flt: EmbeddingFilter) -> bool:
    """Whether an embedding of ``source_type`` with ``metadata`` passes ``flt`` (scope rules above)."""
    if flt.source_type is not None and source_type != flt.source_type:
        return False
    for key in SCOPE_KEYS:
        wanted = getattr(flt, key)
        if wanted is not None:
            owner = metadata.get(key)
            if owner is not None and owner != wanted:
                return False
    if flt.metadata:
        for key, wanted_value in flt.metadata.items():
            if key not in metadata or not same_value(metadata[key], wanted_value):
                return False
    return not holds_excluded(metadata, flt.excluded())


def holds_excluded(metadata: Mapping[str, Any], excluded: Mapping[str, Sequence[MetadataValue]]) -> bool:
    """Whether ``metadata`` holds, under a key of ``excluded``, one of its values (exactly)."""
    for key, unwanted in excluded.items():
        if key in metadata and any(same_value(metadata[key], v) for v in unwanted):
            return True
    return False


class DeletionFilter(Record):
    """What :meth:`delete_by_filter` deletes: embeddings matching EVERY condition given exactly.

    Unlike a search filter, ``agent_id`` and ``thread_id`` here match only embeddings whose
    metadata names that agent or thread (shared embeddings are not deleted with an agent's).
    """

    source_type: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None
    metadata: dict[str, MetadataValue] | None = None

    def exact_metadata(self) -> dict[str, MetadataValue]:
        """Every metadata condition, the scope keys included."""
        out: dict[str, MetadataValue] = dict(self.metadata or {})
        if self.agent_id is not None:
            out[AGENT_ID_KEY] = self.agent_id
        if self.thread_id is not None:
            out[THREAD_ID_KEY] = self.thread_id
        return out


def check_deletion(source_type: object, agent_id: object, thread_id: object, metadata: object) -> DeletionFilter:
    """A checked :class:`DeletionFilter`; one with no condition at all is refused."""
    flt = DeletionFilter.model_construct(
        source_type=tree.check_optional_id("source_type", source_type),
        agent_id=tree.check_optional_id("agent_id", agent_id),
        thread_id=tree.check_optional_id("thread_id", thread_id),
        metadata=check_metadata_filter("metadata", metadata),
    )
    if flt.source_type is None and not flt.exact_metadata():
        raise InvalidArgumentError(
            "filter", "delete_by_filter needs at least one condition (source_type, agent_id, thread_id or metadata)"
        )
    return flt


def deletion_matches(source_type: str, metadata: Mapping[str, Any], flt: DeletionFilter) -> bool:
    """Whether ``delete_by_filter(flt)`` deletes an embedding of ``source_type`` with ``metadata``."""
    if flt.source_type is not None and source_type != flt.source_type:
        return False
    return all(key in metadata and same_value(metadata[key], v) for key, v in flt.exact_metadata().items())


def sort_hits(hits: Sequence[ScoredEmbedding], limit: int) -> list[ScoredEmbedding]:
    """Best first (score descending, then id), at most ``limit``."""
    return sorted(hits, key=lambda h: (-h.score, h.id))[:limit]


@dataclass(frozen=True, slots=True)
class VectorHit:
    """A search hit as :meth:`~cogitator_memory.vectors.EmbeddingStoreMixin.search_ids` returns
    it: the embedding's id, its ``source_id`` and its cosine with the query (in [-1, 1])."""

    id: str
    source_id: str
    score: float


def without_vectors(hits: Sequence[ScoredEmbedding]) -> list[ScoredEmbedding]:
    """The hits with an empty ``vector`` (what ``include_vectors=False`` returns)."""
    return [h if not h.vector else h.model_copy(update={"vector": []}) for h in hits]


def check_include_vectors(value: object) -> bool:
    """The ``include_vectors`` flag of a search: a bool."""
    if not isinstance(value, bool):
        raise InvalidArgumentError("include_vectors", f"must be True or False, got {value!r}")
    return value


__all__ = [
    "FILTER_KEYS",
    "MAX_CONTENT_CHARS",
    "MAX_DIMENSIONS",
    "MAX_SEARCH_LIMIT",
    "MAX_SOURCE_IDS",
    "SCOPE_KEYS",
    "DeletionFilter",
    "Embedding",
    "EmbeddingFilter",
    "MetadataValue",
    "NewEmbedding",
    "QueryVector",
    "ScoredEmbedding",
    "VectorHit",
    "check_deletion",
    "check_filter",
    "check_include_vectors",
    "check_limit",
    "check_metadata_filter",
    "check_new_embedding",
    "check_query_vector",
    "check_scope_metadata",
    "check_source_ids",
    "check_text",
    "check_threshold",
    "check_vector",
    "deletion_matches",
    "filter_matches",
    "holds_excluded",
    "packed_embedding",
    "same_value",
    "sort_hits",
    "without_vectors",
]
