// weir's page: browse a `weir serve` store, and upload to it resumably.
//
// Large files use the resumable upload protocol weir speaks (draft-ietf-httpbis-resumable-upload,
// interop version 8): an empty creation request (`PUT /files/{path}`, `Upload-Complete: ?0`)
// answers the upload's URL (`Location: /uploads/{id}`), then the file goes in appends of
// CHUNK bytes (`PATCH`, `Upload-Offset`, `Upload-Complete: ?1` on the last). After a failure
// (a dropped connection, a restarted server) `HEAD` of the upload's URL gives the offset the
// server kept, and the upload goes on from there. The URL is kept in localStorage, keyed by
// the destination, size and modification time of the file, so that a reloaded tab picking the
// same file again resumes too. Files of up to SMALL bytes go in one plain `PUT` (sent again
// whole after a failure): one request instead of two, no upload record on the server.
// XMLHttpRequest, not fetch(), because only it reports upload progress.
//
// Several requests are in flight at once (PARALLEL), and small files go several to a request:
// up to PACK_FILES files of up to PACK_FILE bytes in one `multipart/form-data` POST to the
// folder (its answer has each file's SHA-256; the server stores all of them or none, each
// "only if absent" with `If-None-Match: *`). A pack that is refused or cut for any reason is
// sent again as single PUTs, which find out which file it was (a name taken, a name refused).
// The Transfers box shows one overall line (files, bytes, speed, time left) with the list of
// files folded when it is long, and the listing is fetched again once, when the uploads end.
//
// Nothing is overwritten by surprise: every upload is created with `If-None-Match: *`; a 412
// means the name is taken, and the page asks: replace (again, with `If-Match` and the ETag
// the server has now), keep both (the next free "name (1).ext"), or skip; once for all the
// files of one pick or drop if the user says so.
//
// Failures: no answer, or 408, 429, 500, 502, 503, 504 are tried again (the server may be
// restarting; the last five a few times only); any other refusal (a full quota's 507, 413,
// 403, ...) is final, shown with the server's message, and can be retried by hand.
//
// What the token may do: `GET /whoami`, when the server has it, answers
// `{"token": NAME or null, "scopes": ["read", "write", "delete"], "prefix": PATH or null}`;
// the page then hides the Delete buttons a token could not use. Without it (any other
// answer) every button is offered and the server decides.
//
// Safety: every name from the server or the disk goes into the page with textContent or as
// an attribute value, never as markup (the page's Content-Security-Policy forbids inline
// script and style anyway).
"use strict";

const CHUNK = 64 * 1024 * 1024;
const SMALL = 4 * 1024 * 1024;
const PARALLEL = 5;
const PACK_FILE = 1024 * 1024; // files up to this size go several to a request (a form)
const PACK_FILES = 20;
const PACK_BYTES = 4 * 1024 * 1024;
const RETRIES = 4; // of a 5xx-type answer, before the upload is shown as failed
const LIST_OPEN_UP_TO = 20; // transfers: the list of files starts folded past this many
const PAGE = 1000;
const MAX_PAGE = 10000;
const TOKEN_KEY = "weir-token";
const RESUME_PREFIX = "weir-upload:";
const INTEROP = "8";

const $ = (id) => document.getElementById(id);

// ---- small helpers ----

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "text") node.textContent = v;
    else if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];
function humanSize(n) {
  let i = 0;
  while (n >= 1024 && i < UNITS.length - 1) { n /= 1024; i++; }
  return (i === 0 ? String(Math.round(n)) : n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0)) + " " + UNITS[i];
}

function humanTime(seconds) {
  if (!isFinite(seconds)) return "…";
  if (seconds < 10) return seconds.toFixed(1) + " s";
  seconds = Math.round(seconds);
  if (seconds < 60) return seconds + " s";
  if (seconds < 3600) return Math.floor(seconds / 60) + " min " + (seconds % 60) + " s";
  return Math.floor(seconds / 3600) + " h " + Math.floor((seconds % 3600) / 60) + " min";
}

const count = new Intl.NumberFormat();
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

// A name as text that cannot reorder or hide itself: format characters (bidi overrides,
// zero-width ones), controls and line separators are shown as "<U+202E>". weir refuses such
// names, but a local file's name is shown before the server has seen it.
function visible(name) {
  return name.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu,
    (c) => "<U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + ">");
}

// A store path ("a/b c/d.txt") as a URL path ("a/b%20c/d.txt").
function encodePath(path) {
  return path.split("/").map(encodeURIComponent).join("/");
}

// "a/report.pdf", 2 -> "a/report (2).pdf"; "a/.profile", 1 -> "a/.profile (1)".
function numbered(path, n) {
  const slash = path.lastIndexOf("/") + 1;
  const dir = path.slice(0, slash);
  const name = path.slice(slash);
  const dot = name.lastIndexOf(".");
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ""];
  return dir + stem + " (" + n + ")" + ext;
}

function token() { return sessionStorage.getItem(TOKEN_KEY); }

function authHeaders(headers) {
  const t = token();
  if (t) headers.Authorization = "Bearer " + t;
  return headers;
}

async function errorText(response) {
  try {
    const body = await response.json();
    if (body && typeof body.error === "string") return body.error;
  } catch (_) { /* not JSON */ }
  return response.status + " " + response.statusText;
}

