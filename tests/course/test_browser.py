"""What a new user sees: the committed notebooks opened, untrusted, in JupyterLab in Chromium.

For every notebook in ``notebooks/`` (opened, never executed, in a fresh JupyterLab with no
user configuration and no trust database) this checks that every committed picture (an output
with ``image/png`` or ``image/svg+xml``) is shown as a loaded picture with a non-zero size, that
none is wider than its output area (neither as drawn nor at its own display width), and that no
output shows stderr, an error, or a drawing's text stand-in (``<Drawing '...'>``). Outputs are
named "cell i output j": positions in the file from 0, consecutive stream outputs counting as
one, as JupyterLab shows them. Opening a notebook starts its kernel; it is shut down after.
Two more checks run cells as a user does: a training cell's live progress bar, and two learner
notebooks run cell by cell up to their first core piece's check (the stub, the check's
message and the fallback line).

Needs Chromium and the ``playwright`` package; without them the test is skipped (it fails
instead when ``TENSORLIB_REQUIRE_BROWSER=1``). ``TENSORLIB_BROWSER_SCREENSHOTS=DIR`` saves a
screenshot of each notebook, of each picture, and of each learner run's stub and check there.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from helpers import headless_chromium

# Its own command (make test-browser, a stage of CI), not make test: JupyterLab in Chromium
# over every notebook takes minutes of its own.
pytestmark = pytest.mark.browser

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PICTURE_MIME_TYPES = ("image/png", "image/svg+xml")
VIEWPORT = {"width": 1400, "height": 900}
HOW_TO_RUN = ("run scripts/ensure_chromium.sh (as root) and pip install playwright, then "
              "`.venv/bin/python -m pytest tests/course/test_browser.py`")
SERVER_START_TIMEOUT_S = 60
PAGE_TIMEOUT_MS = 60_000
WIDTH_TOLERANCE_PX = 0.5   # sub-pixel layout rounding
MAX_SCREENSHOT_HEIGHT = 16_000   # px: within Chromium's 16384 px limit on one drawn surface


# Runs in the page: scrolls each output that is, or should be, a picture into view (cells off
# screen are not laid out under content-visibility), waits for its picture to load, measures it
# and the width of its output area, and lists every output's MIME type and text.
MEASURE_OUTPUTS_JS = """
async committed => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const nextFrame = () => new Promise(done => requestAnimationFrame(() => done()));
  const loaded = img => img.complete ? Promise.resolve()
      : new Promise(done => { img.addEventListener('load', done, {once: true});
                             img.addEventListener('error', done, {once: true}); });
  const isCommitted = new Set(committed.map(([cell, output]) => `${cell}/${output}`));
  const cells = [...panel.querySelectorAll('.jp-Notebook .jp-Cell')];
  const result = [];
  for (const [position, cell] of cells.entries()) {
    const index = cell.dataset.windowedListIndex === undefined
        ? position : Number(cell.dataset.windowedListIndex);
    const outputs = [];
    for (const [j, output] of cell.querySelectorAll(
        '.jp-OutputArea-child .jp-OutputArea-output').entries()) {
      const picture = output.matches('.jp-RenderedImage, .jp-RenderedSVG')
          ? output.querySelector('img, svg') : null;
      const shown = {mime: output.dataset.mimeType || null,
                     text: output.matches('.jp-RenderedText') ? output.textContent : '',
                     areaWidth: null, picture: null};
      if (picture || isCommitted.has(`${index}/${j}`)) {
        output.scrollIntoView({block: 'center'});
        if (picture && picture.tagName === 'IMG') {
          await loaded(picture);
          try { await picture.decode(); } catch (error) { /* broken: reported as not loaded */ }
        }
        await nextFrame();
        await nextFrame();
        // The content box of a picture's output; a picture output has no padding, so for a
        // text stand-in the width a picture would get is its padding box.
        const style = getComputedStyle(output);
        shown.areaWidth = picture ? output.clientWidth - parseFloat(style.paddingLeft)
                                    - parseFloat(style.paddingRight) : output.clientWidth;
      }
      if (picture) {
        const box = picture.getBoundingClientRect();
        const isImg = picture.tagName === 'IMG';
        const widthAttribute = picture.getAttribute('width');
        shown.picture = {
          tag: picture.tagName.toLowerCase(),
          loaded: isImg ? picture.complete && picture.naturalWidth > 0 : true,
          visible: picture.checkVisibility({visibilityProperty: true, opacityProperty: true}),
          width: box.width,
          height: box.height,
          naturalWidth: isImg ? picture.naturalWidth : picture.width.baseVal.value,
          widthAttribute: widthAttribute === null ? null : parseFloat(widthAttribute),
        };
      }
      outputs.push(shown);
    }
    result.push({index, outputs});
  }
  return result;
}
"""

# Runs in the page: true once the visible notebook shows all its cells and committed outputs.
NOTEBOOK_RENDERED_JS = """
expected => {
  const panels = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden)');
  if (panels.length !== 1) return false;
  const cells = panels[0].querySelectorAll('.jp-Notebook .jp-Cell');
  if (cells.length !== expected.length) return false;
  return [...cells].every((cell, i) =>
      cell.querySelectorAll('.jp-OutputArea-child .jp-OutputArea-output').length === expected[i]);
}
"""

# Run in the page: JupyterLab started and its (reset, empty) workspace restored; a notebook
# opened in it as the double-click in the file browser opens it; every tab closed again.
APP_RESTORED_JS = """
async () => { await window.jupyterapp.started; await window.jupyterapp.restored; }
"""
OPEN_NOTEBOOK_JS = """
async name => {
  await window.jupyterapp.commands.execute('docmanager:open', {path: name, factory: 'Notebook'});
  return true;
}
"""
CLOSE_ALL_JS = """
async () => {
  await window.jupyterapp.commands.execute('application:close-all');
  while (document.querySelector('.jp-NotebookPanel')) {
    await new Promise(done => setTimeout(done, 20));
  }
}
"""

# Runs in the page: what it shows when the notebook did not render (dialogs, panel, cells).
SHOWN_INSTEAD_JS = """
() => {
  const dialogs = [...document.querySelectorAll('.jp-Dialog')].map(d => d.innerText);
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const cells = panel ? panel.querySelectorAll('.jp-Notebook .jp-Cell').length : 0;
  const outputs = panel ? panel.querySelectorAll('.jp-OutputArea-output').length : 0;
  return JSON.stringify({dialogs, notebookPanel: !!panel, cells, outputs});
}
"""


# Runs in the page: scrolls the notebook to its top; returns how much of it is out of view.
SCROLL_TO_TOP_JS = """
() => {
  const scroller = document.querySelector(
      '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer');
  scroller.scrollTo(0, 0);
  return scroller.scrollHeight - scroller.clientHeight;
}
"""

NEXT_FRAME_JS = """
() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done())))
"""


@dataclass
class JupyterLab:
    """A JupyterLab server on a private port with a throwaway configuration."""

    url: str
    token: str
    root: Path

    def api(self, method: str, path: str) -> object:
        """One REST call; returns the decoded JSON reply (None when there is no body)."""
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            body = reply.read()
        return json.loads(body) if body else None

    def wait_for_kernel(self, notebook: str, timeout_s: float = 30) -> None:
        """Wait until the kernel that opening the notebook started is idle and connected to
        the page (shutting it down earlier makes the server log tracebacks)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            kernels = [s["kernel"] for s in self.api("GET", "/api/sessions")
                       if s["path"] == notebook and s.get("kernel")]
            if any(k["execution_state"] == "idle" and k["connections"] > 0 for k in kernels):
                return
            time.sleep(0.1)

    def shut_down_sessions(self) -> None:
        """Shut down every kernel session (opening a notebook starts its kernel)."""
        for session in self.api("GET", "/api/sessions"):
            self.api("DELETE", f"/api/sessions/{session['id']}")


