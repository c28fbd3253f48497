"""The memory tools: ``remember``, ``recall`` and ``forget`` over an agent's knowledge graph and
its core facts (:func:`create_memory_tools`).

* ``remember({fact, category?, is_core_fact?, core_fact_key?})`` stores the fact as a node of
  type ``fact`` (origin ``user``, ``properties["category"]``; the same fact again updates that
  node instead of adding one) and, as a core fact, sets ``core_fact_key`` to it as well.
* ``recall({query})`` gives up to ``recall_limit`` (10) nodes matching the query (every word of it
  in the name, an alias or the description, case aside; the whole query first, then the newest),
  always with every core fact:
  ``{"results": [{"id", "fact", "type", "category", "confidence", "score"?}], "core_facts": {...}}``.
  Every node of the agent the scope sees takes part, the extracted ones too. Only tools made with
  an ``embedding_service`` search by meaning as well (the spec's ``embeddingFn``): after the text
  matches come the nodes near the query by meaning, each with its cosine as ``score``, and only
  those at :data:`MIN_RECALL_SCORE` or more and at least :data:`RELATIVE_RECALL_SCORE` of the best,
  so an unrelated fact is never given.
  Between the two, ``recall`` also gives the nodes that hold every content word of a question in
  another form (:func:`word_matches`: stopwords and question words dropped, words compared by
  their stems and roots, as the recall index compares them), so "what is Ana allergic to?" finds
  "Ana has allergies to peanuts"; on a store that keeps a recall index they are read from it
  (the :data:`WORD_CANDIDATES` best graph facts of its keyword search in the scope).
  ``forget`` never matches that way.
* ``forget({query, all?})`` deletes every node matching the query as ``recall`` matches text
  (never by meaning) and lets go of the core facts whose key or value holds its words, in one
  write. An empty query, one of symbols or wildcards only, "everything"-like words, one shorter
  than three letters, or one matching more than :data:`MAX_FORGET` facts is refused. A **broad**
  query (see :func:`is_broad`: more than :data:`BROAD_FORGET` facts, or more than half of those
  stored once there are more than two) deletes nothing: the answer lists what it would take
  (``too_broad``) and asks for a narrower query, unless the call says ``all: true``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ConflictError, InvalidArgumentError
from ..facts.core import CoreFacts, check_key, check_value
from ..graph.base import is_graph_adapter
from ..graph.records import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, GraphNode
from ..index.base import is_recall_index
from ..index.terms import ROOT_LENGTH, recall_terms, word_terms
from ..items.facts import DEFAULT_CATEGORY, MAX_CATEGORY_CHARS
from ..items.records import MemoryScope, check_scope, visible_scope_keys
from ..result import unwrap
from ..search.tokenizer import index_terms
from ..threads import tree
from .base import MemoryTool

if TYPE_CHECKING:
    from ..embeddings.base import EmbeddingService
    from ..graph.base import GraphAdapter

#: The node type ``remember`` writes.
FACT_TYPE = "fact"
#: The most results ``recall`` gives unless told otherwise.
RECALL_LIMIT = 10
#: The least cosine of a node ``recall`` gives by meaning alone (tools with an embedding
#: service). ``recall`` lists what it found, unranked by anything else, so a node must be near
#: the query to be listed; the retriever's vector channel only ranks and keeps every cosine.
MIN_RECALL_SCORE: float = 0.45
#: The least share of the best cosine a node ``recall`` gives by meaning alone must reach.
RELATIVE_RECALL_SCORE: float = 0.6
#: The most graph facts ``recall`` reads from the recall index's keyword search for the words of
#: a question in other forms (the best by BM25 among the facts the scope may see).
WORD_CANDIDATES = 200
#: The most facts one ``forget`` call deletes, even with ``all: true``.
MAX_FORGET = 50
#: The most facts ``forget`` takes without ``all: true``; a query matching more is broad.
BROAD_FORGET = 3
#: The longest fact ``remember`` takes.
MAX_FACT_CHARS = MAX_DESCRIPTION_CHARS
#: Queries ``forget`` refuses as meaning "everything" (case and spacing aside).
EVERYTHING = frozenset(
    {"all", "everything", "anything", "all facts", "every fact", "all of it", "all memories", "everything you know"}
)
_WORD = re.compile(r"\w+")
_ATTEMPTS = 3

_REMEMBER = (
    "Save a fact to long-term memory so it is there in later conversations. Save one fact per "
    'call, in a sentence that stands on its own ("User\'s dog is named Luna"). For a key fact '
    "about the user that should always be known (their name, language, timezone), also set "
    "is_core_fact with a short core_fact_key such as user_name."
)
_RECALL = (
    "Search long-term memory. Gives up to {limit} stored facts matching the query, and every core "
    'fact about the user. Use a few telling words ("dog", "home address").'
)
_FORGET = (
    "Delete from long-term memory every stored fact matching the query (and core facts whose key "
    'or value holds its words). Name what to forget precisely ("old address"). A query matching '
    f"more than {BROAD_FORGET} facts, or most of them, deletes nothing and lists what it would take: "
    "ask the user, then call again with a narrower query, or with all set to true only when they "
    "mean every one of them."
)


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


#: Words of a question that say what is asked, not what about: left out of :func:`word_matches`.
QUESTION_WORDS: frozenset[str] = frozenset(
    {"what", "where", "when", "which", "who", "whom", "whose", "why", "how", "does", "did", "do", "has", "have"}
    | {"now", "tell", "me", "my", "i"}
)


def content_words(query: str) -> list[str]:
    """The words of ``query`` that name what it is about: the recall index's words (stopwords
    dropped) without :data:`QUESTION_WORDS`."""
    return [w for w in dict.fromkeys(index_terms(query)) if w not in QUESTION_WORDS]


def word_matches(words: list[str], text: str) -> bool:
    """Whether ``text`` holds every one of ``words`` in some form: a word counts when one of its
    terms (its stem, or its root when long) is among the terms of ``text``."""
    terms = set(recall_terms(text))
    return bool(words) and all(terms.intersection(word_terms(w)) for w in words)


def _probe(word: str) -> str:
    """The text an engine's substring filter looks for to find every form of ``word``: its
    stem's first letters (``allergic`` and ``allergies`` both hold ``aller``)."""
    stem = word_terms(word)[0]
    return stem[:ROOT_LENGTH] if len(stem) > ROOT_LENGTH else stem


