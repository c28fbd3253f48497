"""The memory config: defaults, both key spellings, and errors naming the key and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.runtime.config import (
    ConfigError,
    MemoryConfig,
    coerce_config,
    load_config,
    local_model_installed,
    parse_config,
)


def test_defaults_are_sqlite_in_the_home_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COGITATOR_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("COGITATOR_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    config = load_config()
    assert config.adapter == "sqlite"
    assert config.store_options() == {"provider": "sqlite", "path": str(tmp_path / "home" / "memory.db")}
    assert config.knowledge_graph is True
    assert config.compaction is None and config.extraction.mode == "off"
    expected = {"provider": "local"} if local_model_installed() else None
    assert config.embedding_options() == expected


def test_the_home_default_is_under_the_user_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COGITATOR_HOME", raising=False)
    assert MemoryConfig().sqlite_path() == str(Path("~/.cogitator/memory.db").expanduser())


def test_the_spec_yaml_reads_with_camel_case_keys() -> None:
    config = parse_config(
        """
llm: {provider: openai}     # the rest of the runtime's file is left alone
memory:
  adapter: postgres
  connectionString: postgres://u:p@db/x
  knowledgeGraph: true
  autoExtract: true
  model: {provider: openai, model: gpt-4o-mini}
  compaction:
    threshold: 50
  contextBuilder: {maxTokens: 4000, strategy: hybrid}