// ---- token ----
//
// Entered once, kept in sessionStorage (this tab, until it closes) and sent as a bearer token.
// Plain download links cannot carry a header, so the page also sets a session cookie scoped to
// /files/, SameSite=Strict: weir accepts it for reads (GET/HEAD of /files/) only, so a request
// another site makes the browser send can neither carry it nor write with it. The box is
// offered from the start while no token is kept, and again when the server refuses the one kept.

let tokenRefused = false;

function setToken(value) {
  sessionStorage.setItem(TOKEN_KEY, value);
  const secure = location.protocol === "https:" ? "; Secure" : "";
  document.cookie = TOKEN_KEY + "=" + encodeURIComponent(value) + "; Path=/files/; SameSite=Strict" + secure;
  tokenRefused = false;
  showTokenControls();
  loadAccess();
  // Uploads refused for want of a token start again with it.
  for (const t of transfers) if (t.state === "failed" && t.needsToken) { t.needsToken = false; t.requeue(); }
}

function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
  document.cookie = TOKEN_KEY + "=; Path=/files/; SameSite=Strict; Max-Age=0";
  tokenRefused = false;
  showTokenControls();
  loadAccess();
}

function showTokenControls() {
  $("token-form").hidden = !!token() && !tokenRefused;
  $("forget").hidden = !token();
}

function needToken(message) {
  tokenRefused = true;
  showTokenControls();
  setStatus(message + ": enter the server's token above.");
  $("token").focus();
}

// ---- what the token may do (GET /whoami, when the server has it) ----

const access = { scopes: null, prefix: null, name: null };
let accessGeneration = 0;

async function loadAccess() {
  const generation = ++accessGeneration;
  let known = null;
  try {
    const r = await fetch("/whoami", { headers: authHeaders({ Accept: "application/json" }), cache: "no-store" });
    const type = r.headers.get("Content-Type") || "";
    if (r.ok && type.includes("json")) {
      const body = await r.json();
      if (body && Array.isArray(body.scopes)) known = body;
    }
  } catch (_) { /* unknown: every button is offered */ }
  if (generation !== accessGeneration) return;
  access.scopes = known ? known.scopes.filter((s) => typeof s === "string") : null;
  access.prefix = known && typeof known.prefix === "string" && known.prefix !== "" ? known.prefix.replace(/^\/+|\/+$/g, "") : null;
  access.name = known && typeof known.token === "string" ? known.token : null;
  const who = $("who");
  who.hidden = !access.scopes;
  who.textContent = access.scopes
    ? (access.name ? "Token " + visible(access.name) : token() ? "Token" : "No token") + ": " +
      (access.scopes.length ? access.scopes.join(", ") : "nothing") + (access.prefix ? " in " + visible(access.prefix) + "/" : "")
    : "";
  renderListing();
}

// Whether the token may do `scope` on `path` ("a/b.txt", or "a/b/" for a folder); true when
// the server does not say.
function may(scope, path) {
  if (!access.scopes) return true;
  if (!access.scopes.includes(scope)) return false;
  if (access.prefix === null) return true;
  const p = path.replace(/\/+$/, "");
  return p === access.prefix || p.startsWith(access.prefix + "/");
}

// ---- location: which folder is shown ----
//
// The page is served at "/" and at every folder's URL ("/files/a/b/" when the browser asks
// for HTML), so a folder's URL can be bookmarked and reloaded.

function currentDir() {
  const p = location.pathname;
  if (!p.startsWith("/files/")) return "";
  const rest = p.slice("/files/".length);
  try {
    return rest.split("/").map(decodeURIComponent).join("/");
  } catch (_) {
    return "";
  }
}

function goTo(dir, push) {
  const url = "/files/" + encodePath(dir);
  if (push) history.pushState(null, "", url);
  setStatus("");
  $("filter").value = "";
  listing.filter = "";
  load();
}

// ---- listing ----
//
// Fetches never overlap in effect: each load takes a number, and only the latest one's answer
// is shown (an earlier one still on its way is dropped), so the rows are never doubled. A
// refresh of the folder shown asks for as many entries as are loaded (up to MAX_PAGE), so it
// does not fall back to the first page.

const listing = { entries: [], next: null, sortKey: "name", ascending: true, dir: null, filter: "" };
let loadGeneration = 0;
let statusFromListing = false;

function setStatus(text, fromListing) {
  $("status").textContent = text;
  statusFromListing = !!fromListing;
}

async function load(more) {
  const generation = ++loadGeneration;
  const dir = currentDir();
  const same = dir === listing.dir;
  renderCrumbs(dir);
  let url = "/files/" + encodePath(dir);
  if (more && same && listing.next) {
    url += "?limit=" + PAGE + "&after=" + encodeURIComponent(listing.next);
  } else {
    more = false;
    url += "?limit=" + (same ? Math.min(MAX_PAGE, Math.max(PAGE, listing.entries.length)) : PAGE);
  }
  let response;
  try {
    response = await fetch(url, { headers: authHeaders({ Accept: "application/json" }), cache: "no-store" });
  } catch (e) {
    if (generation === loadGeneration) setStatus("The server cannot be reached: " + e.message, true);
    return;
  }
  if (generation !== loadGeneration) return;
  const show = (entries, next) => {
    listing.dir = dir;
    listing.entries = entries;
    listing.next = next;
    renderListing();
  };
  if (response.status === 401) { show([], null); needToken("Reading needs a token"); return; }
  if (response.status === 404 && dir !== "") {
    show([], null);
    setStatus("This folder is empty: it is created by the first upload into it.", true);
    return;
  }
  if (!response.ok) { setStatus("Listing failed: " + await errorText(response), true); return; }
  const body = await response.json();
  if (generation !== loadGeneration) return;
  show(more ? listing.entries.concat(body.entries) : body.entries, body.next || null);
  if (listing.entries.length === 0) setStatus("This folder is empty.", true);
  else if (statusFromListing) setStatus("");
}

