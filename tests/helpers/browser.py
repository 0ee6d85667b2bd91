"""A real browser for the tests: Debian's Chromium driven by Playwright for Python.

* :func:`find_chromium`: the system Chromium (``FMHA_CHROMIUM``, else ``chromium`` /
  ``chromium-browser`` / ``google-chrome`` on ``PATH``); Playwright's own browser
  download is never used (``.ci/install-browser`` installs Debian's ``chromium``).
* :func:`serve`: a built HTML folder on a free localhost port, in a thread.
* fixture ``browser_check``: ``check(folder, pages)`` opens each page at 1400 px in
  light and dark mode and returns what :data:`PAGE_PROBLEMS_JS` measured.  The test
  fails in CI (``CI=true``) and is skipped elsewhere when Chromium or Playwright is
  missing; ``FMHA_NO_BROWSER=1`` skips it anywhere.  A page with problems is saved as
  ``tests/artifacts/<test>-<page>-<mode>.png``.

The browser runs in a child process (this file run as a script): Playwright's sync
API refuses to start in a process where an asyncio loop was left running, which other
in-process tests (myst-nb) may do, and a crashing browser cannot take pytest with it.
"""

from __future__ import annotations

import functools
import http.server
import itertools
import json
import os
import re
import shutil
import socketserver
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, Optional, Sequence

import pytest

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

MODES = ("light", "dark")


