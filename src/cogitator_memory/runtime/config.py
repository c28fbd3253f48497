"""The memory configuration: pydantic models of the ``memory:`` section of ``cogitator.yml``, and
the loader that reads it.

Every model forbids keys it does not know. Keys are snake_case (``knowledge_graph``) and the
spec's camelCase spellings (``knowledgeGraph``) are accepted too. :func:`load_config` reads a
YAML file and raises :class:`ConfigError` naming the key, the file and the line of the first
problem; :func:`parse_config` does the same for YAML text and :meth:`MemoryConfig.model_validate`
for a dict. Defaults: a SQLite file at ``~/.cogitator/memory.db`` (``$COGITATOR_HOME`` moves the
folder; ``$COGITATOR_MEMORY_DB`` names another file for memory opened without a config, see
:func:`default_config`), the local embedding model when the ``[local]`` extra is installed (else no embeddings),
the knowledge graph on, extraction and compaction off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from ..errors import InvalidArgumentError
from ..upkeep.brief import DEFAULT_BRIEF_MAX_TOKENS, MAX_BRIEF_CARDS

#: The environment variable naming the folder of the default SQLite file (``~/.cogitator``).
HOME_ENV = "COGITATOR_HOME"
#: The environment variable naming the config file read when no path is given.
CONFIG_ENV = "COGITATOR_CONFIG"
#: The environment variable naming a SQLite file that memory opened without a config works on
#: (instead of the store of the config file found), for ``Memory()`` and every CLI command alike.
DB_ENV = "COGITATOR_MEMORY_DB"
#: The PostgreSQL URL used when ``adapter: postgres`` gives no ``connection_string``.
DATABASE_URL_ENV = "DATABASE_URL"
#: The file name looked for in the current folder when no path is given.
CONFIG_FILE = "cogitator.yml"

AdapterName = Literal["memory", "sqlite", "postgres", "redis", "mongodb"]
ADAPTERS: tuple[str, ...] = ("memory", "sqlite", "postgres", "redis", "mongodb")


def default_home() -> Path:
    """The folder of the default SQLite file: ``$COGITATOR_HOME``, else ``~/.cogitator``."""
    return Path(os.environ.get(HOME_ENV) or "~/.cogitator").expanduser()


def default_path() -> str:
    """The default SQLite file: ``memory.db`` in :func:`default_home`."""
    return str(default_home() / "memory.db")


def local_model_installed() -> bool:
    """Whether the local embedding model and its runtime are installed (the ``[local]`` extra)."""
    from ..embeddings import local

    return local.find_model_file() is not None and not any(local._missing(m) for m in local.LOCAL_MODULES)


class _KeyProblem(ValueError):
    """A problem of one key found by a check across keys (``loc`` is the key's path)."""

    def __init__(self, loc: tuple[str, ...], problem: str) -> None:
        super().__init__(problem)
        self.loc = loc
        self.problem = problem


class _Section(BaseModel):
    """A config section: unknown keys are refused, camelCase spellings accepted."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)


class EmbeddingConfig(_Section):
    """The embedding service: ``provider`` ``local``, ``openai``, ``ollama``, ``google``,
    ``hashing`` or ``none`` (no vectors), and the provider's settings."""

    provider: Literal["local", "openai", "ollama", "google", "hashing", "none"]
    model: str | None = None
    api_key: str | None = None
    base_url: str | None = None
    dimensions: int | None = Field(default=None, ge=1)
    timeout: float | None = Field(default=None, gt=0)

    def service_options(self) -> dict[str, Any]:
        """The keyword options of :func:`~cogitator_memory.embeddings.create_embedding_service`."""
        return self.model_dump(exclude_none=True)


class ModelConfig(_Section):
    """The chat model compaction and extraction ask: a provider of
    :func:`~cogitator_memory.models.create_chat_client` and its settings."""

    provider: str
    model: str
    api_key: str | None = None
    base_url: str | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    timeout: float | None = Field(default=None, gt=0)


class CompactionConfig(_Section):
    """When a thread is compacted: at ``threshold`` messages (the spec's key) or ``tokens``
    tokens, whichever comes first, keeping the newest ``keep_recent`` entries."""

    threshold: int | None = Field(default=None, ge=2)
    tokens: int | None = Field(default=None, ge=1)
    keep_recent: int = Field(default=10, ge=0)
    strategy: Literal["summary", "hierarchical"] = "summary"

    @model_validator(mode="after")
    def _one_trigger(self) -> CompactionConfig:
        if self.threshold is None and self.tokens is None:
            raise _KeyProblem(("threshold",), "give threshold (messages) or tokens")
        return self


class ExtractionConfig(_Section):
    """Memory items extracted from each conversation: ``off``, ``shadow`` (written as suggested,
    out of every context until activated) or ``active``."""

    mode: Literal["off", "shadow", "active"] = "off"

    @field_validator("mode", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        return "off" if value is False else value  # YAML reads a bare ``off`` as false


class FilesConfig(_Section):
    """Memory files (the memory tool, observations, the playbook): off until configured
    (``files: {enabled: true}``), as the spec has every part that writes on its own."""

    enabled: bool = False


class BriefConfig(_Section):
    """The pre-turn brief (:meth:`Memory.brief <cogitator_memory.runtime.Memory.brief>`): at most
    ``max_cards`` cards (1 to 4) in an answer of at most ``max_tokens`` tokens."""

    max_cards: int = Field(default=3, ge=1, le=MAX_BRIEF_CARDS)
    max_tokens: int = Field(default=DEFAULT_BRIEF_MAX_TOKENS, ge=1)


class ObservationsConfig(_Section):
    """Observations of entities (kept as memory files, so they need ``files.enabled``): one
    refresh asks about at most ``max_entities`` entities, each with at least ``min_items`` facts."""

    max_entities: int = Field(default=3, ge=0)
    min_items: int = Field(default=3, ge=1)


class ConsolidationConfig(_Section):
    """What :meth:`Memory.consolidate <cogitator_memory.runtime.Memory.consolidate>` does: mark
    repeats and contradictions stale (``dedupe``, at most ``max_changes`` items over
    ``max_subjects`` subjects a pass) and fold lessons into the playbook (``fold_lessons``, a
    memory file, so it needs ``files.enabled``), written in place (``playbook: apply``) or as a
    draft to review (``playbook: shadow``)."""

    dedupe: bool = True
    fold_lessons: bool = True
    playbook: Literal["apply", "shadow"] = "apply"
    max_changes: int = Field(default=10, ge=1)
    max_subjects: int = Field(default=10, ge=1)


class ContextConfig(_Section):
    """The context builder: the fields of :class:`~cogitator_memory.context.ContextBuilderConfig`
    the runtime sets (the strategy defaults to ``hybrid``: without an embedding service it recalls by words, time and names)."""

    max_tokens: int = Field(default=4000, ge=1)
    strategy: Literal["recent", "relevant", "hybrid"] | None = None
    include_facts: bool = True
    include_semantic_context: bool = True
    include_graph_context: bool = False
    reserve_tokens: int | None = Field(default=None, ge=0)
    time_zone: str | None = None


class VectorsConfig(_Section):
    """Where message and item vectors live: ``sqlite`` (the store's file by default), ``memory``,
    ``postgres`` (the store's database) or ``qdrant`` (``url`` of a server or ``path`` of a local
    folder, and ``collection``)."""

    adapter: Literal["memory", "sqlite", "postgres", "qdrant"]
    path: str | None = None
    url: str | None = None
    collection: str | None = None


class MemoryConfig(_Section):
    """The ``memory:`` section of ``cogitator.yml`` (see the module docstring and ``docs/runtime.md``).

    ``adapter`` picks the store; ``path`` is the SQLite file; ``connection_string`` the URL of
    PostgreSQL (else ``$DATABASE_URL``), Redis or MongoDB; ``options`` more keyword options of the
    store (``key_prefix``, ``database``, ``schema``...). ``agent_id`` is the agent whose memory
    the tools and the facade use when a call names none. ``on_error: disable`` (the default, as
    in the spec: the agent goes on without memory) turns memory off with a warning when the store
    cannot be reached; ``on_error: raise`` fails the start instead.
    """

    adapter: AdapterName = "sqlite"
    path: str | None = None
    connection_string: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    agent_id: str = "default"
    embedding: EmbeddingConfig | None = None
    vectors: VectorsConfig | None = None
    knowledge_graph: bool = True
    auto_extract: bool = False
    model: ModelConfig | None = None
    compaction: CompactionConfig | None = None
    extraction: ExtractionConfig = Field(default_factory=ExtractionConfig)
    context_builder: ContextConfig = Field(default_factory=ContextConfig)
    files: FilesConfig = Field(default_factory=FilesConfig)
    brief: BriefConfig = Field(default_factory=BriefConfig)
    observations: ObservationsConfig = Field(default_factory=ObservationsConfig)
    consolidation: ConsolidationConfig = Field(default_factory=ConsolidationConfig)
    on_error: Literal["raise", "disable"] = "disable"

    @field_validator("agent_id")
    @classmethod
    def _agent(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> MemoryConfig:
        if self.path is not None and self.adapter != "sqlite":
            raise _KeyProblem(
                ("path",),
                f"is the SQLite file; adapter {self.adapter} takes connection_string and keeps core facts in"
                " that store too (the spec's SQLite file of core facts is not used): remove path",
            )
        if self.connection_string is not None and self.adapter in ("sqlite", "memory"):
            raise _KeyProblem(
                ("connection_string",),
                f"is not used by adapter {self.adapter} (only postgres, redis and mongodb read it): remove it",
            )
        if self.auto_extract and not self.knowledge_graph:
            raise _KeyProblem(("auto_extract",), "needs knowledge_graph: true")
        if not self.files.enabled:
            if "observations" in self.model_fields_set:
                raise _KeyProblem(("observations",), "are kept as memory files: needs files.enabled: true")
            # fold_lessons is on by default and simply has nothing to fold into without files;
            # only asking for it by name, with files off, is a contradiction
            if self.consolidation.fold_lessons and "fold_lessons" in self.consolidation.model_fields_set:
                raise _KeyProblem(
                    ("consolidation", "fold_lessons"), "the playbook is a memory file: needs files.enabled: true"
                )
        return self

    def wanting_model(self) -> str | None:
        """The first key whose part asks a model (``compaction``, ``extraction``, ``auto_extract``),
        ``None`` when none does. The model is the ``model`` section or the ``summarize`` function
        given to :class:`~cogitator_memory.runtime.Memory` (the spec's "assistant's LLM"), so a
        config asking for these parts without a ``model`` section is valid, and ``Memory``
        refuses it only when it gets no ``summarize`` either."""
        for name, on in (
            ("compaction", self.compaction is not None),
            ("extraction", self.extraction.mode != "off"),
            ("auto_extract", self.auto_extract),
        ):
            if on:
                return name
        return None

    def sqlite_path(self) -> str:
        """The SQLite file of ``adapter: sqlite``: ``path`` (``~`` expanded) or the default."""
        return str(Path(self.path).expanduser()) if self.path else default_path()

    def store_options(self) -> dict[str, Any]:
        """The ``provider`` and keyword options of the thread store this config names.

        Raises :class:`InvalidArgumentError` naming ``connection_string`` when PostgreSQL has no
        URL here nor in ``$DATABASE_URL``.
        """
        options: dict[str, Any] = {"provider": self.adapter, **self.options}
        if self.adapter == "sqlite":
            options["path"] = self.sqlite_path()
        elif self.adapter == "postgres":
            url = self.connection_string or os.environ.get(DATABASE_URL_ENV)
            if not url:
                raise InvalidArgumentError(
                    "memory.connection_string", f"adapter postgres needs a connection string (or ${DATABASE_URL_ENV})"
                )
            options["connection_string"] = url
        elif self.adapter == "redis" and self.connection_string:
            options["url"] = self.connection_string
        elif self.adapter == "mongodb" and self.connection_string:
            options["uri"] = self.connection_string
        return options

    def embedding_options(self) -> dict[str, Any] | None:
        """The embedding service's options: the configured one, else the local model when it is
        installed, else ``None`` (no vectors)."""
        if self.embedding is not None:
            return None if self.embedding.provider == "none" else self.embedding.service_options()
        return {"provider": "local"} if local_model_installed() else None


class ConfigError(InvalidArgumentError):
    """A config that cannot be used: ``key`` is the dotted key (``memory.compaction.threshold``),
    ``line`` its 1-based line in ``source`` when it came from YAML."""

    def __init__(self, key: str, problem: str, *, line: int | None = None, source: str | None = None) -> None:
        self.key = key
        self.line = line
        self.source = source
        where = ""
        if source is not None or line is not None:
            where = f" ({source or '<config>'}{f', line {line}' if line is not None else ''})"
        InvalidArgumentError.__init__(self, key, problem + where)


# ----- YAML with lines ----------------------------------------------------------------------

_Marks = dict[tuple[str, ...], int]


def _walk(node: yaml.Node, prefix: tuple[str, ...], marks: _Marks) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(key_node.value)
            path = (*prefix, key)
            marks.setdefault(path, key_node.start_mark.line + 1)
            _walk(value_node, path, marks)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            path = (*prefix, str(i))
            marks.setdefault(path, item.start_mark.line + 1)
            _walk(item, path, marks)


def _read_yaml(text: str, source: str) -> tuple[Any, _Marks]:
    try:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise ConfigError("yaml", f"not valid YAML: {exc.problem or exc}", line=line, source=source) from None
    except yaml.YAMLError as exc:
        raise ConfigError("yaml", f"not valid YAML: {exc}", source=source) from None
    marks: _Marks = {}
    if node is not None:
        _walk(node, (), marks)
    return data, marks


def _spellings(key: str) -> list[str]:
    camel = to_camel(key)
    snake = "".join("_" + c.lower() if c.isupper() else c for c in key)
    return list(dict.fromkeys([key, camel, snake]))


def _locate(loc: tuple[str | int, ...], marks: _Marks, root: tuple[str, ...]) -> tuple[str, int | None]:
    """The dotted key as written in the file, and its line (the nearest known parent's)."""
    written: list[str] = list(root)
    line = marks.get(root)
    for part in loc:
        text = str(part)
        for spelling in _spellings(text):
            if (*written, spelling) in marks:
                text = spelling
                break
        written.append(text)
        line = marks.get(tuple(written), line)
    return ".".join(written), line


def _from_validation(exc: ValidationError, marks: _Marks, root: tuple[str, ...], source: str | None) -> ConfigError:
    error = exc.errors()[0]
    loc: tuple[str | int, ...] = tuple(error["loc"])
    message = error["msg"]
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, _KeyProblem):
        loc, message = (*loc, *cause.loc), cause.problem
    key, line = _locate(loc, marks, root)
    if error["type"] == "extra_forbidden":
        message = "unknown key"
    elif error["type"] == "literal_error":
        message = f"{message}, got {error.get('input')!r}"
    return ConfigError(key, message, line=line, source=source)


def config_from_data(
    data: Any, *, marks: _Marks | None = None, source: str | None = None, section: str = "memory"
) -> MemoryConfig:
    """A :class:`MemoryConfig` from parsed YAML (the whole file, whose ``section`` key holds the
    memory config; other top-level keys belong to the rest of the runtime and are left alone)."""
    marks = marks or {}
    if data is None:
        return MemoryConfig()
    if not isinstance(data, Mapping):
        raise ConfigError(
            "<root>", f"must be a mapping with a '{section}' key, got {type(data).__name__}", line=1, source=source
        )
    body = data.get(section)
    if body is None:
        return MemoryConfig()
    if not isinstance(body, Mapping):
        raise ConfigError(
            section, f"must be a mapping, got {type(body).__name__}", line=marks.get((section,)), source=source
        )
    try:
        return MemoryConfig.model_validate(body)
    except ValidationError as exc:
        raise _from_validation(exc, marks, (section,), source) from None


def parse_config(text: str, *, source: str = "<config>") -> MemoryConfig:
    """The :class:`MemoryConfig` of YAML text (a whole ``cogitator.yml``)."""
    data, marks = _read_yaml(text, source)
    return config_from_data(data, marks=marks, source=source)


def find_config_file() -> Path | None:
    """The config file read when none is named: ``$COGITATOR_CONFIG``, else ``./cogitator.yml``."""
    named = os.environ.get(CONFIG_ENV)
    if named:
        return Path(named).expanduser()
    local = Path.cwd() / CONFIG_FILE
    return local if local.is_file() else None


def load_config(path: str | os.PathLike[str] | None = None) -> MemoryConfig:
    """The memory config of ``path`` (default: :func:`find_config_file`, else the defaults).

    Raises :class:`ConfigError` naming the key and line of an unknown key, a wrong type or a
    bad value, and ``key='config'`` for a file that cannot be read.
    """
    file = Path(path).expanduser() if path is not None else find_config_file()
    if file is None:
        return MemoryConfig()
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("config", f"no config file at {file}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("config", f"cannot read {file}: {exc}") from None
    return parse_config(text, source=str(file))


def on_sqlite_file(config: MemoryConfig, path: str | os.PathLike[str]) -> MemoryConfig:
    """``config`` with its store replaced by the SQLite file ``path`` (its other settings kept)."""
    return config.model_copy(update={"adapter": "sqlite", "path": str(path), "connection_string": None})


def default_config() -> MemoryConfig:
    """The config of memory opened without one (``Memory()``, a CLI command without ``--db`` or
    ``--config``): :func:`load_config` with no path (``$COGITATOR_CONFIG``, else
    ``./cogitator.yml``, else the defaults), its store replaced by the SQLite file
    ``$COGITATOR_MEMORY_DB`` when that is set. One rule, so that a program and the commands
    started beside it open the same store."""
    config = load_config(None)
    named = os.environ.get(DB_ENV)
    return on_sqlite_file(config, named) if named else config


def coerce_config(config: MemoryConfig | Mapping[str, Any] | str | os.PathLike[str] | None) -> MemoryConfig:
    """A :class:`MemoryConfig` from one, a dict of the ``memory`` section, a path of a YAML file,
    or ``None`` (:func:`default_config`)."""
    if isinstance(config, MemoryConfig):
        return config
    if config is None:
        return default_config()
    if isinstance(config, str | os.PathLike):
        return load_config(config)
    if isinstance(config, Mapping):
        try:
            return MemoryConfig.model_validate(dict(config))
        except ValidationError as exc:
            raise _from_validation(exc, {}, ("memory",), None) from None
    raise ConfigError("config", f"must be a MemoryConfig, a dict or a file path, got {type(config).__name__}")


__all__ = [
    "ADAPTERS",
    "CONFIG_ENV",
    "CONFIG_FILE",
    "DATABASE_URL_ENV",
    "DB_ENV",
    "HOME_ENV",
    "BriefConfig",
    "CompactionConfig",
    "ConfigError",
    "ConsolidationConfig",
    "ContextConfig",
    "EmbeddingConfig",
    "ExtractionConfig",
    "FilesConfig",
    "MemoryConfig",
    "ModelConfig",
    "ObservationsConfig",
    "VectorsConfig",
    "coerce_config",
    "config_from_data",
    "default_home",
    "default_path",
    "find_config_file",
    "load_config",
    "local_model_installed",
    "parse_config",
]
