"""The examples of docs/vectors.md and docs/search.md run as they are."""

from __future__ import annotations

import os
import re
import runpy
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


@pytest.mark.parametrize("page", ["vectors.md", "search.md"])
def test_examples_run(page: str, tmp_path: Path) -> None:
    blocks = [b for b in BLOCK.findall((DOCS / page).read_text()) if "asyncio.run(" in b]
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
