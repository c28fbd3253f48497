"""``MemoryFiles``: the memory tool's commands over versioned files, on any store that keeps them.

:meth:`MemoryFiles.run` answers ``view``, ``create``, ``str_replace``, ``insert``, ``delete`` and
``rename`` with the texts of Anthropic's memory tool, and raises
:class:`~cogitator_memory.files.errors.MemoryFileError` with the text the model reads when it
refuses one. Every change adds versions (:class:`~cogitator_memory.files.records.MemoryFileVersion`):

- **What stands.** For each path, the version of the narrowest scope the access reads that
  holds one (a deletion there hides a file of a wider scope), seen from the access's place.
  Heads come from :meth:`find_file_heads`, so reads do not read history; only a head written on
  another branch of the access's thread sends the read to that path's history.
- **Where changes go.** Into the access's scope joined with every limit of the version changed
  (and, for a move, of its source), at the next sequence of that scope and path.
- **Locking.** A change given ``expected_sha256`` fails when the file is at another version. Two
  writers never add the same version: the store refuses the second at one sequence
  (``MEMORY_FILE_CONFLICT``) and the change is made again on what stands, up to three tries. A
  change of many files (a renamed directory) is one batch, whole or nothing.
- **Files under files.** A change that, once kept, finds a file of its own under another file or
  with files under it (two writers in two processes can make that together) is taken back: a
  file it created is deleted again and a deletion it made is undone unless another writer built
  on it, each as a new version so the history stays whole, and the command is refused.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .. import clock
from ..errors import InvalidArgumentError
from ..ids import new_id
from ..items.records import MemoryScope, scope_key
from ..result import MemoryResult, unwrap
from . import answers
from .access import CheckedAccess, FileAccess, check_access, joined_scope, narrowness
from .base import MemoryFileAdapter, is_memory_file_adapter
from .errors import MEMORY_FILE_CONFLICT, MemoryFileError
from .paths import (
    MAX_CHANGE_BYTES,
    MEMORY_ROOT,
    check_text,
    format_size,
    hidden,
    is_root,
    is_under,
    moved_path,
    normalize_path,
    parent_dirs,
    sha256_of,
    utf8_size,
)
from .records import MAX_FILE_BATCH, MemoryFile, MemoryFileVersion, version_order

AccessInput = FileAccess | dict[str, Any] | CheckedAccess
Command = Mapping[str, Any]
Versions = list[MemoryFileVersion]
Files = list[MemoryFile]

#: How many times a change is made again on what stands after a store refused its versions.
MAX_TRIES: Final = 3


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: ``put`` without ``expected_sha256``: write whatever stands.
UNSET: Final = _Unset()


@dataclass
class _Slot:
    """What stands at one path for an access: the version seen (of the narrowest scope holding
    one), and the sequence of the head of each scope (to number the next version)."""

    path: str
    version: MemoryFileVersion | None = None
    heads: dict[str, int] = field(default_factory=dict)

    @property
    def exists(self) -> bool:
        return self.version is not None and not self.version.is_deletion


@dataclass
class _Change:
    """Versions one command adds, the answer it gives, and what to check once they are kept."""

    versions: list[MemoryFileVersion]
    answer: str
    #: The path a check for files under files starts from (a created file or a renamed-to path).
    root: str | None = None
    #: Deletions' texts before them, to undo a deletion when the change is taken back.
    restore: dict[str, MemoryFileVersion] = field(default_factory=dict)
    #: Versions to tell ``observe`` of (defaults to those written).
    shown: list[MemoryFileVersion] | None = None


def _conflict(result: MemoryResult[Any]) -> bool:
    return not result.success and getattr(result.error_type, "code", None) == MEMORY_FILE_CONFLICT


def _text_param(command: Command, name: str, verb: str, *, default: str | None = None) -> str:
    value = command.get(name, default)
    if value is None:
        raise MemoryFileError(answers.required(name, verb))
    if not isinstance(value, str):
        raise MemoryFileError(answers.wrong_type(name, "text"))
    return value


def _path_param(command: Command, name: str, verb: str) -> str:
    if command.get(name) is None:
        raise MemoryFileError(answers.required(name, verb))
    return normalize_path(command[name], argument=name)


def _expected(command: Command) -> str | None:
    value = command.get("expected_sha256")
    if value is not None and not isinstance(value, str):
        raise MemoryFileError(answers.wrong_type("expected_sha256", "the hex SHA-256 of the file as last read"))
    return value


class MemoryFiles:
    """The memory tool's commands and the rules of memory files over ``adapter`` (any store
    with the calls of :class:`~cogitator_memory.files.base.MemoryFileAdapter`). See the module
    docstring and ``docs/files.md``."""

    def __init__(self, *, adapter: MemoryFileAdapter) -> None:
        if not is_memory_file_adapter(adapter):
            raise InvalidArgumentError("adapter", "must keep memory files (see MemoryFileAdapter)")
        self.adapter = adapter

    # ----- reading what stands ---------------------------------------------------------------

    async def _read(
        self,
        access: CheckedAccess,
        *,
        paths: Iterable[str] | None = None,
        prefix: str | None = None,
        content: bool = True,
    ) -> dict[str, _Slot]:
        """What stands at ``paths`` (or at ``prefix`` and under it) for ``access``."""
        flt: dict[str, Any] = {"visible_to": access.seen, "content": content}
        if paths is not None:
            wanted = sorted(set(paths))
            if not wanted:
                return {}
            flt["paths"] = wanted
        elif prefix is not None and not is_root(prefix):
            flt["prefix"] = prefix
        heads = unwrap(await self.adapter.find_file_heads(flt))
        slots: dict[str, _Slot] = {}
        seen: dict[str, list[MemoryFileVersion]] = {}
        for head in heads:
            slot = slots.setdefault(head.path, _Slot(head.path))
            slot.heads[scope_key(head.scope)] = head.sequence
            visible = head if access.sees(head) else await self._seen_before(access, head, content)
            if visible is not None:
                seen.setdefault(head.path, []).append(visible)
        for path, versions in seen.items():
            slots[path].version = max(versions, key=lambda v: narrowness(v.scope))
        return slots

    async def _seen_before(
        self, access: CheckedAccess, head: MemoryFileVersion, content: bool
    ) -> MemoryFileVersion | None:
        """The newest version of the head's scope and path seen from the access's place (the
        head was written on another branch of its thread)."""
        history = unwrap(await self.adapter.query_file_versions({"scope": head.scope, "paths": [head.path]}))
        seen = [v for v in history if access.sees(v)]
        if not seen:
            return None
        found = max(seen, key=lambda v: v.sequence)
        if not content:
            found.content = None
        return found

    @staticmethod
    def _live(slots: Mapping[str, _Slot]) -> dict[str, MemoryFileVersion]:
        return {p: s.version for p, s in slots.items() if s.version is not None and not s.version.is_deletion}

    # ----- writing ---------------------------------------------------------------------------

    def _version(
        self,
        access: CheckedAccess,
        slot: _Slot,
        content: str | None,
        *,
        base: MemoryFileVersion | None,
        at: Any,
        previous: MemoryFileVersion | None = None,
        renamed_from: str | None = None,
    ) -> MemoryFileVersion:
        scope = joined_scope(access.scope, base.scope if base is not None else None)
        if previous is None:
            previous = slot.version
        if previous is not None and previous.created_at > at:
            # Planned at ``at``, then built on a version another writer made since: stamped with
            # that version's time, so that no version is older than the one it replaces.
            at = previous.created_at
        return MemoryFileVersion.model_construct(
            id=new_id("file_"),
            scope=scope,
            path=slot.path,
            sequence=slot.heads.get(scope_key(scope), 0) + 1,
            content=content,
            sha256=None if content is None else sha256_of(content),
            size=0 if content is None else utf8_size(content),
            previous_id=None if previous is None else previous.id,
            place=access.version_place,
            renamed_from=renamed_from,
            author=access.author,
            created_at=at,
            redacted=None,
        )

    def _writable(self, access: CheckedAccess, paths: Sequence[str]) -> None:
        if not paths:
            return
        if access.read_only:
            raise MemoryFileError(answers.read_only(paths[0]), paths[0])
        kept = access.reserved_among(paths)
        if kept is not None:
            raise MemoryFileError(answers.reserved(kept), kept)

    async def _apply(self, access: CheckedAccess, plan: Callable[[Any], Awaitable[_Change]], around: str) -> _Change:
        """Plan a change on what stands and add its versions, planning again after a store
        refused them (``MEMORY_FILE_CONFLICT``), up to :data:`MAX_TRIES` times; then check that
        no file of the change sits under a file or has files under it."""
        for _ in range(MAX_TRIES):
            change = await plan(clock.now())
            if not change.versions:
                await access.tell(change.shown or [])
                return change
            written = sum(v.size for v in change.versions)
            if written > MAX_CHANGE_BYTES:
                raise MemoryFileError(answers.change_too_large(written), around)
            result = await self.adapter.add_file_versions(change.versions)
            if result.success:
                break
            if not _conflict(result):
                unwrap(result)
        else:
            raise MemoryFileError(answers.raced(around), around)
        if change.root is not None and not await self._shape_holds(access, change):
            await self._take_back(access, change)
            raise MemoryFileError(answers.raced(change.root), change.root)
        await access.tell(change.versions if change.shown is None else change.shown)
        return change

    async def _shape_holds(self, access: CheckedAccess, change: _Change) -> bool:
        """Whether, once kept, no file the change created sits under a file or has files under it."""
        assert change.root is not None
        created = [v.path for v in change.versions if not v.is_deletion]
        above = self._live(await self._read(access, paths=parent_dirs(change.root), content=False))
        below = self._live(await self._read(access, prefix=change.root, content=False))
        return answers.strictly_nested(created, [*above, *below]) is None

    async def _take_back(self, access: CheckedAccess, change: _Change) -> None:
        """Withdraw a change's versions with new ones: delete what it created (whatever others
        wrote on it since), restore what it deleted unless another writer built on the deletion."""
        by_scope: dict[str, list[MemoryFileVersion]] = {}
        for version in change.versions:
            by_scope.setdefault(scope_key(version.scope), []).append(version)
        for _ in range(MAX_TRIES + 2):
            now = clock.now()
            undo: list[MemoryFileVersion] = []
            for versions in by_scope.values():
                flt = {"scope": versions[0].scope, "paths": [v.path for v in versions], "content": False}
                heads = {h.path: h for h in unwrap(await self.adapter.find_file_heads(flt))}
                for mine in versions:
                    head = heads.get(mine.path)
                    if head is None:
                        continue
                    slot = _Slot(mine.path, head, {scope_key(head.scope): head.sequence})
                    if not mine.is_deletion and not head.is_deletion:
                        undo.append(self._version(access, slot, None, base=head, at=now))
                    elif mine.is_deletion and head.id == mine.id and mine.id in change.restore:
                        before = change.restore[mine.id]
                        undo.append(self._version(access, slot, before.content, base=head, at=now))
            if not undo:
                return
            result = await self.adapter.add_file_versions(undo)
            if result.success or not _conflict(result):
                unwrap(result)
                return

    # ----- the memory tool --------------------------------------------------------------------

    async def run(self, access: AccessInput, command: Command) -> str:
        """Run one memory tool command (``{"command": "view", "path": "/memories"}``, as the
        model sends it) and return the tool's answer; raise :class:`MemoryFileError` with the
        text for the model when the command is refused.

        ``str_replace``, ``insert``, ``delete`` and ``rename`` also take ``expected_sha256``:
        the SHA-256 of the file as the caller last read it (``observe`` on the access hears
        of every version a command showed or wrote); the command fails when the file changed since.
        """
        checked = check_access(access)
        if not isinstance(command, Mapping):
            raise InvalidArgumentError("command", f"must be a dict of the tool's input, got {type(command).__name__}")
        verb = command.get("command")
        handler = {
            "view": self._view,
            "create": self._create,
            "str_replace": self._str_replace,
            "insert": self._insert,
            "delete": self._delete,
            "rename": self._rename,
        }.get(verb if isinstance(verb, str) else "")
        if handler is None:
            raise MemoryFileError(answers.unknown_command(verb))
        return await handler(checked, command)

    async def _view(self, access: CheckedAccess, command: Command) -> str:
        path = _path_param(command, "path", "view")
        view_range = self._view_range(command.get("view_range"))
        if not is_root(path):
            slot = (await self._read(access, paths=[path])).get(path)
            if slot is not None and slot.exists:
                version = slot.version
                assert version is not None and version.content is not None
                if version.content.count("\n") + 1 > answers.MAX_LINES:
                    raise MemoryFileError(answers.too_many_lines(path), path)
                await access.tell([version])
                return answers.file_view(path, version.content, view_range)
        files = self._live(await self._read(access, prefix=path, content=False))
        under = [(p, v.size) for p, v in files.items() if is_under(p, path)]
        if not under and not is_root(path):
            raise MemoryFileError(answers.view_missing(path), path)
        if view_range is not None:
            raise MemoryFileError(answers.RANGE_ON_DIRECTORY, path)
        return answers.listing(path, under)

    @staticmethod
    def _view_range(value: object) -> tuple[int, int] | None:
        if value is None:
            return None
        if (
            not isinstance(value, Sequence)
            or isinstance(value, str)
            or len(value) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in value)
        ):
            raise MemoryFileError(
                f"Error: Invalid `view_range` parameter: {value!r}. It should be a list of two integers, "
                "[start_line, end_line], with -1 as end_line for the end of the file"
            )
        return (value[0], value[1])

    async def _create(self, access: CheckedAccess, command: Command) -> str:
        path = _path_param(command, "path", "create")
        text = _text_param(command, "file_text", "create")
        version = await self._write_whole(access, path, text, must_be_new=True)
        return answers.created(version.path)

    async def _check_new_file(self, access: CheckedAccess, path: str) -> dict[str, _Slot]:
        """Refuse a new file at ``path`` when a file stands above it or files stand under it;
        returns what stands at and above the path."""
        if is_root(path):
            raise MemoryFileError(answers.is_a_directory(path), path)
        slots = await self._read(access, paths=[path, *parent_dirs(path)])
        for above in parent_dirs(path):
            found = slots.get(above)
            if found is not None and found.exists:
                raise MemoryFileError(answers.under_a_file(path, above), path)
        below = self._live(await self._read(access, prefix=path, content=False))
        if any(is_under(p, path) for p in below):
            raise MemoryFileError(answers.is_a_directory(path), path)
        return slots

    async def _write_whole(
        self,
        access: CheckedAccess,
        path: str,
        text: str,
        *,
        must_be_new: bool = False,
        expected: str | _Unset | None = UNSET,
    ) -> MemoryFileVersion:
        self._writable(access, [path])
        check_text(text, path, argument="file_text")

        async def plan(now: Any) -> _Change:
            slot = (await self._read(access, paths=[path])).get(path) or _Slot(path)
            if not slot.exists:
                # Read again with what stands above it; the checks below judge this second read,
                # so a file another writer made between the two is not written over as new.
                slot = (await self._check_new_file(access, path)).get(path) or _Slot(path)
            current = slot.version if slot.exists else None
            if current is not None and (must_be_new or expected is None):
                raise MemoryFileError(answers.already_exists(path), path)
            if isinstance(expected, str) and (current is None or current.sha256 != expected):
                if current is None:
                    raise MemoryFileError(answers.missing(path), path)
                raise MemoryFileError(answers.changed_since(path), path)
            if current is not None and current.content == text:
                return _Change([], "", shown=[current])
            version = self._version(access, slot, text, base=slot.version, at=now)
            return _Change([version], "", root=path if current is None else None)

        change = await self._apply(access, plan, path)
        return (change.shown or change.versions)[0]

    async def _edit(
        self,
        access: CheckedAccess,
        command: Command,
        verb: str,
        edit: Callable[[str, str], tuple[str, str]],
    ) -> str:
        """A change of one file's text (``str_replace``, ``insert``): ``edit(path, content)``
        returns the new text and the answer, or raises the command's refusal."""
        path = _path_param(command, "path", verb)
        expected = _expected(command)
        self._writable(access, [path])
        missing = answers.replace_missing if verb == "str_replace" else answers.missing

        async def plan(now: Any) -> _Change:
            slot = (await self._read(access, paths=[path])).get(path)
            if slot is None or not slot.exists:
                raise MemoryFileError(missing(path), path)
            current = slot.version
            assert current is not None and current.content is not None
            if expected is not None and current.sha256 != expected:
                raise MemoryFileError(answers.changed_since(path), path)
            text, answer = edit(path, current.content)
            check_text(text, path, argument="new_str" if verb == "str_replace" else "insert_text")
            return _Change([self._version(access, slot, text, base=current, at=now)], answer)

        return (await self._apply(access, plan, path)).answer

    async def _str_replace(self, access: CheckedAccess, command: Command) -> str:
        old = _text_param(command, "old_str", "str_replace")
        new = "" if command.get("new_str") is None else _text_param(command, "new_str", "str_replace")

        def edit(path: str, content: str) -> tuple[str, str]:
            count = content.count(old) if old else 0
            if count == 0:
                raise MemoryFileError(answers.no_match(old, path), path)
            if count > 1:
                raise MemoryFileError(answers.many_matches(old, answers.match_lines(content, old)), path)
            at = content.find(old)
            text = content[:at] + new + content[at + len(old) :]
            return text, answers.edited(text, content.count("\n", 0, at), new.count("\n") + 1)

        return await self._edit(access, command, "str_replace", edit)

    async def _insert(self, access: CheckedAccess, command: Command) -> str:
        line = command.get("insert_line")
        if line is None:
            raise MemoryFileError(answers.required("insert_line", "insert"))
        insert_text = _text_param(command, "insert_text", "insert")

        def edit(path: str, content: str) -> tuple[str, str]:
            lines = content.split("\n")
            if content.endswith("\n") or not content:
                lines.pop()
            if isinstance(line, bool) or not isinstance(line, int) or not 0 <= line <= len(lines):
                raise MemoryFileError(answers.bad_insert_line(line, len(lines)), path)
            lines.insert(line, insert_text.removesuffix("\n"))
            return "\n".join(lines) + "\n", answers.inserted(path)

        return await self._edit(access, command, "insert", edit)

    async def _delete(self, access: CheckedAccess, command: Command) -> str:
        path = _path_param(command, "path", "delete")
        expected = _expected(command)
        if is_root(path):
            raise MemoryFileError(answers.ROOT_DELETE, path)
        if access.read_only:
            raise MemoryFileError(answers.read_only(path), path)

        async def plan(now: Any) -> _Change:
            slot = (await self._read(access, paths=[path])).get(path)
            if slot is not None and slot.exists:
                assert slot.version is not None
                if expected is not None and slot.version.sha256 != expected:
                    raise MemoryFileError(answers.changed_since(path), path)
                self._writable(access, [path])
                return _Change([self._version(access, slot, None, base=slot.version, at=now)], answers.deleted(path))
            under = {
                p: s for p, s in (await self._read(access, prefix=path, content=False)).items() if is_under(p, path)
            }
            gone = sorted(p for p, s in under.items() if s.exists)
            if not gone:
                raise MemoryFileError(answers.missing(path), path)
            self._writable(access, gone)
            versions = [self._version(access, under[p], None, base=under[p].version, at=now) for p in gone]
            return _Change(versions, answers.deleted(path))

        return (await self._apply(access, plan, path)).answer

    async def _rename(self, access: CheckedAccess, command: Command) -> str:
        old = _path_param(command, "old_path", "rename")
        new = _path_param(command, "new_path", "rename")
        expected = _expected(command)
        if is_root(old):
            raise MemoryFileError(answers.ROOT_RENAME, old)
        if is_root(new):
            raise MemoryFileError(answers.destination_exists(new), new)
        if is_under(new, old):
            raise MemoryFileError(answers.into_itself(old, new), new)
        if access.read_only:
            raise MemoryFileError(answers.read_only(old), old)

        async def plan(now: Any) -> _Change:
            sources = {p: s for p, s in (await self._read(access, prefix=old)).items() if s.exists}
            if not sources:
                raise MemoryFileError(answers.missing(old), old)
            single = old in sources
            if single:
                sources = {old: sources[old]}
                version = sources[old].version
                assert version is not None
                if expected is not None and version.sha256 != expected:
                    raise MemoryFileError(answers.changed_since(old), old)
            targets = {p: moved_path(p, old, new) for p in sources}
            self._writable(access, [*sources, *targets.values()])
            at_new = await self._read(access, prefix=new, content=False)
            if any(s.exists for s in at_new.values()):
                raise MemoryFileError(answers.destination_exists(new), new)
            above = await self._read(access, paths=parent_dirs(new), content=False)
            for parent in parent_dirs(new):
                found = above.get(parent)
                if found is not None and found.exists:
                    raise MemoryFileError(answers.under_a_file(new, parent), new)
            versions: list[MemoryFileVersion] = []
            restore: dict[str, MemoryFileVersion] = {}
            moved: list[MemoryFileVersion] = []
            for path in sorted(sources):
                source = sources[path].version
                assert source is not None and source.content is not None
                gone = self._version(access, sources[path], None, base=source, at=now)
                restore[gone.id] = source
                target = at_new.get(targets[path]) or _Slot(targets[path])
                made = self._version(
                    access, target, source.content, base=source, at=now, previous=source, renamed_from=path
                )
                versions += [gone, made]
                moved.append(made)
            if len(versions) > MAX_FILE_BATCH:
                raise MemoryFileError(answers.change_too_large(sum(v.size for v in versions)), old)
            return _Change(versions, answers.renamed(old, new), root=new, restore=restore, shown=moved)

        return (await self._apply(access, plan, new)).answer

    # ----- for code -------------------------------------------------------------------------

    async def read(self, access: AccessInput, path: str) -> MemoryFile | None:
        """The file standing at ``path`` for the access, or ``None``."""
        checked = check_access(access)
        normalized = self._argument_path("path", path)
        slot = (await self._read(checked, paths=[normalized])).get(normalized)
        if slot is None or not slot.exists:
            return None
        assert slot.version is not None
        return self._file(slot.version)

    async def put(
        self, access: AccessInput, path: str, text: str, expected_sha256: str | _Unset | None = UNSET
    ) -> MemoryFileVersion:
        """Write a whole file, creating it when none stands there, for code that keeps a file of
        its own. ``expected_sha256`` names the version ``text`` was made from (``None``: no file
        stood there) and the write fails with :class:`MemoryFileError` when the file stands
        otherwise; left out, the text goes over whatever stands. Text equal to the file's
        writes nothing. Returns the version the file is at."""
        checked = check_access(access)
        normalized = normalize_path(path)
        if expected_sha256 is not UNSET and expected_sha256 is not None and not isinstance(expected_sha256, str):
            raise InvalidArgumentError("expected_sha256", "must be the hex SHA-256 of a version, None or left out")
        return await self._write_whole(checked, normalized, text, expected=expected_sha256)

    async def history(self, access: AccessInput, path: str) -> Versions:
        """Every version of ``path`` in the scopes the access reads (seen from its place),
        oldest first; deletions included."""
        checked = check_access(access)
        normalized = self._argument_path("path", path)
        found = unwrap(await self.adapter.query_file_versions({"visible_to": checked.seen, "paths": [normalized]}))
        return [v for v in found if checked.sees(v)]

    async def index(self, access: AccessInput) -> str:
        """The files the access sees, one line each with its size, for a run's context; ``""``
        when there are none. Hidden names and ``node_modules`` are left out, as in ``view``."""
        checked = check_access(access)
        files = self._live(await self._read(checked, prefix=MEMORY_ROOT, content=False))
        shown = sorted(p for p in files if not hidden(p[len(MEMORY_ROOT) + 1 :]))
        if not shown:
            return ""
        lines = [f"{format_size(files[p].size)}\t{p}" for p in shown]
        return "Memory files (read them with the memory tool's view command):\n" + "\n".join(lines)

    async def redact(
        self, access: AccessInput, paths: Sequence[str], reason: str | None = None, *, every_scope: bool = False
    ) -> Versions:
        """Replace with ``[redacted]`` the text of every version of the files at ``paths`` (a
        directory's files included) and of the paths they were renamed from and to, in the
        scopes the access reads, or every scope of its agent with ``every_scope``; the rest of
        each version stays (so the history keeps its shape). Returns the versions redacted."""
        checked = check_access(access)
        if isinstance(paths, str) or not isinstance(paths, Sequence):
            raise InvalidArgumentError("paths", "must be a list of paths")
        wanted = {self._argument_path(f"paths[{i}]", p) for i, p in enumerate(paths)}
        if reason is not None and not isinstance(reason, str):
            raise InvalidArgumentError("reason", "must be text or None")
        scope: dict[str, Any] = (
            {"within": MemoryScope(agent_id=checked.scope.agent_id)} if every_scope else {"visible_to": checked.seen}
        )
        found: dict[str, MemoryFileVersion] = {}
        done: set[str] = set()
        frontier = set(wanted)
        while frontier:
            batch: list[MemoryFileVersion] = []
            for path in sorted(frontier):
                under: Versions = unwrap(await self.adapter.query_file_versions({**scope, "prefix": path}))
                batch.extend(under)
            moved: Versions = unwrap(
                await self.adapter.query_file_versions({**scope, "renamed_from": sorted(frontier)})
            )
            batch.extend(moved)
            done |= frontier
            for version in batch:
                found[version.id] = version
            linked = {v.path for v in batch} | {v.renamed_from for v in batch if v.renamed_from is not None}
            frontier = linked - done
        ids = [v.id for v in sorted(found.values(), key=version_order) if not v.is_deletion and v.redacted is None]
        redaction = {"at": clock.now(), "reason": reason}
        redacted: list[MemoryFileVersion] = []
        for start in range(0, len(ids), MAX_FILE_BATCH):
            chunk = ids[start : start + MAX_FILE_BATCH]
            done_now: Versions = unwrap(await self.adapter.redact_file_versions(chunk, redaction))
            redacted.extend(done_now)
        return redacted

    @staticmethod
    def _argument_path(name: str, path: object) -> str:
        try:
            return normalize_path(path)
        except MemoryFileError as exc:
            raise InvalidArgumentError(name, str(exc)) from None

    @staticmethod
    def _file(version: MemoryFileVersion) -> MemoryFile:
        assert version.content is not None and version.sha256 is not None
        return MemoryFile(
            path=version.path, content=version.content, sha256=version.sha256, size=version.size, version=version
        )

    async def list(self, access: AccessInput, prefix: str = MEMORY_ROOT) -> Files:
        """The files standing for the access (under ``prefix``), by path, with their text."""
        checked = check_access(access)
        normalized = self._argument_path("prefix", prefix)
        live = self._live(await self._read(checked, prefix=normalized))
        return [self._file(live[p]) for p in sorted(live)]


__all__ = ["MAX_TRIES", "UNSET", "AccessInput", "Command", "Files", "MemoryFiles", "Versions"]
