"""Every page's examples run on a fresh install with exactly what the page says it needs.

Each page of ``docs/`` starts with a ``> Needs:`` line; a page whose examples run names its
``pip install ...`` there. The runnable pages are grouped by what they install: one fresh virtual
environment per group, made from a wheel of this tree (see ``fresh_venv``: built once per session,
kept between runs). The README's own install is followed by ``test_newcomer.py``.

The examples of ``test_docs.RUNNABLE_PAGES`` run as scripts (each ``python`` block holding
``asyncio.run(``), those of :data:`PYTEST_PAGES` as a pytest run of the files the page shows
(blocks whose first line is ``# <file name>``).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import zipfile
from pathlib import Path

import pytest

from fresh_venv import PACKAGE, ROOT, Venvs, built_wheel, clean_env, shared_venvs, venv_python
from test_docs import BLOCK, EXPECTED_OUTPUT, RUNNABLE_PAGES

DOCS = ROOT / "docs"
#: Pages whose examples are test files run by pytest.
PYTEST_PAGES = ["testing.md"]
#: Pages that are not about a capability (the table of contents).
NO_NEEDS_LINE = {"index.md"}
NEEDS_LINE = re.compile(r"^> Needs: (.+)$", re.M)
PIP_INSTALL = re.compile(r"`pip install ([^`]+)`")
FILE_BLOCK = re.compile(r"```[a-z]*\n# ([\w.-]+\.(?:py|toml|ini|cfg))\n(.*?)```", re.S)


def _needs(page: str) -> str | None:
    """The text of the page's ``> Needs:`` line (within its first lines), or ``None``."""
    head = "\n".join((DOCS / page).read_text().splitlines()[:6])
    found = NEEDS_LINE.search(head)
    return found.group(1) if found else None


def requirements(page: str) -> tuple[str, ...]:
    """What the page says to ``pip install``, in order."""
    needs = _needs(page)
    assert needs is not None, f"{page} does not start with a '> Needs:' line"
    found = PIP_INSTALL.search(needs)
    assert found is not None, f"{page}: its Needs line names no `pip install ...`: {needs!r}"
    reqs = tuple(shlex.split(found.group(1)))
    assert sum(r.startswith(PACKAGE) for r in reqs) == 1, f"{page} installs {PACKAGE} once: {reqs}"
    return reqs


def _groups() -> dict[tuple[str, ...], list[str]]:
    groups: dict[tuple[str, ...], list[str]] = {}
    for page in [*RUNNABLE_PAGES, *PYTEST_PAGES]:
        groups.setdefault(requirements(page), []).append(page)
    return groups


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package built from this tree."""
    return built_wheel(tmp_path_factory)


@pytest.fixture(scope="session")
def venvs(wheel: Path) -> Venvs:
    return shared_venvs(wheel)


def test_every_page_says_what_it_needs() -> None:
    missing = sorted(p.name for p in DOCS.glob("*.md") if p.name not in NO_NEEDS_LINE and _needs(p.name) is None)
    assert not missing, f"pages without a '> Needs:' line at their top: {missing}"
    for page in [*RUNNABLE_PAGES, *PYTEST_PAGES]:
        requirements(page)  # a runnable page names its pip install


def test_runnable_pages_share_a_few_environments() -> None:
    groups = _groups()
    assert len(groups) < len(RUNNABLE_PAGES) + len(PYTEST_PAGES), groups


def test_the_wheel_ships_the_local_model_tokenizer(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    folder = "cogitator_memory/embeddings/data/all-MiniLM-L6-v2/"
    assert {folder + "tokenizer.json", folder + "LICENSE", folder + "NOTICE"} <= names


def _run(venv: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv_python(venv)), *args], capture_output=True, text=True, timeout=600, cwd=cwd, env=clean_env()
    )


@pytest.mark.parametrize("page", RUNNABLE_PAGES)
def test_examples_run_on_a_fresh_install(page: str, venvs: Venvs, tmp_path: Path) -> None:
    venv = venvs.get(requirements(page))
    blocks = [b for b in BLOCK.findall((DOCS / page).read_text()) if "asyncio.run(" in b]
    assert blocks, f"{page} has a runnable example"
    out = []
    for i, block in enumerate(blocks):
        script = tmp_path / f"example_{i}.py"
        script.write_text(block)
        done = _run(venv, [script.name], tmp_path)
        assert done.returncode == 0, f"{page} example {i} failed with {requirements(page)}:\n{done.stderr[-4000:]}"
        out.append(done.stdout)
    for expected in EXPECTED_OUTPUT.get(page, []):
        assert expected in "".join(out), f"{page}: the example should print {expected!r}"


@pytest.mark.parametrize("page", PYTEST_PAGES)
def test_test_files_run_under_pytest_on_a_fresh_install(page: str, venvs: Venvs, tmp_path: Path) -> None:
    venv = venvs.get(requirements(page))
    files = FILE_BLOCK.findall((DOCS / page).read_text())
    names = [name for name, _ in files]
    assert any(n.startswith("test_") and n.endswith(".py") for n in names), f"{page} shows no test file: {names}"
    for name, body in files:
        (tmp_path / name).write_text(body)
    done = _run(venv, ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error"], tmp_path)
    assert done.returncode == 0, f"{page}: pytest failed:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    summary = done.stdout.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and "skipped" not in summary, summary
