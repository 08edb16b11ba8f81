/* raycorpus report: renders the page from the JSON in #report-data with plotly.js (inlined above). */
"use strict";
const DATA = JSON.parse(document.getElementById("report-data").textContent);
window.REPORT = DATA;
const PAGE = 40;  // documents shown at a time
const PLOT_CONFIG = {displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"]};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) if (c !== null && c !== undefined) node.append(c);
  return node;
}
const fmt = (v) => typeof v === "number" ? (Number.isInteger(v) ? v.toLocaleString("en-US")
  : v.toLocaleString("en-US", {maximumFractionDigits: 4})) : (v === null || v === undefined ? "" : String(v));
const pct = (v) => (100 * v).toFixed(v < 0.001 && v > 0 ? 3 : 1) + "%";
const bytes = (n) => { const u = ["B", "KB", "MB", "GB", "TB"]; let i = 0;
  while (n >= 1000 && i < u.length - 1) { n /= 1000; i++; } return n.toFixed(i ? 1 : 0) + " " + u[i]; };

/* a table: columns are [key, title, kind] with kind num | pct | bytes | delta | text */
function table(columns, rows, id) {
  const head = el("tr", {}, columns.map(([, title, kind]) => el("th", {class: kind && kind !== "text" ? "num" : "",
    text: title})));
  const body = rows.map((r) => el("tr", {}, columns.map(([key, , kind]) => {
    const v = r[key];
    let text = fmt(v), cls = "";
    if (kind === "pct") text = pct(v);
    if (kind === "bytes") text = bytes(v);
    if (kind === "delta") { text = (v > 0 ? "+" : "") + fmt(v); cls = v > 0 ? "pos" : v < 0 ? "neg" : ""; }
    if (kind && kind !== "text") cls += " num";
    return el("td", {class: cls.trim(), text});
  })));
  return el("table", id ? {id} : {}, el("thead", {}, head), el("tbody", {}, body));
}

function chart(id, fig) {
  const div = el("div", {class: "chart", id: "chart-" + id, "data-chart": id});
  requestAnimationFrame(() => Plotly.newPlot(div, fig.data, fig.layout, PLOT_CONFIG));
  return div;
}

function section(id, title, ...content) {
  return el("section", {id}, el("h2", {text: title}), ...content);
}

/* ---- header and navigation */
function header() {
  const top = document.getElementById("top");
  top.append(el("h1", {text: "raycorpus report"}),
    el("div", {class: "meta"},
      el("span", {class: "badge " + (DATA.partial ? "partial" : "ok"), id: "status",
        text: DATA.partial ? "partial" : "complete"}),
      el("span", {class: "badge", text: DATA.tag ? "tag mode" : "filter mode"}),
      el("code", {text: DATA.path}), ` · generated ${DATA.generated} by raycorpus ${DATA.raycorpus}`));
  const nav = document.getElementById("nav");
  for (const s of DATA.sections) nav.append(el("a", {href: "#" + s.id, text: s.title}));
}

/* ---- sections */
function overview(d) {
  const cards = el("div", {class: "cards"}, d.cards.map((c) => el("div", {class: "card"},
    el("div", {class: "label", text: c.label}), el("div", {class: "value", text: c.value}),
    el("div", {class: "sub", text: c.note}))));
  const settings = d.settings.length ? table([["setting", "setting"], ["value", "value"]],
    d.settings.map((s) => ({setting: s.setting, value: JSON.stringify(s.value)})), "settings")
    : el("p", {class: "note", text: "no settings recorded (an output written before the report)"});
  const versions = Object.entries(d.versions).map(([k, v]) => `${k} ${v}`).join(" · ");
  const numbers = el("div", {class: "numbers"}, el("h3", {text: "Settings that differ from the defaults"}), settings,
    el("p", {class: "note", text: versions ? "versions: " + versions : ""}));
  const timeline = d.figures.length ? el("div", {class: "chart"}, d.figures.map((f) => chart(f.id, f.figure)))
    : el("p", {class: "note", text: "No throughput over time: the run was too short (checkpoints under a second "
      + "apart)."});
  return [cards, d.covered ? el("div", {class: "banner", text: d.covered}) : null,
    d.figures.length ? el("div", {class: "row"}, timeline, numbers) : [timeline, numbers]];
}

