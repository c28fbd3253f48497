"""The rules of memory file paths and texts, without I/O.

Every memory path starts with ``/memories``. :func:`normalize_path` turns what a model or a
caller gave into the one spelling stores keep (Unicode NFC, no trailing ``/``) or refuses it with
a :class:`~cogitator_memory.files.errors.MemoryFileError` whose message the model reads:

- paths outside ``/memories`` (``/etc/passwd``, ``memories/x``, ``/memoriesX``);
- traversal: ``..`` segments, backslashes, percent-encoded dots and separators (``%2e%2e%2f``,
  also encoded twice) and Unicode look-alikes of them (fullwidth ``．．／``, the division
  slash ``∕``, the two-dot leader ``‥``...), read through NFKC so no compatibility form slips by;
- empty and ``.`` names (``/memories//x``, ``/memories/./x``), control characters, NUL, names past
  :data:`MAX_NAME_CHARS` characters and paths past :data:`MAX_PATH_CHARS`.

A path names a *file* when a file stands there and a *directory* when files stand under it; the
rules that need the store (a file cannot sit under another file) live in the service.
"""

from __future__ import annotations

import hashlib
import unicodedata
from urllib.parse import unquote

from .errors import MemoryFileError

#: The directory every memory file lives under.
MEMORY_ROOT = "/memories"
#: The most one file may hold, in bytes of UTF-8 (1 MiB).
MAX_FILE_BYTES = 1024 * 1024
#: The most one change may write, in bytes of UTF-8 over all its versions (8 MiB): a renamed
#: directory writes every file under it again.
MAX_CHANGE_BYTES = 8 * 1024 * 1024

#: The longest name (one segment of a path), in characters.
MAX_NAME_CHARS = 255
#: The longest path, in characters.
MAX_PATH_CHARS = 4096
#: Names a directory listing leaves out (besides hidden names, those starting with ``.``).
UNLISTED_NAMES = frozenset({"node_modules"})

#: The playbook every run of an agent reads, folded from lessons (``cogitator_memory.upkeep``).
PLAYBOOK_PATH = "/memories/playbook.md"
#: Where a fold in shadow mode drafts the playbook for review.
PLAYBOOK_DRAFT_PATH = "/memories/playbook.next.md"
#: The directory of the observations memory keeps of each entity.
OBSERVATIONS_DIRECTORY = "/memories/observations"
#: The paths memory writes itself: the memory tool (:func:`~cogitator_memory.files.run_memory_tool`)
#: views them and refuses every change of them and of what is under them.
MEMORY_RESERVED_PATHS: tuple[str, ...] = (PLAYBOOK_PATH, PLAYBOOK_DRAFT_PATH, OBSERVATIONS_DIRECTORY)

#: Characters that look like a separator or a dot and that NFKC leaves as they are.
_LOOKALIKES = frozenset(
    "\u2215"  # division slash
    "\u2044"  # fraction slash
    "\u29f8"  # big solidus
    "\u29f9"  # big reverse solidus
    "\u2216"  # set minus
    "\u29f5"  # reverse solidus operator
    "\u2024"  # one dot leader (NFKC: '.')
    "\u2025"  # two dot leader (NFKC: '..')
    "\u2026"  # horizontal ellipsis (NFKC: '...')
    "\u3002"  # ideographic full stop
    "\uff61"  # halfwidth ideographic full stop
    "\u0338"  # combining long solidus overlay
    "\u20eb"  # combining long double solidus overlay
)


def escape_message(path: str) -> str:
    """The model's message for a path that tries to leave ``/memories``."""
    return f"Path {path} would escape /memories directory"


def outside_message(path: str) -> str:
    """The model's message for a path that does not start with ``/memories``."""
    return f"Path must start with /memories, got: {path}"


def _shown(path: str) -> str:
    """``path`` as a message may quote it: control characters escaped, long paths cut."""
    shown = path if path.isprintable() else path.encode("unicode_escape").decode("ascii")
    return shown if len(shown) <= 300 else shown[:300] + "..."


def _decoded(path: str) -> str:
    """``path`` percent-decoded until it stops changing (at most three rounds)."""
    for _ in range(3):
        decoded = unquote(path)
        if decoded == path:
            break
        path = decoded
    return path


def _traverses(segment: str) -> bool:
    """Whether a name, read every way a file system or a URL may read it, is a dot name or
    holds a separator."""
    for form in {segment, _decoded(segment)}:
        for spelled in (form, unicodedata.normalize("NFKC", form)):
            if "/" in spelled or "\\" in spelled:
                return True
            if spelled.strip() in (".", "..") or (spelled and set(spelled) <= {".", " "} and len(spelled) > 1):
                return True
            if any(ch in _LOOKALIKES for ch in spelled):
                return True
    return False


