"""docs/context.md: its example runs, and what the package exports is documented."""

from __future__ import annotations

import inspect
import os
import re
import runpy
from pathlib import Path

import pytest

import cogitator_memory.context as context_package

DOC = Path(__file__).resolve().parents[2] / "docs" / "context.md"


def test_the_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = [b for b in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S) if "asyncio.run(" in b]
    assert blocks
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
    assert "['system', 'user', 'assistant', 'user', 'assistant', 'user']" in out
    assert "Hotel Avenida" in out


def test_every_public_class_and_function_has_a_docstring() -> None:
    missing = []
    for name in context_package.__all__:
        obj = getattr(context_package, name)
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and not (obj.__doc__ or "").strip():
            missing.append(name)
    assert not missing