function funnel(d) {
  const note = d.tag ? "Tag mode keeps every document; each is counted under the first reason a stage would have "
    + "dropped it for (the reasons table counts every tag)." : "Each document counts once, under the stage that "
    + "dropped it.";
  return [el("p", {class: "note", text: note}), el("div", {class: "row"}, chart("funnel", d.figure),
    el("div", {class: "numbers"}, table([["name", "stage"], ["docs", "documents", "num"]], d.stages, "funnel-stages"),
      el("h3", {text: "Records"}), table([["label", "records"], ["value", "count", "num"]], d.records))),
    el("h3", {text: d.tag ? "Every tag (stage, reason)" : "Every drop reason (stage, reason)"}),
    table([["stage", "stage"], ["reason", "reason"], ["docs", "documents", "num"], ["share", "of input", "pct"]],
      d.reasons, "funnel-reasons"),
    d.by_language.length ? el("details", {}, el("summary", {text: "Drops by language and stage"}),
      table([["lang", "language"], ["stage", "stage"], ["docs", "documents", "num"]], d.by_language)) : null];
}

function languages(d) {
  return [el("div", {class: "row"}, el("div", {class: "chart"}, d.figures.map((f) => chart(f.id, f.figure))),
    el("div", {class: "numbers"}, table([["lang", "language"], ["kept", "kept", "num"], ["dedup", "duplicates", "num"],
      ["dropped", "dropped", "num"], ["tokens_kept", "tokens kept", "num"]], d.rows, "languages-table")))];
}

function lengths(d) {
  return [el("div", {class: "row"}, el("div", {class: "chart"}, d.figures.map((f) => chart(f.id, f.figure))),
    el("div", {class: "numbers"}, table([["what", "documents"], ["docs", "count", "num"],
      ["median", "median (bin)", "num"]], d.rows, "lengths-table")))];
}

