"""Fresh virtual environments with exactly what a page says to install, made from this tree.

The package is built into a wheel from this tree once per test session (:func:`built_wheel`).
:class:`Venvs` makes one environment per requirement set with ``python -m venv --without-pip``,
filled by pip (through its usual configuration) with exactly that, nothing from the development
environment. The environments are kept between runs under ``$COGMEM_DOCS_VENVS`` (default
``~/.cache/cogitator-memory/docs-venvs``), keyed by Python's version, the requirements and the
package's dependency lists, so they are made again when any of those change; this session's wheel
is reinstalled into them on first use. ``tests/test_docs_fresh_venv.py`` (the docs pages) and
``tests/test_newcomer.py`` (the README) share them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "cogitator-memory"


def cache_dir() -> Path:
    return Path(os.environ.get("COGMEM_DOCS_VENVS") or Path.home() / ".cache" / "cogitator-memory" / "docs-venvs")


def _prune(cache: Path, days: float = 14.0) -> None:
    """Remove environments no run used for ``days`` (made for requirements since changed)."""
    if not cache.is_dir():
        return
    cutoff = time.time() - days * 86400
    for folder in cache.iterdir():
        if folder.is_dir() and folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)


def clean_env() -> dict[str, str]:
    """The environment without anything pointing into the development tree."""
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTHONSAFEPATH"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def _pip(python: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), *args],
        capture_output=True,
        text=True,
        timeout=1200,
        env=clean_env(),
    )
    assert done.returncode == 0, f"pip {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


_WHEEL: list[Path] = []


def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package built from this tree, once per session whichever module asks first."""
    if _WHEEL:
        return _WHEEL[0]
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        env=clean_env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = out.glob("cogitator_memory-*.whl")
    _WHEEL.append(built)
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
        venv = cache_dir() / key
        _prune(cache_dir())
        if not (venv / ".complete").exists():
            shutil.rmtree(venv, ignore_errors=True)
            building = venv.with_name(f"{key}.tmp-{os.getpid()}")
            shutil.rmtree(building, ignore_errors=True)
            building.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(building)], check=True, timeout=120)
            _pip(venv_python(building), "install", "-q", *[self._requirement(r) for r in reqs])
            (building / ".complete").write_text(" ".join(reqs) + "\n")
            try:
                building.rename(venv)
            except OSError:  # another run made it meanwhile
                shutil.rmtree(building, ignore_errors=True)
        # this tree's package, whatever the cached environment held before (its dependencies are
        # the ones the key was made of)
        _pip(venv_python(venv), "install", "-q", "--no-deps", "--force-reinstall", str(self.wheel))
        os.utime(venv)  # used now: kept by the pruning below
        where = subprocess.run(
            [str(venv_python(venv)), "-c", "import cogitator_memory; print(cogitator_memory.__file__)"],
            capture_output=True,
            text=True,
            cwd=venv,
            env=clean_env(),
            check=True,
        ).stdout.strip()
        assert Path(where).is_relative_to(venv), f"the fresh environment imports {where}"
        self.ready[reqs] = venv
        return venv


_VENVS: dict[Path, Venvs] = {}


def shared_venvs(wheel: Path) -> Venvs:
    """The session's :class:`Venvs` for ``wheel`` (each environment set up once per session)."""
    return _VENVS.setdefault(wheel, Venvs(wheel))
