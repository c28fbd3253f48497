"""The docs keep their promises: examples run, public classes are documented, pages are linked."""

from __future__ import annotations

import inspect
import os
import re
import runpy
from pathlib import Path

import pytest

import cogitator_memory
import cogitator_memory.cascade
import cogitator_memory.compaction
import cogitator_memory.context
import cogitator_memory.embeddings
import cogitator_memory.engines
import cogitator_memory.engines.factory
import cogitator_memory.facts
import cogitator_memory.files
import cogitator_memory.graph
import cogitator_memory.integrations
import cogitator_memory.items
import cogitator_memory.models
import cogitator_memory.recall
import cogitator_memory.runtime
import cogitator_memory.search
import cogitator_memory.testing
import cogitator_memory.threads
import cogitator_memory.tools
import cogitator_memory.upkeep
import cogitator_memory.vectors

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)

#: Pages whose every ``python`` block runs as it is, with no service and no network.
RUNNABLE_PAGES = [
    "threads.md",
    "stores.md",
    "lineage.md",
    "tokens.md",
    "vectors.md",
    "search.md",
    "context.md",
    "embeddings.md",
    "time.md",
    "models.md",
    "convert.md",
    "items.md",
    "recall.md",
    "recall-index.md",
    "facts.md",
    "graph.md",
    "compaction.md",
    "files.md",
    "server.md",
    "upkeep.md",
    "tools.md",
    "cascade.md",
    "runtime.md",
    "mcp.md",
    "mem0.md",
    "langgraph.md",
    "openai-agents.md",
]


#: Text a page's examples must print, where they print something worth checking.
EXPECTED_OUTPUT = {
    "langgraph.md": ["['I am allergic to peanuts']", "['item']"],
    "openai-agents.md": ["Hello Ana! | You said before: I'm Ana, I love trains.", "ana-chat I'm Ana, I love trains."],
    "upkeep.md": ["['No peanuts in anything.']", "['Ask about allergies before suggesting food.']"],
    "server.md": ["404 NotFoundError", "would forget True"],
    "context.md": ["['system', 'user', 'assistant', 'user', 'assistant', 'user']", "Hotel Avenida"],
    "compaction.md": ["- Ana is vegan (unverified: its quote was not found in the conversation)", "- Go on May 3"],
    "mem0.md": ["Hi, I'm Alex. I love basketball, gaming and chess.", "None ['ADD', 'UPDATE', 'DELETE']"],
    "recall-index.md": [
        "I'm allergic to peanuts.",
        "] user: I'm allergic to peanuts.",
        '["I\'m allergic to peanuts."]',
    ],
}

PACKAGES = [
    cogitator_memory,
    cogitator_memory.cascade,
    cogitator_memory.compaction,
    cogitator_memory.context,
    cogitator_memory.embeddings,
    cogitator_memory.search,
    cogitator_memory.threads,
    cogitator_memory.engines.factory,
    cogitator_memory.facts,
    cogitator_memory.files,
    cogitator_memory.graph,
    cogitator_memory.integrations,
    cogitator_memory.items,
    cogitator_memory.models,
    cogitator_memory.recall,
    cogitator_memory.runtime,
    cogitator_memory.testing,
    cogitator_memory.tools,
    cogitator_memory.upkeep,
    cogitator_memory.vectors,
]


def _blocks(page: str) -> list[str]:
    return BLOCK.findall((DOCS / page).read_text())


@pytest.mark.parametrize("page", RUNNABLE_PAGES)
def test_examples_run(page: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = [b for b in _blocks(page) if "asyncio.run(" in b]
    assert blocks, f"{page} has a runnable example"
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for i, block in enumerate(blocks):
            script = tmp_path / f"example_{i}.py"
            script.write_text(block)
            runpy.run_path(str(script), run_name="__main__")
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    for expected in EXPECTED_OUTPUT.get(page, []):
        assert expected in out, f"{page}: the example should print {expected!r}"


def test_readme_quick_start_runs(tmp_path: Path) -> None:
    blocks = [b for b in BLOCK.findall((ROOT / "README.md").read_text()) if "quickstart.db" in b]
    assert len(blocks) == 1
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        script = tmp_path / "quick_start.py"
        script.write_text(blocks[0])
        runpy.run_path(str(script), run_name="__main__")
    finally:
        os.chdir(cwd)
    assert (tmp_path / "quickstart.db").exists()


def test_readme_one_call_memory_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's SyncMemory snippet, on the default SQLite file (moved into tmp_path)."""
    blocks = [b for b in BLOCK.findall((ROOT / "README.md").read_text()) if "SyncMemory()" in b]
    assert len(blocks) == 1
    monkeypatch.setenv("COGITATOR_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("COGITATOR_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "one_call.py"
    script.write_text(blocks[0])
    runpy.run_path(str(script), run_name="__main__")
    assert "I'm allergic to peanuts." in capsys.readouterr().out
    assert (tmp_path / "home" / "memory.db").exists()


def test_readme_dated_conversation_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's snippet loading a dated conversation between two named people."""
    blocks = [b for b in BLOCK.findall((ROOT / "README.md").read_text()) if "pair-1" in b]
    assert len(blocks) == 1
    script = tmp_path / "dated.py"
    script.write_text(blocks[0])
    runpy.run_path(str(script), run_name="__main__")
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["So glad you went! I painted a lake sunrise.", "I went to a support group yesterday."]


def test_every_public_class_and_function_has_a_docstring() -> None:
    missing = []
    for package in PACKAGES:
        for name in package.__all__:
            obj = getattr(package, name)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and not (obj.__doc__ or "").strip():
                missing.append(f"{package.__name__}.{name}")
    assert not missing, f"undocumented: {missing}"


def test_every_linked_page_exists() -> None:
    texts = [(ROOT / "README.md").read_text()] + [p.read_text() for p in DOCS.glob("*.md")]
    links = {m for text in texts for m in re.findall(r"\]\((?:docs/)?([a-z0-9_-]+\.md)\)", text)}
    missing = sorted(link for link in links if not (DOCS / link).exists())
    assert not missing, f"linked but missing: {missing}"
