"""The texts the memory tool answers and fails with, built without I/O.

The answers and errors of the six commands are those of Anthropic's memory tool
(``memory_20250818``): its documented return values and errors, and where the documentation
leaves a text open (the snippet after ``str_replace``, deleting the root), the text of the
reference implementation in Anthropic's SDK. Refusals that are memory's own (limits, scopes,
reserved paths, a writer racing another) have texts of their own here, each saying what to do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .paths import MAX_CHANGE_BYTES, MEMORY_ROOT, format_size, hidden, is_under

#: Width of the line numbers of a file view (right-aligned) and separator after them.
LINE_NUMBER_WIDTH = 6
#: The most lines a file view shows; a longer file is refused.
MAX_LINES = 999_999
#: Lines of context around an edit in the snippet ``str_replace`` answers with.
SNIPPET_CONTEXT = 2


# --- answers -------------------------------------------------------------------------------


def created(path: str) -> str:
    """What ``create`` answers."""
    return f"File created successfully at: {path}"


def inserted(path: str) -> str:
    """What ``insert`` answers."""
    return f"The file {path} has been edited."


def deleted(path: str) -> str:
    """What ``delete`` answers."""
    return f"Successfully deleted {path}"


def renamed(old_path: str, new_path: str) -> str:
    """What ``rename`` answers."""
    return f"Successfully renamed {old_path} to {new_path}"


def _numbered(lines: Sequence[str], first: int) -> str:
    return "\n".join(f"{str(n).rjust(LINE_NUMBER_WIDTH)}\t{line}" for n, line in enumerate(lines, start=first))


def file_view(path: str, content: str, view_range: tuple[int, int] | None = None) -> str:
    """What ``view`` answers for a file: its lines numbered from 1 (those of ``view_range``,
    ``[start, end]`` with ``end`` -1 for the end of the file)."""
    lines = content.split("\n")
    first = 1
    if view_range is not None:
        start = max(1, view_range[0]) - 1
        end = len(lines) if view_range[1] == -1 else view_range[1]
        lines = lines[start:end]
        first = start + 1
    return f"Here's the content of {path} with line numbers:\n" + _numbered(lines, first)


def edited(content: str, changed_at: int, changed_lines: int) -> str:
    """What ``str_replace`` answers: the file after the edit around the lines it changed
    (``changed_at`` is the 0-based line the replacement starts on, ``changed_lines`` how many
    lines the new text spans), numbered, with two lines of context each side."""
    lines = content.split("\n")
    start = max(0, changed_at - SNIPPET_CONTEXT)
    end = min(len(lines), changed_at + changed_lines + SNIPPET_CONTEXT)
    return "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" + _numbered(
        lines[start:end], start + 1
    )


def listing(path: str, files: Iterable[tuple[str, int]]) -> str:
    """What ``view`` answers for a directory: the directory and what is under it up to two
    levels deep, by name, each with its size (a directory's is the bytes of the files under
    it); hidden names and ``node_modules`` left out. ``files`` are the ``(path, size)`` of the
    files standing under ``path``."""
    total = 0
    sizes: dict[str, int] = {}
    kinds: dict[str, bool] = {}  # relative path -> is a directory
    for file_path, size in files:
        total += size
        relative = file_path[len(path) + 1 :] if path != MEMORY_ROOT else file_path[len(MEMORY_ROOT) + 1 :]
        parts = relative.split("/")
        for depth in range(1, min(len(parts), 2) + 1):
            shown = "/".join(parts[:depth])
            if hidden(shown):
                break
            is_dir = depth < len(parts)
            sizes[shown] = sizes.get(shown, 0) + size
            kinds[shown] = kinds.get(shown, False) or is_dir
    lines = [f"{format_size(total)}\t{path}"]
    for shown in sorted(sizes, key=lambda rel: rel.split("/")):
        suffix = "/" if kinds[shown] else ""
        lines.append(f"{format_size(sizes[shown])}\t{path}/{shown}{suffix}")
    header = (
        f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items and node_modules:"
    )
    return header + "\n" + "\n".join(lines)


# --- the memory tool's errors ----------------------------------------------------------------


def view_missing(path: str) -> str:
    """``view`` of a path where nothing stands."""
    return f"The path {path} does not exist. Please provide a valid path."


def replace_missing(path: str) -> str:
    """``str_replace`` of a path where no file stands (a directory included)."""
    return f"Error: The path {path} does not exist. Please provide a valid path."


def missing(path: str) -> str:
    """``insert``, ``delete`` and ``rename`` of a path where nothing they can change stands."""
    return f"Error: The path {path} does not exist"


def already_exists(path: str) -> str:
    """``create`` of a path where a file stands."""
    return f"Error: File {path} already exists"


def destination_exists(path: str) -> str:
    """``rename`` onto a path where a file or directory stands."""
    return f"Error: The destination {path} already exists"


def no_match(old_str: str, path: str) -> str:
    """``str_replace`` whose ``old_str`` is not in the file."""
    return f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}."


def many_matches(old_str: str, lines: Iterable[int]) -> str:
    """``str_replace`` whose ``old_str`` is in the file more than once (the lines it starts on)."""
    return (
        f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
        f"{', '.join(map(str, lines))}. Please ensure it is unique"
    )


def bad_insert_line(insert_line: object, n_lines: int) -> str:
    """``insert`` at a line outside ``[0, n_lines]``."""
    return (
        f"Error: Invalid `insert_line` parameter: {insert_line}. "
        f"It should be within the range of lines of the file: [0, {n_lines}]"
    )


def too_many_lines(path: str) -> str:
    """``view`` of a file of more than :data:`MAX_LINES` lines."""
    return f"File {path} exceeds maximum line limit of 999,999 lines."


ROOT_DELETE = f"Cannot delete the {MEMORY_ROOT} directory itself"
ROOT_RENAME = f"Cannot rename the {MEMORY_ROOT} directory itself"
RANGE_ON_DIRECTORY = "The `view_range` parameter is not allowed when `path` points to a directory."


# --- memory's own refusals -------------------------------------------------------------------


def raced(path: str) -> str:
    """A change another writer made at the same time undid (the spec's text)."""
    return f"Another writer changed the memory around {path} at the same time. View it again and try again."


def reserved(path: str) -> str:
    """A change of a path memory keeps itself (the spec's text)."""
    return f"{path} is kept by memory itself and is read-only here."


def read_only(path: str) -> str:
    """Any change through a read-only access."""
    return f"Error: Memory is read-only here, so {path} cannot be changed."


def changed_since(path: str) -> str:
    """A change made on a version the file is no longer at (its ``expected_sha256``)."""
    return f"Error: The file {path} changed since it was read. View it again and try again."


def under_a_file(path: str, file_path: str) -> str:
    """A file that would sit under another file."""
    return f"Error: {file_path} is a file, so {path} cannot be created under it"


def is_a_directory(path: str) -> str:
    """A file that would stand where files stand under the path."""
    return f"Error: The path {path} is a directory"


def into_itself(old_path: str, new_path: str) -> str:
    """A directory renamed under itself."""
    return f"Error: Cannot move {old_path} into itself ({new_path})"


def change_too_large(size: int) -> str:
    """A change that would write more than :data:`~cogitator_memory.files.paths.MAX_CHANGE_BYTES`."""
    return (
        f"Error: The change would write {size} bytes, and one change writes at most {MAX_CHANGE_BYTES} bytes (8 MiB)."
        " Move fewer files at a time."
    )


def required(parameter: str, command: str) -> str:
    """A command without a parameter it needs."""
    return f"Error: Parameter `{parameter}` is required for command: {command}"


def wrong_type(parameter: str, kind: str) -> str:
    """A parameter of the wrong type."""
    return f"Error: Parameter `{parameter}` must be {kind}"


def unknown_command(command: object) -> str:
    """A command the memory tool does not have."""
    return f"Error: Unknown command {command!r}. The commands are view, create, str_replace, insert, delete and rename"


def match_lines(content: str, needle: str) -> list[int]:
    """The 1-based lines each occurrence of ``needle`` starts on (each line once)."""
    found: list[int] = []
    start = last = 0
    line = 1
    while True:
        at = content.find(needle, start)
        if at < 0:
            return found
        line += content.count("\n", last, at)
        last = at
        if not found or found[-1] != line:
            found.append(line)
        start = at + max(len(needle), 1)


def strictly_nested(paths: Iterable[str], others: Iterable[str]) -> str | None:
    """A path of ``paths`` that sits under one of ``others`` or has one of them under it, if any."""
    pool = list(others)
    for path in paths:
        for other in pool:
            if is_under(path, other) or is_under(other, path):
                return path
    return None


__all__ = [
    "LINE_NUMBER_WIDTH",
    "MAX_LINES",
    "RANGE_ON_DIRECTORY",
    "ROOT_DELETE",
    "ROOT_RENAME",
    "already_exists",
    "bad_insert_line",
    "change_too_large",
    "changed_since",
    "created",
    "deleted",
    "destination_exists",
    "edited",
    "file_view",
    "inserted",
    "into_itself",
    "is_a_directory",
    "listing",
    "many_matches",
    "match_lines",
    "missing",
    "no_match",
    "raced",
    "read_only",
    "renamed",
    "replace_missing",
    "required",
    "reserved",
    "strictly_nested",
    "too_many_lines",
    "under_a_file",
    "unknown_command",
    "view_missing",
    "wrong_type",
]
