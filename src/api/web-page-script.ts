/**
 * The web page's client script, inlined into the page. Plain browser JavaScript with no template
 * literals (this file is itself one). All untrusted text goes into the DOM through text nodes;
 * nothing is ever assigned to innerHTML. The event stream is read from a fetch body, because
 * EventSource cannot send the Authorization header.
 */
export const pageScript = String.raw`
'use strict';
var TOKEN_KEY = 'patchbay.token';
var NAME_KEY = 'patchbay.name';
var app = document.getElementById('app');
var connEl = document.getElementById('conn');

function h(tag, props) {
  var el = document.createElement(tag);
  var p = props || {};
  for (var key in p) {
    var value = p[key];
    if (value == null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = value;
    else if (key.slice(0, 2) === 'on') el.addEventListener(key.slice(2), value);
    else if (key === 'href') { var safe = safeUrl(value); if (safe) el.setAttribute('href', safe); }
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  for (var i = 2; i < arguments.length; i++) append(el, arguments[i]);
  return el;
}
function append(el, child) {
  if (child == null || child === false) return;
  if (Array.isArray(child)) { child.forEach(function (c) { append(el, c); }); return; }
  el.appendChild(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
}
function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); }
function safeUrl(value) {
  try {
    var url = new URL(String(value), location.href);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch (e) { return null; }
}
function timeEl(iso) {
  var d = new Date(iso);
  if (isNaN(d.getTime())) return null;
  return h('time', { datetime: d.toISOString(), title: d.toLocaleString() },
    d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' }));
}
function dateText(iso) { var d = new Date(iso); return isNaN(d.getTime()) ? '' : d.toLocaleString(); }
// List-price estimate; null when a model's price is unknown.
function costText(c) {
  if (!c || c.usd === null || c.usd === undefined) return 'cost unknown';
  return '\u2248 $' + (c.usd > 0 && c.usd < 0.01 ? c.usd.toFixed(4) : c.usd.toFixed(2));
}
function tokens(n) { return n >= 10000 ? (n / 1000).toFixed(1).replace(/\.0$/, '') + 'k' : String(n); }
function badge(status) { return h('span', { class: 'badge s-' + status, 'data-status': status }, status); }
function setConn(text) { connEl.textContent = text || ''; }

function authHeaders(extra) {
  var headers = extra || {};
  var token = localStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = 'Bearer ' + token;
  return headers;
}
function api(method, path, body) {
  var init = { method: method, headers: authHeaders(body ? { 'Content-Type': 'application/json' } : {}) };
  if (body) init.body = JSON.stringify(body);
  return fetch(path, init).then(function (res) {
    if (res.status === 401) { askForToken(); throw new Error('unauthorized'); }
    return res.text().then(function (text) {
      var data = text ? JSON.parse(text) : null;
      if (!res.ok) {
        var message = (data && (data.message || (data.issues && data.issues.map(function (i) {
          return (i.path || []).join('.') + ': ' + i.message; }).join('; ')) || data.error)) || res.statusText;
        var error = new Error(message); error.status = res.status; throw error;
      }
      return data;
    });
  });
}

var tokenAsked = false;
function askForToken() {
  if (tokenAsked) return;
  tokenAsked = true;
  stopStream();
  clear(app);
  var input = h('input', { type: 'password', id: 'token', autocomplete: 'current-password', required: true });
  var had = !!localStorage.getItem(TOKEN_KEY);
  append(app, h('form', { class: 'panel', id: 'token-form', onsubmit: function (ev) {
      ev.preventDefault();
      localStorage.setItem(TOKEN_KEY, input.value.trim());
      location.reload();
    } },
    h('h1', null, 'API token needed'),
    h('p', { class: 'hint' }, had ? 'The saved token was refused. Enter the current one.'
      : 'This Patchbay server requires its API token. It is kept in this browser only.'),
    h('label', { for: 'token' }, 'Token'), input,
    h('div', { class: 'row' }, h('button', { class: 'primary', type: 'submit' }, 'Save'))));
  input.focus();
}

/* ---------- session list ---------- */

function showList() {
  document.title = 'Patchbay';
  clear(app);
  var notice = h('div', { class: 'notice' });
  var repo = h('input', { id: 'repo', name: 'repo', placeholder: 'https://github.com/owner/repo', required: true });
  var prompt = h('textarea', { id: 'prompt', name: 'prompt', rows: 3, placeholder: 'What should Patchbay do?', required: true });
  var base = h('input', { id: 'base', name: 'base', placeholder: 'default branch' });
  var name = h('input', { id: 'name', name: 'name', placeholder: 'API user', value: localStorage.getItem(NAME_KEY) || '' });
  var submit = h('button', { class: 'primary', type: 'submit' }, 'Start session');
  var form = h('form', { class: 'panel', onsubmit: function (ev) {
      ev.preventDefault();
      submit.disabled = true; notice.textContent = '';
      if (name.value.trim()) localStorage.setItem(NAME_KEY, name.value.trim());
      var body = { repo: repo.value, prompt: prompt.value };
      if (base.value.trim()) body.baseBranch = base.value.trim();
      if (name.value.trim()) body.author = { name: name.value.trim() };
      api('POST', '/api/sessions', body).then(function (res) {
        location.href = '/sessions/' + encodeURIComponent(res.id);
      }, function (err) { notice.textContent = err.message; submit.disabled = false; });
    } },
    h('h2', null, 'New session'),
    h('label', { for: 'repo' }, 'Repository'), repo,
    h('label', { for: 'prompt' }, 'Task'), prompt,
    h('div', { class: 'grid2' },
      h('div', null, h('label', { for: 'base' }, 'Base branch (optional)'), base),
      h('div', null, h('label', { for: 'name' }, 'Your name'), name)),
    h('div', { class: 'row' }, submit, notice));
  var list = h('ul', { class: 'sessions', id: 'sessions' });
  append(app, [form, h('section', { class: 'panel' }, h('h2', null, 'Sessions'), list)]);

  function load() {
    api('GET', '/api/sessions?limit=100').then(function (data) {
      clear(list);
      if (!data.sessions.length) append(list, h('li', { class: 'empty' }, 'No sessions yet.'));
      data.sessions.forEach(function (s) {
        append(list, h('li', null,
          h('a', { href: '/sessions/' + encodeURIComponent(s.id) }, s.title),
          badge(s.status),
          h('span', { class: 'sub' }, s.repo + (s.branch ? ' \u00b7 ' + s.branch : '')),
          h('span', { class: 'sub' }, s.requester.name + ' \u00b7 ' + dateText(s.createdAt))));
      });
    }, function (err) { if (err.message !== 'unauthorized') setConn(err.message); });
  }
  load();
  setInterval(function () { if (!tokenAsked) load(); }, 10000);
}

/* ---------- one session ---------- */

var current = null;       // the session record shown in the header
var lastSeq = 0;          // the last event rendered; the stream resumes after it
var streamAbort = null;
var tools = {};           // tool-start elements by call id
var seen = {};            // branch and PR learned from events, ahead of the session record
var refreshTimer = null;

function stopStream() { if (streamAbort) { streamAbort.abort(); streamAbort = null; } }

function showSession(id) {
  clear(app);
  var header = h('section', { class: 'panel', id: 'header' }, h('p', { class: 'empty' }, 'Loading\u2026'));
  var transcript = h('div', { class: 'transcript', id: 'transcript' });
  var notice = h('span', { class: 'notice' });
  var text = h('textarea', { id: 'message', rows: 2, placeholder: 'Message Patchbay\u2026 (Ctrl+Enter to send)' });
  var name = h('input', { class: 'name', id: 'name', placeholder: 'Your name', value: localStorage.getItem(NAME_KEY) || '' });
  var send = h('button', { class: 'primary', type: 'submit', id: 'send' }, 'Send');
  var stop = h('button', { class: 'danger', type: 'button', id: 'stop', onclick: function () {
      stop.disabled = true; notice.textContent = '';
      api('POST', '/api/sessions/' + encodeURIComponent(id) + '/stop', authorBody({})).then(
        function () { ctx.refresh(); },
        function (err) { notice.textContent = err.message; stop.disabled = false; });
    } }, 'Stop');
  function authorBody(body) {
    var n = name.value.trim();
    if (n) { localStorage.setItem(NAME_KEY, n); body.author = { name: n }; }
    return body;
  }
  function sendText(value, questionId) {
    var body = authorBody({ text: value });
    if (questionId) body.questionId = questionId;
    send.disabled = true; notice.textContent = '';
    return api('POST', '/api/sessions/' + encodeURIComponent(id) + '/messages', body).then(
      function () { send.disabled = false; text.value = ''; },
      function (err) { send.disabled = false; notice.textContent = err.message; });
  }
  text.addEventListener('keydown', function (ev) {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); form.requestSubmit(); }
  });
  var form = h('form', { class: 'composer', id: 'composer', onsubmit: function (ev) {
      ev.preventDefault();
      var value = text.value.trim();
      if (!value) return;
      var q = current && current.status === 'waiting' && current.pendingQuestion;
      sendText(value, q ? q.questionId : null);
    } },
    text, h('div', { class: 'row' }, send, stop, name, notice));
  append(app, [header, h('section', { class: 'transcript-wrap' }, transcript), form]);

  var ctx = { transcript: transcript, stopButton: stop, header: header, answer: sendText, refresh: null };
  // Header fields (usage, branch, PR) change with events; re-read the record once a burst settles.
  ctx.refresh = function () {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(function () { refresh(id, ctx); }, 250);
  };
  refresh(id, ctx);
  stream(id, ctx);
}

function refresh(id, ctx) {
  return api('GET', '/api/sessions/' + encodeURIComponent(id)).then(function (s) {
    current = s;
    renderHeader(ctx, s);
  }, function (err) {
    if (err.status === 404) { clear(app); append(app, h('section', { class: 'panel' }, h('h1', null, 'Session not found'),
      h('p', null, h('a', { href: '/' }, 'Back to all sessions')))); stopStream(); }
    else if (err.message !== 'unauthorized') setConn(err.message);
  });
}

function renderHeader(ctx, s) {
  document.title = s.title + ' \u00b7 Patchbay';
  clear(ctx.header);
  var u = s.usage;
  var branch = s.branch || seen.branch;
  var baseBranch = s.baseBranch || seen.baseBranch;
  var prUrl = (s.result && s.result.prUrl) || seen.prUrl;
  var meta = h('dl', { class: 'meta' });
  function row(label, value) { if (value) append(meta, [h('dt', null, label), h('dd', null, value)]); }
  row('Repository', safeUrl(s.repo) ? h('a', { href: s.repo, target: '_blank', rel: 'noopener noreferrer' }, s.repo) : s.repo);
  row('Branch', branch ? branch + (baseBranch ? ' (from ' + baseBranch + ')' : '') : (baseBranch ? 'from ' + baseBranch : null));
  row('Started by', s.requester.name + ' \u00b7 ' + dateText(s.createdAt));
  row('Usage', tokens(u.inputTokens) + ' in \u00b7 ' + tokens(u.outputTokens) + ' out' +
    (u.cacheReadTokens || u.cacheWriteTokens ? ' \u00b7 cache ' + tokens(u.cacheReadTokens) + ' read / ' + tokens(u.cacheWriteTokens) + ' written' : '') +
    ' \u00b7 ' + costText(s.cost));
  if (prUrl) row('Pull request', h('a', { href: prUrl, target: '_blank', rel: 'noopener noreferrer', id: 'pr-link' }, prUrl));
  if (s.error) row('Error', h('span', { class: 'notice' }, s.error));
  append(ctx.header, [
    h('div', { class: 'row' }, h('a', { href: '/', class: 'hint' }, '\u2190 All sessions')),
    h('div', { class: 'row' }, h('h1', { id: 'title' }, s.title), h('span', { id: 'status' }, badge(s.status))),
    meta]);
  ctx.stopButton.disabled = !(s.status === 'queued' || s.status === 'running' || s.status === 'waiting');
}

function setStatus(ctx, status) {
  var el = document.getElementById('status');
  if (el) { clear(el); append(el, badge(status)); }
  if (current) current.status = status;
  ctx.stopButton.disabled = !(status === 'queued' || status === 'running' || status === 'waiting');
}

/* Reads the event stream from a fetch body and reconnects after the last seq it saw. */
function stream(id, ctx) {
  stopStream();
  var ctrl = new AbortController();
  streamAbort = ctrl;
  var headers = authHeaders({ Accept: 'text/event-stream' });
  if (lastSeq > 0) headers['Last-Event-ID'] = String(lastSeq);
  setConn('connecting\u2026');
  fetch('/api/sessions/' + encodeURIComponent(id) + '/events', { headers: headers, signal: ctrl.signal }).then(function (res) {
    if (res.status === 401) { askForToken(); return; }
    if (res.status === 404) return;
    if (!res.ok || !res.body) throw new Error('stream failed: ' + res.status);
    setConn('live');
    var reader = res.body.getReader();
    var decoder = new TextDecoder();
    var buffer = '';
    function pump() {
      return reader.read().then(function (chunk) {
        if (chunk.done) throw new Error('stream ended');
        buffer += decoder.decode(chunk.value, { stream: true });
        var frames = buffer.split(/\r?\n\r?\n/);
        buffer = frames.pop();
        frames.forEach(function (frame) { onFrame(frame, ctx); });
        return pump();
      });
    }
    return pump();
  }).catch(function (err) {
    if (ctrl.signal.aborted || tokenAsked) return;
    setConn('reconnecting\u2026');
    setTimeout(function () { if (streamAbort === ctrl) stream(id, ctx); }, 2000);
  });
}

function onFrame(frame, ctx) {
  var data = [];
  frame.split(/\r?\n/).forEach(function (line) {
    if (line.slice(0, 5) === 'data:') data.push(line.slice(5).replace(/^ /, ''));
  });
  if (!data.length) return;
  var stored;
  try { stored = JSON.parse(data.join('\n')); } catch (e) { return; }
  if (!stored || typeof stored.seq !== 'number' || stored.seq <= lastSeq) return;
  lastSeq = stored.seq;
  var list = ctx.transcript;
  var atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
  var el = renderEvent(stored, ctx);
  if (el) { el.setAttribute('data-seq', String(stored.seq)); append(list, el); }
  if (atBottom) window.scrollTo(0, document.body.scrollHeight);
}

function sys(stored, cls, parts) {
  return h('div', { class: 'sys ' + (cls || '') + ' ev-' + stored.event.type }, h('span', { class: 'body' }, parts), timeEl(stored.at));
}
function msg(stored, cls, who, text, extra) {
  return h('div', { class: 'msg ' + cls + ' ev-' + stored.event.type },
    h('div', { class: 'who' }, h('b', null, who), extra || null, timeEl(stored.at)),
    h('div', { class: 'text' }, text));
}
function brief(input) {
  if (input == null) return '';
  if (typeof input === 'string') return input;
  if (typeof input === 'object') {
    var keys = ['command', 'path', 'query', 'pattern', 'url', 'question'];
    for (var i = 0; i < keys.length; i++) if (typeof input[keys[i]] === 'string') return input[keys[i]];
  }
  var json = JSON.stringify(input);
  return json.length > 160 ? json.slice(0, 157) + '\u2026' : json;
}
function pretty(value) { return typeof value === 'string' ? value : JSON.stringify(value, null, 2); }
function shortSha(sha) { return String(sha).slice(0, 8); }
function sourceName(thread) { return thread && thread.source ? thread.source : 'somewhere'; }

function renderEvent(stored, ctx) {
  var e = stored.event;
  switch (e.type) {
    case 'session-created':
      return sys(stored, '', ['Session started by ' + e.actor.name + ' from ' + sourceName(e.thread) + ' on ' + e.repo]);
    case 'thread-added':
      return sys(stored, '', ['Now also following a ' + sourceName(e.thread) + ' thread']);
    case 'user-message':
      return msg(stored, 'user', e.actor.name, e.text, e.questionId ? h('span', null, 'answered') : null);
    case 'assistant-message':
      return msg(stored, 'assistant', 'Patchbay', e.text);
    case 'tool-start': {
      var state = h('span', { class: 'state' }, 'running\u2026');
      var out = h('pre', { class: 'output' }, '');
      out.hidden = true;
      var el = h('details', { class: 'tool ev-tool', 'data-call': e.callId },
        h('summary', null, h('span', { class: 'name' }, e.name), h('span', { class: 'arg' }, brief(e.input)), state),
        h('pre', { class: 'input' }, pretty(e.input)), out);
      tools[e.callId] = { el: el, state: state, out: out };
      return el;
    }
    case 'tool-end': {
      var t = tools[e.callId];
      if (!t) {
        var fresh = renderEvent({ seq: stored.seq, at: stored.at, event: { type: 'tool-start', callId: e.callId, name: e.name, input: null } }, ctx);
        append(ctx.transcript, fresh);
        t = tools[e.callId];
      }
      t.el.classList.add(e.isError ? 'err' : 'ok');
      t.state.textContent = (e.isError ? 'failed' : 'done') + ' \u00b7 ' + (e.durationMs / 1000).toFixed(1) + ' s';
      t.out.textContent = e.output || '(no output)';
      t.out.hidden = false;
      return null;
    }
    case 'question-asked': {
      var box = h('div', { class: 'question ev-question-asked' },
        h('div', { class: 'who' }, 'Patchbay asks', timeEl(stored.at)),
        h('div', { class: 'text' }, e.question));
      if (e.choices && e.choices.length) {
        append(box, h('div', { class: 'choices' }, e.choices.map(function (choice) {
          return h('button', { type: 'button', class: choice === e.recommended ? 'primary' : '',
            onclick: function () { ctx.answer(choice, e.questionId); } },
            choice + (choice === e.recommended ? ' (recommended)' : ''));
        })));
      }
      seen.questions = seen.questions || {};
      seen.questions[e.questionId] = box;
      return box;
    }
    case 'question-answered': {
      // An answered question keeps its text but no longer offers its buttons.
      var asked = seen.questions && seen.questions[e.questionId];
      if (asked) {
        asked.classList.add('answered');
        asked.querySelectorAll('button').forEach(function (b) { b.disabled = true; });
      }
      return sys(stored, '', [e.actor.name + ' answered: ' + e.text]);
    }
    case 'status-changed':
      setStatus(ctx, e.to);
      ctx.refresh();
      return sys(stored, e.to === 'failed' ? 'bad' : e.to === 'completed' ? 'good' : '',
        ['Status ', badge(e.from), ' \u2192 ', badge(e.to), e.reason ? ' \u00b7 ' + e.reason : '']);
    case 'workspace-ready':
      seen.branch = e.branch; seen.baseBranch = e.baseBranch;
      ctx.refresh();
      return sys(stored, '', ['Workspace ready on branch ' + e.branch + ' from ' + e.baseBranch + ' @ ' + shortSha(e.baseCommit)]);
    case 'diff-updated':
      return h('details', { class: 'tool ev-diff-updated' },
        h('summary', null, h('span', { class: 'name' }, 'diff'), h('span', { class: 'arg' }, e.filesChanged + ' file(s) changed')),
        h('pre', null, e.stat));
    case 'check-finished':
      return h('details', { class: 'tool ev-check-finished ' + (e.outcome === 'passed' ? 'ok' : 'err'), 'data-commit': e.commit },
        h('summary', null, h('span', { class: 'name' }, e.phase), h('span', { class: 'arg' }, e.command),
          h('span', { class: 'state' }, e.outcome + (e.exitCode !== null ? ' \u00b7 exit ' + e.exitCode : '') +
            ' \u00b7 ' + (e.durationMs / 1000).toFixed(1) + ' s \u00b7 ' + shortSha(e.commit))),
        h('pre', null, e.reason || [e.logHead, e.logTail].filter(Boolean).join('\n\u2026\n') || '(no output)'));
    case 'verification-finished':
      return sys(stored, e.outcome === 'passed' ? 'good' : 'bad', ['Verification of ' + shortSha(e.commit) + ' ' + e.outcome +
        (e.total !== undefined ? ' (' + e.total + '/8)' : '') + ': ' + e.summary]);
    case 'review-gate':
      return sys(stored, e.ready ? 'good' : '', [e.ready ? 'Ready for review at ' + shortSha(e.commit) : 'Kept as draft at ' + shortSha(e.commit) + ': ' + e.reasons.join('; ')]);
    case 'branch-pushed':
      seen.branch = e.branch;
      ctx.refresh();
      return sys(stored, 'good', ['Pushed branch ' + e.branch + ' @ ' + shortSha(e.commit)]);
    case 'pr-opened':
      seen.prUrl = e.url;
      ctx.refresh();
      return sys(stored, 'good', ['Opened pull request ',
        h('a', { href: e.url, target: '_blank', rel: 'noopener noreferrer', class: 'pr' }, '#' + e.number), ' for ' + e.branch]);
    case 'usage':
      ctx.refresh();
      return null;
    case 'context-compacted':
      return sys(stored, '', ['Context compacted: ' + e.messagesReplaced + ' message(s) summarized']);
    case 'error':
      return h('div', { class: 'error ev-error' }, h('code', null, e.code), ' ', e.message);
    default:
      return sys(stored, '', [String(e.type)]);
  }
}

/* ---------- routing ---------- */

var match = /^\/sessions\/([^\/]+)\/?$/.exec(location.pathname);
if (match) showSession(decodeURIComponent(match[1]));
else showList();
`;