@dataclass
class PictureReport:
    """What one notebook showed, against what its file holds."""

    notebook: str
    committed: int = 0
    visible: int = 0
    too_wide: int = 0
    widest: float = 0.0
    area_width: float = 0.0
    problems: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (f"{self.notebook}: {self.visible} of {self.committed} pictures visible, "
                f"{self.too_wide} wider than the output area "
                f"(widest {self.widest:.0f} px of {self.area_width:.0f} px)")


def fail_or_skip(reason: str) -> None:
    """Skip with how to run the test; fail instead when CI requires the browser check."""
    message = f"{reason}; {HOW_TO_RUN}"
    if os.environ.get("TENSORLIB_REQUIRE_BROWSER") == "1":
        pytest.fail(f"TENSORLIB_REQUIRE_BROWSER=1 but {message}", pytrace=False)
    pytest.skip(message)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_process_group(process: subprocess.Popen) -> None:
    """Stop the server's process group: politely (it then shuts down its kernels), then not."""
    for stop_signal in (signal.SIGTERM, signal.SIGKILL):
        if process.poll() is not None:
            return
        os.killpg(process.pid, stop_signal)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


@pytest.fixture(scope="module")
def chromium_browser():
    """Headless system Chromium driven by Playwright (skips when either is missing)."""
    with headless_chromium(fail_or_skip) as browser:
        yield browser


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory, chromium_browser):
    """JupyterLab serving copies of the notebooks, as a fresh clone sees them: untrusted, with
    no user config, data, settings or workspaces (sys.prefix config still applies)."""
    base = tmp_path_factory.mktemp("jupyterlab")
    root = base / "notebooks"
    root.mkdir()
    for notebook in NOTEBOOKS.glob("*.ipynb"):
        shutil.copy2(notebook, root / notebook.name)
    env = {k: v for k, v in os.environ.items()
           if k not in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "JUPYTER_PLATFORM_DIRS")}
    for variable, folder in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                             ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython"),
                             ("JUPYTERLAB_SETTINGS_DIR", "lab-settings"),
                             ("JUPYTERLAB_WORKSPACES_DIR", "lab-workspaces")]:
        (base / folder).mkdir()
        env[variable] = str(base / folder)
    port, token = free_port(), secrets.token_hex(16)
    # window.jupyterapp lets a test open each notebook in one loaded JupyterLab, as a user
    # opens one after another, instead of loading the whole application for each
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
               f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}",
               "--LabApp.expose_app_in_browser=True"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log_path = base / "jupyterlab.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, cwd=root, env=env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    server = JupyterLab(url=f"http://127.0.0.1:{port}", token=token, root=root)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"jupyter lab exited with {process.returncode}:\n"
                            f"{log_path.read_text()[-3000:]}", pytrace=False)
            try:
                server.api("GET", "/api/status")
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    pytest.fail(f"jupyter lab did not answer on /api/status within "
                                f"{SERVER_START_TIMEOUT_S} s:\n{log_path.read_text()[-3000:]}",
                                pytrace=False)
                time.sleep(0.25)
        yield server
        try:
            server.api("POST", "/api/shutdown")
            process.wait(timeout=20)
        except (urllib.error.URLError, ConnectionError, subprocess.TimeoutExpired):
            pass
    finally:
        stop_process_group(process)


