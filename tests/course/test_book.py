"""The book (``make book``) as a reader sees it: the built site opened in Chromium, offline.

The site in ``book/_build/html`` is served on 127.0.0.1 and every page of it is opened in
headless Chromium with every request to another host blocked (and counted). On every page:
no request fails and none goes to another host; every image (PNG, and the drawings' SVG)
loads with a non-zero size; every equation is typeset by MathJax (no ``$$``, ``\\(`` or
``\\[`` left in the text, no MathJax error); no JavaScript error; and nothing sticks out to
the right at a laptop's width or a phone's. Each chapter links its learner's copy
(``notebooks/NN_name.ipynb``), which the site serves as it is in the repository. Links inside
the site that carry an anchor (``NN_name.ipynb#heading`` in a notebook) lead to an element
with that id. The search page finds each chapter by a word that only that chapter uses.

Marked ``book``: ``make test`` leaves it out, ``make test-book`` (CI's fifth stage) builds the
book and runs it. Without the built site, Chromium or playwright it skips, and it fails
instead when ``TENSORLIB_REQUIRE_BOOK=1`` (as ``make test-book`` sets).
``TENSORLIB_BOOK_SCREENSHOTS=DIR`` saves screenshots of three chapters there (a drawing, a
plot, equations), as committed in ``docs/images/book-*.png``.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from helpers import headless_chromium

pytestmark = pytest.mark.book

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("TENSORLIB_BOOK_SITE", ROOT / "book" / "_build" / "html"))
LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}
HOW_TO_RUN = "run `make test-book` (it installs the book extra, builds the book and chromium)"
PAGE_TIMEOUT_MS = 60_000
OVERFLOW_TOLERANCE_PX = 1   # sub-pixel layout rounding
CHAPTER = re.compile(r"^\d\d[a-z]?_\w+$")
# Three chapters for the screenshots: (chapter, what to show, the element, file name).
SCREENSHOTS = [
    ("01_scalar_autograd", "a drawing", "img[src$='.svg']", "book-01-scalar-autograd.png"),
    ("05_matmul_softmax_cross_entropy", "equations", "div.math",
     "book-05-matmul-backward.png"),
    ("12a_watching_training", "a plot", ".cell_output img[src$='.png']",
     "book-12a-watching-training.png"),
]

# Runs in the page: waits for MathJax's first typesetting where the page loads it, then
# measures every image, inline SVG and equation of the article, and finds raw TeX left over.
CHECK_PAGE_JS = r"""
async () => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main')
      || document.body;
  const usesMathJax = !!document.querySelector('script[src*="mathjax/tex-chtml.js"]');
  let mathJaxReady = !usesMathJax;
  if (usesMathJax) {
    const deadline = Date.now() + 30000;
    while (!(window.MathJax && MathJax.startup && MathJax.startup.promise)
           && Date.now() < deadline) {
      await new Promise(done => setTimeout(done, 50));
    }
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      await MathJax.startup.promise;
      mathJaxReady = true;
    }
  }
  await document.fonts.ready;   // MathJax's fonts load once its equations are laid out
  const images = [];
  for (const img of article.querySelectorAll('img')) {
    img.scrollIntoView({block: 'center'});
    if (!img.complete) {
      await new Promise(done => { img.addEventListener('load', done, {once: true});
                                  img.addEventListener('error', done, {once: true}); });
    }
    try { await img.decode(); } catch (error) { /* broken: reported as not loaded */ }
    const box = img.getBoundingClientRect();
    images.push({src: img.getAttribute('src'), loaded: img.complete && img.naturalWidth > 0,
                 width: box.width, height: box.height});
  }
  window.scrollTo(0, 0);
  const inlineSvgs = [...article.querySelectorAll('svg')]
      .filter(svg => !svg.closest('mjx-container') && !svg.parentElement.closest('svg')
                     && svg.checkVisibility({visibilityProperty: true}))
      .map(svg => { const box = svg.getBoundingClientRect();
                    return {width: box.width, height: box.height}; });
  const equations = [...article.querySelectorAll('.math')];
  const untypeset = equations.filter(e => !e.querySelector('mjx-container'))
      .map(e => e.textContent.trim().slice(0, 80));
  const mathErrors = [...article.querySelectorAll('mjx-merror, [data-mjx-error]')]
      .map(e => (e.getAttribute('data-mjx-error') || e.textContent).slice(0, 80));
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT, {acceptNode: node =>
      node.parentElement.closest('pre, code, script, style, textarea, mjx-container')
          ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
  const rawTex = [], rawRst = [];
  while (walker.nextNode()) {
    const text = walker.currentNode.nodeValue;
    if (/\$\$|\\\(|\\\[|\\begin\{|\$[^\s$][^$]*\$/.test(text)) {
      rawTex.push(text.trim().slice(0, 80));
    }
    if (/(^|\n)\s*\.\. [a-z:-]+::/.test(text)) rawRst.push(text.trim().slice(0, 80));
  }
  const anchors = [...document.querySelectorAll('a[href*="#"]')].map(a => a.href)
      .filter(href => href.startsWith(location.origin));
  const brokenFonts = [...document.fonts].filter(font => font.status === 'error')
      .map(font => font.family);
  const ids = [...document.querySelectorAll('[id]')].map(e => e.id);
  const copyLink = document.querySelector('a.learner-copy-link');
  let learnerCopy = null;
  if (copyLink) {
    const reply = await fetch(copyLink.href);
    learnerCopy = {href: copyLink.getAttribute('href'), status: reply.status,
                   text: reply.ok ? await reply.text() : ''};
  }
  return {mathJaxReady, images, inlineSvgs, equations: equations.length, untypeset, brokenFonts,
          mathErrors, rawTex, rawRst, anchors, ids, learnerCopy};
}
"""

# Runs in the page: waits for MathJax's first typesetting where the page loads it.
MATHJAX_READY_JS = """
async () => {
  if (!document.querySelector('script[src*="mathjax/tex-chtml.js"]')) return;
  const deadline = Date.now() + 30000;
  while (!(window.MathJax && MathJax.startup && MathJax.startup.promise) && Date.now() < deadline) {
    await new Promise(done => setTimeout(done, 50));
  }
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await document.fonts.ready;
}
"""

# Runs in the page: how far the page is wider than the window, and the outermost elements that
# stick out to the right of it (an element inside a box that scrolls sideways does not count).
OVERFLOW_JS = r"""
tolerance => {
  const width = document.documentElement.clientWidth;
  const excess = document.documentElement.scrollWidth - width;
  const scrolls = element => {
    for (let e = element.parentElement; e; e = e.parentElement) {
      const overflow = getComputedStyle(e).overflowX;
      if (overflow === 'auto' || overflow === 'scroll') return true;
    }
    return false;
  };
  const describe = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
      + [...e.classList].slice(0, 3).map(c => '.' + c).join('');
  const sticking = [];
  for (const element of document.body.querySelectorAll('*')) {
    const box = element.getBoundingClientRect();
    if (box.width === 0 || box.right <= width + tolerance || scrolls(element)) continue;
    // MathJax's copy for screen readers is clipped to nothing; its equation is measured.
    if (element.parentElement.closest('mjx-container')) continue;
    if (!element.checkVisibility({visibilityProperty: true})) continue;
    if (sticking.some(outer => outer.contains(element))) continue;
    sticking.push(element);
  }
  // Text that spills out of its box (a long word in a heading): the innermost such boxes.
  const spilling = [];
  for (const element of document.body.querySelectorAll('*')) {
    const box = element.getBoundingClientRect();
    if (element.scrollWidth <= element.clientWidth + tolerance || element.clientWidth === 0
        || box.left + element.scrollWidth <= width + tolerance
        || getComputedStyle(element).overflowX !== 'visible' || scrolls(element)
        || element.closest('mjx-container')) continue;
    spilling.push(element);
  }
  const innermost = spilling.filter(e => !spilling.some(other => other !== e && e.contains(other)));
  return {excess, sticking: [
      ...sticking.slice(0, 5).map(e =>
          `${describe(e)} (right edge ${Math.round(e.getBoundingClientRect().right)} px)`),
      ...innermost.slice(0, 5).map(e =>
          `text of ${describe(e)} (${Math.round(e.getBoundingClientRect().left + e.scrollWidth)}`
          + ` px): ${JSON.stringify(e.textContent.trim().slice(0, 40))}`)]};
}
"""

# Runs on the search page: for each chapter, the first of its candidate words that Sphinx's
# search (searchtools.js) can match in that chapter alone: its stem is a term of that page
# only; no other page's title term contains the stem; and the word is in no title, index
# entry or API object name of another page.
UNIQUE_TERMS_JS = r"""
candidates => {
  const index = Search._index;
  const stemmer = new Stemmer();
  const docs = value => value === undefined ? [] : (Array.isArray(value) ? value : [value]);
  const objectDocs = word => Object.entries(index.objects).flatMap(([prefix, matches]) =>
      matches.filter(match => ((prefix ? prefix + '.' : '') + match[4]).toLowerCase()
                                  .includes(word)).map(match => match[0]));
  const titleDocs = word => Object.entries(index.alltitles)
      .filter(([title]) => title.toLowerCase().includes(word))
      .flatMap(([, found]) => found.map(([doc]) => doc));
  const entryDocs = word => Object.entries(index.indexentries)
      .filter(([entry]) => entry.includes(word)).flatMap(([, found]) => found.map(([doc]) => doc));
  const chosen = {};
  for (const [docname, words] of Object.entries(candidates)) {
    const doc = index.docnames.indexOf(docname);
    const only = list => list.every(d => d === doc);
    chosen[docname] = null;
    for (const word of words) {
      const stem = stemmer.stemWord(word.toLowerCase());
      const titleTerms = Object.entries(index.titleterms)
          .filter(([term]) => term.includes(stem)).flatMap(([, found]) => docs(found));
      const inText = docs(index.terms[stem]);
      if (inText.length === 1 && inText[0] === doc && only(titleTerms)
          && only(objectDocs(word)) && only(titleDocs(word)) && only(entryDocs(word))) {
        chosen[docname] = word;
        break;
      }
    }
  }
  return chosen;
}
"""

# Runs in the page: scrolls so that what leads to the element (the section of an equation,
# the text before a notebook cell) starts just under the page's header.
FRAME_JS = """
element => {
  const cell = element.closest('.cell');
  const start = element.matches('.math') ? element.closest('section')
      : (cell && cell.previousElementSibling) || element;
  // The article's header bar (48 px) stays at the top of the window.
  window.scrollBy({top: start.getBoundingClientRect().top - 60, behavior: 'instant'});
}
"""

SEARCH_DONE_JS = """
() => { const summary = document.querySelector('#search-results .search-summary');
        return !!summary && summary.textContent.includes('Search finished'); }
"""


@dataclass
class Traffic:
    """Every request the pages made, counted as the site's own, another host's, or failed."""

    origin: str
    own: int = 0
    other_hosts: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


@dataclass
class Tally:
    pages: int = 0
    images: int = 0
    svgs: int = 0
    inline_svgs: int = 0
    equations: int = 0
    anchors: int = 0
    problems: list[str] = field(default_factory=list)


def fail_or_skip(reason: str) -> None:
    """Skip with how to run the test; fail instead when the book test is required."""
    message = f"{reason}; {HOW_TO_RUN}"
    if os.environ.get("TENSORLIB_REQUIRE_BOOK") == "1":
        pytest.fail(f"TENSORLIB_REQUIRE_BOOK=1 but {message}", pytrace=False)
    pytest.skip(message)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site_url():
    """The built site, served on 127.0.0.1 by a thread of this process."""
    if not (SITE / "index.html").is_file():
        fail_or_skip(f"the book is not built ({SITE} has no index.html)")
    handler = functools.partial(QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def chromium_browser():
    """Headless system Chromium driven by Playwright (skips when either is missing)."""
    with headless_chromium(fail_or_skip) as browser:
        yield browser


def offline_context(browser, origin: str, traffic: Traffic, viewport: dict):
    """A browser context in which every request to a host other than the site is blocked and
    counted, and every failed request and HTTP error is recorded."""
    context = browser.new_context(viewport=viewport)

    def route(route) -> None:
        url = route.request.url
        if url.startswith(origin + "/"):
            traffic.own += 1
            route.continue_()
        elif url.startswith(("data:", "blob:", "about:")):
            route.continue_()
        else:
            traffic.other_hosts.append(url)
            route.abort("blockedbyclient")

    def failed(request) -> None:
        if request.url.startswith(origin + "/"):
            traffic.failed.append(f"{request.url}: {request.failure}")

    def response(reply) -> None:
        if reply.status >= 400:
            traffic.failed.append(f"{reply.url}: HTTP {reply.status}")

    context.route("**/*", route)
    context.on("requestfailed", failed)
    context.on("response", response)
    return context


def site_pages() -> list[str]:
    """Every HTML page of the site, as paths from its root (the theme's templates left out)."""
    return sorted(path.relative_to(SITE).as_posix() for path in SITE.rglob("*.html")
                  if path.relative_to(SITE).parts[0] != "_static")


def chapter_words(docname: str) -> list[str]:
    """Candidate search words for a chapter: the words of its notebook's Markdown cells, the
    ones it uses most first."""
    notebook = ROOT / "notebooks" / "solutions" / f"{docname}.ipynb"
    counts: dict[str, int] = {}
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\([^)]*\.ipynb[^)]*\)", " ",
                          "".join(cell["source"]), flags=re.S)
            for word in re.findall(r"\b[a-z]{5,}\b", text):
                counts[word] = counts.get(word, 0) + 1
    return sorted(counts, key=lambda word: (-counts[word], -len(word), word))


def check_learner_copy(chapter: str, copy: dict | None) -> list[str]:
    """A chapter links its learner's copy, and the site serves that notebook as it is."""
    if copy is None:
        return ["no link to the learner's copy"]
    expected = ROOT / "notebooks" / f"{chapter}.ipynb"
    if copy["href"] != f"notebooks/{chapter}.ipynb" or copy["status"] != 200:
        return [f"the learner's copy link {copy['href']!r} answers HTTP {copy['status']}"]
    if json.loads(copy["text"]) != json.loads(expected.read_text(encoding="utf-8")):
        return [f"the learner's copy served is not {expected.relative_to(ROOT)}"]
    return []


def check_page(page, url: str, name: str, tally: Tally) -> tuple[list[str], list[str]]:
    """Open one page and check it at a laptop's width, then at a phone's; returns the
    same-site links with an anchor that it holds, and the ids of its elements."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_viewport_size(LAPTOP)
    page.goto(url, wait_until="load", timeout=PAGE_TIMEOUT_MS)
    shown = page.evaluate(CHECK_PAGE_JS)
    problems = [f"JavaScript error: {error}" for error in errors]
    if not shown["mathJaxReady"]:
        problems.append("MathJax did not start")
    for image in shown["images"]:
        kind = "SVG" if image["src"].endswith(".svg") else "image"
        if not image["loaded"] or image["width"] <= 0 or image["height"] <= 0:
            problems.append(f"{kind} {image['src']} not shown (loaded {image['loaded']}, "
                            f"{image['width']:.0f} x {image['height']:.0f} px)")
    for svg in shown["inlineSvgs"]:
        if svg["width"] <= 0 or svg["height"] <= 0:
            problems.append(f"an inline SVG of size {svg['width']} x {svg['height']}")
    problems += [f"font not loaded: {family}" for family in shown["brokenFonts"]]
    if CHAPTER.match(name.removesuffix(".html")):
        problems += check_learner_copy(name.removesuffix(".html"), shown["learnerCopy"])
    problems += [f"equation not typeset: {text!r}" for text in shown["untypeset"]]
    problems += [f"MathJax error: {text!r}" for text in shown["mathErrors"]]
    problems += [f"raw TeX in the text: {text!r}" for text in shown["rawTex"]]
    problems += [f"reStructuredText shown as text: {text!r}" for text in shown["rawRst"]]
    for label, viewport in (("laptop", LAPTOP), ("phone", PHONE)):
        if viewport is not LAPTOP:   # a phone opens the page at its own width
            page.set_viewport_size(viewport)
            page.goto(url, wait_until="load", timeout=PAGE_TIMEOUT_MS)
            page.evaluate(MATHJAX_READY_JS)
        overflow = page.evaluate(OVERFLOW_JS, OVERFLOW_TOLERANCE_PX)
        if overflow["excess"] > OVERFLOW_TOLERANCE_PX or overflow["sticking"]:
            problems.append(f"wider than a {label}'s window ({viewport['width']} px) by "
                            f"{overflow['excess']} px: {', '.join(overflow['sticking'])}")
    tally.pages += 1
    tally.svgs += sum(image["src"].endswith(".svg") for image in shown["images"])
    tally.images += sum(not image["src"].endswith(".svg") for image in shown["images"])
    tally.inline_svgs += len(shown["inlineSvgs"])
    tally.equations += shown["equations"]
    tally.problems += [f"{name}: {problem}" for problem in problems]
    return shown["anchors"], shown["ids"]


def save_screenshot(page, url: str, selector: str, path: Path) -> None:
    """A laptop-sized window of a chapter, scrolled so that the element is near its top."""
    page.set_viewport_size(LAPTOP)
    page.goto(url, wait_until="load", timeout=PAGE_TIMEOUT_MS)
    page.evaluate(CHECK_PAGE_JS)
    page.locator(selector).first.evaluate(FRAME_JS)
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => "
                  "requestAnimationFrame(() => done())))")
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=path)


def test_every_page_of_the_book_offline_in_chromium(site_url, chromium_browser, capsys):
    """Every page: no failed request and none to another host, every image and SVG loaded
    with a size, every equation typeset, no JavaScript error, nothing wider than a laptop's
    or a phone's window; each chapter's learner's copy served; every anchor of a link inside
    the site exists; and the search finds each chapter by a word only it uses."""
    traffic = Traffic(origin=site_url)
    tally = Tally()
    pages = site_pages()
    context = offline_context(chromium_browser, site_url, traffic, LAPTOP)
    anchors: set[str] = set()
    ids: dict[str, set[str]] = {}
    try:
        for name in pages:
            page = context.new_page()
            try:
                links, ids[name] = check_page(page, f"{site_url}/{name}", name, tally)
                anchors.update(links)
            finally:
                page.close()

        # Every same-site link with an anchor leads to an element with that id.
        for href in sorted(anchors):
            parts = urlsplit(href)
            target = parts.path.lstrip("/") or "index.html"
            if not parts.fragment:
                continue
            tally.anchors += 1
            if target not in ids:
                tally.problems.append(f"a link to {href}: no such page")
            elif unquote(parts.fragment) not in ids[target]:
                tally.problems.append(f"a link to {href}: no element with that id")

        # The search finds each chapter by a word only it uses.
        chapters = [name[:-len(".html")] for name in pages if CHAPTER.match(name[:-5])]
        page = context.new_page()
        searched = []
        try:
            page.goto(f"{site_url}/search.html", wait_until="load", timeout=PAGE_TIMEOUT_MS)
            page.wait_for_function("() => typeof Search !== 'undefined' && !!Search._index",
                                   timeout=PAGE_TIMEOUT_MS)
            terms = page.evaluate(UNIQUE_TERMS_JS, {c: chapter_words(c) for c in chapters})
            for chapter in chapters:
                term = terms[chapter]
                if term is None:
                    tally.problems.append(f"search: no word of {chapter} is in its pages alone")
                    continue
                page.goto(f"{site_url}/search.html?q={term}", wait_until="load",
                          timeout=PAGE_TIMEOUT_MS)
                page.wait_for_function(SEARCH_DONE_JS, timeout=PAGE_TIMEOUT_MS)
                found = page.eval_on_selector_all(
                    "#search-results ul.search li a",
                    "links => links.map(a => new URL(a.href).pathname)")
                pages_found = sorted({path.rsplit("/", 1)[-1] for path in found})
                if pages_found != [f"{chapter}.html"]:
                    tally.problems.append(f"search for {term!r} found {pages_found}, "
                                          f"not {chapter}.html alone")
                searched.append(f"{term!r}: {chapter}")
        finally:
            page.close()

        folder = os.environ.get("TENSORLIB_BOOK_SCREENSHOTS")
        if folder:
            page = context.new_page()
            try:
                for chapter, _, selector, file_name in SCREENSHOTS:
                    save_screenshot(page, f"{site_url}/{chapter}.html", selector,
                                    Path(folder) / file_name)
            finally:
                page.close()
    finally:
        context.close()

    summary = (f"book: {tally.pages} pages opened at {LAPTOP['width']} and {PHONE['width']} px, "
               f"{tally.images} images and {tally.svgs} SVG drawings loaded, "
               f"{tally.equations} equations typeset, {tally.anchors} link anchors found, "
               f"{len(searched)} chapters found by search; {traffic.own} requests to the site, "
               f"{len(traffic.failed)} failed, {len(traffic.other_hosts)} to other hosts")
    with capsys.disabled():
        print(summary, flush=True)
        print("book search: " + ", ".join(searched), flush=True)
    problems = tally.problems + [f"failed request: {failure}" for failure in traffic.failed]
    problems += [f"request to another host (blocked): {url}"
                 for url in sorted(set(traffic.other_hosts))]
    if problems:
        pytest.fail("\n".join([summary, *problems[:60],
                               *([f"... and {len(problems) - 60} more"]
                                 if len(problems) > 60 else [])]), pytrace=False)