def find_chromium() -> Optional[str]:
    """The system Chromium's path, or None."""
    explicit = os.environ.get("FMHA_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).exists() else None
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


@contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve ``folder`` on ``http://127.0.0.1:<free port>/``; yields that base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d/" % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


# --------------------------------------------------------------------------- page checks

#: Measures a rendered page (all dropdowns opened first) and returns what a reader
#: would see as broken: tables wider than their container, code blocks that scroll
#: (cut commands), horizontal page scroll, diagram labels outside their segments,
#: diagram text below 4.5:1 contrast against what is really painted behind it.
PAGE_PROBLEMS_JS = r"""
() => {
  const problems = [];
  for (const d of document.querySelectorAll('details')) d.open = true;
  const px = (v) => parseFloat(v) || 0;
  const where = (el) => {
    const t = (el.textContent || '').replace(/\s+/g, ' ').trim();
    return t.slice(0, 70);
  };
  const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  // Tables: never wider than the box they sit in (a scrolling wrapper does not count).
  for (const table of document.querySelectorAll('article table, .body table, main table')) {
    let box = table.parentElement;
    while (box && (scrolls(box) || box.classList.contains('pst-scrollable-table-container')))
      box = box.parentElement;
    if (!box) continue;
    const cs = getComputedStyle(box);
    const room = box.clientWidth - px(cs.paddingLeft) - px(cs.paddingRight);
    const width = table.getBoundingClientRect().width;
    if (width > room + 1)
      problems.push(`table ${table.className}: ${Math.round(width)} px in a ` +
                    `${Math.round(room)} px box: ${where(table)}`);
    for (let el = table.parentElement; el && el !== box; el = el.parentElement)
      if (el.scrollWidth > el.clientWidth + 1)
        problems.push(`table ${table.className} scrolls sideways: ${where(table)}`);
  }
  // Code blocks: nothing hidden behind a horizontal scroll.
  for (const pre of document.querySelectorAll('pre')) {
    if (pre.closest('.fmha-name')) continue;
    if (pre.scrollWidth > pre.clientWidth + 1)
      problems.push(`code block cut (${pre.scrollWidth} > ${pre.clientWidth} px): ${where(pre)}`);
  }
  // Sub-headings are headings: a class name in one stays its own width (not a
  // full-width bar) and the words after it stay on its line.
  for (const rubric of document.querySelectorAll('p.rubric.fmha-subheading')) {
    const code = rubric.querySelector('code');
    if (!code) continue;
    const r = rubric.getBoundingClientRect(), c = code.getBoundingClientRect();
    if (c.width > 0.9 * r.width && code.textContent.length < 60)
      problems.push(`sub-heading drawn as a full-width bar: ${where(rubric)}`);
    if (rubric.textContent.trim() !== code.textContent.trim() && c.height * 1.8 < r.height)
      problems.push(`sub-heading broken over lines: ${where(rubric)}`);
  }
  // Table text never breaks inside a word. A break where no blank is may only be after
  // ::, <, ,, . (not inside a number) or a path's /, or between two tokens (before an
  // inner _, in a part longer than 12 characters); never inside a kernel-name token
  // (_dropout_wg16), a number, a file.py:line reference or a word of up to 12
  // characters. (A zero-width space from CSS generated content is no text here.)
  const strong = (w, i) => (w[i - 1] === ':' && w[i - 2] === ':') || '<,/'.includes(w[i - 1]) ||
      (w[i - 1] === '.' && !/\d/.test(w[i]));
  // (a long tile shape, b128x128x32x128, may break between its numbers, before an x)
  const badBreak = (w, i) => {
    if (w.length <= 12) return true;
    // (a long hyphenated word, non-deterministic, may break after its hyphen)
    if (w[i - 1] === '-' && /^[A-Za-z]+(-[A-Za-z]+)+$/.test(w)) return false;
    if (w[i] === 'x' && /\d/.test(w[i - 1]) && /\d/.test(w[i + 1] || '')) return false;
    if (/^_[A-Za-z0-9_]+$/.test(w)) return true;
    if (/^[\w./-]*\.\w+:\d+$/.test(w)) return w[i - 1] !== '/';
    if (/\d/.test(w[i - 1]) && /\d/.test(w[i])) return true;
    if (strong(w, i)) return false;
    if (w[i] !== '_' || !/[A-Za-z0-9]/.test(w[i - 1])) return true;
    let a = i - 1, b = i;  // the part (between strong breaks) around an inner _
    while (a > 0 && !strong(w, a)) a--;
    while (b < w.length && !strong(w, b)) b++;
    return b - a <= 12;
  };
  for (const cell of document.querySelectorAll('table.fmha-table td, table.fmha-table th')) {
    const chars = [];  // [character, top of its line box]
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      range.selectNodeContents(n);
      const rects = range.getClientRects();
      if (!rects.length) {  // a blank collapsed at a line's end: no box, still a blank
        for (const ch of n.data) chars.push([ch, null]);
        continue;
      }
      if (rects.length === 1) {
        for (const ch of n.data) chars.push([ch, rects[0].top]);
        continue;
      }
      for (let i = 0; i < n.data.length; i++) {
        range.setStart(n, i);
        range.setEnd(n, i + 1);
        const r = range.getClientRects();
        chars.push([n.data[i], r.length ? r[0].top : null]);
      }
    }
    const text = chars.map(c => c[0]).join('');
    let last = -1;  // the last character with a box
    for (let i = 0; i < chars.length; i++) {
      const top1 = chars[i][1];
      if (top1 === null) continue;
      const before = last, top0 = last < 0 ? null : chars[last][1];
      last = i;
      if (top0 === null || top1 <= top0 + 2 || /\s/.test(text.slice(before, i + 1)))
        continue;
      let a = i, b = i;
      while (a > 0 && !/\s/.test(text[a - 1])) a--;
      while (b < text.length && !/\s/.test(text[b])) b++;
      const word = text.slice(a, b);
      if (badBreak(word, i - a))
        problems.push(`word broken in a table: "${word.slice(0, i - a)}|${word.slice(i - a)}"`);
    }
  }
  // Keep/Drop columns keep their width beside a long reason.
  for (const cell of document.querySelectorAll(
      'table.fmha-decisions td:nth-child(2), table.fmha-decisions td:nth-child(3)')) {
    const em = parseFloat(getComputedStyle(cell).fontSize);
    const width = cell.getBoundingClientRect().width;
    if (width < 8 * em)
      problems.push(`Keep/Drop column squeezed to ${Math.round(width)} px: ${where(cell)}`);
  }
  // The page's content never reaches past the window (what the theme draws around it,
  // such as a header, is the theme's; inside a sideways-scrolling box is fine).
  const content = document.querySelector('article') || document.querySelector('main') ||
      document.body;
  for (const el of content.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (!r.width || r.right <= window.innerWidth + 1) continue;
    let inside = false;
    for (let a = el.parentElement; a && a !== content.parentElement; a = a.parentElement)
      if (scrolls(a)) inside = true;
    if (!inside) {
      problems.push(`the content is wider than the window (${Math.round(r.right)} > ` +
                    `${window.innerWidth} px): ${el.tagName.toLowerCase()} ${where(el)}`);
      break;
    }
  }
  // Colours: the colour really painted (opacity included) over what is behind it.
  const parse = (c) => {
    const m = c.match(/rgba?\(([^)]+)\)/);
    if (!m) return [0, 0, 0, 0];
    const v = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number);
    return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1];
  };
  const over = (top, bottom) => {
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)).concat([1]);
  };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    let colour = [255, 255, 255, 1];
    for (let i = layers.length - 1; i >= 0; i--) colour = over(layers[i], colour);
    return colour;
  };
  const opacity = (el) => {
    let o = 1;
    for (let e = el; e; e = e.parentElement) o *= parseFloat(getComputedStyle(e).opacity);
    return o;
  };
  const luminance = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const contrast = (a, b) => {
    const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  const diagrams = document.querySelectorAll('.fmha-name');
  for (const seg of document.querySelectorAll('.fmha-name .fmha-seg')) {
    const box = seg.getBoundingClientRect();
    for (const part of seg.querySelectorAll('.fmha-lbl, .fmha-tok')) {
      const r = part.getBoundingClientRect();
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 ||
          r.bottom > box.bottom + 0.5 || part.scrollWidth > part.clientWidth + 1)
        problems.push(`diagram: "${part.textContent}" is not inside its segment "${where(seg)}"`);
      const bg = background(part);
      const fg = over(parse(getComputedStyle(part).color).slice(0, 3).concat(
          [parse(getComputedStyle(part).color)[3] * opacity(part)]), bg);
      const ratio = contrast(fg, bg);
      if (ratio < 4.5)
        problems.push(`diagram: "${part.textContent}" contrast ${ratio.toFixed(2)}:1 < 4.5:1`);
    }
  }
  return {problems, diagrams: diagrams.length,
          tables: document.querySelectorAll('table').length,
          pageLuminance: luminance(background(document.querySelector('article') || document.body))};
}
"""




#: Window widths every page is read at: a desktop, and a narrow window (820 px, where
#: the theme's sidebars fold away and tables have the least room).
WIDTHS = (1400, 820)


def check_pages(folder: Path, pages: Sequence[str], shots: Path,
                prefix: str) -> Dict[str, Dict[str, dict]]:
    """{page: {"<mode> <width>px": measurements}} for ``pages`` of the built site
    ``folder``, each in light and dark mode at every width of :data:`WIDTHS`
    (Playwright, this process); pages with problems are saved as
    ``shots/<prefix>-<page>-<mode>-<width>.png``."""
    from playwright.sync_api import sync_playwright

    results: Dict[str, Dict[str, dict]] = {}
    with serve(folder) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        try:
            for page_name, mode, width in itertools.product(pages, MODES, WIDTHS):
                context = browser.new_context(viewport={"width": width, "height": 900},
                                              color_scheme=mode)
                page = context.new_page()
                page.goto(base + page_name, wait_until="load")
                if mode == "dark":
                    # pydata-sphinx-theme follows data-mode (auto: prefers-color-scheme);
                    # set it so the check does not depend on the theme's default.
                    page.evaluate("() => { const h = document.documentElement;"
                                  " h.dataset.mode = 'dark'; h.dataset.theme = 'dark'; }")
                found = page.evaluate(PAGE_PROBLEMS_JS)
                results.setdefault(page_name, {})["%s %dpx" % (mode, width)] = found
                if found["problems"]:
                    shots.mkdir(parents=True, exist_ok=True)
                    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", "%s-%s-%s-%d.png"
                                  % (prefix, page_name, mode, width))
                    page.screenshot(path=str(shots / name), full_page=True)
                context.close()
        finally:
            browser.close()
    return results