def displayed_outputs(cell: dict) -> list[dict]:
    """A cell's outputs as JupyterLab lists them: consecutive stream outputs of one stream
    (stdout or stderr) are shown as one."""
    shown: list[dict] = []
    for output in cell.get("outputs", []):
        if (output.get("output_type") == "stream" and shown
                and shown[-1].get("output_type") == "stream"
                and shown[-1].get("name") == output.get("name")):
            continue
        shown.append(output)
    return shown


def committed_outputs(path: Path) -> tuple[list[int], list[tuple[int, int]]]:
    """The number of outputs JupyterLab shows for each cell, and (cell, output) of every
    committed picture (one per output that has image/png or image/svg+xml)."""
    cells = [displayed_outputs(cell)
             for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]]
    pictures = [(i, j) for i, outputs in enumerate(cells) for j, output in enumerate(outputs)
                if any(mime in output.get("data", {}) for mime in PICTURE_MIME_TYPES)]
    return [len(outputs) for outputs in cells], pictures


def wait_until_rendered(page, output_counts: list[int]) -> str | None:
    """Wait until the notebook shows all its cells and outputs; if it does not, say what the
    page shows instead."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    try:
        page.wait_for_function(NOTEBOOK_RENDERED_JS, arg=output_counts,
                               timeout=PAGE_TIMEOUT_MS)
    except PlaywrightTimeoutError:
        return (f"not rendered within {PAGE_TIMEOUT_MS // 1000} s ({len(output_counts)} cells, "
                f"{sum(output_counts)} outputs expected); the page shows "
                f"{page.evaluate(SHOWN_INSTEAD_JS)}")
    return None


def save_screenshots(page, folder: Path, name: str) -> None:
    """The whole notebook and each picture on its own, with the window made as tall as the
    notebook (JupyterLab scrolls inside the window, and a picture taller than the window
    would be cut)."""
    hidden_height = page.evaluate(SCROLL_TO_TOP_JS)
    page.set_viewport_size({"width": VIEWPORT["width"],
                            "height": min(VIEWPORT["height"] + hidden_height,
                                          MAX_SCREENSHOT_HEIGHT)})
    page.evaluate(NEXT_FRAME_JS)
    page.screenshot(path=folder / f"{name}.png", full_page=True)
    output = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output"
    pictures = page.locator(f"{output}.jp-RenderedImage, {output}.jp-RenderedSVG")
    for k in range(pictures.count()):
        picture = pictures.nth(k).locator("img, svg").first
        picture.scroll_into_view_if_needed()
        if picture.is_visible():
            picture.screenshot(path=folder / f"{name}-picture{k + 1:02d}.png")
    page.set_viewport_size(VIEWPORT)


def check_notebook(page, path: Path, screenshots: Path | None) -> PictureReport:
    """Measure one opened notebook's outputs and compare them with its file."""
    report = PictureReport(notebook=path.stem)
    output_counts, committed = committed_outputs(path)
    pictures = set(committed)
    report.committed = len(committed)
    not_rendered = wait_until_rendered(page, output_counts)
    if not_rendered:
        report.problems.append(not_rendered)
        return report
    measured = page.evaluate(MEASURE_OUTPUTS_JS, [list(p) for p in committed])
    cells = {cell["index"]: cell["outputs"] for cell in measured}

    for i, j in committed:
        shown = cells.get(i, [])
        output = shown[j] if j < len(shown) else None
        where = f"cell {i} output {j}"
        picture = output and output["picture"]
        if not picture:
            text = (output or {}).get("text", "").strip()[:80]
            shows = f"{output['mime']} {text!r}" if output else "nothing"
            report.problems.append(f"{where}: committed picture shows as {shows}")
            continue
        if not (picture["loaded"] and picture["visible"]
                and picture["width"] > 0 and picture["height"] > 0):
            report.problems.append(
                f"{where}: picture not shown (loaded={picture['loaded']}, "
                f"visible={picture['visible']}, {picture['width']:.0f}x"
                f"{picture['height']:.0f} px)")
            continue
        report.visible += 1

    drawn = [(i, j, output["picture"]) for i, outputs in sorted(cells.items())
             for j, output in enumerate(outputs) if output["picture"]]
    for i, j, _ in drawn:
        if (i, j) not in pictures:
            report.problems.append(f"cell {i} output {j}: shows a picture the file does not have")
    report.area_width = max((output["areaWidth"] or 0 for outputs in cells.values()
                             for output in outputs), default=0)
    for i, j, picture in drawn:
        area = cells[i][j]["areaWidth"]
        own_width = picture["widthAttribute"] or picture["naturalWidth"]
        widest = max(picture["width"], own_width)
        report.widest = max(report.widest, widest)
        if widest > area + WIDTH_TOLERANCE_PX:
            report.too_wide += 1
            report.problems.append(
                f"cell {i} output {j}: {picture['tag']} is {picture['width']:.0f} px wide as "
                f"drawn and {own_width:.0f} px at its own size, the output area "
                f"{area:.0f} px")

    for i, outputs in sorted(cells.items()):
        for j, output in enumerate(outputs):
            mime = output["mime"] or ""
            if mime == "application/vnd.jupyter.stderr" or "error" in mime:
                text = output["text"].strip()[:120]
                report.problems.append(f"cell {i} output {j}: shows {mime}: {text!r}")
            elif ("<Drawing '" in output["text"] and (i, j) not in pictures
                  and mime != "application/vnd.jupyter.stdout"):  # printed on purpose
                text = output["text"].strip()[:80]
                report.problems.append(f"cell {i} output {j}: shows the text {text!r}")

    if screenshots is not None:
        save_screenshots(page, screenshots, path.stem)
    return report