/* a signal: its histogram for one language, thresholds that can be moved, and what passes */
function signalCard(perLang, index) {
  const box = el("div", {class: "signal", id: "signal-" + index, "data-signal": perLang[0].signal});
  const select = el("select", {"aria-label": "language"}, perLang.map((c, i) =>
    el("option", {value: i, text: `${c.lang || "(no language)"} (${fmt(c.total)})`})));
  const plot = el("div", {class: "chart", "data-chart": "signal-" + index});
  const controls = el("div", {class: "controls"});
  const readout = el("div", {class: "readout"});
  box.append(el("h3", {text: perLang[0].signal}), el("div", {class: "controls"},
    el("span", {text: "stage: " + (perLang[0].stage || "?")}), el("label", {}, "language ", select)),
    plot, controls, readout);
  const draw = () => {
    const c = perLang[+select.value];
    const cuts = c.thresholds.map((t) => ({...t, at: edgeIndex(c.edges, t.value)}));
    controls.replaceChildren(...cuts.map((t, i) => {
      const input = el("input", {type: "range", min: 0, max: c.edges.length, step: 1, value: Math.round(t.at),
        "aria-label": "threshold " + (i + 1)});
      input.addEventListener("input", () => { cuts[i].at = +input.value; cuts[i].moved = true; update(c, cuts); });
      return el("label", {}, `threshold (keeps ${t.keep}) `, input);
    }));
    update(c, cuts);
  };
  const update = (c, cuts) => {
    const keptBin = c.edges.map((e, i) => cuts.every((t) => t.keep === "below" ? i < t.at : i >= t.at));
    const passed = c.counts.reduce((a, n, i) => a + (keptBin[i] ? n : 0), 0);
    const labels = c.edges.map((e, i) => `${fmt(e)} – ${i + 1 < c.edges.length ? fmt(c.edges[i + 1]) : "∞"}`);
    const data = [{type: "bar", x: c.edges.map((_, i) => i + 0.5), y: c.counts, width: 0.95, customdata: labels,
      hovertemplate: "%{customdata}: %{y} documents<extra></extra>",
      marker: {color: keptBin.map((k) => cuts.length ? (k ? "#4c9a5b" : "#c8553d") : "#3b6fb6")}}];
    const ticks = tickIndexes(c.edges.length);
    const layout = {height: 220, margin: {l: 50, r: 10, t: 10, b: 36}, bargap: 0, plot_bgcolor: "white",
      xaxis: {tickvals: ticks, ticktext: ticks.map((i) => fmt(i < c.edges.length ? c.edges[i] : NaN)),
        range: [0, c.edges.length]}, yaxis: {title: {text: "documents"}, gridcolor: "#eee"},
      shapes: cuts.map((t) => ({type: "line", x0: t.at, x1: t.at, yref: "paper", y0: 0, y1: 1,
        line: {color: "#1f2933", dash: t.moved ? "dot" : "dash"}}))};
    Plotly.react(plot, data, layout, PLOT_CONFIG);
    const at = cuts.map((t) => (t.moved ? fmt(c.edges[Math.min(t.at, c.edges.length - 1)]) + " (moved from "
      + fmt(t.value) + ")" : fmt(t.value)) + ", keeps " + t.keep).join("; ");
    readout.textContent = cuts.length ? `${fmt(passed)} of ${fmt(c.total)} documents pass this rule (${pct(
      passed / Math.max(1, c.total))}) at ${at}` : `${fmt(c.total)} documents; no threshold applies to this signal`;
    readout.dataset.passed = passed;
  };
  select.addEventListener("change", draw);
  requestAnimationFrame(draw);
  return box;
}
function edgeIndex(edges, v) {
  for (let i = 0; i < edges.length; i++) if (edges[i] >= v) return i;
  return edges.length;
}
function tickIndexes(n) {
  const step = Math.max(1, Math.ceil(n / 10));
  const out = [];
  for (let i = 0; i < n; i += step) out.push(i);
  return out;
}

function signals(d) {
  const cards = d.signals.map((perLang, i) => signalCard(perLang, i));
  const stagesSeen = [...new Set(d.signals.map((perLang) => perLang[0].stage || "?"))];
  const stage = el("select", {id: "signals-stage", "aria-label": "stage"}, el("option", {value: "", text:
    "every stage"}), stagesSeen.map((s) => el("option", {value: s, text: s})));
  stage.addEventListener("change", () => cards.forEach((c, i) => {
    c.style.display = !stage.value || (d.signals[i][0].stage || "?") === stage.value ? "" : "none";
  }));
  return [el("p", {class: "note", text: "Histograms of " + d.scope + ". Green bins pass the threshold, red ones "
    + "fail it (to the resolution of a bin: 0.01 for fractions, one for counts up to 31). Move a threshold to "
    + "see how many documents would pass: `raycorpus select` applies a new one to a tag-mode output without "
    + "reading the WARCs again."}), el("div", {class: "filters"}, el("label", {}, "stage ", stage)),
  el("div", {class: "signals"}, cards)];
}

