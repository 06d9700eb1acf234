"""The dashboard's style sheet and its one script, served from the sandbox itself (``/sandbox/assets/``):
no build step and nothing from outside, so it works offline and under a CSP of ``'self'`` only.

The script polls ``/sandbox/changes`` every 1.5 s and reloads the page when the sandbox's state has changed,
unless the reader is busy with it (typing in a field, a text selected, a request's details open): then it says
"paused" and waits. The header's **Pause updates** button stops the reloads until pressed again (remembered for the
browser tab, across pages and reloads: ``sessionStorage``).
"""

from __future__ import annotations

__all__ = ["POLL_MILLISECONDS", "SCRIPT", "STYLE"]

POLL_MILLISECONDS = 1500

STYLE = """\
body{font-family:system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9;font-size:14px}
header{background:#1d2330;color:#fff;padding:.6em 1.2em;display:flex;flex-wrap:wrap;gap:1em;align-items:center}
header a{color:#cfd8ea;text-decoration:none;padding:.2em .4em;border-radius:3px}
header a.here{background:#3a4560;color:#fff}
header .brand{font-weight:600;color:#fff}
header form{margin-left:auto;display:flex;gap:.4em;align-items:center}
header form.search{margin-left:0}
header form.search input{width:16em}
header input{width:5em}
#pause[aria-pressed=true]{background:#fff1c9}
#live{font-size:.8em;color:#9fe0a8}
main{padding:1em 1.2em;max-width:90em}
h1{font-size:1.3em;margin:.2em 0 .6em}
h2{font-size:1.1em;margin:1.2em 0 .4em}
table{border-collapse:collapse;width:100%;background:#fff;margin-bottom:1em}
th,td{border-bottom:1px solid #e3e6eb;padding:.35em .5em;text-align:left;vertical-align:top}
th{background:#eef0f4;font-weight:600}
code,pre{font-family:ui-monospace,monospace;font-size:.92em}
pre{background:#fff;border:1px solid #e3e6eb;padding:.5em;overflow:auto;max-height:24em;margin:.3em 0}
td pre{white-space:pre-wrap;word-break:break-all;max-width:48em}
.verdict{font-weight:600;padding:.1em .4em;border-radius:3px}
.pass,.PAID,.delivered,.valid{background:#d9f2dd;color:#17621f}
.fail,.rejected,.failed{background:#fbdcdc;color:#8a1616}
.not_observed,.initialized,.pending{background:#fff1c9;color:#6b5200}
.check_yourself,.cancelled,.expired{background:#e3e9f7;color:#28407a}
.filters{display:flex;gap:.6em;align-items:end;margin-bottom:.8em;flex-wrap:wrap}
.filters label{display:flex;flex-direction:column;font-size:.85em}
.actions{display:flex;gap:.5em;margin:.6em 0}
.actions form{display:inline}
button{cursor:pointer}
.notice{background:#fff;border-left:4px solid #28407a;padding:.5em .8em;margin-bottom:1em}
.muted{color:#6b7280}
"""

SCRIPT = """\
(function () {
  "use strict";
  var seen = document.body.getAttribute("data-version");
  var live = document.getElementById("live");
  var pause = document.getElementById("pause");
  var KEY = "pasarela-sandbox-paused";
  function paused() {
    try { return window.sessionStorage.getItem(KEY) === "1"; } catch (refused) { return false; }
  }
  function show() {
    if (pause) {
      pause.setAttribute("aria-pressed", paused() ? "true" : "false");
      pause.textContent = paused() ? "Resume updates" : "Pause updates";
    }
    if (live) { live.textContent = paused() ? "paused" : "live"; }
  }
  if (pause) {
    pause.addEventListener("click", function () {
      try {
        if (paused()) { window.sessionStorage.removeItem(KEY); } else { window.sessionStorage.setItem(KEY, "1"); }
      } catch (refused) { return; }
      show();
    });
  }
  function busy() {
    var active = document.activeElement;
    if (active && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName)) { return true; }
    if (String(window.getSelection() || "").length > 0) { return true; }
    return document.querySelector("details[open]") !== null;
  }
  function poll() {
    fetch("/sandbox/changes", {cache: "no-store", credentials: "same-origin"})
      .then(function (answer) { return answer.json(); })
      .then(function (state) {
        if (paused()) {
          if (live) { live.textContent = String(state.version) !== seen ? "paused: new data" : "paused"; }
        } else if (String(state.version) !== seen) {
          if (!busy()) { window.location.reload(); return; }
          if (live) { live.textContent = "paused: new data"; }
        } else if (live) { live.textContent = "live"; }
        window.setTimeout(poll, %(poll)d);
      }, function () {
        if (live) { live.textContent = "sandbox unreachable"; }
        window.setTimeout(poll, %(poll)d * 3);
      });
  }
  show();
  window.setTimeout(poll, %(poll)d);
}());
""".replace("%(poll)d", str(POLL_MILLISECONDS))
