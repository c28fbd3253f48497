"""Every page's examples run on a fresh install with exactly what the page says it needs.

Each page of ``docs/`` starts with a ``> Needs:`` line; a page whose examples run names its
``pip install ...`` there. The package is built into a wheel from this tree once per session,
and the runnable pages are grouped by what they install: one virtual environment per group,
made with ``python -m venv --without-pip`` and filled by pip (through its usual configuration)
with exactly that, nothing from the development environment. The environments are kept between
runs under ``$COGMEM_DOCS_VENVS`` (default ``~/.cache/cogitator-memory/docs-venvs``), keyed by
Python's version, the page's requirements and the package's dependency lists, so they are made
again when any of those change; this run's wheel is reinstalled into them each session.

The examples of ``test_docs.RUNNABLE_PAGES`` run as scripts (each ``python`` block holding
``asyncio.run(``), those of :data:`PYTEST_PAGES` as a pytest run of the files the page shows
(blocks whose first line is ``# <file name>``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from test_docs import BLOCK, EXPECTED_OUTPUT, RUNNABLE_PAGES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: Pages whose examples are test files run by pytest.
PYTEST_PAGES = ["testing.md"]
#: Pages that are not about a capability (the table of contents).
NO_NEEDS_LINE = {"index.md"}
NEEDS_LINE = re.compile(r"^> Needs: (.+)$", re.M)
PIP_INSTALL = re.compile(r"`pip install ([^`]+)`")
FILE_BLOCK = re.compile(r"```[a-z]*\n# ([\w.-]+\.(?:py|toml|ini|cfg))\n(.*?)```", re.S)
PACKAGE = "cogitator-memory"


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


def _cache_dir() -> Path:
    return Path(os.environ.get("COGMEM_DOCS_VENVS") or Path.home() / ".cache" / "cogitator-memory" / "docs-venvs")


def _prune(cache: Path, days: float = 14.0) -> None:
    """Remove environments no run used for ``days`` (made for requirements since changed)."""
    if not cache.is_dir():
        return
    cutoff = time.time() - days * 86400
    for folder in cache.iterdir():
        if folder.is_dir() and folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)


def _clean_env() -> dict[str, str]:
    """The environment without anything pointing into the development tree."""
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTHONSAFEPATH"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def _pip(python: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), *args],
        capture_output=True,
        text=True,
        timeout=1200,
        env=_clean_env(),
    )
    assert done.returncode == 0, f"pip {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package built from this tree."""
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        env=_clean_env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = out.glob("cogitator_memory-*.whl")
    return built


class Venvs:
    """One fresh environment per requirement set, made on first use."""

    def __init__(self, wheel: Path) -> None:
        self.wheel = wheel
        self.ready: dict[tuple[str, ...], Path] = {}
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        self.spec = {"dependencies": project["dependencies"], "extras": project["optional-dependencies"]}

    def _requirement(self, req: str) -> str:
        if not req.startswith(PACKAGE):
            return req
        return f"{req} @ {self.wheel.as_uri()}"

    def get(self, reqs: tuple[str, ...]) -> Path:
        if reqs in self.ready:
            return self.ready[reqs]
        key = hashlib.sha256(json.dumps([sys.version, reqs, self.spec], sort_keys=True).encode()).hexdigest()[:16]
        venv = _cache_dir() / key
        _prune(_cache_dir())
        if not (venv / ".complete").exists():
            shutil.rmtree(venv, ignore_errors=True)
            building = venv.with_name(f"{key}.tmp-{os.getpid()}")
            shutil.rmtree(building, ignore_errors=True)
            building.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(building)], check=True, timeout=120)
            _pip(_python(building), "install", "-q", *[self._requirement(r) for r in reqs])
            (building / ".complete").write_text(" ".join(reqs) + "\n")
            try:
                building.rename(venv)
            except OSError:  # another run made it meanwhile
                shutil.rmtree(building, ignore_errors=True)
        # this tree's package, whatever the cached environment held before (its dependencies are
        # the ones the key was made of)
        _pip(_python(venv), "install", "-q", "--no-deps", "--force-reinstall", str(self.wheel))
        os.utime(venv)  # used now: kept by the pruning below
        where = subprocess.run(
            [str(_python(venv)), "-c", "import cogitator_memory; print(cogitator_memory.__file__)"],
            capture_output=True,
            text=True,
            cwd=venv,
            env=_clean_env(),
            check=True,
        ).stdout.strip()
        assert Path(where).is_relative_to(venv), f"the fresh environment imports {where}"
        self.ready[reqs] = venv
        return venv


