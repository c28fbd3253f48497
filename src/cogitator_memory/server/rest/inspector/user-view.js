// The user view of the memory inspector: what memory believes about one user now (core facts,
// memory items, graph facts and entities), each with its quotes and what it replaced; what
// build_context would send for a question typed in (POST /api/context, the call Python makes);
// and forgetting the user after the cascade's full plan. Uses the helpers of inspector.js
// (el, api, query, status, when, slotRow, quoteLinks, forgetUser). Stored text is only ever
// put on the page as text.
"use strict";

const userState = { user: null, threads: [] };

function switchView(name) {
  for (const tab of document.querySelectorAll(".view-tab")) tab.classList.toggle("active", tab.dataset.view === name);
  $("threads-view").hidden = name !== "threads";
  $("user-view").hidden = name !== "user";
}

async function openUserView(user) {
  if (!user) {
    switchView("user");
    clearUserView();
    status("Type a user in the User field to see what memory believes about them.", true);
    return;
  }
  switchView("user");
  await loadUser(user);
}

function clearUserView() {
  userState.user = null;
  userState.threads = [];
  $("user-title").textContent = "Pick a user";
  $("user-meta").textContent = "";
  $("user-view-forget").hidden = true;
  for (const id of ["core-facts", "user-items", "graph-facts", "entities", "context-thread", "context-out", "user-threads"]) {
    $(id).replaceChildren();
  }
  $("context-q").value = "";
}

async function loadUser(user) {
  const { agent_id } = filters();
  const data = await api("GET", `/api/users/${encodeURIComponent(user)}${query({ agent_id })}`);
  clearUserView();
  userState.user = user;
  userState.threads = data.threads;
  const everything = $("user-all").checked;
  $("user-title").textContent = `What memory believes about ${user}`;
  $("user-view-forget").hidden = false;
  const agents = data.agents.map((a) => a.agent_id);
  $("user-meta").textContent = `${data.threads.length} threads · agents ${agents.join(", ")}`;

  const core = data.core_facts.slots.filter((s) => everything || s.held_now);
  $("core-facts").append(...core.map((slot) => slotRow(slot, everything)));
  if (!core.length) $("core-facts").append(el("li", { class: "empty" }, "No core facts."));

  let shownItems = 0;
  for (const agent of data.agents) {
    const slots = agent.items.slots.filter((s) => everything || s.held_now);
    shownItems += slots.length;
    if (!slots.length) continue;
    $("user-items").append(
      el("h3", {}, `agent ${agent.agent_id}`),
      el("ul", { class: "slots", "data-agent": agent.agent_id }, ...slots.map((slot) => slotRow(slot, everything))),
    );
    if (agent.items.truncated) $("user-items").append(el("p", { class: "hint" }, "More items than one view reads: the oldest are not shown."));
  }
  if (!shownItems) $("user-items").append(el("p", { class: "empty" }, "No memory items."));

  renderGraph(data);
  renderThreads(data.threads);
  if (!data.threads.length && !shownItems && !core.length && !$("graph-facts").querySelector("[data-node],[data-edge]")) {
    status(`Memory holds nothing about ${user}.`);
  } else {
    status(`${user}: ${core.length} core facts, ${shownItems} memory item slots, ${data.threads.length} threads`);
  }
}

function graphRecordMeta(record) {
  const notes = [record.origin, `confidence ${record.confidence}`, `since ${when(record.created_at)}`];
  if (record.version > 1) notes.push(`changed ${record.version - 1} times, last ${when(record.updated_at)}`);
  if (record.shared) notes.push("shared");
  return el("div", { class: "meta" }, notes.join(" · "));
}

// The items held now that are about each entity (its id as the item's entity or a related one).
function itemsAbout(data) {
  const about = new Map();
  for (const agent of data.agents) {
    for (const slot of agent.items.slots) {
      for (const { item, held_now } of slot.states) {
        if (!held_now) continue;
        for (const id of [item.entity_id, ...(item.related_entity_ids || [])]) {
          if (!id) continue;
          if (!about.has(id)) about.set(id, []);
          about.get(id).push(`${item.subject}${item.attribute ? ` · ${item.attribute}` : ""} = ${item.value}`);
        }
      }
    }
  }
  return about;
}

