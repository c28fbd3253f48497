// The memory inspector: what an agent remembers, why (each item's quotes link to the entries they
// stand on), and a way to forget it. Every stored text is put on the page as text (textContent),
// never as HTML, and the page's policy runs no script but this file.
"use strict";

// The token the server printed comes in the URL (/?token=...): it is kept for this tab, sent as
// a header with every request, and taken out of the address bar and history at once.
function takeToken() {
  const url = new URL(location.href);
  const given = url.searchParams.get("token");
  if (given) {
    sessionStorage.setItem("cogitator-token", given);
    url.searchParams.delete("token");
    history.replaceState(null, "", url.pathname + url.search + url.hash);
  }
  return sessionStorage.getItem("cogitator-token") || "";
}

const state = {
  token: takeToken(),
  threadsCursor: null,
  thread: null,
  entriesCursor: null,
  activePath: new Set(),
  children: new Map(),
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function status(text, error = false) {
  const box = $("status");
  box.textContent = text;
  box.classList.toggle("error", error);
}

async function api(method, path, body) {
  const headers = {};
  if (state.token) headers.authorization = `Bearer ${state.token}`;
  const init = { method, headers };
  if (body !== undefined) {
    headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (response.status === 401) {
    $("token-box").hidden = false;
    throw new Error(
      `this server asks for its token: open the URL it printed (with ?token=), or paste the token from ~/.cogitator/run/serve-${location.port}.token`,
    );
  }
  if (!response.ok) throw new Error((data && data.detail) || `${response.status}`);
  return data;
}

function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") search.append(key, value);
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

function filters() {
  return { agent_id: $("agent").value.trim(), user_id: $("user").value.trim() };
}

function when(stamp) {
  return stamp ? new Date(stamp).toLocaleString() : "";
}

function messageText(entry) {
  if (entry.type === "compaction") {
    const event = entry.event || {};
    const kept = event.first_kept_entry_id ? ` (stands for the entries before ${event.first_kept_entry_id})` : "";
    return `Summary${kept}: ${event.summary || ""}`;
  }
  if (typeof entry.shown === "string") return entry.shown; // the server's words, as the CLI shows them
  const message = entry.message;
  if (!message) return entry.event ? `${entry.event.kind || entry.type} ${JSON.stringify(entry.event.data || {})}` : `(${entry.type})`;
  const content = message.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((part) => part.text || part.content || `[${part.type}]`).join(" ");
  }
  return JSON.stringify(content);
}

// ----- threads ---------------------------------------------------------------------------

async function loadThreads(more = false) {
  if (!more) {
    $("threads").replaceChildren();
    state.threadsCursor = null;
  }
  const { agent_id, user_id } = filters();
  const page = await api("GET", `/api/threads${query({ agent_id, user_id, limit: 50, cursor: state.threadsCursor })}`);
  for (const thread of page.threads) {
    const item = el(
      "li",
      { "data-thread": thread.id, title: thread.id },
      el("div", {}, thread.metadata && thread.metadata.title ? thread.metadata.title : thread.id),
      el("small", {}, `${thread.agent_id} · ${when(thread.updated_at)}`),
    );
    item.addEventListener("click", () => openThread(thread.id).catch((e) => status(e.message, true)));
    $("threads").append(item);
  }
  state.threadsCursor = page.next_cursor;
  $("threads-more").hidden = !page.next_cursor;
  $("user-forget").hidden = !user_id;
  status(`${$("threads").children.length} threads`);
}

// ----- one thread as a tree ----------------------------------------------------------------

async function openThread(threadId) {
  for (const li of $("threads").children) li.classList.toggle("selected", li.dataset.thread === threadId);
  state.thread = await api("GET", `/api/threads/${encodeURIComponent(threadId)}`);
  state.entriesCursor = null;
  state.children = new Map();
  $("entries").replaceChildren();
  $("thread-title").textContent = threadId;
  const meta = state.thread.metadata || {};
  const notes = [`agent ${state.thread.agent_id}`];
  if (meta.user_id) notes.push(`user ${meta.user_id}`);
  if (meta.forked_from) notes.push(`fork of ${meta.forked_from.thread_id} at ${meta.forked_from.entry_id}`);
  if (Array.isArray(meta.memory_forks) && meta.memory_forks.length) notes.push(`forks: ${meta.memory_forks.join(", ")}`);
  $("thread-meta").textContent = notes.join(" · ");
  const path = await api("GET", `/api/threads/${encodeURIComponent(threadId)}/path${query({ limit: 500 })}`);
  state.activePath = new Set(path.entries.map((e) => e.id));
  await loadEntries();
  await loadItems();
}

async function loadEntries() {
  const id = state.thread.id;
  const page = await api("GET", `/api/threads/${encodeURIComponent(id)}/entries${query({ limit: 100, cursor: state.entriesCursor })}`);
  for (const entry of page.entries) {
    if (entry.parent_id) state.children.set(entry.parent_id, (state.children.get(entry.parent_id) || 0) + 1);
  }
  // Newest first: a page of older entries goes below the ones shown.
  const rows = page.entries.slice().reverse().map(entryRow);
  $("entries").append(...rows);
  for (const row of $("entries").children) {
    const branches = state.children.get(row.dataset.entry) || 0;
    row.classList.toggle("branch", branches > 1);
    const mark = row.querySelector(".branches");
    if (mark) mark.textContent = branches > 1 ? `branch point: ${branches} branches` : "";
  }
  state.entriesCursor = page.next_cursor;
  $("entries-more").hidden = !page.next_cursor;
}

function entryRow(entry) {
  const classes = ["entry"];
  classes.push(state.activePath.has(entry.id) ? "active" : "off-path");
  if (entry.type === "compaction") classes.push("compaction");
  if (entry.metadata && entry.metadata.redacted) classes.push("redacted");
  const role = entry.message ? entry.message.role : entry.type;
  const forget = el("button", { type: "button", class: "small danger", "data-forget": entry.id }, "Forget");
  forget.addEventListener("click", () => forgetEntry(entry.id).catch((e) => status(e.message, true)));
  return el(
    "li",
    { class: classes.join(" "), id: `entry-${entry.id}`, "data-entry": entry.id },
    el(
      "div",
      { class: "head" },
      el("span", {}, `#${entry.seq}`),
      el("span", {}, role),
      el("span", {}, when(entry.created_at)),
      entry.parent_id ? el("span", {}, `after ${entry.parent_id}`) : el("span", {}, "root"),
      state.activePath.has(entry.id) ? null : el("span", { class: "side" }, "other branch"),
      el("span", { class: "branches" }),
      forget,
    ),
    el("div", { class: "text" }, messageText(entry)),
  );
}

async function showEntry(entryId) {
  switchView("threads");
  let row = $(`entry-${entryId}`);
  if (!row) {
    const entry = await api("GET", `/api/entries/${encodeURIComponent(entryId)}`);
    if (!state.thread || entry.thread_id !== state.thread.id) await openThread(entry.thread_id);
    while (!$(`entry-${entryId}`) && state.entriesCursor) await loadEntries();
    row = $(`entry-${entryId}`);
  }
  if (!row) return;
  for (const other of document.querySelectorAll(".entry.highlight")) other.classList.remove("highlight");
  row.classList.add("highlight");
  row.scrollIntoView({ block: "center" });
}

// ----- memory items, files, search ------------------------------------------------------

function scopeOfThread() {
  const meta = (state.thread && state.thread.metadata) || {};
  return { agent_id: state.thread ? state.thread.agent_id : filters().agent_id, user_id: meta.user_id || filters().user_id };
}

function quoteLinks(evidence) {
  return (evidence || []).map((ev) => {
    const link = el("a", { class: "quote", href: "#", "data-entry": ev.entry_id }, `“${ev.quote}”`);
    link.addEventListener("click", (event) => {
      event.preventDefault();
      showEntry(ev.entry_id).catch((e) => status(e.message, true));
    });
    return link;
  });
}

function interval(item) {
  const from = item.valid_from || item.recorded_at;
  return `held ${when(from) || "always"} → ${item.valid_to ? when(item.valid_to) : "now"}`;
}

async function loadItems() {
  const scope = scopeOfThread();
  const list = $("items");
  if ($("items-all").checked) {
    // Every state of each slot, whatever time it held: superseded values show, marked.
    const data = await api("GET", `/api/items/states${query({ ...scope, limit: 1000 })}`);
    list.replaceChildren(...data.slots.map((slot) => slotRow(slot, true)));
    if (!data.slots.length) list.append(el("li", {}, "No memory items for this scope."));
    return;
  }
  const data = await api("GET", `/api/items${query({ ...scope, limit: 500 })}`);
  list.replaceChildren();
  for (const item of data.items) {
    list.append(
      el(
        "li",
        { class: `item ${item.status}`, "data-item": item.id },
        el("div", { class: "slot" }, `${item.subject}${item.attribute ? ` · ${item.attribute}` : ""}`),
        el("div", {}, item.value),
        el("div", { class: "meta" }, `${item.kind} · ${item.status} · trust ${item.trust} · confidence ${item.confidence} · ${interval(item)}`),
        ...quoteLinks(item.evidence),
      ),
    );
  }
  if (!data.items.length) list.append(el("li", {}, "No memory items for this scope."));
}

// One slot (subject · attribute) with its states, newest first: the value held now, then what it
// replaced, each superseded one marked with the interval it held and what replaced it.
function slotRow(slot, everything) {
  const states = slot.states.filter((s) => everything || s.item.status === "active" || s.item.status === "superseded");
  const name = slot.states[0] && slot.states[0].core_key ? slot.states[0].core_key : `${slot.subject}${slot.attribute ? ` · ${slot.attribute}` : ""}`;
  return el(
    "li",
    { class: `slot-row${slot.held_now ? "" : " gone"}`, "data-slot": name },
    el("div", { class: "slot" }, name, slot.shared ? el("span", { class: "badge" }, "shared") : null, slot.held_now ? null : el("span", { class: "badge" }, "no longer held")),
    el("ol", { class: "states" }, ...states.map(stateRow)),
  );
}

function stateRow(state) {
  const item = state.item;
  const mark = state.held_now ? "now" : item.status;
  const notes = [item.kind, `trust ${item.trust}`, `confidence ${item.confidence}`, interval(item), `recorded ${when(item.recorded_at)}`];
  if (state.replaced_by) notes.push(`replaced by ${state.replaced_by.value}`);
  if (item.expired_at) notes.push(`let go ${when(item.expired_at)}`);
  const because = item.metadata && item.metadata.stale_because;
  if (because) notes.push(`stale: ${typeof because === "string" ? because : because.reason || JSON.stringify(because)}`);
  return el(
    "li",
    { class: `state ${item.status}${state.held_now ? " held" : ""}`, "data-state": item.id },
    el("div", { class: "value" }, el("span", { class: `badge status-${mark}` }, mark), " ", item.value),
    el("div", { class: "meta" }, notes.join(" · ")),
    ...quoteLinks(item.evidence),
  );
}

async function loadFiles() {
  const scope = scopeOfThread();
  const data = await api("GET", `/api/files${query(scope)}`);
  const list = $("files");
  list.replaceChildren();
  $("versions").replaceChildren();
  for (const file of data.files) {
    const link = el("a", { href: "#", "data-path": file.path }, `${file.path} (${file.size} bytes)`);
    link.addEventListener("click", (event) => {
      event.preventDefault();
      showVersions(file.path).catch((e) => status(e.message, true));
    });
    list.append(el("li", {}, link));
  }
  if (!data.files.length) list.append(el("li", {}, "No memory files for this scope."));
}

async function showVersions(path) {
  const data = await api("GET", `/api/files/history${query({ ...scopeOfThread(), path })}`);
  const box = $("versions");
  box.replaceChildren(el("h3", {}, path));
  for (const { version, diff } of data.versions.slice().reverse()) {
    const label = version.content === undefined || version.content === null ? "deleted" : `${version.size} bytes`;
    box.append(
      el("div", { class: "meta" }, `version ${version.sequence} · ${version.author} · ${when(version.created_at)} · ${label}${version.redacted ? " · redacted" : ""}`),
      el("div", { class: "diff" }, diff || "(no change in text)"),
    );
  }
}

async function runSearch(text) {
  const { agent_id, user_id } = filters();
  const data = await api("GET", `/api/search${query({ q: text, agent_id, user_id, limit: 20 })}`);
  switchTab("hits");
  const list = $("hits");
  list.replaceChildren();
  for (const hit of data.hits) {
    const row = el("li", { class: "item", "data-hit": hit.id }, el("div", { class: "meta" }, `${hit.kind} · score ${Number(hit.score).toFixed(3)}`), el("div", {}, hit.text));
    if (hit.kind === "entry") {
      row.addEventListener("click", () => showEntry(hit.id).catch((e) => status(e.message, true)));
    }
    list.append(row);
  }
  if (!data.hits.length) list.append(el("li", {}, "Nothing found."));
  status(`${data.hits.length} hits`);
}

function switchTab(name) {
  for (const tab of document.querySelectorAll(".tab")) tab.classList.toggle("active", tab.dataset.tab === name);
  for (const body of document.querySelectorAll(".tab-body")) body.hidden = body.id !== `tab-${name}`;
}

// ----- forgetting: a preview, then the cascade ------------------------------------------

const PLAN_PARTS = [
  ["items", "memory items", (r) => `${r.subject}${r.attribute ? ` · ${r.attribute}` : ""} = ${r.value} (${r.status}${r.action === "trim" ? ", loses quotes" : ""})`],
  ["core_facts", "core facts", (r) => `${r.core_key} = ${r.value} (${r.status})`],
  ["facts", "facts", (r) => `${r.value} (${r.status}${r.action === "trim" ? ", loses quotes" : ""})`],
  ["graph_nodes", "graph nodes", (r) => `${r.type}: ${r.name}`],
  ["graph_edges", "graph edges", (r) => `${r.type}${r.label ? ` (${r.label})` : ""}`],
  ["entities", "entities no item is about any more", (r) => `${r.type}: ${r.name}`],
  ["vectors", "vectors", (r) => r],
  ["file_versions", "memory file versions (redacted)", (r) => `${r.path} #${r.sequence}`],
  ["files", "memory files", (r) => r.path],
];

function planPart(kind, count, label, rows) {
  const names = el("ul", { class: "plan-names" }, ...rows.slice(0, 20).map((r) => el("li", {}, r)));
  if (rows.length > 20) names.append(el("li", {}, `… and ${rows.length - 20} more`));
  return el("li", { "data-plan": kind }, el("span", { class: "count" }, String(count)), ` ${label}`, rows.length ? names : null);
}

function confirmForget(title, plan) {
  const dialog = $("confirm");
  $("confirm-title").textContent = title;
  const list = $("confirm-list");
  list.replaceChildren();
  const counts = plan.counts || {};
  if (plan.threads.length) list.append(planPart("threads", plan.threads.length, "whole threads", plan.threads));
  const entries = counts.entries !== undefined ? counts.entries : plan.entry_count;
  if (entries) {
    const rows = Object.entries(plan.entries).map(([thread, ids]) => `${ids.length} entries of ${thread}`);
    list.append(planPart("entries", entries, "entries", rows));
  }
  if (plan.summaries && plan.summaries.length) list.append(planPart("summaries", plan.summaries.length, "summaries over them", []));
  for (const [kind, label, show] of PLAN_PARTS) {
    const rows = plan[kind] || [];
    if (rows.length) list.append(planPart(kind, rows.length, label, rows.map(show)));
  }
  if (plan.recall_index) list.append(el("li", { "data-plan": "recall_index" }, "their records in the recall index"));
  for (const note of plan.skipped || []) list.append(el("li", { class: "skipped" }, `cannot be read, left aside: ${note}`));
  if (!list.children.length) list.append(el("li", {}, "nothing"));
  return new Promise((resolve) => {
    const done = (answer) => {
      dialog.close();
      list.replaceChildren(); // what the plan named does not stay in the page
      $("confirm-title").textContent = "Forget";
      $("confirm-go").onclick = null;
      $("confirm-cancel").onclick = null;
      resolve(answer);
    };
    $("confirm-go").onclick = () => done(true);
    $("confirm-cancel").onclick = () => done(false);
    dialog.showModal();
  });
}

async function forgetEntry(entryId) {
  const plan = await api("POST", "/api/forget/preview", { entry_ids: [entryId] });
  if (!(await confirmForget(`Forget entry ${entryId}?`, plan))) return;
  const done = await api("POST", "/api/forget", { entry_ids: [entryId] });
  status(`Forgotten: ${JSON.stringify(done.counts)}`);
  await openThread(state.thread.id);
}

async function forgetUser(user = filters().user_id) {
  if (!user) return;
  const plan = await api("POST", "/api/forget/preview", { user_id: user });
  if (!(await confirmForget(`Forget user ${user}?`, plan))) return;
  const done = await api("POST", "/api/forget", { user_id: user });
  clearShown();
  await loadThreads();
  if (!$("user-view").hidden) await loadUser(user);
  status(`Forgotten user ${user}: ${describeCounts(done.counts)}`);
}

function describeCounts(counts) {
  const parts = [
    [counts.threads, "threads"],
    [counts.entries.deleted, "entries"],
    [counts.items.purged, "items"],
    [counts.facts.deleted, "facts"],
    [counts.graph.nodes, "graph nodes"],
    [counts.graph.edges, "graph edges"],
    [counts.entities, "entities"],
    [counts.vectors, "vectors"],
    [counts.file_versions, "file versions"],
    [counts.files, "files"],
  ];
  const said = parts.filter(([n]) => n).map(([n, what]) => `${n} ${what}`);
  return said.length ? said.join(", ") : "nothing was left";
}

// What the page shows of memory, emptied: after a forget nothing read before it stays on screen.
function clearShown() {
  state.thread = null;
  state.entriesCursor = null;
  state.activePath = new Set();
  state.children = new Map();
  $("thread-title").textContent = "Pick a thread";
  for (const id of ["thread-meta"]) $(id).textContent = "";
  for (const id of ["entries", "items", "files", "versions", "hits"]) $(id).replaceChildren();
  $("entries-more").hidden = true;
  clearUserView();
}

// ----- wiring -----------------------------------------------------------------------------

function guard(action) {
  return (event) => {
    if (event) event.preventDefault();
    action().catch((e) => status(e.message, true));
  };
}

document.addEventListener("DOMContentLoaded", () => {
  $("filters").addEventListener("submit", guard(() => loadThreads()));
  $("threads-more").addEventListener("click", guard(() => loadThreads(true)));
  $("entries-more").addEventListener("click", guard(() => loadEntries()));
  $("search-form").addEventListener("submit", guard(() => runSearch($("search").value)));
  $("forget-user").addEventListener("click", guard(() => forgetUser()));
  $("show-user").addEventListener("click", guard(() => openUserView(filters().user_id)));
  for (const tab of document.querySelectorAll(".view-tab")) {
    tab.addEventListener("click", guard(async () => {
      if (tab.dataset.view === "user") await openUserView(filters().user_id);
      else switchView("threads");
    }));
  }
  wireUserView();
  $("items-all").addEventListener("change", guard(() => loadItems()));
  $("token-save").addEventListener("click", guard(async () => {
    state.token = $("token").value;
    sessionStorage.setItem("cogitator-token", state.token);
    $("token-box").hidden = true;
    await loadThreads();
  }));
  for (const tab of document.querySelectorAll(".tab")) {
    tab.addEventListener("click", guard(async () => {
      switchTab(tab.dataset.tab);
      if (tab.dataset.tab === "files") await loadFiles();
      if (tab.dataset.tab === "items" && state.thread) await loadItems();
    }));
  }
  loadThreads().catch((e) => status(e.message, true));
});
