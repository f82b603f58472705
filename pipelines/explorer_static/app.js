// GraphMERT explorer: the page of `graphmert serve` (docs/EXPLORER.md).
//
// State lives in the URL hash (#entity=CURIE&relation=R&min=0.5), so every view has a link and
// the browser's back button works. All text from the server is put into the page with textContent
// or as text nodes, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);

// -- helpers --------------------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

async function getJSON(url, options) {
  const response = await fetch(url, options);
  let body;
  try {
    body = await response.json();
  } catch (e) {
    throw new Error(`${response.status} ${response.statusText}`);
  }
  if (!response.ok) throw new Error(body.error || `${response.status} ${response.statusText}`);
  return body;
}

function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  const min = Number.parseFloat(p.get("min") || "0");
  return { entity: p.get("entity") || "", relation: p.get("relation") || "",
           min: Number.isFinite(min) ? Math.min(1, Math.max(0, min)) : 0 };
}

function hashFor(state) {
  const p = new URLSearchParams();
  if (state.entity) p.set("entity", state.entity);
  if (state.relation) p.set("relation", state.relation);
  if (state.min > 0) p.set("min", state.min.toFixed(2));
  return "#" + p.toString();
}

function entityLink(entity) {
  const a = el("a", { href: hashFor({ entity: entity.curie, relation: "", min: 0 }),
                      title: `${entity.curie} · ${entity.category}`, text: entity.name });
  a.dataset.curie = entity.curie;
  return a;
}

// -- search ---------------------------------------------------------------------------------------

let searchTimer = null;
let searchTicket = 0;   // only the answer to the latest request is shown
let viewTicket = 0;

async function search(query) {
  const list = $("results");
  const ticket = ++searchTicket;
  try {
    const data = await getJSON("/api/search?" + new URLSearchParams({ q: query, limit: "25" }));
    if (ticket !== searchTicket) return;
    list.replaceChildren(...data.results.map((e) => {
      const li = el("li", {}, entityLink(e),
                    el("span", { class: "muted", text: ` ${e.curie} · ${e.category} · ${e.degree} triple(s)` }));
      li.dataset.curie = e.curie;
      return li;
    }));
    $("search-status").textContent = data.results.length
      ? (query ? `${data.results.length} match(es) for “${query}”` : "best connected entities")
      : `no entity matches “${query}”`;
  } catch (err) {
    if (ticket !== searchTicket) return;
    list.replaceChildren();
    $("search-status").textContent = `search failed: ${err.message}`;
  }
}

// -- an entity's triples --------------------------------------------------------------------------

function evidenceBlock(ev) {
  const quote = el("blockquote", { class: "evidence" });
  for (const seg of ev.segments) {
    quote.append(seg.mark ? el("mark", { class: seg.mark, text: seg.text }) : document.createTextNode(seg.text));
  }
  quote.append(el("span", { class: "muted", title: ev.publication,
                            text: ` — ${ev.doc_id}, confidence ${ev.confidence.toFixed(3)}` }));
  return quote;
}

function endCell(entity, focus) {
  if (entity.curie === focus) return el("td", { class: "focus", text: entity.name });
  return el("td", {}, entityLink(entity), el("br"), el("span", { class: "muted", text: entity.curie }));
}

function tripleRow(t, focus) {
  const tail = endCell(t.object, focus);
  if (!t.stated) tail.append(el("br"), el("em", { class: "muted", text: "predicted: the text does not name it" }));
  const evidence = el("td", {}, ...t.evidence.map(evidenceBlock));
  if (t.evidence_count > t.evidence.length) {
    evidence.append(el("span", { class: "muted", text: `${t.evidence_count - t.evidence.length} more event(s)` }));
  }
  const row = el("tr", {}, endCell(t.subject, focus),
                 el("td", {}, t.relation, el("br"), el("span", { class: "muted", text: t.predicate })),
                 tail,
                 el("td", { class: "num", text: t.confidence.toFixed(3) }),
                 el("td", { class: "num", text: String(t.evidence_count) }), evidence);
  row.dataset.relation = t.relation;
  row.dataset.neighbour = t.neighbour.curie;
  return row;
}