function compare(a, b) {
  // Folders first, then by the chosen key.
  if (a.type !== b.type) return a.type === "dir" ? -1 : 1;
  const k = listing.sortKey;
  let c = k === "name" ? a.name.localeCompare(b.name) : (a[k] - b[k]) || a.name.localeCompare(b.name);
  return listing.ascending ? c : -c;
}

function renderListing() {
  const tbody = $("listing").tBodies[0];
  for (const th of $("listing").tHead.rows[0].cells) {
    const key = th.firstElementChild && th.firstElementChild.dataset.key;
    if (!key) continue;
    if (key === listing.sortKey) th.setAttribute("aria-sort", listing.ascending ? "ascending" : "descending");
    else th.removeAttribute("aria-sort");
  }
  const dir = listing.dir || "";
  const needle = listing.filter.toLowerCase();
  const shown = needle ? listing.entries.filter((e) => e.name.toLowerCase().includes(needle)) : listing.entries;
  const rows = document.createDocumentFragment();
  for (const e of [...shown].sort(compare)) {
    const isDir = e.type === "dir";
    const path = dir + e.name;
    const row = el("tr");
    const nameCell = el("td", { class: "name" });
    if (isDir) {
      const link = el("a", { href: "/files/" + encodePath(path) + "/", text: e.name + "/" });
      link.addEventListener("click", (ev) => { ev.preventDefault(); goTo(path + "/", true); });
      nameCell.append(link);
    } else {
      nameCell.append(el("a", { href: "/files/" + encodePath(path), download: e.name, text: e.name }));
    }
    row.append(nameCell);
    row.append(el("td", { class: "num", text: isDir ? "" : humanSize(e.size) }));
    // `modified` is null when the store knows no time (a folder on S3): shown blank.
    if (typeof e.modified === "number") {
      const when = new Date(e.modified * 1000);
      row.append(el("td", { class: "date" }, el("time", { datetime: when.toISOString(), text: dateFormat.format(when) })));
    } else {
      row.append(el("td", { class: "date" }));
    }
    const actions = el("td");
    if (may("delete", isDir ? path + "/" : path)) {
      actions.append(el("button", {
        type: "button",
        "aria-label": (isDir ? "Delete folder " : "Delete ") + e.name,
        text: "Delete",
        onclick: () => remove(e, dir),
      }));
    }
    row.append(actions);
    rows.append(row);
  }
  tbody.replaceChildren(rows);
  $("more").hidden = !listing.next;
  const total = listing.entries.length;
  $("shown").textContent = needle
    ? count.format(shown.length) + " of " + count.format(total) + (listing.next ? " loaded" : "") + " entries match"
    : total > 0 ? count.format(total) + (listing.next ? " entries loaded, more below" : total === 1 ? " entry" : " entries") : "";
}

function renderCrumbs(dir) {
  const list = $("crumbs");
  list.replaceChildren();
  const parts = dir.split("/").filter((p) => p !== "");
  const items = [["files", ""]];
  let acc = "";
  for (const p of parts) { acc += p + "/"; items.push([p, acc]); }
  items.forEach(([label, target], i) => {
    const li = el("li");
    if (i === items.length - 1) {
      li.append(el("span", { "aria-current": "page", text: label }));
    } else {
      const a = el("a", { href: "/files/" + encodePath(target), text: label });
      a.addEventListener("click", (ev) => { ev.preventDefault(); goTo(target, true); });
      li.append(a);
    }
    list.append(li);
  });
}

// Deletes a file, or a folder if it is empty (the server answers 409 otherwise); the row
// goes, the rest of the listing (and the pages loaded) stays.
async function remove(entry, dir) {
  const isDir = entry.type === "dir";
  const path = dir + entry.name;
  if (!confirm(isDir ? "Delete the folder " + path + "/? (only if it is empty)" : "Delete " + path + "?")) return;
  let response;
  try {
    response = await fetch("/files/" + encodePath(path) + (isDir ? "/" : ""), { method: "DELETE", headers: authHeaders({}) });
  } catch (e) {
    setStatus("Delete failed: " + e.message);
    return;
  }
  if (response.status === 401) { needToken("Deleting needs a token"); return; }
  if (isDir && response.status === 409) { setStatus("The folder " + path + "/ is not empty: delete what is in it first."); return; }
  if (!response.ok && response.status !== 404) { setStatus("Delete failed: " + await errorText(response)); return; }
  if (listing.dir === dir) {
    listing.entries = listing.entries.filter((e) => !(e.name === entry.name && e.type === entry.type));
    renderListing();
  }
  setStatus("Deleted " + path + (isDir ? "/" : "") + ".");
}