function dedup(d) {
  const out = [el("div", {class: "row"}, el("div", {class: "chart"}, d.figures.map((f) => chart(f.id, f.figure))),
    el("div", {class: "numbers"}, table([["kind", "duplicates"], ["docs", "documents", "num"]],
      Object.entries(d.counts).map(([kind, docs]) => ({kind, docs})), "dedup-counts"),
    d.paragraphs ? el("p", {class: "note", id: "dedup-paragraphs", text: `Paragraph dedup: ${fmt(d.paragraphs.removed)} `
      + `of the kept documents' ${fmt(d.paragraphs.paragraphs)} paragraphs removed as seen before; `
      + `${fmt(d.paragraphs.dropped)} documents dropped for them (kind "paragraphs")`}) : null,
    d.clusters ? [el("h3", {text: "Largest duplicate clusters"}), el("p", {class: "note", text:
      "Duplicates that named each document as their match (id <WARC>/<document>)" + (d.clusters_error ?
        `; counts are lower bounds, at most ${fmt(d.clusters_error)} short` : "")}),
    table([["doc", "document"], ["duplicates", "duplicates", "num"]], d.clusters, "dedup-clusters")] : null,
    d.domains ? [el("h3", {text: "Domains with the most duplicates"}), table([["domain", "domain"],
      ["duplicates", "duplicates", "num"]], d.domains, "dedup-domains")] : null))];
  return out;
}

function cost(d) {
  return [el("div", {class: "row"}, chart("cost", d.figure), el("div", {class: "numbers"},
    table([["stage", "stage"], ["seconds", "CPU s", "num"], ["share", "share", "pct"], ["ms_per_doc", "ms/doc", "num"]],
      d.stages, "cost-table"))),
  el("h3", {text: `Failed WARCs (${d.failed.length})`}), d.failed.length ? table([["ordinal", "#", "num"],
    ["warc", "WARC"], ["attempts", "attempts", "num"], ["error", "error"]], d.failed, "failed-table")
    : el("p", {class: "note", text: "none"}),
  el("h3", {text: "Retried attempts by error"}), d.retries.length ? table([["error", "error"],
    ["attempts", "attempts", "num"], ["example", "latest message"]], d.retries, "retries-table")
    : el("p", {class: "note", text: "none"})];
}

function output(d) {
  return [el("div", {class: "cards"}, [["shards", fmt(d.shards)], ["tokens", fmt(d.tokens)], ["documents",
    fmt(d.docs)], ["formats", d.formats.join(", ")], ["token dtype", d.dtype || "?"], ["size", bytes(d.bytes)]]
    .map(([label, value]) => el("div", {class: "card"}, el("div", {class: "label", text: label}),
      el("div", {class: "value", text: value})))),
  table([["folder", "folder"], ["files", "files", "num"], ["bytes", "size", "bytes"]], d.folders, "output-table")];
}

/* ---- the document browser */
function documentCard(doc) {
  const kind = doc.reason === "kept" ? "label-kept" : doc.reason.startsWith("dedup:") ? "label-dedup" : "label-drop";
  const signals = Object.entries(doc.signals || {});
  const preview = doc.text.replace(/\s+/g, " ").slice(0, 220);
  return el("div", {class: "doc", "data-reason": doc.reason, "data-lang": doc.lang},
    el("div", {class: "head"}, el("span", {class: "badge " + kind, text: doc.reason}),
      el("span", {class: "badge", text: doc.lang}), el("span", {class: "note", text: `${fmt(doc.chars)} characters · `
        + `WARC #${doc.warc}` + (doc.dup_of ? ` · duplicate of ${doc.dup_of}` : "")
        + (doc.jaccard !== null && doc.jaccard !== undefined ? ` (J ${doc.jaccard})` : "")
        + (doc.there ? ` · other output: ${doc.there}` : "")}),
      el("a", {class: "url", href: doc.url, target: "_blank", rel: "noreferrer noopener", text: doc.url})),
    el("details", {class: "text"}, el("summary", {text: preview + (doc.text.length > 220 ? " …" : "")}),
      el("pre", {text: doc.text + (doc.text.length < doc.chars ? "\n[… cut: output.report.sample_chars]" : "")}),
      signals.length ? table([["k", "signal"], ["v", "value", "num"]], signals.map(([k, v]) => ({k, v}))) : null));
}

