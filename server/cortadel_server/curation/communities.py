"""Communities: a user's entities grouped by the facts that mention them together, in two levels.

The graph has one node per entity and an edge between two entities weighted by how many current
facts mention both. Level 0 is its Louvain partition (networkx) at a fine resolution; level 1
partitions the graph of level-0 communities at the standard one, so every level-0 community has
exactly one parent. Each
community carries its entities, the facts that mention them, a title (its most connected
entities) and a summary: extractive (the facts that tie most of its entities together) or, when
an LLM is configured, written by it from those facts.

Refreshed incrementally: the grouping is kept per user until their memories change (the user's
version moves on), and a community whose entities and facts are unchanged keeps its summary, so
the LLM only writes for communities that are new or changed. The seed is fixed, so the same
memories always give the same communities.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import networkx as nx

from cortadel_server.config import Settings
from cortadel_server.errors import ProviderError
from cortadel_server.providers.llm.openai import OpenAIChatClient
from cortadel_server.storage.base import Storage

log = logging.getLogger("cortadel")

#: the Louvain seed: the same graph always gives the same communities
SEED = 7
#: Louvain's resolution for level 0: above 1 favours smaller communities, which level 1 (at 1) then groups
FINE_RESOLUTION = 2.0
#: entities in a title, and facts in an extractive summary
TITLE_ENTITIES = 3
SUMMARY_FACTS = 3
#: facts an LLM summary is written from, at most
LLM_FACTS = 20
EXTRACTIVE = "extractive"

SUMMARY_SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "summary": {"type": "string"}},
    "required": ["title", "summary"],
    "additionalProperties": False,
}
SUMMARY_PROMPT = (
    "These facts from one person's long-term memory belong together. Give the group a short title "
    "(at most six words) and a summary of one to three sentences that says what ties them together. "
    'Use only what the facts say. Answer as JSON {"title": "...", "summary": "..."}.'
)


@dataclass(frozen=True)
class Community:
    id: str
    level: int
    title: str
    summary: str
    #: "extractive", or the model that wrote title and summary
    summarized_by: str
    entities: list[str]
    memory_ids: list[str]
    parent_id: str | None = None
    child_ids: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Group:
    level: int
    entities: frozenset[str]
    memory_ids: tuple[str, ...]

    @property
    def content(self) -> str:
        """What its words are written from: its entities and facts (a level-1 community with one
        child has the child's, and shares its words)."""
        return hashlib.sha256("\n".join([*sorted(self.entities), "", *self.memory_ids]).encode()).hexdigest()

    @property
    def id(self) -> str:
        return f"c{self.level}-{self.content[:12]}"


class Communities:
    def __init__(self, storage: Storage, chat: OpenAIChatClient | None) -> None:
        self.storage = storage
        self.chat = chat
        self._lock = threading.Lock()
        #: per user: the version their communities reflect, and the communities
        self._by_user: dict[str, tuple[int, list[Community]]] = {}

    def of(self, user_id: str) -> list[Community]:
        """The user's communities, level 0 then level 1, each level largest first."""
        version = self.storage.user_version(user_id)
        with self._lock:
            kept = self._by_user.get(user_id)
            if kept is not None and kept[0] == version:
                return kept[1]
        # A community that did not change (same entities, same facts) keeps its words.
        written = {c.id.partition("-")[2]: (c.title, c.summary, c.summarized_by) for c in (kept[1] if kept else [])}
        communities = self._build(user_id, written)
        with self._lock:
            self._by_user[user_id] = (version, communities)
        return communities

    def forget(self, user_id: str, memory_ids: Collection[str] | None = None) -> None:
        """The user's memories ``memory_ids`` (all of them: None) were deleted: the communities
        written from any of them go, words and all (deletion really deletes); the others keep
        their words for the next build, which the user's new version asks for anyway."""
        with self._lock:
            kept = self._by_user.pop(user_id, None)
            if kept is not None and memory_ids is not None:
                gone = set(memory_ids)
                self._by_user[user_id] = (-1, [c for c in kept[1] if gone.isdisjoint(c.memory_ids)])

    def _build(self, user_id: str, written: dict[str, tuple[str, str, str]]) -> list[Community]:
        links = self.storage.entity_links(user_id)
        mentions: dict[str, list[str]] = defaultdict(list)  # memory → its entities
        for memory_id, canonical in links:
            mentions[memory_id].append(canonical)
        graph = entity_graph(mentions)
        if graph.number_of_nodes() == 0:
            return []
        level0 = [frozenset(c) for c in nx.community.louvain_communities(
            graph, weight="weight", resolution=FINE_RESOLUTION, seed=SEED)]
        # The graph of level-0 communities: the weight inside each stays as a self-loop, so the
        # coarse partition weighs the ties between communities against those within them.
        home = {entity: i for i, group in enumerate(level0) for entity in group}
        coarse = nx.Graph()
        coarse.add_nodes_from(range(len(level0)))
        for a, b, data in graph.edges(data=True):
            weight = coarse.get_edge_data(home[a], home[b], {"weight": 0})["weight"]
            coarse.add_edge(home[a], home[b], weight=weight + data["weight"])
        level1 = [sorted(c) for c in nx.community.louvain_communities(coarse, weight="weight", seed=SEED)]

        def group(level: int, entities: frozenset[str]) -> _Group:
            return _Group(level, entities, tuple(m for m, names in mentions.items() if entities.intersection(names)))

        children = [group(0, c) for c in level0]
        parents = [(group(1, frozenset().union(*(level0[i] for i in members))), [children[i] for i in members])
                   for members in level1]
        texts = {m: r.text for m, r in self.storage.get_memories(user_id, [m for m in mentions]).items()}
        found: list[Community] = []
        for parent, kids in parents:
            parent_id = parent.id
            found.extend(self._community(g, graph, mentions, texts, written, parent_id=parent_id) for g in kids)
            found.append(self._community(parent, graph, mentions, texts, written, child_ids=[g.id for g in kids]))
        return sorted(found, key=lambda c: (c.level, -len(c.entities), -len(c.memory_ids), c.title))

    def _community(
        self, group: _Group, graph: nx.Graph, mentions: dict[str, list[str]], texts: dict[str, str],
        written: dict[str, tuple[str, str, str]], *, parent_id: str | None = None, child_ids: Sequence[str] = (),
    ) -> Community:
        key = group.content[:12]
        if key not in written:
            written[key] = self._write(group, graph, ranked_facts(group, mentions), texts)
        title, summary, by = written[key]
        return Community(group.id, group.level, title, summary, by, sorted(group.entities), list(group.memory_ids),
                         parent_id, list(child_ids))

    @classmethod
    def from_settings(cls, settings: Settings, storage: Storage) -> Communities:
        """Summaries by the configured chat model (CORTADEL_LLM_URL and CORTADEL_LLM_MODEL), else extractive."""
        chat = OpenAIChatClient.from_settings(settings) if settings.llm_url and settings.llm_model else None
        return cls(storage, chat)

    def close(self) -> None:
        if self.chat is not None:
            self.chat.close()

    def _write(self, group: _Group, graph: nx.Graph, facts: list[str], texts: dict[str, str]) -> tuple[str, str, str]:
        if self.chat is not None:
            lines = "\n".join(f"- {texts[m]}" for m in facts[:LLM_FACTS] if m in texts)
            try:
                answer = self.chat.complete_json(
                    [{"role": "system", "content": SUMMARY_PROMPT}, {"role": "user", "content": lines}],
                    SUMMARY_SCHEMA, "community", validate=_summary,
                ).data
                return answer["title"], answer["summary"], self.chat.model
            except ProviderError as exc:  # the extractive summary stands in; the next change tries again
                log.warning("communities: the LLM summary failed, an extractive one stands in: %s", exc)
        return extractive_title(group, graph), " ".join(texts[m] for m in facts[:SUMMARY_FACTS] if m in texts), EXTRACTIVE


def entity_graph(mentions: dict[str, list[str]]) -> nx.Graph:
    """Entities as nodes, an edge per pair mentioned by one fact, weighted by how many facts do."""
    graph = nx.Graph()
    for names in mentions.values():
        graph.add_nodes_from(names)
        for a, b in combinations(sorted(set(names)), 2):
            weight = graph.get_edge_data(a, b, {"weight": 0})["weight"]
            graph.add_edge(a, b, weight=weight + 1)
    return graph


def ranked_facts(group: _Group, mentions: dict[str, list[str]]) -> list[str]:
    """The community's facts, those mentioning most of its entities first (newest first among equals)."""
    covered = Counter({m: len(group.entities.intersection(mentions[m])) for m in group.memory_ids})
    order = {m: i for i, m in enumerate(group.memory_ids)}
    return sorted(group.memory_ids, key=lambda m: (-covered[m], -order[m]))


def extractive_title(group: _Group, graph: nx.Graph) -> str:
    """The community's most connected entities (within it), most connected first."""
    inside = graph.subgraph(group.entities)
    degree = dict(inside.degree(weight="weight"))
    # Entity keys are stored folded; a title reads better capitalised.
    return ", ".join(e.title() for e in sorted(group.entities, key=lambda e: (-degree.get(e, 0), e.lower()))[:TITLE_ENTITIES])


def _summary(data: Any) -> dict[str, str]:
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) and data[k].strip() for k in ("title", "summary")):
        raise ValueError("title and summary must be non-empty strings")
    return {"title": " ".join(data["title"].split()), "summary": " ".join(data["summary"].split())}
