"""The memory tools through :class:`~cogitator_memory.runtime.Memory`: core facts, ``remember``,
``recall`` and ``forget`` (the tools of :func:`~cogitator_memory.tools.create_memory_tools`,
one set per agent and user), and the memory file tool (a mixin of the facade)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError, MemoryStoreError
from ..facts.core import CoreFacts
from ..files.tools import MemoryFileTool, ToolAnswer
from ..threads import tree

if TYPE_CHECKING:
    from ..files.service import MemoryFiles
    from ..threads.base import BaseMemoryAdapter

#: The (agent, user) memory file tools a Memory keeps, the most recently used (see ``_file_tool``).
FILE_TOOLS_KEPT = 1024


class MemoryTools:
    """The facade's memory tool calls: :meth:`core_facts`, :meth:`facts`, :meth:`remember`,
    :meth:`recall`, :meth:`forget`, :meth:`run_tool` and :meth:`memory_file_tool`."""

    if TYPE_CHECKING:  # the facade's (see :class:`~cogitator_memory.runtime.Memory`)
        enabled: bool
        adapter: BaseMemoryAdapter
        graph: Any
        files: MemoryFiles | None
        embedding_service: Any
        _core: dict[tuple[str, str | None], CoreFacts]
        _tools: dict[tuple[str, str | None], dict[str, Any]]
        _file_tools: OrderedDict[tuple[str, str | None], MemoryFileTool]

        def _require(self) -> None: ...
        def _agent(self, agent_id: str | None) -> str: ...

    # ----- facts: the memory tools -------------------------------------------------------------

    async def core_facts(self, *, user_id: str | None = None, agent_id: str | None = None) -> CoreFacts:
        """The core facts of ``user_id`` (shared ones without), ready to use."""
        self._require()
        agent = self._agent(agent_id)
        user = tree.check_optional_id("user_id", user_id)
        key = (agent, user)
        facts = self._core.get(key)
        if facts is None:
            scope: dict[str, Any] = {"agent_id": "core"}
            if user is not None:
                scope["user_id"] = user
            facts = CoreFacts(adapter=self.adapter, scope=scope)  # type: ignore[arg-type]
            await facts.initialize()
            self._core[key] = facts
        return facts

    async def facts(self, *, user_id: str | None = None, agent_id: str | None = None) -> dict[str, str]:
        """Every core fact of ``user_id`` (shared ones without), key -> value."""
        return await (await self.core_facts(user_id=user_id, agent_id=agent_id)).get_all()

    async def remember(
        self,
        fact: str,
        *,
        category: str | None = None,
        core_fact_key: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> dict[str, Any]:
        """Save ``fact`` in the knowledge graph (the ``remember`` memory tool); with
        ``core_fact_key`` it is saved as that core fact too."""
        arguments: dict[str, Any] = {"fact": fact}
        if category is not None:
            arguments["category"] = category
        if core_fact_key is not None:
            arguments["is_core_fact"] = True
            arguments["core_fact_key"] = core_fact_key
        return await self.run_tool("remember", arguments, user_id=user_id, agent_id=agent_id)

    async def recall(self, query: str, *, user_id: str | None = None, agent_id: str | None = None) -> dict[str, Any]:
        """The facts whose text matches ``query`` (up to 10) and every core fact (the ``recall`` tool)."""
        return await self.run_tool("recall", {"query": query}, user_id=user_id, agent_id=agent_id)

    async def forget(
        self, query: str, *, take_all: bool = False, user_id: str | None = None, agent_id: str | None = None
    ) -> dict[str, Any]:
        """Delete every fact whose text matches ``query`` (the ``forget`` tool). A broad query
        (see :func:`~cogitator_memory.tools.memory.is_broad`) deletes nothing and lists what it
        would take, unless ``take_all``."""
        if not isinstance(take_all, bool):
            raise InvalidArgumentError("take_all", f"must be true or false, got {take_all!r}")
        return await self.run_tool("forget", {"query": query, "all": take_all}, user_id=user_id, agent_id=agent_id)

    async def run_tool(
        self, name: str, arguments: Mapping[str, Any], *, user_id: str | None = None, agent_id: str | None = None
    ) -> dict[str, Any]:
        """Run the memory tool ``name`` (``remember``, ``recall``, ``forget`` of
        :func:`cogitator_memory.tools.create_memory_tools`) with ``arguments`` in the memory of
        ``{agent_id, user_id}``; its answer as a dict. Bad arguments raise
        :class:`InvalidArgumentError` naming the argument."""
        self._require()
        agent = self._agent(agent_id)
        user = tree.check_optional_id("user_id", user_id)
        if not self.enabled:
            raise MemoryStoreError("memory is disabled: the store could not be reached when it started")
        if self.graph is None:
            raise MemoryStoreError(f"the knowledge graph is off: remember, recall and forget need it ({name})")
        tools = self._tools.get((agent, user))
        if tools is None:
            from ..tools import create_memory_tools

            scope: dict[str, Any] = {"agent_id": agent}
            if user is not None:
                scope["user_id"] = user
            made = create_memory_tools(
                graph_adapter=self.graph,
                agent_id=agent,
                core_facts=await self.core_facts(user_id=user, agent_id=agent),
                embedding_service=self.embedding_service,
                scope=scope,
            )
            tools = {tool.name: tool for tool in made}
            self._tools[(agent, user)] = tools
        tool = tools.get(name)
        if tool is None:
            raise InvalidArgumentError("name", f"must be one of {', '.join(tools)}, got {name!r}")
        answer: dict[str, Any] = await tool.handler(tool.check_arguments(arguments))
        return answer

    # ----- memory files ------------------------------------------------------------------------

    async def memory_file_tool(
        self, command: Mapping[str, Any] | str, *, user_id: str | None = None, agent_id: str | None = None
    ) -> ToolAnswer:
        """Answer one memory tool command (``view``, ``create``, ``str_replace``, ``insert``,
        ``delete``, ``rename``) in the files of ``{agent_id, user_id}``; a refused command is an
        answer with ``is_error`` set."""
        self._require()
        if self.files is None:
            raise MemoryStoreError("memory files are off (files.enabled: false)")
        tool = self._file_tool(self._agent(agent_id), tree.check_optional_id("user_id", user_id))
        return await tool.run(dict(command) if isinstance(command, Mapping) else command)

    def _file_tool(self, agent: str, user: str | None) -> MemoryFileTool:
        """The memory file tool of ``{agent, user}``: it sends the checksum of the version it last
        showed them with every change, so an edit of a file another writer changed since is
        refused (the most recent :data:`FILE_TOOLS_KEPT` callers are remembered)."""
        assert self.files is not None
        key = (agent, user)
        tool = self._file_tools.get(key)
        if tool is None:
            scope: dict[str, Any] = {"agent_id": agent}
            if user is not None:
                scope["user_id"] = user
            tool = self._file_tools[key] = MemoryFileTool(self.files, {"scope": scope})
            while len(self._file_tools) > FILE_TOOLS_KEPT:
                self._file_tools.popitem(last=False)
        else:
            self._file_tools.move_to_end(key)
        return tool