async function showEntity(state) {
  const params = new URLSearchParams({ id: state.entity, min_confidence: String(state.min) });
  if (state.relation) params.set("relation", state.relation);
  $("relation-filter").value = state.relation;
  $("min-confidence").value = String(state.min);
  $("min-confidence-value").textContent = state.min.toFixed(2);
  $("download-tsv").href = "/api/view.tsv?" + params;
  $("entity-panel").hidden = false;
  const ticket = ++viewTicket;
  try {
    const data = await getJSON("/api/entity?" + params);
    if (ticket !== viewTicket) return;
    const e = data.entity;
    $("entity-title").textContent = e.name;
    $("entity-meta").textContent = `${e.curie} · ${e.category} · ${e.degree} triple(s) in the graph`;
    $("triples").tBodies[0].replaceChildren(...data.triples.map((t) => tripleRow(t, e.curie)));
    $("entity-count").textContent = `${data.triples.length} triple(s) shown`;
    document.title = `${e.name} · GraphMERT explorer`;
  } catch (err) {
    if (ticket !== viewTicket) return;
    $("entity-title").textContent = state.entity;
    $("entity-meta").textContent = "";
    $("triples").tBodies[0].replaceChildren();
    $("entity-count").textContent = err.message;
  }
}

function route() {
  const state = readHash();
  if (state.entity) showEntity(state);
  else $("entity-panel").hidden = true;
}

function setFilters() {
  const state = readHash();
  state.relation = $("relation-filter").value;
  state.min = Number.parseFloat($("min-confidence").value) || 0;
  location.hash = hashFor(state);
}

// -- SPARQL ---------------------------------------------------------------------------------------

let sparqlTicket = 0;   // only the answer to the latest query is shown

async function runSparql(event) {
  event.preventDefault();
  const ticket = ++sparqlTicket;
  const error = $("sparql-error");
  const out = $("sparql-results");
  error.hidden = true;
  $("sparql-status").textContent = "running…";
  try {
    const data = await getJSON("/api/sparql", {
      method: "POST", headers: { "Content-Type": "application/sparql-query" }, body: $("sparql-query").value });
    if (ticket !== sparqlTicket) return;
    if (data.kind === "ask") {
      out.replaceChildren(el("p", { text: `answer: ${data.boolean}` }));
    } else {
      const head = el("tr", {}, ...data.columns.map((c) => el("th", { text: c })));
      const rows = data.rows.map((r) => el("tr", {}, ...r.map((v) => el("td", { text: v === null ? "" : v }))));
      out.replaceChildren(el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows)));
    }
    $("sparql-status").textContent = data.kind === "ask" ? "" :
      `${data.rows.length} row(s)` + (data.truncated ? ` (first ${data.rows.length} of ${data.total})` : "");
  } catch (err) {
    if (ticket !== sparqlTicket) return;
    out.replaceChildren();
    $("sparql-status").textContent = "";
    error.textContent = err.message;
    error.hidden = false;
  }
}

// -- start ----------------------------------------------------------------------------------------

async function start() {
  $("search-form").addEventListener("submit", (e) => { e.preventDefault(); search($("search").value); });
  $("search").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => search($("search").value), 250);
  });
  $("relation-filter").addEventListener("change", setFilters);
  $("min-confidence").addEventListener("input", () => {
    $("min-confidence-value").textContent = Number.parseFloat($("min-confidence").value).toFixed(2);
  });
  $("min-confidence").addEventListener("change", setFilters);
  $("sparql-form").addEventListener("submit", runSparql);
  window.addEventListener("hashchange", route);
  // The first list is asked for before the summary and relations are awaited (the first summary
  // also opens the SPARQL store; on a busy machine they come late): a search typed meanwhile is a
  // later request, so its answer is the one that stays.
  if (!readHash().entity) search($("search").value);
  try {
    const [summary, rels] = await Promise.all([getJSON("/api/summary"), getJSON("/api/relations")]);
    $("summary").textContent = `${summary.run} · ${summary.triples} triples · ${summary.entities} entities` +
      (summary.sparql ? "" : " · SPARQL unavailable: " + summary.sparql_problem);
    for (const r of rels.relations) {
      $("relation-filter").append(el("option", { value: r.relation, text: `${r.relation} (${r.triples})` }));
    }
  } catch (err) {
    $("summary").textContent = `cannot reach the server: ${err.message}`;
  }
  route();
}

start();
