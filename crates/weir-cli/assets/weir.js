// weir's page: browse a `weir serve` store, and upload to it resumably.
//
// Uploads use the resumable upload protocol weir speaks (draft-ietf-httpbis-resumable-upload,
// interop version 8): an empty creation request (`PUT /files/{path}`, `Upload-Complete: ?0`)
// answers the upload's URL (`Location: /uploads/{id}`), then the file goes in appends of
// CHUNK bytes (`PATCH`, `Upload-Offset`, `Upload-Complete: ?1` on the last). XMLHttpRequest,
// not fetch(), because only it reports upload progress. After a failure (a dropped
// connection, a restarted server) `HEAD` of the upload's URL gives the offset the server
// kept, and the upload goes on from there. The URL is kept in localStorage, keyed by the
// destination, size and modification time of the file, so that a reloaded tab picking the
// same file again resumes too.
//
// Safety: every name from the server or the disk goes into the page with textContent or as
// an attribute value, never as markup (the page's Content-Security-Policy forbids inline
// script and style anyway).
"use strict";

const CHUNK = 64 * 1024 * 1024;
const PARALLEL = 3;
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
  return (i === 0 ? String(n) : n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0)) + " " + UNITS[i];
}

function humanTime(seconds) {
  if (!isFinite(seconds)) return "…";
  seconds = Math.round(seconds);
  if (seconds < 60) return seconds + " s";
  if (seconds < 3600) return Math.floor(seconds / 60) + " min " + (seconds % 60) + " s";
  return Math.floor(seconds / 3600) + " h " + Math.floor((seconds % 3600) / 60) + " min";
}

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
// another site makes the browser send can neither carry it nor write with it.

function setToken(value) {
  sessionStorage.setItem(TOKEN_KEY, value);
  const secure = location.protocol === "https:" ? "; Secure" : "";
  document.cookie = TOKEN_KEY + "=" + encodeURIComponent(value) + "; Path=/files/; SameSite=Strict" + secure;
  showTokenControls(false);
  // Uploads refused for want of a token start again with it.
  for (const t of queue) if (t.state === "failed" && t.needsToken) { t.needsToken = false; t.setState("queued", "waiting"); }
  pump();
}

function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
  document.cookie = TOKEN_KEY + "=; Path=/files/; SameSite=Strict; Max-Age=0";
  showTokenControls(false);
}

function showTokenControls(needed) {
  $("token-form").hidden = !needed;
  $("forget").hidden = !token();
}

function needToken(message) {
  showTokenControls(true);
  setStatus(message + ": enter the server's token above.");
  $("token").focus();
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
  load();
}

// ---- listing ----

const listing = { entries: [], next: null, sortKey: "name", ascending: true, dir: "" };

function setStatus(text) { $("status").textContent = text; }