@pytest.mark.slow
def test_committed_pictures_visible_in_jupyterlab(jupyterlab, chromium_browser, capsys):
    """Every committed picture in every notebook is visible, untrusted, in JupyterLab, fits
    its output area, and no output shows stderr, an error or a ``<Drawing '...'>`` text."""
    notebooks = sorted(jupyterlab.root.glob("*.ipynb"))
    assert notebooks, f"no notebooks in {NOTEBOOKS}"
    folder = os.environ.get("TENSORLIB_BROWSER_SCREENSHOTS")
    screenshots = Path(folder) if folder else None
    if screenshots is not None:
        screenshots.mkdir(parents=True, exist_ok=True)

    context = chromium_browser.new_context(viewport=VIEWPORT)
    reports, notices = [], set()
    try:
        page = context.new_page()
        page.goto(f"{jupyterlab.url}/lab?reset&token={jupyterlab.token}",
                  timeout=PAGE_TIMEOUT_MS)
        page.wait_for_function("() => window.jupyterapp !== undefined", timeout=PAGE_TIMEOUT_MS)
        page.evaluate(APP_RESTORED_JS)
        for path in notebooks:  # one at a time, each closed before the next opens
            try:
                page.evaluate(OPEN_NOTEBOOK_JS, path.name)
                report = check_notebook(page, path, screenshots)
                notices.update(page.locator(".Toastify__toast").all_inner_texts())
            finally:
                jupyterlab.wait_for_kernel(path.name)
                page.evaluate(CLOSE_ALL_JS)
                jupyterlab.shut_down_sessions()
            reports.append(report)
            with capsys.disabled():
                print(report.line(), flush=True)
    finally:
        context.close()

    committed = sum(r.committed for r in reports)
    visible = sum(r.visible for r in reports)
    too_wide = sum(r.too_wide for r in reports)
    summary = (f"browser check: {visible} of {committed} committed drawings and plots visible, "
               f"{too_wide} wider than the output area")
    with capsys.disabled():
        for notice in sorted(notices):
            print("JupyterLab notification: " + " ".join(notice.split()))
        print(summary, flush=True)
    failures = [f"  {r.notebook}: {problem}" for r in reports for problem in r.problems]
    failures += [f"  a pop-up covers the notebook: {' '.join(notice.split())!r}"
                 for notice in sorted(notices)]
    if failures:
        pytest.fail("\n".join([summary, *(r.line() for r in reports), *failures]),
                    pytrace=False)