def is_broad(matched: int, stored: int) -> bool:
    """Whether a ``forget`` matching ``matched`` of the ``stored`` facts (nodes and core facts the
    scope sees) is broad: more than :data:`BROAD_FORGET` of them, or more than half of them once
    more than two are stored. A broad query deletes only with ``all: true``."""
    return matched > BROAD_FORGET or (stored > 2 and matched * 2 > stored)


def _hay(node: GraphNode) -> str:
    return " ".join([node.name, *node.aliases, node.description or ""]).casefold()


def fact_text(node: GraphNode) -> str:
    """What a node says, as ``recall`` gives it: a fact's whole text, any other node's name,
    aliases and description."""
    if node.type == FACT_TYPE:
        return node.description or node.name
    text = f"{node.name} (also {', '.join(node.aliases)})" if node.aliases else node.name
    return f"{text}: {node.description}" if node.description else text


def _fact_name(fact: str) -> str:
    return fact if len(fact) <= MAX_NAME_CHARS else fact[: MAX_NAME_CHARS - 1].rstrip() + "…"


class _MemoryToolState:
    """What the three handlers share: the stores, the scope and the options."""

    def __init__(
        self,
        graph: GraphAdapter,
        core_facts: CoreFacts | None,
        scope: MemoryScope,
        embedding_service: EmbeddingService | None,
        recall_limit: int,
    ) -> None:
        self.graph = graph
        self.core_facts = core_facts
        self.scope = scope
        self.embedding_service = embedding_service
        self.recall_limit = recall_limit

    @property
    def agent_id(self) -> str:
        return self.scope.agent_id

    async def _matching(self, query: str) -> tuple[list[GraphNode], list[str]]:
        """The visible nodes holding every word of ``query``: the whole query first, then the
        newest; and the query's words."""
        words = _words(query)
        if not words:
            return [], words
        longest = max(words, key=len)
        found = unwrap(
            await self.graph.query_nodes({"agent_id": self.agent_id, "visible_to": self.scope, "text": longest})
        )
        phrase = " ".join(query.split()).casefold()
        hits = [n for n in found if all(w in _hay(n) for w in words)]
        hits.sort(key=lambda n: (phrase not in _hay(n), -n.updated_at.timestamp(), n.id))
        return hits, words

    async def _stored(self) -> int:
        """How many nodes the scope sees (counted by the store where it can count)."""
        visible = {"agent_id": self.agent_id, "visible_to": self.scope}
        graph: Any = self.graph
        if callable(getattr(graph, "count_nodes", None)):
            return int(unwrap(await graph.count_nodes(visible)))
        return len(unwrap(await graph.query_nodes(visible)))

    async def _core(self) -> dict[str, str]:
        return {} if self.core_facts is None else await self.core_facts.get_all()

    @staticmethod
    def _result(node: GraphNode, score: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"id": node.id, "fact": fact_text(node), "type": node.type}
        category = node.properties.get("category")
        if isinstance(category, str):
            out["category"] = category
        out["confidence"] = node.confidence
        if score is not None:
            out["score"] = round(score, 4)
        return out

    # ----- remember ----------------------------------------------------------------------------

    async def remember(self, args: dict[str, Any]) -> dict[str, Any]:
        fact = check_value("fact", args["fact"]).strip()
        category = " ".join(args["category"].split()) if "category" in args else None
        key = args.get("core_fact_key")
        core = args.get("is_core_fact", key is not None)
        if core and key is None:
            raise InvalidArgumentError("core_fact_key", "is required when is_core_fact is true (e.g. user_name)")
        if key is not None and not core:
            raise InvalidArgumentError("is_core_fact", "must be true when core_fact_key is given")
        if core:
            if self.core_facts is None:
                raise InvalidArgumentError("is_core_fact", "core facts are not kept here: save it without is_core_fact")
            key = check_key("core_fact_key", key).strip()
        node, updated = await self._save_fact(fact, category)
        answer: dict[str, Any] = {
            "saved": True,
            "id": node.id,
            "fact": fact,
            "category": node.properties.get("category", DEFAULT_CATEGORY),
            "updated": updated,
        }
        if core:
            assert self.core_facts is not None and key is not None
            await self.core_facts.set(key, fact)
            answer["core_fact"] = {"key": key, "value": fact}
        return answer

    async def _save_fact(self, fact: str, category: str | None) -> tuple[GraphNode, bool]:
        """The fact's node, added (False) or, when the scope holds it already, updated (True):
        the category when one is given, confidence back to 1."""
        name = _fact_name(fact)
        properties = {"category": category} if category is not None else {}
        description = fact if name != fact else None
        for attempt in range(_ATTEMPTS):
            same = unwrap(
                await self.graph.query_nodes(
                    {"agent_id": self.agent_id, "scope": self.scope, "types": [FACT_TYPE], "name": name}
                )
            )
            same = [n for n in same if fact_text(n) == fact]
            if not same:
                node: dict[str, Any] = {
                    "type": FACT_TYPE,
                    "name": name,
                    "description": description,
                    "properties": properties or {"category": DEFAULT_CATEGORY},
                    "origin": "user",
                    "scope": self.scope,
                }
                if self.embedding_service is not None:
                    node["embedding"] = list(await self.embedding_service.embed(fact))
                return unwrap(await self.graph.add_node(node)), False
            current = min(same, key=lambda n: n.id)
            changes = {"properties": {**current.properties, **properties}, "confidence": 1.0, "origin": "user"}
            result = await self.graph.update_node(current.id, changes, expected_version=current.version)
            if result.success or result.error_type is not ConflictError or attempt == _ATTEMPTS - 1:
                return unwrap(result), True
        raise AssertionError("unreachable")  # pragma: no cover

    # ----- recall ------------------------------------------------------------------------------

    async def _word_forms(self, query: str, seen: set[str]) -> list[GraphNode]:
        """The visible nodes not in ``seen`` holding every content word of ``query`` in some
        form (:func:`word_matches`), newest first."""
        words = content_words(query)
        if not words:
            return []
        if is_recall_index(self.graph) and callable(getattr(self.graph, "get_nodes", None)):
            found = await self._indexed(query)
        else:
            probe = _probe(max(words, key=len))
            found = unwrap(
                await self.graph.query_nodes({"agent_id": self.agent_id, "visible_to": self.scope, "text": probe})
            )
        hits = [n for n in found if n.id not in seen and word_matches(words, _hay(n))]
        hits.sort(key=lambda n: (-n.updated_at.timestamp(), n.id))
        return hits

    async def _indexed(self, query: str) -> list[GraphNode]:
        """The nodes the scope sees among the :data:`WORD_CANDIDATES` best of the recall index's
        keyword search of ``query`` over graph facts (the index's stemmed terms, the words
        :func:`word_matches` compares): bounded by what the index returns, not by the nodes
        holding a word's first letters. (Edges are graph facts of the index too: their records
        find no node and are left out, as are nodes of scopes this one does not see; a scope of no
        user asks for the records of no user.)"""
        scope = self.scope
        # a scope of no user sees no user's facts: asked so of the index (tree.NO_USER), other
        # users' facts take none of the candidates
        user = scope.user_id if scope.user_id is not None else tree.NO_USER
        flt: dict[str, Any] = {"agent_id": self.agent_id, "user_id": user, "kinds": ["graph_fact"]}
        if scope.thread_id is not None:
            flt["thread_id"] = scope.thread_id
        store: Any = self.graph
        found = unwrap(await store.recall_keyword(query, filter=flt, limit=WORD_CANDIDATES))
        if not found:
            return []
        seen = set(visible_scope_keys(scope))
        nodes: list[GraphNode] = unwrap(await store.get_nodes([c.record.source_id for c in found]))
        return [n for n in nodes if n.scope_key in seen]

    async def recall(self, args: dict[str, Any]) -> dict[str, Any]:
        query = " ".join(args["query"].split())
        hits, _ = await self._matching(query)
        matched = {n.id for n in hits}
        if len(hits) < self.recall_limit:
            forms = await self._word_forms(query, matched)
            hits.extend(forms)
            matched.update(n.id for n in forms)
        near = await self._near(query) if self.embedding_service is not None else {}
        ranked = [*hits, *(node for node, _ in near.values() if node.id not in matched)]
        results = [
            self._result(node, near[node.id][1] if node.id in near else None) for node in ranked[: self.recall_limit]
        ]
        return {"results": results, "core_facts": await self._core()}

    async def _near(self, query: str) -> dict[str, tuple[GraphNode, float]]:
        """The visible nodes near ``query`` by meaning, best first, with their cosine: only those
        at :data:`MIN_RECALL_SCORE` or more and :data:`RELATIVE_RECALL_SCORE` of the best."""
        scored = unwrap(
            await self.graph.search_nodes_semantic(
                self.agent_id,
                query,
                embedding_service=self.embedding_service,
                limit=self.recall_limit,
                threshold=MIN_RECALL_SCORE,
                visible_to=self.scope,
            )
        )
        best = max((score for _, score in scored), default=0.0)
        floor = max(MIN_RECALL_SCORE, RELATIVE_RECALL_SCORE * best)
        return {node.id: (node, score) for node, score in scored if score >= floor and score > 0}

    # ----- forget ------------------------------------------------------------------------------

    async def forget(self, args: dict[str, Any]) -> dict[str, Any]:
        query = " ".join(args["query"].split())
        words = _words(query)
        if not words:
            raise InvalidArgumentError("query", "must name what to forget in words, not only symbols or wildcards")
        if query.casefold() in EVERYTHING or " ".join(words) in EVERYTHING:
            raise InvalidArgumentError("query", "matches everything: name what to forget (e.g. 'old address')")
        if sum(len(w) for w in words) < 3:
            raise InvalidArgumentError("query", "is too short to tell what to forget: use at least three letters")
        take_all = bool(args.get("all", False))
        hits, _ = await self._matching(query)
        core = await self._core()
        core_hits = [k for k, v in core.items() if all(w in f"{k.replace('_', ' ')} {k} {v}".casefold() for w in words)]
        if hits or core_hits:
            total, matched = await self._stored() + len(core), len(hits) + len(core_hits)
            if matched > MAX_FORGET:
                raise InvalidArgumentError(
                    "query",
                    f"matches {matched} facts, more than {MAX_FORGET} at once: name what to forget more precisely",
                )
            if not take_all and is_broad(matched, total):
                return {
                    "forgotten": 0,
                    "facts": [],
                    "core_fact_keys": [],
                    "too_broad": {
                        "matched": matched,
                        "stored": total,
                        "facts": [fact_text(n) for n in hits],
                        "core_fact_keys": core_hits,
                    },
                    "message": (
                        f"Nothing was deleted: {query!r} matches {matched} of the {total} stored facts (listed in "
                        "too_broad). Name what to forget more precisely, or call forget again with all: true "
                        "to delete all of them."
                    ),
                }
        gone: set[str] = set()
        if hits:
            deleted: list[str] = unwrap(await self.graph.delete_nodes([n.id for n in hits]))
            gone.update(deleted)
        for key in core_hits:
            assert self.core_facts is not None
            await self.core_facts.delete(key)
        return {
            "forgotten": len(gone) + len(core_hits),
            "facts": [fact_text(n) for n in hits if n.id in gone],
            "core_fact_keys": core_hits,
        }


