"""tiktoken's ``cl100k_base`` without reaching OpenAI's servers: the reference of ``bench_tokens``.

``tiktoken.get_encoding("cl100k_base")`` downloads ``cl100k_base.tiktoken`` from OpenAI's blob
storage, which machines that only reach the package registries cannot do. The npm package
``js-tiktoken`` ships the same ranks (in a compressed JSON form), so this module:

1. runs ``npm pack js-tiktoken@<pinned>`` into a cache folder (once; the tarball is kept);
2. rebuilds the ``.tiktoken`` file (``base64-token rank`` per line, by rank) from its
   ``dist/ranks/cl100k_base.js``;
3. checks its SHA-256 against the hash tiktoken itself pins for ``cl100k_base``
   (``223921b7...``: the rebuilt file is byte for byte OpenAI's);
4. puts it in tiktoken's own cache under the key tiktoken looks for, and calls
   ``tiktoken.get_encoding("cl100k_base")``, so the pattern and special tokens are tiktoken's own.

The cache folder is ``$COGMEM_TOKENIZER_CACHE`` or ``~/.cache/cogitator-memory/tokenizers``.
Needs ``tiktoken`` (``pip install tiktoken``, a dev dependency) and ``npm`` on ``PATH``.
Run it alone to prepare and check the cache: ``python -m benchmarks.reference_tokenizer``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

JS_TIKTOKEN = "js-tiktoken@1.0.21"
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
RANKS_MEMBER = "package/dist/ranks/cl100k_base.js"

#: How the reference was obtained, for the benchmark's report.
HOW = (
    f"tiktoken cl100k_base with ranks rebuilt from npm {JS_TIKTOKEN} (dist/ranks/cl100k_base.js), "
    f"SHA-256 checked against tiktoken's pinned hash {CL100K_SHA256[:12]}"
)


def cache_dir() -> Path:
    """Where the npm tarball and the rebuilt ranks are kept."""
    root = os.environ.get("COGMEM_TOKENIZER_CACHE")
    if root:
        return Path(root)
    return Path.home() / ".cache" / "cogitator-memory" / "tokenizers"


def _npm_tarball(folder: Path) -> Path:
    name = JS_TIKTOKEN.replace("@", "-", 1) + ".tgz"
    tarball = folder / name
    if tarball.exists():
        return tarball
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("the reference tokenizer needs npm on PATH (to fetch js-tiktoken's cl100k ranks)")
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [npm, "pack", JS_TIKTOKEN, "--pack-destination", str(folder), "--silent"],
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=300,
    )
    if not tarball.exists():
        raise RuntimeError(f"npm pack {JS_TIKTOKEN} did not leave {tarball}")
    return tarball


def _tiktoken_file(tarball: Path) -> bytes:
    with tarfile.open(tarball, "r:gz") as archive:
        member = archive.extractfile(RANKS_MEMBER)
        if member is None:
            raise RuntimeError(f"{tarball} has no {RANKS_MEMBER}")
        source = member.read().decode("utf-8")
    ranks_json: dict[str, Any] = json.loads(source[source.index("{") : source.rindex("}") + 1])
    ranks: list[tuple[int, str]] = []
    for line in ranks_json["bpe_ranks"].split("\n"):
        if not line:
            continue
        _, offset, *tokens = line.split(" ")
        start = int(offset)
        ranks.extend((start + i, token) for i, token in enumerate(tokens))
    ranks.sort()
    return "".join(f"{token} {rank}\n" for rank, token in ranks).encode("ascii")


def load_cl100k() -> Any:
    """The ``tiktoken.Encoding`` of ``cl100k_base``, built offline as the module says."""
    try:
        import tiktoken
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise RuntimeError("the token benchmark needs tiktoken: pip install tiktoken") from exc
    folder = cache_dir()
    tiktoken_cache = folder / "tiktoken"
    cached = tiktoken_cache / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    if not cached.exists() or hashlib.sha256(cached.read_bytes()).hexdigest() != CL100K_SHA256:
        data = _tiktoken_file(_npm_tarball(folder))
        digest = hashlib.sha256(data).hexdigest()
        if digest != CL100K_SHA256:
            raise RuntimeError(f"ranks rebuilt from {JS_TIKTOKEN} hash to {digest}, not cl100k's {CL100K_SHA256}")
        tiktoken_cache.mkdir(parents=True, exist_ok=True)
        cached.write_bytes(data)
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(tiktoken_cache)
    try:
        encoding = tiktoken.get_encoding("cl100k_base")
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous
    # Known counts: a wrong table or pattern fails here rather than skewing the benchmark.
    if len(encoding.encode("hello world")) != 2 or encoding.encode("hello world") != [15339, 1917]:
        raise RuntimeError("the rebuilt cl100k_base does not encode 'hello world' as [15339, 1917]")
    return encoding


if __name__ == "__main__":
    enc = load_cl100k()
    print(HOW)
    print("cache:", cache_dir())
    print("'hello world' ->", enc.encode("hello world"))