function renderGraph(data) {
  const about = itemsAbout(data);
  const facts = $("graph-facts");
  const entities = $("entities");
  if (!data.graph_enabled) {
    facts.append(el("li", { class: "empty" }, "The knowledge graph is off in this memory's config."));
    return;
  }
  for (const agent of data.agents) {
    const graph = agent.graph;
    for (const node of graph.facts) {
      facts.append(
        el(
          "li",
          { class: "item", "data-node": node.id },
          el("div", {}, node.description || node.name),
          graphRecordMeta(node),
          ...quoteLinks(node.evidence),
        ),
      );
    }
    for (const relation of graph.relations) {
      const edge = relation.edge;
      facts.append(
        el(
          "li",
          { class: "item", "data-edge": edge.id },
          el("div", {}, `${relation.source} —${edge.label || edge.type}→ ${relation.target}`),
          graphRecordMeta(edge),
          ...quoteLinks(edge.evidence),
        ),
      );
    }
    for (const node of graph.entities) {
      entities.append(
        el(
          "li",
          { class: "item", "data-node": node.id },
          el("div", { class: "slot" }, node.name, el("span", { class: "badge" }, node.type)),
          node.description ? el("div", {}, node.description) : null,
          node.aliases && node.aliases.length ? el("div", { class: "meta" }, `also ${node.aliases.join(", ")}`) : null,
          about.has(node.id) ? el("div", { class: "about" }, `memory items about it: ${about.get(node.id).join("; ")}`) : null,
          graphRecordMeta(node),
          ...quoteLinks(node.evidence),
        ),
      );
    }
  }
  if (!facts.children.length) facts.append(el("li", { class: "empty" }, "No graph facts."));
  if (!entities.children.length) entities.append(el("li", { class: "empty" }, "No entities."));
}

function renderThreads(threads) {
  const list = $("user-threads");
  const select = $("context-thread");
  for (const thread of threads) {
    const link = el("a", { href: "#", "data-thread-link": thread.id }, thread.title || thread.id);
    link.addEventListener("click", (event) => {
      event.preventDefault();
      switchView("threads");
      openThread(thread.id).catch((e) => status(e.message, true));
    });
    list.append(el("li", {}, link, el("small", {}, ` ${thread.agent_id} · ${when(thread.updated_at)}${thread.owned ? "" : " · joined"}`)));
    select.append(el("option", { value: thread.id }, thread.title || thread.id));
  }
  if (!threads.length) {
    list.append(el("li", { class: "empty" }, "No threads."));
    select.append(el("option", { value: "" }, "no thread: build_context needs one"));
  }
}

// The context the next model call would get, built by the server's POST /api/context: the same
// Memory.build_context a program calls, for this user, in the chosen thread.
async function buildContext() {
  const threadId = $("context-thread").value;
  const out = $("context-out");
  out.replaceChildren();
  if (!userState.user) return;
  if (!threadId) {
    out.append(el("p", { class: "empty" }, "This user has no thread: build_context builds the next call of a thread."));
    return;
  }
  const thread = userState.threads.find((t) => t.id === threadId);
  const body = { thread_id: threadId, user_id: userState.user, current_input: $("context-q").value || null };
  if (thread) body.agent_id = thread.agent_id;
  const built = await api("POST", "/api/context", body);
  out.append(
    el("p", { class: "meta", id: "context-summary" }, `${built.token_count} tokens · strategy ${built.strategy}${built.truncated ? " · truncated" : ""}`),
  );
  const list = el("ol", { id: "context-messages" });
  for (const message of built.messages) {
    const content = typeof message.shown === "string" ? message.shown : typeof message.content === "string" ? message.content : JSON.stringify(message.content);
    list.append(el("li", { class: `message ${message.role}` }, el("div", { class: "meta" }, message.role), el("div", { class: "text" }, content)));
  }
  out.append(list);
  for (const warning of built.warnings || []) out.append(el("p", { class: "hint" }, `warning: ${warning}`));
  for (const error of built.errors || []) out.append(el("p", { class: "hint" }, `${error.source}: ${error.message}`));
  status(`Context built: ${built.messages.length} messages, ${built.token_count} tokens`);
}

function wireUserView() {
  $("user-all").addEventListener("change", guard(async () => {
    if (userState.user) await loadUser(userState.user);
  }));
  $("user-view-forget").addEventListener("click", guard(() => forgetUser(userState.user)));
  $("context-form").addEventListener("submit", guard(() => buildContext()));
}
