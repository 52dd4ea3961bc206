// The console's page, style and scripts, as the admin listener serves them
// (src/http/admin/console-route.ts). The page and style are kept as strings so that
// `npm run build` alone puts them in dist/ (the image copies dist/ only); the scripts are
// this folder's modules, compiled by its own tsconfig.json into dist/console/.
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

/** Where the console's compiled scripts are: next to this module once built (dist/console). */
export const CONSOLE_SCRIPTS_DIR = fileURLToPath(new URL('.', import.meta.url))

/** The scripts the page loads, and only these: no path of a request reaches the file system. */
export const CONSOLE_SCRIPTS: ReadonlySet<string> = new Set(['console-page.js', 'console-format.js', 'console-cluster.js', 'console-charts.js', 'console-dom.js', 'console-sections.js', 'console-deliveries.js'])

// The chart library's minified script and style, from the `uplot` package (a dependency,
// so in the image's node_modules): served by the gateway itself, no other origin.
const require = createRequire(import.meta.url)
export const CONSOLE_LIBRARY = {
  'uPlot.iife.min.js': { path: require.resolve('uplot/dist/uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' },
  'uPlot.min.css': { path: require.resolve('uplot/dist/uPlot.min.css'), type: 'text/css; charset=utf-8' },
} as const

// The token's field has no name: a sign-in the browser submits itself, before the page's
// script runs, sends the form without it (never the token in the URL). It is a
// `one-time-code` field, which password managers keep out of their passwords (Chromium's
// saves none from it and fills none into it; `off` is ignored on a password field): the
// token stays in the tab alone (docs/decisions/console-token-field.md).
export const CONSOLE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Report gateway: operations console</title>
<link rel="icon" href="/console/icon.svg">
<link rel="stylesheet" href="/console/uPlot.min.css">
<link rel="stylesheet" href="/console/console.css">
<script src="/console/uPlot.iife.min.js"></script>
<script type="module" src="/console/console-page.js"></script>
</head>
<body>
<header>
  <h1>Report gateway <span class="muted">operations console</span></h1>
  <form id="sign-in" class="row" autocomplete="off">
    <label for="token">Admin token</label>
    <input id="token" type="password" autocomplete="one-time-code" spellcheck="false" autocapitalize="off" required aria-describedby="token-help">
    <button type="submit">Open</button>
    <p id="token-help" class="muted">Kept in this tab only (sessionStorage), sent as the bearer token of the admin calls.</p>
  </form>
  <div id="signed-in" class="row" hidden>
    <p id="updated" class="muted" role="status"></p>
    <button id="sign-out" type="button">Forget the token</button>
  </div>
</header>
<p id="error" role="alert" hidden></p>
<main id="data" hidden>
  <p id="health" class="health" role="status" aria-live="polite" hidden></p>
  <section aria-labelledby="h-replicas"><h2 id="h-replicas">Replicas</h2><p id="cluster-note" class="muted"></p><div id="replicas"></div></section>
  <section aria-labelledby="h-history"><h2 id="h-history">Charts <span class="muted">(10-second buckets)</span></h2>
    <div class="row"><label for="chart-scope">Charts of</label><select id="chart-scope"></select>
      <label for="chart-window">over</label><select id="chart-window"><option value="fit" selected>since the data starts</option><option value="5m">the last 5 minutes</option><option value="15m">the last 15 minutes</option><option value="1h">the last hour</option></select>
      <p class="muted">Times in UTC; hover one for this browser's own.</p></div>
    <div class="charts">
      <figure><figcaption>Requests (per 10 s)</figcaption><div id="chart-requests" class="chart"></div><p id="chart-requests-summary" class="muted"></p></figure>
      <figure><figcaption>Error answers: 4xx, 5xx and 429 (per 10 s)</figcaption><div id="chart-errors" class="chart"></div><p id="chart-errors-summary" class="muted"></p></figure>
      <figure><figcaption>Hit ratio of report reads (%)</figcaption><div id="chart-hits" class="chart"></div><p id="chart-hits-summary" class="muted"></p></figure>
      <figure><figcaption>Platform calls (per 10 s) and their latency: p50, p99 and the floor (ms)</figcaption><div id="chart-platform" class="chart"></div><p id="chart-platform-summary" class="muted"></p></figure>
      <figure><figcaption>Platform calls in flight and waiting, and the limit in force</figcaption><div id="chart-inflight" class="chart"></div><p id="chart-inflight-summary" class="muted"></p></figure>
    </div>
  </section>
  <section aria-labelledby="h-team-errors"><h2 id="h-team-errors">429s and errors per team</h2><div id="team-errors"></div></section>
  <section aria-labelledby="h-credentials"><h2 id="h-credentials">Platform credentials</h2><div id="credentials"></div></section>
  <div class="pair">
    <section aria-labelledby="h-redis"><h2 id="h-redis">Redis</h2><div id="redis"></div></section>
    <section aria-labelledby="h-cache"><h2 id="h-cache">Report cache (this replica)</h2><div id="cache"></div></section>
  </div>
  <section aria-labelledby="h-lookup"><h2 id="h-lookup">Look up a cached report</h2>
    <form id="lookup" class="row" autocomplete="off">
      <label for="lookup-url">Report URL</label>
      <input id="lookup-url" name="url" spellcheck="false" placeholder="/api/v1/report/campaigns/get?advertiserId=101&amp;dateFrom=…&amp;dateTo=…">
      <button type="submit">Look up</button>
    </form>
    <div id="lookup-result" role="status" aria-live="polite"></div>
    <button id="purge-report" type="button" class="danger" hidden>Purge this report…</button>
  </section>
  <section aria-labelledby="h-governors"><h2 id="h-governors">Governor</h2><div id="governors"></div></section>
  <section aria-labelledby="h-teams"><h2 id="h-teams">Teams</h2><div id="teams"></div></section>
  <section aria-labelledby="h-deliveries"><h2 id="h-deliveries">Webhook deliveries <span class="muted">(ended report jobs, every replica)</span></h2><div id="deliveries"></div></section>
  <section id="actions" aria-labelledby="h-actions" hidden><h2 id="h-actions">Actions</h2>
    <form id="purge-one" class="row">
      <label for="advertiser">Advertiser id</label>
      <input id="advertiser" name="advertiser" inputmode="numeric" pattern="[0-9]*" autocomplete="off">
      <button type="submit">Purge this advertiser's reports…</button>
    </form>
    <div class="row">
      <button id="purge-all" type="button" class="danger">Purge every report…</button>
      <button id="reload" type="button" aria-describedby="reload-note">Reload the teams…</button>
      <p id="reload-note" class="muted"></p>
    </div>
    <div id="action-result" role="status" aria-live="polite"></div>
  </section>
  <section aria-labelledby="h-config"><h2 id="h-config">Configuration in force <span class="muted">(the answering replica)</span></h2>
    <form id="log-level" class="row" hidden>
      <label for="log-level-value">Log level</label>
      <select id="log-level-value"><option>fatal</option><option>error</option><option>warn</option><option>info</option><option>debug</option><option>trace</option><option>silent</option></select>
      <label for="log-level-replica">on</label>
      <select id="log-level-replica"></select>
      <button type="submit">Set the log level…</button>
    </form>
    <details id="config-details"><summary id="config-summary">The settings in force</summary><div id="config"></div></details>
  </section>
  <section aria-labelledby="h-audit"><h2 id="h-audit">Audit (newest first, this replica)</h2><div id="audit"></div></section>
</main>
<dialog id="confirm" aria-labelledby="confirm-title" aria-describedby="confirm-text">
  <form method="dialog">
    <h2 id="confirm-title">Confirm</h2>
    <p id="confirm-text"></p>
    <div class="row">
      <button value="no" type="submit" autofocus>Cancel</button>
      <button id="confirm-yes" value="yes" type="submit" class="danger">Confirm</button>
    </div>
  </form>
</dialog>
</body>
</html>
`

/**
 * The page's icon, named by the page: a browser then asks for no /favicon.ico, which the
 * admin listener does not have (a 404 in the browser's console on every opening).
 */
export const CONSOLE_ICON = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#0969da"/><path d="M4 12V7m4 5V4m4 8V9" stroke="#fff" stroke-width="2" stroke-linecap="round"/></svg>'

export const CONSOLE_CSS = `:root { color-scheme: light dark; --fg: #1b1f24; --bg: #ffffff; --muted: #57606a; --line: #d0d7de; --ok: #116329; --warn: #7d4e00; --bad: #a40e26; --focus: #0969da; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9da7b3; --line: #30363d; --ok: #56d364; --warn: #e3b341; --bad: #ff7b72; --focus: #58a6ff; } }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
body { margin: 0 auto; max-width: 1400px; padding: 1rem; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
h1 { font-size: 1.4rem; margin: 0 0 .5rem; }
h2 { font-size: 1.1rem; margin: 1.2rem 0 .4rem; }
.muted { color: var(--muted); font-weight: normal; }
.row { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: .4rem 0; }
.row p { margin: 0; flex-basis: 100%; }
#signed-in p { flex-basis: auto; }
input, select { font: inherit; padding: .35rem .5rem; border: 1px solid var(--line); border-radius: 4px; background: var(--bg); color: var(--fg); min-width: 0; }
#token, #lookup-url { flex: 1 1 18rem; }
button { font: inherit; padding: .35rem .8rem; border: 1px solid var(--line); border-radius: 4px; background: var(--bg); color: var(--fg); cursor: pointer; }
button.danger { border-color: var(--bad); color: var(--bad); }
button:disabled { color: var(--muted); border-style: dashed; cursor: not-allowed; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
#error { border: 2px solid var(--bad); color: var(--bad); padding: .6rem .8rem; border-radius: 4px; font-weight: 600; }
.health { border: 2px solid currentColor; padding: .6rem .8rem; border-radius: 4px; font-weight: 600; margin: .6rem 0 0; overflow-wrap: anywhere; }
.health.ok { color: var(--ok); }
.health.warn { color: var(--warn); }
.health.bad { color: var(--bad); background: color-mix(in srgb, var(--bad) 10%, transparent); }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 28rem), 1fr)); gap: .5rem 1.5rem; }
figure { margin: 0; min-width: 0; }
figcaption { font-weight: 600; font-size: .95rem; }
figure p { margin: .2rem 0 0; font-size: .85rem; }
.chart { min-width: 0; overflow-x: auto; }
.chart .u-legend { font-size: .8rem; color: var(--fg); }
tr.self th, tr.self td { background: color-mix(in srgb, var(--focus) 8%, transparent); }
tr.gone th, tr.gone td { color: var(--muted); }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: .35rem .5rem; border-bottom: 1px solid var(--line); }
thead th { font-size: .85rem; color: var(--muted); }
.pair { display: grid; grid-template-columns: repeat(auto-fit, minmax(20rem, 1fr)); gap: 0 2rem; }
dl { margin: 0; }
dl div { display: flex; flex-wrap: wrap; gap: 0 1rem; padding: .25rem 0; border-bottom: 1px solid var(--line); }
dt { flex: 0 0 12rem; color: var(--muted); }
dd { margin: 0; flex: 1 1 12rem; overflow-wrap: anywhere; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .9em; overflow-wrap: anywhere; }
ul.plain { list-style: none; margin: 0; padding: 0; }
li.removed, li.removed code { color: var(--muted); }
.mark, .state { display: inline-block; padding: 0 .4rem; border-radius: 3px; border: 1px solid currentColor; font-size: .85rem; white-space: nowrap; }
.ok { color: var(--ok); }
.soon { color: var(--warn); }
.expired, .rejected, .missing { color: var(--bad); font-weight: 600; }
.none { color: var(--muted); }
.left { font-size: .9rem; }
time { text-decoration: underline dotted; text-underline-offset: 2px; cursor: help; }
ol.audit { margin: 0; padding-left: 1.2rem; }
ol.problems { margin: .3rem 0 0; padding-left: 1.2rem; }
ol.problems li { padding: .1rem 0; overflow-wrap: anywhere; }
.where { font-weight: 600; }
ol.audit li { padding: .2rem 0; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
dialog { max-width: min(36rem, 92vw); border: 2px solid var(--line); border-radius: 6px; color: var(--fg); background: var(--bg); }
dialog::backdrop { background: rgb(0 0 0 / 45%); }
@media (max-width: 640px) { body { padding: .6rem; } dt { flex-basis: 100%; } th, td { padding: .3rem; } }
`