function browser(docs, id) {
  const reasons = [...new Set(docs.map((d) => d.reason))].sort((a, b) => (a !== "kept") - (b !== "kept")
    || a.localeCompare(b));
  const langs = [...new Set(docs.map((d) => d.lang))].sort();
  const reason = el("select", {id: id + "-reason", "aria-label": "reason"}, el("option", {value: "", text:
    "every reason"}), reasons.map((r) => el("option", {value: r, text: `${r} (${docs.filter((d) => d.reason === r)
    .length})`})));
  const lang = el("select", {id: id + "-lang", "aria-label": "language"}, el("option", {value: "", text:
    "every language"}), langs.map((l) => el("option", {value: l, text: l})));
  const search = el("input", {id: id + "-search", type: "search", placeholder: "search url or text",
    "aria-label": "search"});
  const count = el("span", {class: "note", id: id + "-count"});
  const list = el("div", {id: id + "-list"});
  const more = el("button", {id: id + "-more", type: "button"});
  let matching = [], shownCount = 0;
  const showMore = () => {
    const next = matching.slice(shownCount, shownCount + PAGE);
    list.append(...next.map(documentCard));
    shownCount += next.length;
    count.textContent = `${matching.length} of ${docs.length} match; showing ${shownCount}`;
    more.textContent = `show ${Math.min(PAGE, matching.length - shownCount)} more`;
    more.style.display = shownCount < matching.length ? "" : "none";
  };
  const apply = () => {
    const q = search.value.trim().toLowerCase();
    matching = docs.filter((d) => (!reason.value || d.reason === reason.value)
      && (!lang.value || d.lang === lang.value)
      && (!q || d.url.toLowerCase().includes(q) || d.text.toLowerCase().includes(q)));
    list.replaceChildren();
    shownCount = 0;
    showMore();
  };
  for (const c of [reason, lang]) c.addEventListener("change", apply);
  search.addEventListener("input", apply);
  more.addEventListener("click", showMore);
  apply();
  return [el("div", {class: "filters"}, el("label", {}, "reason ", reason), el("label", {}, "language ", lang), search,
    count), list, more];
}

function documents(d) {
  return [el("p", {class: "note", text: `Documents sampled by a hash of their record id (the same whatever the worker `
    + `count): up to ${d.sizes.passed} of those that passed the filters (labelled kept, or the duplicate dedup found `
    + `them to be) and up to ${d.sizes.per_reason} per drop reason. Texts are cut; signals are those the stages `
    + `computed.`}), browser(d.docs, "docs")];
}

function against(d) {
  return [el("p", {class: "note"}, "This output: ", el("code", {text: d.this}), " · other: ", el("code", {text: d.other})),
    el("div", {class: "row"}, chart("against", d.figure), el("div", {class: "numbers"},
      table([["reason", "outcome"], ["this", "this", "num"], ["other", "other", "num"], ["delta", "delta", "delta"]],
        d.by_reason, "against-reasons"))),
    el("h3", {text: "Kept documents per language"}),
    table([["lang", "language"], ["this", "this", "num"], ["other", "other", "num"], ["delta", "delta", "delta"]],
      d.by_language, "against-languages"),
    el("h3", {text: `Sampled documents kept here and not by the other (${d.kept_only_here.length})`}),
    browser(d.kept_only_here, "only-here"),
    el("h3", {text: `Sampled documents kept by the other and not here (${d.kept_only_there.length})`}),
    browser(d.kept_only_there, "only-there")];
}

const RENDER = {overview, funnel, languages, lengths, signals, dedup, cost, output, documents, against};

function main() {
  header();
  const root = document.getElementById("main");
  if (DATA.partial) root.append(el("div", {class: "banner", id: "partial-banner", text: `Partial output: `
    + `${fmt(DATA.committed)} of ${fmt(DATA.total)} WARCs committed. This report shows the committed prefix; `
    + `run the same command again to resume.`}));
  for (const s of DATA.sections) {
    const value = DATA[s.id];
    const body = value === null || value === undefined
      ? [el("p", {class: "missing", text: "Not available: " + (DATA.missing[s.id] || "no data")})]
      : RENDER[s.id](value);
    root.append(section(s.id, s.title, body));
  }
}
main();