// A folder is created by an empty PUT to its URL (with the token, where one is needed), then
// opened.
async function createFolder(path) {
  const response = await fetch("/files/" + encodePath(path) + "/", { method: "PUT", headers: authHeaders({}) });
  if (response.status === 401) { needToken("Creating a folder needs a token"); return; }
  if (!response.ok) { setStatus("New folder failed: " + await errorText(response)); return; }
  goTo(path + "/", true);
  setStatus((response.status === 201 ? "Created " : "Opened ") + path + "/.");
}

// ---- uploads ----

const transfers = []; // every transfer of this tab
const waiting = []; // to start, in order (may hold ones paused or cancelled since: skipped)
let waitingHead = 0;
let running = 0;
const ACTIVE = ["queued", "running", "asking"];
const FINISHED = ["done", "skipped", "failed", "cancelled"];

// The uploads since the Transfers box was last idle: their counts, for the overall line.
class Batch {
  constructor() {
    this.files = 0;
    this.bytes = 0;
    this.sent = 0;
    this.states = {};
    this.started = performance.now();
    this.ended = null;
    this.samples = [];
    this.stored = 0; // files stored since the listing was last fetched
    this.storedBytes = 0;
  }

  get active() { return ACTIVE.reduce((n, s) => n + (this.states[s] || 0), 0); }
  get finished() { return FINISHED.reduce((n, s) => n + (this.states[s] || 0), 0); }

  move(from, to) {
    if (from) this.states[from]--;
    this.states[to] = (this.states[to] || 0) + 1;
    if (this.active === 0 && from && ACTIVE.includes(from)) this.idle();
    else if (ACTIVE.includes(to)) this.ended = null;
    showOverall();
  }

  // Nothing left to send: one listing fetch for the whole batch.
  idle() {
    this.ended = performance.now();
    if (this.stored > 0) {
      this.stored = 0;
      load();
    }
  }
}

let batch = null;
let overallTimer = null;

function showOverall(now) {
  if (!now) {
    if (!overallTimer) overallTimer = setTimeout(() => { overallTimer = null; showOverall(true); }, 200);
    if (!(batch && batch.ended)) return;
    clearTimeout(overallTimer);
    overallTimer = null;
  }
  const b = batch;
  const line = $("overall");
  line.hidden = !b;
  $("overall-progress").hidden = !b;
  if (!b) return;
  const s = (k) => b.states[k] || 0;
  const t = performance.now();
  b.samples.push([t, b.sent, b.finished]);
  while (b.samples.length > 2 && t - b.samples[0][0] > 5000) b.samples.shift();
  const [t0, sent0, files0] = b.samples[0];
  const seconds = (t - t0) / 1000;
  const speed = seconds > 0 ? (b.sent - sent0) / seconds : 0;
  const fileRate = seconds > 0 ? (b.finished - files0) / seconds : 0;
  const left = Math.max(speed > 0 ? (b.bytes - b.sent) / speed : Infinity,
    fileRate > 0 ? (b.files - b.finished) / fileRate : b.files > b.finished ? Infinity : 0);
  const parts = [];
  if (b.ended) {
    parts.push(count.format(s("done")) + " of " + count.format(b.files) + " files uploaded (" + humanSize(b.storedBytes) + ") in " +
      humanTime((b.ended - b.started) / 1000));
  } else {
    parts.push(count.format(b.finished) + " of " + count.format(b.files) + " files", humanSize(b.sent) + " of " + humanSize(b.bytes),
      humanSize(speed) + "/s", humanTime(left) + " left");
  }
  if (s("asking")) parts.push(count.format(s("asking")) + " waiting for your choice");
  if (s("paused")) parts.push(count.format(s("paused")) + " paused");
  if (s("skipped")) parts.push(count.format(s("skipped")) + " skipped");
  if (s("failed")) parts.push(count.format(s("failed")) + " failed");
  if (s("cancelled")) parts.push(count.format(s("cancelled")) + " cancelled");
  line.textContent = parts.join(" · ");
  line.dataset.state = b.ended ? "idle" : "running";
  line.dataset.done = String(s("done"));
  line.dataset.files = String(b.files);
  line.dataset.failed = String(s("failed"));
  line.dataset.skipped = String(s("skipped"));
  const bar = $("overall-progress");
  bar.max = Math.max(b.bytes, 1);
  bar.value = b.ended ? bar.max : b.sent;
  $("transfers-summary").textContent = "Each file (" + count.format(transfers.length) + ")" +
    (s("failed") ? ", " + count.format(s("failed")) + " failed" : "");
}

// The list of files: open while short; folded past LIST_OPEN_UP_TO unless the user opened or
// closed it themselves.
let listToggledByUser = false;

class Transfer {
  constructor(file, dir, relative, group) {
    const path = dir + relative;
    this.file = file;
    this.dir = dir;
    this.relative = relative;
    this.pack = null; // the Pack it goes in, while it may
    this.path = path; // in the store, as picked, e.g. "photos/2024/cat.jpg"
    this.target = path; // where it goes: path, or "cat (1).jpg" to keep both
    this.group = group; // the files of one pick or drop: {size, policy}
    this.small = file.size <= SMALL;
    this.condition = { "If-None-Match": "*" };
    this.copy = 0; // "keep both": the number tried
    this.choice = null;
    this.offset = 0;
    this.sent = 0;
    this.state = null;
    this.xhr = null;
    this.failures = 0;
    this.refusals = 0;
    this.samples = []; // [time ms, bytes] for the speed over the last seconds
    this.row = this.render();
    this.batch = batch;
    this.batch.files++;
    this.batch.bytes += file.size;
    this.setState("queued", "waiting");
  }