# A training cell slow enough to watch: 40 steps of about 0.1 s each.
LIVE_TRAINING_SOURCE = """\
import time

import numpy as np

import tensorlib as tl
from tensorlib.nn import Linear
from tensorlib import Rng
from tensorlib.optim import SGD
from tensorlib.training.loop import train

model = Linear(2, 1, rng=Rng(0))
inputs = tl.tensor(np.ones((4, 2), dtype=np.float32))


def slow_loss(model, inputs, targets):
    time.sleep(0.1)
    out = model(inputs)
    return (out * out).mean()


history = train(model, SGD(model, lr=0.01), lambda step: (inputs, None), steps=40,
                loss_fn=slow_loss)
print("finished", len(history), "steps")
"""

# Runs in the page: the first cell's outputs (MIME type and text) and whether it is running.
FIRST_CELL_OUTPUTS_JS = """
() => {
  const cell = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell');
  const prompt = cell.querySelector('.jp-InputPrompt').textContent;
  const outputs = [...cell.querySelectorAll('.jp-OutputArea-output')].map(
      output => ({mime: output.dataset.mimeType || null, text: output.textContent}));
  return {running: prompt.includes('*'), outputs};
}
"""


@pytest.mark.slow
def test_training_shows_a_live_progress_bar_in_jupyterlab(jupyterlab, chromium_browser,
                                                          capsys):
    """Running a training cell in JupyterLab shows one progress bar on stdout that redraws
    in place while the cell runs, and ends at 100%."""
    import nbformat

    scratch = jupyterlab.root / "scratch"
    scratch.mkdir(exist_ok=True)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(LIVE_TRAINING_SOURCE)]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, scratch / "live_progress.ipynb")

    context = chromium_browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    states: list[dict] = []
    try:
        page.goto(f"{jupyterlab.url}/lab/tree/scratch/live_progress.ipynb?reset&token="
                  f"{jupyterlab.token}", timeout=PAGE_TIMEOUT_MS)
        wait_until_rendered(page, [0])
        jupyterlab.wait_for_kernel("scratch/live_progress.ipynb")
        page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .cm-content").click()
        page.keyboard.press("Shift+Enter")
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            state = page.evaluate(FIRST_CELL_OUTPUTS_JS)
            states.append(state)
            if any("finished" in output["text"] for output in state["outputs"]):
                break
            page.wait_for_timeout(100)
    finally:
        page.close()
        context.close()
        jupyterlab.shut_down_sessions()

    bars_while_running = {output["text"].strip() for state in states if state["running"]
                          for output in state["outputs"] if "training:" in output["text"]}
    final = states[-1]["outputs"] if states else []
    problems = []
    if not any("finished 40 steps" in output["text"] for output in final):
        problems.append(f"the cell did not finish within 90 s; last outputs: {final}")
    if len(bars_while_running) < 3:
        problems.append(f"the bar did not move while training: {sorted(bars_while_running)}")
    for state in states:
        for output in state["outputs"]:
            if output["text"].count("training:") > 1:
                problems.append(f"the bar was appended, not redrawn: {output['text']!r}")
            if output["mime"] != "application/vnd.jupyter.stdout":
                problems.append(f"an output other than stdout: {output}")
    if not any("training: 100%|" in o["text"] and "40/40" in o["text"] for o in final):
        problems.append(f"the bar did not end at 100%: {final}")
    with capsys.disabled():
        print(f"live progress: {len(bars_while_running)} states of one bar seen while "
              f"training, on stdout, ending at 100%", flush=True)
    if problems:
        pytest.fail("\n".join(sorted(set(problems))[:10]), pytrace=False)