"""
    )
    assert config.adapter == "postgres"
    assert config.store_options()["connection_string"] == "postgres://u:p@db/x"
    assert config.auto_extract and config.compaction is not None and config.compaction.threshold == 50
    assert config.context_builder.max_tokens == 4000 and config.context_builder.strategy == "hybrid"


@pytest.mark.parametrize(
    ("text", "key", "line", "words"),
    [
        ("memory:\n  adapter: sqlite\n  bogus: 1\n", "memory.bogus", 3, "unknown key"),
        ("memory:\n  adapter: cassandra\n", "memory.adapter", 2, "cassandra"),
        ("memory:\n  compaction:\n    threshold: lots\n", "memory.compaction.threshold", 3, "integer"),
        ("memory:\n  contextBuilder:\n    maxTokenz: 5\n", "memory.contextBuilder.maxTokenz", 3, "unknown key"),
        ("memory:\n  adapter: redis\n  path: /tmp/x.db\n", "memory.path", 3, "SQLite file"),
        ("memory:\n  knowledgeGraph: false\n  autoExtract: true\n", "memory.autoExtract", 3, "knowledge_graph"),
        ("memory:\n  embedding: {provider: openai, dims: 3}\n", "memory.embedding.dims", 2, "unknown key"),
        ("memory: [1, 2]\n", "memory", 1, "mapping"),
        ("memory:\n  adapter: [sqlite\n", "yaml", 3, "not valid YAML"),
    ],
)
def test_errors_name_the_key_and_the_line(text: str, key: str, line: int, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="cogitator.yml")
    assert caught.value.key == key
    assert caught.value.line == line
    assert words in str(caught.value)
    assert f"cogitator.yml, line {line}" in str(caught.value)
    assert isinstance(caught.value, InvalidArgumentError)


def test_load_config_reads_the_named_file_and_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "c.yml"
    file.write_text("memory:\n  adapter: memory\n  agentId: jarvis\n")
    assert load_config(file).agent_id == "jarvis"
    monkeypatch.setenv("COGITATOR_CONFIG", str(file))
    assert load_config().adapter == "memory"
    with pytest.raises(ConfigError, match="no config file"):
        load_config(tmp_path / "missing.yml")


def test_postgres_takes_database_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgres://u@h/db")
    assert MemoryConfig(adapter="postgres").store_options()["connection_string"] == "postgres://u@h/db"
    monkeypatch.delenv("DATABASE_URL")
    with pytest.raises(InvalidArgumentError, match="connection_string"):
        MemoryConfig(adapter="postgres").store_options()


def test_a_dict_is_checked_like_the_file() -> None:
    with pytest.raises(ConfigError) as caught:
        coerce_config({"adapter": "sqlite", "files": {"enabled": "perhaps"}})
    assert caught.value.key == "memory.files.enabled"
    with pytest.raises(ConfigError, match="must be a MemoryConfig"):
        coerce_config(42)  # type: ignore[arg-type]


def test_upkeep_sections_default_and_name_their_keys() -> None:
    config = MemoryConfig()
    assert (config.brief.max_cards, config.observations.max_entities, config.observations.min_items) == (3, 3, 3)
    assert config.consolidation.dedupe and config.consolidation.fold_lessons
    assert config.consolidation.playbook == "apply"
    read = parse_config("memory:\n  brief: {maxCards: 2}\n  consolidation: {foldLessons: false, playbook: shadow}\n")
    assert read.brief.max_cards == 2 and not read.consolidation.fold_lessons
    assert read.consolidation.playbook == "shadow"
    cases = [
        ("memory:\n  brief:\n    max_cards: 5\n", "memory.brief.max_cards", 3),
        ("memory:\n  consolidation:\n    playbook: draft\n", "memory.consolidation.playbook", 3),
        ("memory:\n  observations:\n    every: 2\n", "memory.observations.every", 3),
        ("memory:\n  files: {enabled: false}\n  observations: {min_items: 2}\n", "memory.observations", 3),
        (
            "memory:\n  files: {enabled: false}\n  consolidation: {fold_lessons: true}\n",
            "memory.consolidation.fold_lessons",
            3,
        ),
    ]
    for text, key, line in cases:
        with pytest.raises(ConfigError) as caught:
            parse_config(text, source="cogitator.yml")
        assert (caught.value.key, caught.value.line) == (key, line), text
    files_off = coerce_config({"files": {"enabled": False}, "consolidation": {"fold_lessons": False}})
    assert files_off.consolidation.dedupe
    # files are off until configured (spec), so a consolidation section that does not ask for the
    # playbook by name is taken: there is nothing to fold lessons into
    assert not MemoryConfig().files.enabled
    assert coerce_config({"consolidation": {"dedupe": True}}).consolidation.dedupe


def test_a_bare_yaml_off_is_the_extraction_mode_off_and_the_documented_file_reads() -> None:
    assert parse_config("memory:\n  extraction: {mode: off}\n").extraction.mode == "off"
    with pytest.raises(ConfigError) as caught:
        parse_config("memory:\n  extraction: {mode: true}\n")
    assert caught.value.key == "memory.extraction.mode"
    page = (Path(__file__).parents[2] / "docs" / "runtime.md").read_text()
    documented = page.split("```yaml\n", 1)[1].split("```", 1)[0]
    config = parse_config(documented, source="docs/runtime.md")
    assert config.extraction.mode == "off" and config.consolidation.playbook == "apply"


async def test_vectors_path_reaches_qdrant_local_mode(tmp_path: Path) -> None:
    from cogitator_memory.runtime.memory import Memory

    folder = tmp_path / "qdrant"
    config = {
        "adapter": "sqlite",
        "path": str(tmp_path / "memory.db"),
        "embedding": {"provider": "hashing"},
        "vectors": {"adapter": "qdrant", "path": str(folder), "collection": "notes"},
    }
    async with Memory(config) as memory:
        vectors = memory.vectors
        assert vectors.local and vectors.path == str(folder) and vectors.url is None
        vector = [1.0] + [0.0] * (vectors.dimensions - 1)
        record = {"id": "v1", "source_id": "e1", "source_type": "entry", "content": "Lisbon", "vector": vector}
        assert (await vectors.add_embeddings([record])).success
    assert folder.is_dir() and any(folder.rglob("*"))  # the collection is on disk, in that folder
    async with Memory(config) as memory:  # and read back from it after a restart
        assert (await memory.vectors.get_embedding("v1")).data is not None
    both = {**config, "vectors": {"adapter": "qdrant", "path": str(folder), "url": "http://localhost:6333"}}
    with pytest.raises(ConfigError) as caught:
        async with Memory(both):
            pass
    assert caught.value.key == "memory.vectors.path"


SMART_MEMORY_YAML = """
memory:
  adapter: memory
  knowledgeGraph: true
  autoExtract: true
  embedding: {provider: none}
  compaction:
    threshold: 50
"""


async def test_the_spec_smart_memory_yaml_takes_the_model_the_caller_gives() -> None:
    from cogitator_memory import Memory

    # The spec runs these parts with "the assistant's LLM": a config asking for them without a
    # model section is valid, and Memory takes the model as summarize=.
    config = parse_config(SMART_MEMORY_YAML, source="cogitator.yml")
    assert config.model is None and config.wanting_model() == "compaction"

    async def assistant_llm(messages: object, options: object) -> str:
        return "[]"

    async with Memory(config, summarize=assistant_llm) as memory:
        assert memory.compaction is not None and memory.summarize is assistant_llm
    # With neither a model section nor summarize=, Memory names the first part that needs one.
    with pytest.raises(ConfigError) as caught:
        Memory(config)
    assert caught.value.key == "memory.compaction" and "summarize=" in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        Memory({"adapter": "memory", "extraction": {"mode": "active"}})
    assert caught.value.key == "memory.extraction"
