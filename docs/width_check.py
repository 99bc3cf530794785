"""Do the built pages fit a laptop screen? Each HTML page of a Sphinx build, as headless Chromium shows it in a
1280 x 800 window: the page's width (``document.documentElement.scrollWidth``) against the window's
(``clientWidth``: a horizontal scrollbar when it is wider), and each table's right edge against that of the main
content's text column (``div.body``): a table past it sits behind a scrollbar or runs off the page.

    python docs/width_check.py docs/_build/html            # one line per page; exit 1 if one does not fit
    python docs/width_check.py docs/_build/html --width 1024

How: a local HTTP server serves the build and a small harness page, which loads every page in turn into an
iframe of the window's size, measures it and writes the numbers into its own DOM as JSON; ``chromium --headless
--dump-dom`` prints that DOM. (One origin, so the harness can read its iframes; one browser start for every page.)
tests/test_docs.py runs it on a fresh build and skips, saying so, where no Chromium is installed.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from typing import Any, Dict, List, Optional

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
HARNESS = "__width_check__.html"

# measure(doc, win) -> {page, client, scroll, tables: [{index, caption, width, over}]}
_HARNESS_HTML = """<!doctype html><html><body style="margin:0">
<iframe id="f" style="width:%(width)dpx;height:%(height)dpx;border:0"></iframe>
<pre id="result">pending</pre>
<script>
const pages = %(pages)s;
const out = [];
function measure(page) {
  const doc = document.getElementById("f").contentDocument;
  const root = doc.documentElement;
  const body = doc.querySelector("div.body") || doc.body;
  const cs = getComputedStyle(body);
  const right = body.getBoundingClientRect().right - parseFloat(cs.paddingRight);
  const tables = [];
  doc.querySelectorAll("div.body table").forEach((t, i) => {
    const over = Math.round(t.getBoundingClientRect().right - right);
    const first = t.querySelector("td, th");
    tables.push({index: i, width: Math.round(t.getBoundingClientRect().width), over: over,
                 first_cell: first ? first.textContent.trim().slice(0, 40) : ""});
  });
  return {page: page, client: root.clientWidth, scroll: root.scrollWidth, body_right: Math.round(right),
          tables: tables};
}
function next(k) {
  if (k === pages.length) { document.getElementById("result").textContent = JSON.stringify(out); return; }
  const f = document.getElementById("f");
  f.onload = () => { try { out.push(measure(pages[k])); } catch (e) { out.push({page: pages[k], error: String(e)}); }
                     next(k + 1); };
  f.src = pages[k];
}
next(0);
</script></body></html>
"""


def find_browser() -> Optional[str]:
    """The first Chromium-like binary on PATH (``CHROMIUM`` names one explicitly)."""
    if os.environ.get("CHROMIUM"):
        return shutil.which(os.environ["CHROMIUM"])
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def pages(html_dir: str) -> List[str]:
    """Every page of the build, relative to it (not Sphinx's _static / _sources / _images)."""
    found = []
    for dirpath, dirnames, files in os.walk(html_dir):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("_"))
        found += [os.path.relpath(os.path.join(dirpath, f), html_dir).replace(os.sep, "/")
                  for f in sorted(files) if f.endswith(".html") and f != HARNESS]
    return found


class _Handler(http.server.SimpleHTTPRequestHandler):
    harness = b""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.split("?")[0] == "/" + HARNESS:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(self.harness)))
            self.end_headers()
            self.wfile.write(self.harness)
            return
        super().do_GET()

    def log_message(self, *args: Any) -> None:
        pass


def measure(html_dir: str, width: int = 1280, height: int = 800, browser: Optional[str] = None,
            timeout: float = 240) -> List[Dict[str, Any]]:
    """Each page's measurements: ``client`` and ``scroll`` (the document's widths, px), ``tables`` (each table's
    ``width`` and ``over``, the px its right edge passes the text column's; <= 0 when it fits)."""
    browser = browser or find_browser()
    if not browser:
        raise FileNotFoundError("no Chromium binary on PATH (" + ", ".join(BROWSERS) + ")")
    names = pages(html_dir)
    handler = type("Handler", (_Handler,), {"harness": (_HARNESS_HTML % {
        "width": width, "height": height, "pages": json.dumps(names)}).encode()})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(handler, directory=os.path.abspath(html_dir)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{HARNESS}"
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--window-size={width + 20},{height + 200}", "--virtual-time-budget=120000", "--dump-dom", url]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    finally:
        server.shutdown()
        server.server_close()
    m = re.search(r'<pre id="result">(.*?)</pre>', r.stdout, re.S)
    if not m or m.group(1) == "pending":
        raise RuntimeError(f"{browser} gave no measurements (exit {r.returncode}):\n{r.stdout[-2000:]}\n"
                           f"{r.stderr[-2000:]}")
    import html

    return json.loads(html.unescape(m.group(1)))


def problems(results: List[Dict[str, Any]]) -> List[str]:
    """What does not fit, one line each (empty: every page fits)."""
    bad = []
    for p in results:
        if "error" in p:
            bad.append(f"{p['page']}: not measured ({p['error']})")
            continue
        if p["scroll"] > p["client"]:
            bad.append(f"{p['page']}: the page is {p['scroll']} px wide in a {p['client']} px window")
        for t in p["tables"]:
            if t["over"] > 1:
                bad.append(f"{p['page']}: table {t['index']} ({t['first_cell']!r}...) is {t['width']} px wide, "
                           f"{t['over']} px past the text column")
    return bad


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("html_dir", nargs="?", default=os.path.join(os.path.dirname(__file__), "_build", "html"))
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=800)
    args = ap.parse_args(argv)
    results = measure(args.html_dir, args.width, args.height)
    for p in results:
        if "error" not in p:
            widest = max((t["over"] for t in p["tables"]), default=None)
            print(f"{p['page']}: page {p['scroll']} / {p['client']} px, {len(p['tables'])} tables"
                  + ("" if widest is None else f", the widest {widest:+d} px past the text column"))
    bad = problems(results)
    print("\n".join(bad) if bad else f"every page fits {args.width} px")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