def normalize_path(path: object, *, argument: str = "path") -> str:
    """The stored spelling of a memory path, or :class:`MemoryFileError` with the model's message.

    ``"/memories/"`` is ``"/memories"``; any other trailing ``/`` goes too; the text is NFC.
    """
    if not isinstance(path, str) or not path:
        raise MemoryFileError(f"Error: Parameter `{argument}` must be a path starting with /memories")
    if len(path) > MAX_PATH_CHARS:
        raise MemoryFileError(f"Error: The path {_shown(path)} is longer than {MAX_PATH_CHARS} characters", path)
    if "\x00" in path:
        raise MemoryFileError(f"Error: The path {_shown(path)} holds a NUL character", path)
    text = unicodedata.normalize("NFC", path)
    if "\\" in text:
        raise MemoryFileError(escape_message(_shown(path)), path)
    if text != MEMORY_ROOT and not text.startswith(MEMORY_ROOT + "/"):
        folded = unicodedata.normalize("NFKC", _decoded(text))
        if folded == MEMORY_ROOT or folded.startswith(MEMORY_ROOT + "/"):
            raise MemoryFileError(escape_message(_shown(path)), path)  # a disguised root is still a trick
        raise MemoryFileError(outside_message(_shown(path)), path)
    if text != MEMORY_ROOT and text.endswith("/"):
        text = text[:-1]
    if text == MEMORY_ROOT:
        return text
    for segment in text[len(MEMORY_ROOT) + 1 :].split("/"):
        if _traverses(segment):
            raise MemoryFileError(escape_message(_shown(path)), path)
        if not segment or segment.isspace():
            raise MemoryFileError(f"Error: The path {_shown(path)} has an empty name in it", path)
        if not segment.isprintable():
            raise MemoryFileError(
                f"Error: The path {_shown(path)} holds a control character; names cannot hold them", path
            )
        if len(segment) > MAX_NAME_CHARS:
            raise MemoryFileError(
                f"Error: The path {_shown(path)} has a name longer than {MAX_NAME_CHARS} characters", path
            )
    return text


def is_root(path: str) -> bool:
    """Whether ``path`` (normalized) is ``/memories`` itself."""
    return path == MEMORY_ROOT


def parent_dirs(path: str) -> list[str]:
    """The directories above ``path`` (normalized) below the root, outermost first:
    ``/memories/a/b/c.md`` -> ``['/memories/a', '/memories/a/b']``."""
    if is_root(path):
        return []
    parts = path[len(MEMORY_ROOT) + 1 :].split("/")
    return [MEMORY_ROOT + "/" + "/".join(parts[:n]) for n in range(1, len(parts))]


def is_under(path: str, directory: str) -> bool:
    """Whether ``path`` is strictly under ``directory`` (both normalized)."""
    return path.startswith(directory + "/") if directory != MEMORY_ROOT else path != MEMORY_ROOT


def is_at_or_under(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or under it."""
    return path == directory or is_under(path, directory)


def moved_path(path: str, old: str, new: str) -> str:
    """Where ``path`` (``old`` or under it) goes when ``old`` is renamed to ``new``."""
    return new + path[len(old) :]


def prefix_range(prefix: str) -> tuple[str, str]:
    """The half-open range ``[low, high)`` of the paths strictly under ``prefix``: every such
    path starts with ``prefix + '/'``, and ``'0'`` is the character after ``'/'``."""
    return prefix + "/", prefix + "0"


def hidden(relative: str) -> bool:
    """Whether a listing leaves out a path, given relative to the listed directory: a name in
    it starts with ``.`` or is ``node_modules``."""
    return any(name.startswith(".") or name in UNLISTED_NAMES for name in relative.split("/"))


def format_size(size: int) -> str:
    """A size as the memory tool shows it: ``0B``, ``20B``, ``1.5K``, ``4K``, ``1.2M``."""
    if size <= 0:
        return "0B"
    units = ("B", "K", "M", "G")
    index = min((size.bit_length() - 1) // 10, len(units) - 1)
    value = size / (1024**index)
    return f"{int(value)}{units[index]}" if value == int(value) else f"{value:.1f}{units[index]}"


def utf8_size(text: str) -> int:
    """How many bytes ``text`` takes in UTF-8."""
    return len(text.encode("utf-8", "surrogatepass"))


def sha256_of(text: str) -> str:
    """The hex SHA-256 of ``text`` in UTF-8 (what a version's ``sha256`` holds)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def check_text(text: object, path: str, *, argument: str) -> str:
    """Text a file may hold: a string without NUL or lone surrogates, at most
    :data:`MAX_FILE_BYTES` in UTF-8."""
    if not isinstance(text, str):
        raise MemoryFileError(f"Error: Parameter `{argument}` must be text", path)
    if "\x00" in text:
        raise MemoryFileError(
            f"Error: Parameter `{argument}` holds a NUL character, which memory files cannot hold", path
        )
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise MemoryFileError(f"Error: Parameter `{argument}` holds text UTF-8 cannot encode", path) from None
    if size > MAX_FILE_BYTES:
        raise MemoryFileError(file_too_large(path, size), path)
    return text


def file_too_large(path: str, size: int) -> str:
    """The model's message for a file that would pass :data:`MAX_FILE_BYTES`."""
    return (
        f"Error: {path} would hold {size} bytes, and a memory file holds at most {MAX_FILE_BYTES} bytes (1 MiB). "
        "Split it into smaller files."
    )


__all__ = [
    "MAX_CHANGE_BYTES",
    "MAX_FILE_BYTES",
    "MAX_NAME_CHARS",
    "MAX_PATH_CHARS",
    "MEMORY_RESERVED_PATHS",
    "MEMORY_ROOT",
    "OBSERVATIONS_DIRECTORY",
    "PLAYBOOK_DRAFT_PATH",
    "PLAYBOOK_PATH",
    "UNLISTED_NAMES",
    "check_text",
    "escape_message",
    "file_too_large",
    "format_size",
    "hidden",
    "is_at_or_under",
    "is_root",
    "is_under",
    "moved_path",
    "normalize_path",
    "outside_message",
    "parent_dirs",
    "prefix_range",
    "sha256_of",
    "utf8_size",
]
