"""The layout keeps its rules (docs/architecture.md): contracts never import an engine, the CLI
or the package root; importing the package imports no driver; the root exports every store."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import cogitator_memory

PACKAGE = Path(cogitator_memory.__file__).parent
#: Top-level folders and modules that are not wiring: they may not import engines or the CLI.
WIRING = {"engines", "cli", "runtime", "server", "__init__.py", "__main__.py"}
DRIVERS = ("psycopg", "psycopg_pool", "redis", "pymongo", "qdrant_client", "numpy", "onnxruntime", "tokenizers")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports (absolute names), with the line it does so on."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            if module != "cogitator_memory":
                found.append((node.lineno, module))
            for alias in node.names:
                is_submodule = (PACKAGE / alias.name).is_dir() or (PACKAGE / f"{alias.name}.py").exists()
                if module != "cogitator_memory" or is_submodule:
                    found.append((node.lineno, f"{module}.{alias.name}"))
                else:
                    found.append((node.lineno, module))  # a name of the package root
    return found


def _contract_files() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] not in WIRING]


@pytest.mark.parametrize("path", _contract_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_contracts_import_no_engine_cli_or_root(path: Path) -> None:
    bad = [
        f"line {line}: {module}"
        for line, module in _imports(path)
        if module.startswith(("cogitator_memory.engines", "cogitator_memory.cli")) or module == "cogitator_memory"
    ]
    assert not bad, f"{path.relative_to(PACKAGE)} imports up a layer: {bad}"


def test_engines_import_no_other_engine() -> None:
    bad = []
    for path in sorted((PACKAGE / "engines").rglob("*.py")):
        parts = path.relative_to(PACKAGE / "engines").parts
        if len(parts) < 2:
            continue  # engines/__init__.py and the factory name every engine on purpose
        for line, module in _imports(path):
            if module.startswith("cogitator_memory.engines.") and module.split(".")[2] not in (parts[0], "factory"):
                bad.append(f"{path.relative_to(PACKAGE)} line {line}: {module}")
    assert not bad, bad


def test_importing_the_package_imports_no_driver() -> None:
    code = (
        "import sys, cogitator_memory, cogitator_memory.vectors, cogitator_memory.testing\n"
        f"print(sorted(m for m in {DRIVERS!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_store_is_exported_from_the_root() -> None:
    from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter
    from cogitator_memory.engines.postgres.adapter import PostgresAdapter
    from cogitator_memory.engines.redis.threads import RedisAdapter

    assert cogitator_memory.PostgresAdapter is PostgresAdapter
    assert cogitator_memory.RedisAdapter is RedisAdapter
    assert cogitator_memory.MongoDBAdapter is MongoDBAdapter
    for name in ("InMemoryAdapter", "SQLiteAdapter", "InMemoryEmbeddingAdapter", "SQLiteEmbeddingAdapter"):
        assert name in cogitator_memory.__all__


def test_moved_vector_stores_still_answer_from_the_vectors_package() -> None:
    import cogitator_memory.vectors as vectors

    assert vectors.InMemoryEmbeddingAdapter is cogitator_memory.InMemoryEmbeddingAdapter
    assert vectors.QdrantAdapter is cogitator_memory.QdrantAdapter
    assert vectors.create_embedding_adapter is cogitator_memory.create_embedding_adapter
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = vectors.Nope