  get key() { return RESUME_PREFIX + this.target + ":" + this.file.size + ":" + this.file.lastModified; }

  render() {
    this.nameEl = el("span", { class: "name", text: visible(this.path) });
    this.pauseButton = el("button", { type: "button", text: "Pause", "aria-label": "Pause " + visible(this.path), onclick: () => this.togglePause() });
    this.cancelButton = el("button", { type: "button", text: "Cancel", "aria-label": "Cancel " + visible(this.path), onclick: () => this.cancel() });
    this.progress = el("progress", { max: String(Math.max(this.file.size, 1)), value: "0", "aria-label": "Progress of " + visible(this.path) });
    this.detail = el("span", { class: "detail", text: "waiting" });
    return el("li", { "data-path": this.path },
      this.nameEl, el("span", { class: "buttons" }, this.pauseButton, this.cancelButton), this.progress, this.detail);
  }

  setState(state, text, error) {
    const from = this.state;
    this.state = state;
    this.row.dataset.state = state;
    if (text !== undefined) this.detail.textContent = text;
    this.detail.classList.toggle("error", !!error);
    const finished = FINISHED.includes(state);
    const retry = state === "failed" && !this.needsToken;
    this.pauseButton.hidden = (finished && !retry) || state === "asking";
    this.cancelButton.hidden = finished;
    const verb = state === "paused" ? "Resume" : retry ? "Retry" : "Pause";
    this.pauseButton.textContent = verb;
    this.pauseButton.setAttribute("aria-label", verb + " " + visible(this.path));
    if (from !== state && this.batch) this.batch.move(from, state);
  }

  setSent(n) {
    if (this.batch) this.batch.sent += n - this.sent;
    this.sent = n;
  }

  showProgress(sent) {
    this.setSent(sent);
    const now = performance.now();
    this.samples.push([now, sent]);
    while (this.samples.length > 2 && now - this.samples[0][0] > 5000) this.samples.shift();
    const [t0, b0] = this.samples[0];
    const speed = now > t0 ? ((sent - b0) * 1000) / (now - t0) : 0;
    const left = speed > 0 ? (this.file.size - sent) / speed : Infinity;
    this.progress.value = sent;
    this.detail.textContent = humanSize(sent) + " of " + humanSize(this.file.size) +
      " · " + humanSize(speed) + "/s · " + humanTime(left) + " left";
    showOverall();
  }

  requeue() {
    this.failures = 0;
    this.refusals = 0;
    this.setState("queued", "waiting");
    schedule(this);
  }

  togglePause() {
    if (this.state === "paused" || this.state === "failed") {
      this.requeue();
    } else if (this.state === "running" || this.state === "queued") {
      this.setState("paused", "paused at " + humanSize(this.offset));
      if (this.xhr) this.xhr.abort();
      if (this.pack && this.pack.xhr) this.pack.xhr.abort();
    }
  }