async function load(more) {
  const dir = currentDir();
  if (!more) { listing.entries = []; listing.next = null; listing.dir = dir; }
  renderCrumbs(dir);
  let url = "/files/" + encodePath(dir) + "?limit=1000";
  if (more && listing.next) url += "&after=" + encodeURIComponent(listing.next);
  let response;
  try {
    response = await fetch(url, { headers: authHeaders({ Accept: "application/json" }), cache: "no-store" });
  } catch (e) {
    setStatus("The server cannot be reached: " + e.message);
    return;
  }
  if (response.status === 401) { needToken("Reading needs a token"); renderListing(); return; }
  if (response.status === 404 && dir !== "") {
    setStatus("This folder is empty: it is created by the first upload into it.");
    renderListing();
    return;
  }
  if (!response.ok) { setStatus("Listing failed: " + await errorText(response)); return; }
  const body = await response.json();
  listing.entries.push(...body.entries);
  listing.next = body.next || null;
  setStatus(listing.entries.length === 0 ? "This folder is empty." : "");
  renderListing();
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
  tbody.replaceChildren();
  for (const th of $("listing").tHead.rows[0].cells) {
    const key = th.firstElementChild && th.firstElementChild.dataset.key;
    if (!key) continue;
    if (key === listing.sortKey) th.setAttribute("aria-sort", listing.ascending ? "ascending" : "descending");
    else th.removeAttribute("aria-sort");
  }
  const dir = listing.dir;
  for (const e of [...listing.entries].sort(compare)) {
    const path = dir + e.name;
    const row = el("tr");
    const nameCell = el("td", { class: "name" });
    if (e.type === "dir") {
      const link = el("a", { href: "/files/" + encodePath(path) + "/", text: e.name + "/" });
      link.addEventListener("click", (ev) => { ev.preventDefault(); goTo(path + "/", true); });
      nameCell.append(link);
    } else {
      nameCell.append(el("a", { href: "/files/" + encodePath(path), download: e.name, text: e.name }));
    }
    row.append(nameCell);
    row.append(el("td", { class: "num", text: e.type === "dir" ? "" : humanSize(e.size) }));
    const when = new Date(e.modified * 1000);
    row.append(el("td", { class: "date" }, el("time", { datetime: when.toISOString(), text: dateFormat.format(when) })));
    const actions = el("td");
    if (e.type === "file") {
      actions.append(el("button", {
        type: "button",
        "aria-label": "Delete " + e.name,
        text: "Delete",
        onclick: () => remove(path),
      }));
    }
    row.append(actions);
    tbody.append(row);
  }
  $("more").hidden = !listing.next;
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

async function remove(path) {
  if (!confirm("Delete " + path + "?")) return;
  const response = await fetch("/files/" + encodePath(path), { method: "DELETE", headers: authHeaders({}) });
  if (response.status === 401) { needToken("Deleting needs a token"); return; }
  if (!response.ok && response.status !== 404) { setStatus("Delete failed: " + await errorText(response)); return; }
  setStatus("Deleted " + path + ".");
  load();
}

// A folder is created by an empty PUT to its URL (with the token, where one is needed), then
// opened.
async function createFolder(path) {
  const response = await fetch("/files/" + encodePath(path) + "/", { method: "PUT", headers: authHeaders({}) });
  if (response.status === 401) { needToken("Creating a folder needs a token"); return; }
  if (!response.ok) { setStatus("New folder failed: " + await errorText(response)); return; }
  setStatus((response.status === 201 ? "Created " : "Opened ") + path + "/.");
  goTo(path + "/", true);
}

// ---- uploads ----

const queue = [];
let running = 0;

class Transfer {
  constructor(file, path) {
    this.file = file;
    this.path = path; // in the store, e.g. "photos/2024/cat.jpg"
    this.key = RESUME_PREFIX + path + ":" + file.size + ":" + file.lastModified;
    this.offset = 0;
    this.state = "queued"; // queued, running, paused, done, failed, cancelled
    this.xhr = null;
    this.failures = 0;
    this.samples = []; // [time ms, bytes] for the speed over the last seconds
    this.row = this.render();
  }

  render() {
    this.nameEl = el("span", { class: "name", text: visible(this.path) });
    this.pauseButton = el("button", { type: "button", text: "Pause", "aria-label": "Pause " + visible(this.path), onclick: () => this.togglePause() });
    this.cancelButton = el("button", { type: "button", text: "Cancel", "aria-label": "Cancel " + visible(this.path), onclick: () => this.cancel() });
    this.progress = el("progress", { max: String(Math.max(this.file.size, 1)), value: "0", "aria-label": "Progress of " + visible(this.path) });
    this.detail = el("span", { class: "detail", text: "waiting" });
    return el("li", { "data-path": this.path, "data-state": this.state },
      this.nameEl, el("span", { class: "buttons" }, this.pauseButton, this.cancelButton), this.progress, this.detail);
  }

  setState(state, text, error) {
    this.state = state;
    this.row.dataset.state = state;
    if (text !== undefined) this.detail.textContent = text;
    this.detail.classList.toggle("error", !!error);
    const finished = state === "done" || state === "failed" || state === "cancelled";
    this.pauseButton.hidden = finished;
    this.cancelButton.hidden = finished;
    this.pauseButton.textContent = state === "paused" ? "Resume" : "Pause";
    this.pauseButton.setAttribute("aria-label", (state === "paused" ? "Resume " : "Pause ") + visible(this.path));
  }

  showProgress(sent) {
    const now = performance.now();
    this.samples.push([now, sent]);
    while (this.samples.length > 2 && now - this.samples[0][0] > 5000) this.samples.shift();
    const [t0, b0] = this.samples[0];
    const speed = now > t0 ? ((sent - b0) * 1000) / (now - t0) : 0;
    const left = speed > 0 ? (this.file.size - sent) / speed : Infinity;
    this.progress.value = sent;
    this.detail.textContent = humanSize(sent) + " of " + humanSize(this.file.size) +
      " · " + humanSize(speed) + "/s · " + humanTime(left) + " left";
  }

  togglePause() {
    if (this.state === "paused") {
      this.setState("queued", "waiting");
      schedule(this);
    } else if (this.state === "running" || this.state === "queued") {
      this.setState("paused", "paused at " + humanSize(this.offset));
      if (this.xhr) this.xhr.abort();
    }
  }

  async cancel() {
    const was = this.state;
    this.setState("cancelled", "cancelled");
    if (this.xhr) this.xhr.abort();
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
    this.setState("running", "starting");
    while (this.state === "running") {
      try {
        const finished = await this.step();
        if (finished) return;
        this.failures = 0;
      } catch (e) {
        if (this.state !== "running") return;
        if (e.fatal) { this.needsToken = !!e.needsToken; this.setState("failed", e.message, true); return; }
        // A dropped connection or a server restart: wait, then ask the server where it is.
        this.failures++;
        this.needHead = true;
        const wait = Math.min(8000, 500 * 2 ** Math.min(this.failures, 4));
        this.setState("running", "connection lost (" + e.message + "); retrying in " + Math.round(wait / 1000) + " s");
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }

  // Returns true when the upload is over.
  async step() {
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
      if (r.status === 401) throw fatal("the upload needs a token", true);
      if (r.status >= 500) throw new Error("server answered " + r.status);
      if (r.status >= 400) throw fatal(r.status + " " + r.statusText);
      this.offset = Number(r.getResponseHeader("Upload-Offset"));
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

  // An empty creation request: the server answers the upload's URL before any byte is sent,
  // so the first append can already be resumed. An empty file is created complete.
  async create() {
    const empty = this.file.size === 0;
    const r = await request("PUT", "/files/" + encodePath(this.path), {
      "Upload-Complete": empty ? "?1" : "?0",
      "Upload-Length": String(this.file.size),
      "Upload-Draft-Interop-Version": INTEROP,
    }, undefined, undefined, this);
    if (empty && r.status < 300) { this.done(r); return true; }
    if (r.status === 401) throw fatal("uploading needs a token", true);
    if (r.status !== 201 || !r.getResponseHeader("Location")) {
      if (r.status >= 500) throw new Error("server answered " + r.status);
      throw fatal(bodyError(r));
    }
    this.url = new URL(r.getResponseHeader("Location"), location.href).pathname;
    localStorage.setItem(this.key, JSON.stringify({ url: this.url, path: this.path, size: this.file.size, name: this.file.name }));
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
    if (r.status === 409 || r.status >= 500) {
      // Another append still holds the upload (the one a dropped connection left), or the
      // offset moved: ask again.
      this.needHead = true;
      throw new Error("server answered " + r.status);
    }
    if (r.status === 401) throw fatal("uploading needs a token", true);
    throw fatal(bodyError(r));
  }

  done(r) {
    let sha = "";
    try { sha = JSON.parse(r.responseText).sha256 || ""; } catch (_) { /* none */ }
    this.finish(sha);
  }

  // The upload completed but its answer was lost: the stored file's Repr-Digest has the hash.
  async finishedEarlier() {
    const r = await request("HEAD", "/files/" + encodePath(this.path), {});
    const m = /sha-256=:([A-Za-z0-9+/=]+):/.exec(r.getResponseHeader("Repr-Digest") || "");
    this.finish(m ? [...atob(m[1])].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join("") : "");
  }

  finish(sha) {
    this.progress.value = this.file.size;
    this.setState("done", "done, " + humanSize(this.file.size));
    if (sha) {
      this.row.append(el("span", { class: "detail sha", "data-sha256": sha, text: "SHA-256 " + sha }));
    }
    if (this.path.startsWith(listing.dir) && currentDir() === listing.dir) load();
  }
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
    if (body && body.error) return body.error;
  } catch (_) { /* not JSON */ }
  return r.status + " " + r.statusText;
}

// One request (`owner`: the transfer whose pause or cancel aborts it); resolves with the finished XMLHttpRequest whatever its status, rejects when no
// answer came (network error, abort).
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
  if (!queue.includes(transfer)) queue.push(transfer);
  pump();
}

function pump() {
  while (running < PARALLEL) {
    const next = queue.find((t) => t.state === "queued");
    if (!next) return;
    running++;
    next.run().finally(() => { running--; next.xhr = null; pump(); });
  }
}

function addFiles(list) {
  const dir = currentDir();
  for (const { file, relative } of list) {
    const t = new Transfer(file, dir + relative);
    $("transfers").prepend(t.row);
    schedule(t);
  }
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
  for (let i = 0; i < localStorage.length; i++) {
    const key = localStorage.key(i);
    if (!key.startsWith(RESUME_PREFIX)) continue;
    if (queue.some((t) => t.key === key)) continue;
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
  for (const button of document.querySelectorAll("#listing th button")) {
    button.addEventListener("click", () => {
      const key = button.dataset.key;
      listing.ascending = listing.sortKey === key ? !listing.ascending : true;
      listing.sortKey = key;
      renderListing();
    });
  }
  $("more").addEventListener("click", () => load(true));
  $("home").addEventListener("click", (e) => { e.preventDefault(); goTo("", true); });
  window.addEventListener("popstate", () => load());
  window.addEventListener("beforeunload", (e) => {
    if (queue.some((t) => t.state === "running" || t.state === "queued")) e.preventDefault();
  });
  showTokenControls(false);
  showResumable();
  load();
}

init();
