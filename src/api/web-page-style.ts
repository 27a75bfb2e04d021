/** The web page's stylesheet, inlined into the page (no external assets). */
export const pageStyle = String.raw`
:root {
  --bg: #f6f7f9; --panel: #fff; --text: #1d2129; --muted: #667085; --line: #e3e6eb;
  --accent: #2f6fed; --ok: #1a7f45; --warn: #a86200; --bad: #c4302b; --code: #f2f4f7;
  --user: #eef3ff; --radius: 10px;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color-scheme: light dark;
}
@media (prefers-color-scheme: dark) {
  :root { --bg: #14161a; --panel: #1c1f24; --text: #e6e8eb; --muted: #98a1ad; --line: #2c3038;
    --accent: #6d9bff; --ok: #4cc082; --warn: #e0a040; --bad: #ff6b63; --code: #23272e; --user: #1e2a44; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text); }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
.top { display: flex; align-items: center; gap: 12px; padding: 10px 20px; background: var(--panel);
  border-bottom: 1px solid var(--line); position: sticky; top: 0; z-index: 2; }
.brand { font-weight: 700; color: var(--text); letter-spacing: .2px; }
.brand::before { content: ""; display: inline-block; width: 10px; height: 10px; border-radius: 3px;
  background: var(--accent); margin-right: 8px; }
.conn { margin-left: auto; font-size: 12px; color: var(--muted); }
main { max-width: 920px; margin: 0 auto; padding: 20px; }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: var(--radius); padding: 16px 18px; margin-bottom: 16px; }
h1 { font-size: 20px; margin: 0 0 8px; line-height: 1.3; }
h2 { font-size: 15px; margin: 0 0 12px; color: var(--muted); font-weight: 600; text-transform: uppercase; letter-spacing: .5px; }
.row { display: flex; align-items: center; gap: 10px; flex-wrap: wrap; }
.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; font-size: 13px; margin-top: 8px; }
.meta dt { color: var(--muted); }
.meta dd { margin: 0; overflow-wrap: anywhere; }
.badge { display: inline-block; font-size: 12px; font-weight: 600; padding: 1px 9px; border-radius: 999px;
  border: 1px solid currentColor; text-transform: lowercase; white-space: nowrap; }
.s-queued, .s-cancelled { color: var(--muted); }
.s-running { color: var(--accent); }
.s-waiting { color: var(--warn); }
.s-completed { color: var(--ok); }
.s-failed { color: var(--bad); }
button, input, textarea { font: inherit; color: inherit; }
input, textarea { width: 100%; background: var(--bg); border: 1px solid var(--line); border-radius: 8px; padding: 8px 10px; }
textarea { resize: vertical; min-height: 64px; }
input:focus, textarea:focus { outline: 2px solid var(--accent); outline-offset: -1px; }
label { display: block; font-size: 13px; color: var(--muted); margin: 8px 0 4px; }
button { border: 1px solid var(--line); background: var(--panel); border-radius: 8px; padding: 7px 14px; cursor: pointer; }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; font-weight: 600; }
button.danger { color: var(--bad); border-color: var(--bad); }
button:disabled { opacity: .5; cursor: default; }
.grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 0 12px; }
.sessions { list-style: none; margin: 0; padding: 0; }
.sessions li { display: grid; grid-template-columns: 1fr auto; gap: 2px 12px; padding: 10px 0; border-top: 1px solid var(--line); }
.sessions li:first-child { border-top: 0; }
.sessions .badge { justify-self: end; align-self: center; }
.sessions .sub { font-size: 12px; color: var(--muted); overflow-wrap: anywhere; }
.empty { color: var(--muted); font-style: italic; }
.transcript { display: flex; flex-direction: column; gap: 10px; }
.msg { border-radius: var(--radius); padding: 10px 14px; border: 1px solid var(--line); background: var(--panel); }
.msg.user { background: var(--user); margin-left: 48px; }
.msg.assistant { margin-right: 48px; }
.msg .who { font-size: 12px; color: var(--muted); margin-bottom: 4px; display: flex; gap: 8px; }
.msg .who b { color: var(--text); }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
.sys { font-size: 13px; color: var(--muted); display: flex; gap: 8px; align-items: baseline; padding: 0 4px; }
.sys .body { overflow-wrap: anywhere; }
.sys .badge { font-size: 11px; }
.sys time, .msg time, .question time { font-size: 12px; color: var(--muted); margin-left: auto; white-space: nowrap; }
.sys.good { color: var(--ok); }
.sys.bad { color: var(--bad); }
details.tool { border: 1px solid var(--line); border-radius: 8px; background: var(--panel); font-size: 13px; }
details.tool > summary { cursor: pointer; padding: 6px 10px; display: flex; gap: 8px; align-items: baseline; list-style: none; }
details.tool > summary::-webkit-details-marker { display: none; }
details.tool > summary::before { content: "\25B8"; color: var(--muted); }
details.tool[open] > summary::before { content: "\25BE"; }
details.tool .name { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-weight: 600; }
details.tool .arg { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; color: var(--muted);
  overflow: hidden; text-overflow: ellipsis; white-space: nowrap; min-width: 0; flex: 1; }
details.tool .state { white-space: nowrap; color: var(--muted); }
details.tool.err .state { color: var(--bad); }
details.tool.ok .state { color: var(--ok); }
pre { margin: 0; padding: 8px 10px; background: var(--code); border-top: 1px solid var(--line); overflow: auto;
  max-height: 360px; font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; white-space: pre-wrap; overflow-wrap: anywhere; }
.question { border: 1px solid var(--warn); border-radius: var(--radius); padding: 10px 14px; background: var(--panel); }
.question .who { color: var(--warn); font-size: 12px; font-weight: 600; margin-bottom: 4px; display: flex; }
.question time { font-weight: 400; }
.question.answered { border-color: var(--line); }
.question.answered button { opacity: .55; cursor: default; }
.choices { display: flex; gap: 8px; flex-wrap: wrap; margin-top: 8px; }
.error { border: 1px solid var(--bad); color: var(--bad); border-radius: var(--radius); padding: 8px 14px; }
.error code { font-size: 12px; }
.composer { position: sticky; bottom: 0; background: var(--bg); padding: 12px 0 4px; }
form.panel .row { margin-top: 14px; }
.composer .row { margin-top: 8px; }
.composer .name { width: 180px; }
.hint { font-size: 12px; color: var(--muted); }
.notice { color: var(--bad); font-size: 13px; min-height: 1em; }
@media (max-width: 640px) { .grid2 { grid-template-columns: 1fr; } .msg.user { margin-left: 12px; } .msg.assistant { margin-right: 12px; } }
`;