  async cancel() {
    const was = this.state;
    this.setState("cancelled", "cancelled");
    this.setSent(0);
    if (this.xhr) this.xhr.abort();
    if (this.pack && this.pack.xhr) this.pack.xhr.abort();
    const saved = localStorage.getItem(this.key);
    localStorage.removeItem(this.key);
    if (saved && was !== "done") {
      // The server may not have seen the aborted append end yet (409): ask again shortly.
      for (let attempt = 0; attempt < 5; attempt++) {
        let status = 0;
        try { status = (await request("DELETE", JSON.parse(saved).url, {})).status; } catch (_) { /* retry */ }
        if (status && status !== 409) break;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  // One step of the upload at a time; every step re-reads the state, so pause and cancel
  // take effect between requests (and abort the one running).
  async run() {
    this.setState("running", this.sent ? undefined : "starting");
    while (this.state === "running") {
      try {
        const finished = await this.step();
        if (finished) return;
        this.failures = 0;
      } catch (e) {
        if (this.state !== "running") return;
        if (e.fatal || (e.status && ++this.refusals > RETRIES)) {
          this.needsToken = !!e.needsToken;
          this.setState("failed", e.message, true);
          return;
        }
        // A dropped connection, a server restart or a passing refusal: wait, then ask the
        // server where it is.
        this.failures++;
        this.needHead = true;
        const wait = Math.min(8000, 500 * 2 ** Math.min(this.failures, 4));
        this.setState("running", (e.status ? e.message : "connection lost (" + e.message + ")") +
          "; retrying in " + Math.round(wait / 1000) + " s");
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }

  // Returns true when this run of the upload is over (stored, failed, or waiting for a choice).
  async step() {
    if (this.small) return this.put();
    if (!this.url) {
      const saved = localStorage.getItem(this.key);
      if (saved) { this.url = JSON.parse(saved).url; this.needHead = true; }
    }
    if (this.url && this.needHead) {
      const r = await request("HEAD", this.url, {}, undefined, undefined, this);
      if (r.status === 404 || r.status === 410) {
        localStorage.removeItem(this.key);
        this.url = null;
        this.offset = 0;
        return false;
      }
      if (r.status >= 300) throw refusal(r, "the upload");
      this.offset = Number(r.getResponseHeader("Upload-Offset"));
      this.setSent(this.offset);
      this.needHead = false;
      if (r.getResponseHeader("Upload-Complete") === "?1") {
        localStorage.removeItem(this.key);
        await this.finishedEarlier();
        return true;
      }
      return false;
    }
    if (!this.url) return this.create();
    return this.append();
  }

  // A small file: one PUT, sent again whole after a failure.
  async put() {
    this.setSent(0);
    const r = await request("PUT", "/files/" + encodePath(this.target), { ...this.condition },
      this.file, (sent) => this.showProgress(sent), this);
    if (r.status === 200 || r.status === 201) { this.done(r); return true; }
    if (r.status === 412) return this.conflict();
    throw refusal(r, "uploading");
  }

  // An empty creation request: the server answers the upload's URL before any byte is sent,
  // so the first append can already be resumed.
  async create() {
    const r = await request("PUT", "/files/" + encodePath(this.target), {
      "Upload-Complete": "?0",
      "Upload-Length": String(this.file.size),
      "Upload-Draft-Interop-Version": INTEROP,
      ...this.condition,
    }, undefined, undefined, this);
    if (r.status === 412) return this.conflict();
    if (r.status !== 201 || !r.getResponseHeader("Location")) throw refusal(r, "uploading");
    this.url = new URL(r.getResponseHeader("Location"), location.href).pathname;
    localStorage.setItem(this.key, JSON.stringify({ url: this.url, path: this.target, size: this.file.size, name: this.file.name }));
    this.offset = 0;
    return false;
  }

  async append() {
    const start = this.offset;
    const end = Math.min(this.file.size, start + CHUNK);
    const last = end === this.file.size;
    const r = await request("PATCH", this.url, {
      "Content-Type": "application/partial-upload",
      "Upload-Offset": String(start),
      "Upload-Complete": last ? "?1" : "?0",
      "Upload-Draft-Interop-Version": INTEROP,
    }, this.file.slice(start, end), (sent) => this.showProgress(start + sent), this);
    if (r.status === 204) {
      this.offset = Number(r.getResponseHeader("Upload-Offset"));
      return false;
    }
    if (last && (r.status === 200 || r.status === 201)) {
      localStorage.removeItem(this.key);
      this.done(r);
      return true;
    }
    if (r.status === 412 || r.status === 404 || r.status === 410) {
      // The upload is gone: refused at completion (a file of that name was stored meanwhile),
      // or expired. Start again (asking about the name, for a 412).
      localStorage.removeItem(this.key);
      this.url = null;
      this.offset = 0;
      this.setSent(0);
      return r.status === 412 ? this.conflict() : false;
    }
    if (r.status === 409) {
      // Another append still holds the upload (the one a dropped connection left), or the
      // offset moved: ask again.
      const e = new Error("server answered 409");
      throw e;
    }
    throw refusal(r, "uploading");
  }

  // The name is taken (412): replace, keep both, or skip, as the user says (once for the whole
  // pick if asked to). The upload leaves its place to others while the question waits;
  // "keep both" goes on to the next number without asking again.
  conflict() {
    if (this.choice === "keep") { this.keepBoth(); return false; }
    this.setState("asking", visible(this.target) + " exists: replace, keep both or skip?");
    askConflict(this).then((choice) => this.decide(choice));
    return true;
  }

  async decide(choice) {
    if (this.state !== "asking") return; // cancelled meanwhile
    this.choice = choice;
    if (choice === "skip") {
      this.setSent(0);
      this.setState("skipped", "skipped: " + visible(this.target) + " exists");
      return;
    }
    if (choice === "keep") {
      this.keepBoth();
      this.setState("queued", "waiting (as " + visible(this.target) + ")");
    } else {
      // Replace what is there now, and only that: If-Match with its ETag (a file changed
      // meanwhile is a 412 again, and asked about again).
      let etag = null;
      try { etag = (await request("HEAD", "/files/" + encodePath(this.target), {})).getResponseHeader("ETag"); } catch (_) { /* plain */ }
      if (this.state !== "asking") return;
      this.condition = etag ? { "If-Match": etag } : {};
      this.setState("queued", "waiting (to replace " + visible(this.target) + ")");
    }
    schedule(this);
  }

  keepBoth() {
    this.copy++;
    this.target = numbered(this.path, this.copy);
    this.condition = { "If-None-Match": "*" };
    this.row.dataset.savedAs = this.target;
  }

  done(r) {
    let sha = "";
    try { sha = JSON.parse(r.responseText).sha256 || ""; } catch (_) { /* none */ }
    this.finish(sha);
  }

  // The upload completed but its answer was lost: the stored file's Repr-Digest has the hash.
  async finishedEarlier() {
    const r = await request("HEAD", "/files/" + encodePath(this.target), {});
    const m = /sha-256=:([A-Za-z0-9+/=]+):/.exec(r.getResponseHeader("Repr-Digest") || "");
    this.finish(m ? [...atob(m[1])].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join("") : "");
  }

  finish(sha) {
    this.progress.value = this.file.size;
    this.setSent(this.file.size);
    if (this.batch) { this.batch.stored++; this.batch.storedBytes += this.file.size; }
    const as = this.target !== this.path ? " as " + visible(this.target) : "";
    this.setState("done", "done, " + humanSize(this.file.size) + as);
    if (sha) {
      this.row.append(el("span", { class: "detail sha", "data-sha256": sha, text: "SHA-256 " + sha }));
    }
  }
}

// Small files of one pick, in one form POST to their folder. Its members wait as "queued"
// with the pack in the queue; while it runs they are "running" with it.
class Pack {
  constructor(members) {
    this.members = members;
    this.state = "queued";
    this.xhr = null;
    this.sent = 0;
    for (const t of members) t.pack = this;
  }

  async run() {
    this.state = "running";
    const members = this.members.filter((t) => t.state === "queued" && t.pack === this);
    const dir = members.length ? members[0].dir : "";
    const form = new FormData();
    for (const t of members) {
      t.setState("running", "sending, with " + (members.length - 1) + " other files");
      form.append("file", t.file, t.relative);
    }
    let r = null;
    if (members.length > 1) {
      try {
        r = await request("POST", "/files/" + encodePath(dir), { "If-None-Match": "*" }, form,
          (sent) => this.progress(sent, members), this);
      } catch (_) { /* sent again one by one */ }
    }
    this.progress(0, members);
    this.state = "finished";
    let stored = null;
    if (r && r.status === 201) {
      try { stored = new Map(JSON.parse(r.responseText).files.map((f) => [f.path, f.sha256 || ""])); } catch (_) { /* none */ }
    }
    for (const t of members) {
      t.pack = null;
      if (t.state !== "running") continue; // paused or cancelled meanwhile
      if (stored && stored.has(t.target)) t.finish(stored.get(t.target));
      else { t.setState("queued", "waiting"); schedule(t); }
    }
  }

  // The form's bytes, shared out in the overall count.
  progress(sent, members) {
    const batch = members.length ? members[0].batch : null;
    if (batch) batch.sent += sent - this.sent;
    this.sent = sent;
    showOverall();
  }
}

// The questions about taken names, one at a time.
let asking = Promise.resolve();

function askConflict(t) {
  const answer = asking.then(() => t.group.policy || (t.state === "asking" ? dialogChoice(t) : "skip"));
  asking = answer.catch(() => {});
  return answer;
}

function dialogChoice(t) {
  return new Promise((resolve) => {
    const dialog = $("conflict");
    $("conflict-name").textContent = visible(t.target);
    $("conflict-all").checked = false;
    $("conflict-all-label").hidden = t.group.size < 2;
    const answer = (choice) => {
      for (const b of buttons) b.removeEventListener("click", clicked);
      dialog.removeEventListener("cancel", cancelled);
      if ($("conflict-all").checked) t.group.policy = choice;
      dialog.close();
      resolve(choice);
    };
    const clicked = (e) => { e.preventDefault(); answer(e.currentTarget.value); };
    const cancelled = (e) => { e.preventDefault(); answer("skip"); };
    const buttons = dialog.querySelectorAll("button[value]");
    for (const b of buttons) b.addEventListener("click", clicked);
    dialog.addEventListener("cancel", cancelled);
    dialog.showModal();
  });
}

// A refused request: 401 wants a token; 408, 429 and 5xx answers that may pass (500, 502,
// 503, 504) are tried again a few times; anything else is final, with the server's message.
function refusal(r, what) {
  if (r.status === 401) return fatal(what + " needs a token", true);
  const e = new Error(bodyError(r));
  if ([408, 429, 500, 502, 503, 504].includes(r.status)) e.status = r.status;
  else e.fatal = true;
  return e;
}

function fatal(message, needsToken) {
  const e = new Error(message);
  e.fatal = true;
  e.needsToken = !!needsToken;
  if (needsToken) needToken("Uploading needs a token");
  return e;
}

function bodyError(r) {
  try {
    const body = JSON.parse(r.responseText);
    if (body && body.error) return body.error + " (" + r.status + ")";
  } catch (_) { /* not JSON */ }
  return r.status + " " + r.statusText;
}

// One request (`owner`: the transfer whose pause or cancel aborts it); resolves with the
// finished XMLHttpRequest whatever its status, rejects when no answer came (network error,
// abort).
function request(method, url, headers, body, onProgress, owner) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    for (const [k, v] of Object.entries(authHeaders(headers))) xhr.setRequestHeader(k, v);
    if (onProgress) xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = () => resolve(xhr);
    xhr.onerror = () => reject(new Error("network error"));
    xhr.onabort = () => reject(new Error("aborted"));
    if (owner) owner.xhr = xhr;
    xhr.send(body === undefined ? null : body);
  });
}

function schedule(transfer) {
  waiting.push(transfer);
  pump();
}

function pump() {
  while (running < PARALLEL && waitingHead < waiting.length) {
    let next = waiting[waitingHead++];
    if (next instanceof Transfer && next.pack) next = next.pack; // its pack goes instead
    // One run of a transfer at a time: one queued again while its last run ends is taken
    // up again when it has.
    if (next.state !== "queued" || next.inRun) continue;
    running++;
    next.inRun = true;
    next.run().finally(() => {
      running--;
      next.inRun = false;
      next.xhr = null;
      if (next.state === "queued") waiting.push(next);
      pump();
    });
  }
  if (waitingHead === waiting.length) { waiting.length = 0; waitingHead = 0; }
}

function addFiles(list) {
  if (list.length === 0) return;
  const dir = currentDir();
  if (!batch || batch.active === 0) batch = new Batch();
  const group = { size: list.length, policy: null };
  const rows = document.createDocumentFragment();
  const added = list.map(({ file, relative }) => new Transfer(file, dir, relative, group));
  // Small files in packs, in the order picked.
  let pack = [];
  let bytes = 0;
  const close = () => { if (pack.length > 1) new Pack(pack); pack = []; bytes = 0; };
  for (const t of added) {
    if (t.file.size > PACK_FILE || t.relative.includes("%")) continue; // "%22" is read as '"' in a form
    if (pack.length === PACK_FILES || bytes + t.file.size > PACK_BYTES) close();
    pack.push(t);
    bytes += t.file.size;
  }
  close();
  for (let i = added.length - 1; i >= 0; i--) rows.append(added[i].row);
  $("transfers").prepend(rows);
  transfers.push(...added);
  if (!listToggledByUser) $("transfers-list").open = transfers.length <= LIST_OPEN_UP_TO;
  for (const t of added) waiting.push(t);
  pump();
  showOverall(true);
  showResumable();
}

// ---- picking and dropping ----

function fromInput(input) {
  const files = [...input.files].map((file) => ({ file, relative: file.webkitRelativePath || file.name }));
  input.value = "";
  addFiles(files);
}

// A dropped folder is walked with the File and Directory Entries API; the entries must be
// taken during the drop event, the walking can go on after it.
async function fromDrop(dataTransfer) {
  const entries = [];
  const loose = [];
  for (const item of dataTransfer.items || []) {
    if (item.kind !== "file") continue;
    const entry = item.webkitGetAsEntry ? item.webkitGetAsEntry() : null;
    if (entry) entries.push(entry);
    else { const f = item.getAsFile(); if (f) loose.push({ file: f, relative: f.name }); }
  }
  if (entries.length === 0 && loose.length === 0) {
    for (const f of dataTransfer.files || []) loose.push({ file: f, relative: f.name });
  }
  const found = [...loose];
  for (const entry of entries) await walk(entry, "", found);
  addFiles(found);
}

async function walk(entry, prefix, found) {
  if (entry.isFile) {
    const file = await new Promise((res, rej) => entry.file(res, rej));
    found.push({ file, relative: prefix + entry.name });
  } else if (entry.isDirectory) {
    const reader = entry.createReader();
    for (;;) {
      const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
      if (batch.length === 0) break;
      for (const child of batch) await walk(child, prefix + entry.name + "/", found);
    }
  }
}

// Uploads a reloaded tab left unfinished: the user picks the same files to resume them.
function showResumable() {
  const names = [];
  const mine = new Set(transfers.map((t) => t.key));
  for (let i = 0; i < localStorage.length; i++) {
    const key = localStorage.key(i);
    if (!key.startsWith(RESUME_PREFIX)) continue;
    if (mine.has(key)) continue;
    try { names.push(visible(JSON.parse(localStorage.getItem(key)).path)); } catch (_) { /* ignore */ }
  }
  const hint = $("resumable-hint");
  hint.hidden = names.length === 0;
  hint.textContent = names.length ? "Unfinished uploads (choose the same files again to resume): " + names.join(", ") : "";
}

// ---- wiring ----

function init() {
  $("pick-files").addEventListener("click", () => $("files-input").click());
  $("pick-folder").addEventListener("click", () => $("folder-input").click());
  $("files-input").addEventListener("change", (e) => fromInput(e.target));
  $("folder-input").addEventListener("change", (e) => fromInput(e.target));
  const drop = $("drop");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); fromDrop(e.dataTransfer); });
  // Dropping beside the box must not navigate away from the page (and lose the uploads).
  window.addEventListener("dragover", (e) => e.preventDefault());
  window.addEventListener("drop", (e) => e.preventDefault());
  $("token-form").addEventListener("submit", (e) => { e.preventDefault(); setToken($("token").value); $("token").value = ""; load(); });
  $("forget").addEventListener("click", () => { forgetToken(); load(); });
  $("mkdir-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const name = $("mkdir-name").value.trim().replace(/^\/+|\/+$/g, "");
    $("mkdir-name").value = "";
    if (name) createFolder(currentDir() + name);
  });
  $("filter").addEventListener("input", () => { listing.filter = $("filter").value.trim(); renderListing(); });
  for (const button of document.querySelectorAll("#listing th button")) {
    button.addEventListener("click", () => {
      const key = button.dataset.key;
      listing.ascending = listing.sortKey === key ? !listing.ascending : true;
      listing.sortKey = key;
      renderListing();
    });
  }
  $("transfers-list").querySelector("summary").addEventListener("click", () => { listToggledByUser = true; });
  $("more").addEventListener("click", () => load(true));
  $("home").addEventListener("click", (e) => { e.preventDefault(); goTo("", true); });
  window.addEventListener("popstate", () => goTo(currentDir(), false));
  window.addEventListener("beforeunload", (e) => {
    if (batch && batch.active > 0) e.preventDefault();
  });
  showTokenControls();
  showResumable();
  loadAccess();
  load();
}

init();