# The learner's first core piece in two notebooks: (notebook, grade id of its stub and check).
LEARNER_PIECES = [("01_scalar_autograd", "pc01-ops"), ("12_names_counts_to_mlp", "pc12-tokenizer")]

# Runs in the page: cell i's prompt, input text and outputs (MIME type and text).
CELL_STATE_JS = """
index => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const cell = [...panel.querySelectorAll('.jp-Notebook .jp-Cell')][index];
  const prompt = cell.querySelector('.jp-InputPrompt');
  const input = cell.querySelector('.cm-content');
  const outputs = [...cell.querySelectorAll('.jp-OutputArea-child .jp-OutputArea-output')].map(
      output => ({mime: output.dataset.mimeType || null, text: output.textContent}));
  return {prompt: prompt ? prompt.textContent : '', input: input ? input.innerText : '',
          outputs};
}
"""


def cell_index(cells: list[dict], grade_id: str) -> int:
    return next(i for i, cell in enumerate(cells)
                if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)


def stream_text(cell: dict) -> str:
    return "".join("".join(output.get("text", "")) for output in cell.get("outputs", [])
                   if output.get("output_type") == "stream")


def screenshot_cells(page, first: int, last: int, path: Path) -> None:
    """One picture of cells first..last as the page shows them (the window made tall enough)."""
    cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")
    top, bottom = cells.nth(first).bounding_box(), cells.nth(last).bounding_box()
    height = bottom["y"] + bottom["height"] - top["y"]
    page.set_viewport_size({"width": VIEWPORT["width"],
                            "height": int(min(height + 200, MAX_SCREENSHOT_HEIGHT))})
    cells.nth(first).evaluate("cell => cell.scrollIntoView({block: 'start'})")
    page.evaluate(NEXT_FRAME_JS)
    top, bottom = cells.nth(first).bounding_box(), cells.nth(last).bounding_box()
    page.screenshot(path=path, clip={"x": top["x"], "y": top["y"], "width": top["width"],
                                     "height": bottom["y"] + bottom["height"] - top["y"]})
    page.set_viewport_size(VIEWPORT)