def create_memory_tools(
    *,
    graph_adapter: GraphAdapter | None = None,
    agent_id: str,
    core_facts: CoreFacts | None = None,
    embedding_service: EmbeddingService | None = None,
    scope: MemoryScope | Mapping[str, Any] | None = None,
    recall_limit: int = RECALL_LIMIT,
    graph: GraphAdapter | None = None,
) -> list[MemoryTool]:
    """The ``remember``, ``recall`` and ``forget`` tools (in that order) of ``agent_id``'s memory
    in ``graph_adapter`` (a connected store that keeps a graph, such as
    :class:`~cogitator_memory.SQLiteGraphAdapter`), with the core facts of ``core_facts`` (an
    initialized :class:`~cogitator_memory.facts.core.CoreFacts`; without it ``recall`` gives none
    and ``remember`` refuses ``is_core_fact``). ``embedding_service`` makes ``recall`` search by
    meaning too (only nodes near the query, after the text matches) and ``remember`` embed each
    fact. ``scope`` narrows the memory to a user, project or thread of the agent (default
    ``{"agent_id": agent_id}``): facts are written there, and ``recall`` and ``forget`` see what
    it sees. ``graph`` is the earlier name of ``graph_adapter``, still taken. See the module
    docstring and ``docs/tools.md``."""
    if graph is not None and graph_adapter is not None and graph is not graph_adapter:
        raise InvalidArgumentError("graph", "is the earlier name of graph_adapter: give one of them")
    store = graph_adapter if graph_adapter is not None else graph
    checked_agent = tree.check_id("agent_id", agent_id)
    if store is None:
        raise InvalidArgumentError("graph_adapter", "is required: the store that keeps the graph")
    if not is_graph_adapter(store):
        name = "graph_adapter" if graph_adapter is not None else "graph"
        raise InvalidArgumentError(name, f"must be a store that keeps a graph (a GraphAdapter), got {store!r}")
    if core_facts is not None and not isinstance(core_facts, CoreFacts):
        raise InvalidArgumentError("core_facts", f"must be a CoreFacts (or CoreFactsStore), got {core_facts!r}")
    if embedding_service is not None and not callable(getattr(embedding_service, "embed", None)):
        raise InvalidArgumentError("embedding_service", "must be an EmbeddingService (with embed)")
    the_scope = check_scope("scope", {"agent_id": checked_agent} if scope is None else scope)
    if the_scope.agent_id != checked_agent:
        raise InvalidArgumentError("scope.agent_id", f"must be agent_id ({checked_agent!r})")
    if isinstance(recall_limit, bool) or not isinstance(recall_limit, int) or not 1 <= recall_limit <= 100:
        raise InvalidArgumentError("recall_limit", "must be a whole number from 1 to 100")
    state = _MemoryToolState(store, core_facts, the_scope, embedding_service, recall_limit)
    text = {"type": "string", "minLength": 1}
    return [
        MemoryTool(
            name="remember",
            description=_REMEMBER,
            parameters=_schema(
                {
                    "fact": {**text, "maxLength": MAX_FACT_CHARS, "description": "The fact, as a sentence."},
                    "category": {
                        **text,
                        "maxLength": MAX_CATEGORY_CHARS,
                        "description": f"A short topic such as pets, work or preferences (default {DEFAULT_CATEGORY}).",
                    },
                    "is_core_fact": {
                        "type": "boolean",
                        "description": "Also keep it as a core fact, always known (needs core_fact_key).",
                    },
                    "core_fact_key": {
                        **text,
                        "maxLength": 200,
                        "description": "The core fact's key, e.g. user_name (with is_core_fact).",
                    },
                },
                ["fact"],
            ),
            handler=state.remember,
            idempotent=True,
        ),
        MemoryTool(
            name="recall",
            description=_RECALL.format(limit=recall_limit),
            parameters=_schema(
                {"query": {**text, "maxLength": 1000, "description": "What to look for, in a few words."}}, ["query"]
            ),
            handler=state.recall,
            read_only=True,
            idempotent=True,
        ),
        MemoryTool(
            name="forget",
            description=_FORGET,
            parameters=_schema(
                {
                    "query": {**text, "maxLength": 1000, "description": "What to forget, named precisely."},
                    "all": {
                        "type": "boolean",
                        "description": f"Delete every fact the query matches even when it matches more than "
                        f"{BROAD_FORGET} or most of them (default false: such a query only lists them).",
                    },
                },
                ["query"],
            ),
            handler=state.forget,
            destructive=True,
            idempotent=True,
        ),
    ]


__all__ = [
    "BROAD_FORGET",
    "EVERYTHING",
    "FACT_TYPE",
    "MAX_FACT_CHARS",
    "MAX_FORGET",
    "MIN_RECALL_SCORE",
    "RECALL_LIMIT",
    "RELATIVE_RECALL_SCORE",
    "create_memory_tools",
    "fact_text",
    "is_broad",
]