def reading_problems(results: Dict[str, Dict[str, dict]]) -> list:
    """Every problem of :func:`check_pages`'s results as ``page (mode): problem``, plus
    a page whose dark mode is not dark (or light not light): else "both modes" would
    check one mode twice."""
    out = []
    for page, modes in results.items():
        for mode, found in modes.items():
            luminance = found["pageLuminance"]
            dark = mode.startswith("dark")
            if (dark and luminance >= 0.2) or (not dark and luminance <= 0.8):
                out.append("%s (%s): the page is not in %s mode (luminance %.2f)"
                           % (page, mode, mode, luminance))
            out += ["%s (%s): %s" % (page, mode, p) for p in found["problems"]]
    return out


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def require_browser() -> str:
    """The system Chromium's path, once Playwright is importable too.

    Without them: in CI (``CI=true``, where ``.ci/run`` installs Chromium) the test
    fails, so a browser test never goes silently missing there; on a developer's
    machine it is skipped with what to do.  ``FMHA_NO_BROWSER=1`` skips it anywhere.
    """
    if _flag("FMHA_NO_BROWSER"):
        pytest.skip("FMHA_NO_BROWSER=1")
    missing = None
    chromium = find_chromium()
    if chromium is None:
        missing = ("no Chromium found: run `bash .ci/install-browser` (Debian's chromium, as "
                   "root) or set FMHA_CHROMIUM; FMHA_NO_BROWSER=1 skips the browser tests")
    else:
        try:
            import playwright  # noqa: F401
        except ImportError:
            missing = "Playwright for Python is missing: pip install -e '.[test]'"
    if missing is not None:
        if _flag("CI"):
            pytest.fail(missing, pytrace=False)
        pytest.skip(missing)
    assert chromium is not None
    return chromium


@pytest.fixture
def browser_check(request):
    """``check(folder, pages)`` -> {page: {"light"|"dark": measurements}}."""
    require_browser()

    def check(folder: Path, pages: Sequence[str]) -> Dict[str, Dict[str, dict]]:
        prefix = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
        proc = subprocess.run([sys.executable, __file__, str(folder), str(ARTIFACTS), prefix,
                               *pages], capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, "browser check failed:\n" + proc.stderr[-3000:]
        return json.loads(proc.stdout)

    return check


if __name__ == "__main__":
    folder_arg, shots_arg, prefix_arg, *page_args = sys.argv[1:]
    json.dump(check_pages(Path(folder_arg), page_args, Path(shots_arg), prefix_arg), sys.stdout)