@pytest.mark.slow
def test_a_learner_running_a_notebook_sees_the_stub_its_check_and_the_fallback(
        jupyterlab, chromium_browser, capsys):
    """In two learner notebooks, with their outputs cleared and the cells run one by one
    (Shift+Enter) in JupyterLab as a learner does: the first core piece shows its stub, its
    check says it is not done yet and how to go on, and the fallback line says which piece
    the notebook uses from then on; the same text as the committed outputs, and no error."""
    folder = os.environ.get("TENSORLIB_BROWSER_SCREENSHOTS")
    live = jupyterlab.root / "live"
    live.mkdir(exist_ok=True)
    context = chromium_browser.new_context(viewport=VIEWPORT)
    problems, seen = [], []
    try:
        for stem, grade in LEARNER_PIECES:
            notebook = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))
            cells = notebook["cells"]
            stub = cell_index(cells, f"{grade}-solution")
            check = cell_index(cells, f"{grade}-check")
            committed = stream_text(cells[check])
            for cell in cells:                       # a learner's first run starts from nothing
                if cell["cell_type"] == "code":
                    cell["outputs"], cell["execution_count"] = [], None
            (live / f"{stem}.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
            page = context.new_page()
            try:
                page.goto(f"{jupyterlab.url}/lab/tree/live/{stem}.ipynb?reset&token="
                          f"{jupyterlab.token}", timeout=PAGE_TIMEOUT_MS)
                not_rendered = wait_until_rendered(page, [0] * len(cells))
                if not_rendered:
                    problems.append(f"{stem}: {not_rendered}")
                    continue
                jupyterlab.wait_for_kernel(f"live/{stem}.ipynb")
                first_code = next(i for i, cell in enumerate(cells) if cell["cell_type"] == "code")
                page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").nth(
                    first_code).locator(".cm-content").click()
                for _ in range(first_code, check + 1):   # run each cell up to the check
                    page.keyboard.press("Shift+Enter")
                    page.wait_for_timeout(50)
                deadline = time.monotonic() + 90
                state = page.evaluate(CELL_STATE_JS, check)
                while time.monotonic() < deadline and not (
                        state["outputs"] and "*" not in state["prompt"]
                        and "from here on" in state["outputs"][-1]["text"]):
                    page.wait_for_timeout(200)
                    state = page.evaluate(CELL_STATE_JS, check)
                shown = "".join(output["text"] for output in state["outputs"])
                stub_input = page.evaluate(CELL_STATE_JS, stub)["input"]
                if "raise NotImplementedError()" not in stub_input:
                    problems.append(f"{stem}: cell {stub} does not show the stub: "
                                    f"{stub_input[:200]!r}")
                if "not done yet" not in shown or "so from here on the notebook uses" not in shown:
                    problems.append(f"{stem}: the check (cell {check}) shows {shown!r}")
                elif shown.strip() != committed.strip():
                    problems.append(f"{stem}: the check shows {shown!r}, its committed output "
                                    f"is {committed!r}")
                for index in range(check + 1):
                    for output in page.evaluate(CELL_STATE_JS, index)["outputs"]:
                        if output["mime"] == "application/vnd.jupyter.stderr" or \
                                "error" in (output["mime"] or ""):
                            problems.append(f"{stem}: cell {index} shows {output['mime']}: "
                                            f"{output['text'][:120]!r}")
                seen.append(f"{stem} cells {stub}-{check}: "
                            + " / ".join(line for line in shown.splitlines() if line))
                if folder:
                    Path(folder).mkdir(parents=True, exist_ok=True)
                    screenshot_cells(page, stub - 1, check,
                                     Path(folder) / f"{stem}-learner-stub-check-fallback.png")
            finally:
                jupyterlab.wait_for_kernel(f"live/{stem}.ipynb")
                page.close()
                jupyterlab.shut_down_sessions()
    finally:
        context.close()
    with capsys.disabled():
        for line in seen:
            print("learner run: " + line, flush=True)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