@pytest.fixture(scope="session")
def venvs(wheel: Path) -> Iterator[Venvs]:
    yield Venvs(wheel)


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
        [str(_python(venv)), *args], capture_output=True, text=True, timeout=600, cwd=cwd, env=_clean_env()
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


# --- the README: its Python blocks on exactly the install it names ----------------------------

README = ROOT / "README.md"
#: The README's installs: ``pip install -e .`` or ``pip install -e ".[extra,...]"``.
README_INSTALL = re.compile(r"""pip install -e (?:"\.(\[[\w,]+\])"|'\.(\[[\w,]+\])'|\.(\[[\w,]+\])|\.(?=\s|$))""", re.M)
#: What the README's Python blocks print, each on the install it names.
README_OUTPUT = ["I'm allergic to peanuts.", "entries on every branch"]


def readme_installs() -> list[tuple[str, ...]]:
    """Every install the README's shell blocks run, as requirements of this tree's package
    (``-e .`` is the package with no extra), in the order they appear."""
    found: list[tuple[str, ...]] = []
    shell = "\n".join(re.findall(r"```(?:bash|console|sh)\n(.*?)```", README.read_text(), re.S))
    for match in README_INSTALL.finditer(shell):
        extras = next((g for g in match.groups() if g), "")
        reqs = (f"{PACKAGE}{extras}",)
        if reqs not in found:
            found.append(reqs)
    return found


def test_the_readme_names_its_installs() -> None:
    installs = readme_installs()
    assert (PACKAGE,) in installs, "the README's set up is `pip install -e .`"
    assert all("local" not in r for reqs in installs for r in reqs), "no embedding model in the README's installs"


@pytest.mark.parametrize("reqs", readme_installs(), ids=lambda reqs: " ".join(reqs))
def test_the_readme_examples_run_on_the_readme_install(reqs: tuple[str, ...], venvs: Venvs, tmp_path: Path) -> None:
    """Each of the README's Python blocks runs, on each install the README names (none brings an
    embedding model), and prints what the README says: its headline search finds the allergy."""
    venv = venvs.get(reqs)
    no_model = subprocess.run(
        [
            str(_python(venv)),
            "-c",
            "from cogitator_memory.runtime.config import local_model_installed as f; print(f())",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_clean_env(),
    )
    assert no_model.stdout.strip() == "False", f"{reqs} installs an embedding model: {no_model.stderr[-2000:]}"
    blocks = BLOCK.findall(README.read_text())
    assert len(blocks) >= 2, "the README shows Python"
    env = {**_clean_env(), "HOME": str(tmp_path), "COGITATOR_HOME": str(tmp_path / "home")}
    env.pop("COGITATOR_CONFIG", None)
    env.pop("COGITATOR_MEMORY_DB", None)
    out = []
    for i, block in enumerate(blocks):
        script = tmp_path / f"readme_{i}.py"
        script.write_text(block)
        done = subprocess.run(
            [str(_python(venv)), script.name], capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env
        )
        assert done.returncode == 0, f"README block {i} failed on {reqs}:\n{block}\n{done.stderr[-4000:]}"
        out.append(done.stdout)
    for expected in README_OUTPUT:
        assert expected in "".join(out), f"the README's examples should print {expected!r} on {reqs}"
