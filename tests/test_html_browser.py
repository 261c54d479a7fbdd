"""The demo's HTML report opened in a real headless browser with the network off.

Debian's ``chromium`` (``.ci/run`` installs it when absent) is driven through the Chrome
DevTools protocol over a pipe (``--remote-debugging-pipe``: NUL-separated JSON on file
descriptors 3 and 4), so the test needs no package beyond the browser. It loads the file,
checks that the page made no console error, no exception and no request other than to the
file itself and its ``data:`` pictures, that every image (charts and thumbnails) decodes,
and saves a screenshot of the whole page as a test artefact (its path is printed and
recorded as a property of the test). Outside CI, without a browser, it is skipped.
"""

from __future__ import annotations

import base64
import fcntl
import io
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from labelguard.cli import main
from labelguard.output.pictures import MARK

pytest.importorskip("matplotlib", reason="the HTML report draws its charts with matplotlib (labelguard[html])")

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
TIMEOUT = 90.0


def _browser() -> str:
    found = next((path for path in map(shutil.which, BROWSERS) if path), None)
    if found is None:
        message = f"no headless browser found (looked for {', '.join(BROWSERS)}; apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message + ": .ci/run installs it")
        pytest.skip(message)
    return found


def _high(fd: int) -> int:
    """``fd`` moved to a number above the ones the browser's pipe must have (3 and 4)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return moved


class DevTools:
    """A Chrome DevTools protocol connection over the browser's debugging pipe."""

    def __init__(self, browser: str, profile: Path, log: Path) -> None:
        commands_read, self._commands = map(_high, os.pipe())
        self._replies, replies_write = map(_high, os.pipe())

        def pipe_fds() -> None:  # in the child, before exec: the browser reads fd 3, writes fd 4
            os.dup2(commands_read, 3)
            os.dup2(replies_write, 4)

        self._log = open(log, "wb")
        self.process = subprocess.Popen(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             f"--user-data-dir={profile}", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking", "--disable-sync", "--disable-component-update",
             "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, pass_fds=(3, 4), preexec_fn=pipe_fds)
        os.close(commands_read)
        os.close(replies_write)
        self._buffer = b""
        self._next = 0
        self.events: list[dict] = []

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str) -> dict:
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._read()
            self.events.append(event)
            if event.get("method") == method:
                return event

    def _read(self) -> dict:
        deadline = time.monotonic() + TIMEOUT
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._replies], [], [], max(0.0, left))
            if not ready:
                raise AssertionError(f"the browser said nothing for {TIMEOUT:.0f} s")
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise AssertionError("the browser closed its debugging pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (AssertionError, OSError):
            pass
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._commands)
        os.close(self._replies)
        self._log.close()


DECODE_EVERY_IMAGE = """
Promise.all(Array.from(document.images).map(img => img.decode().then(
  () => ({alt: img.alt, width: img.naturalWidth, height: img.naturalHeight}),
  error => ({alt: img.alt, width: 0, height: 0, error: String(error)}))))
"""


def inspect(page: Path, tmp_path: Path) -> tuple[list[str], list[dict], bytes]:
    """Open ``page`` offline: (what went wrong on it, each image's decoded size or error, a
    screenshot of the whole page as PNG)."""
    url = page.resolve().as_uri()
    devtools = DevTools(_browser(), tmp_path / "profile", tmp_path / "browser.log")
    try:
        target = devtools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = devtools.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            devtools.call(f"{domain}.enable", session=session)
        devtools.call("Network.emulateNetworkConditions", {"offline": True, "latency": 0, "downloadThroughput": -1,
                                                           "uploadThroughput": -1}, session=session)
        devtools.call("Emulation.setDeviceMetricsOverride", {"width": 1200, "height": 900, "deviceScaleFactor": 1,
                                                             "mobile": False}, session=session)
        devtools.call("Page.navigate", {"url": url}, session=session)
        devtools.wait_for("Page.loadEventFired")
        images = devtools.call("Runtime.evaluate", {"expression": DECODE_EVERY_IMAGE, "awaitPromise": True,
                                                    "returnByValue": True}, session=session)["result"]["value"]
        height = devtools.call("Page.getLayoutMetrics", session=session)["cssContentSize"]["height"]
        devtools.call("Emulation.setDeviceMetricsOverride", {"width": 1200, "height": min(int(height) + 1, 16000),
                                                             "deviceScaleFactor": 1, "mobile": False}, session=session)
        shot = devtools.call("Page.captureScreenshot", {"format": "png"}, session=session)["data"]
    finally:
        devtools.close()
    problems = []
    for event in devtools.events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            problems.append(f"console: {[arg.get('value') for arg in params.get('args', [])]}")
        elif method == "Runtime.exceptionThrown":
            problems.append(f"exception: {params.get('exceptionDetails', {}).get('text')}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            problems.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}")
        elif method == "Network.requestWillBeSent":
            requested = params.get("request", {}).get("url", "")
            if requested != url and not requested.startswith("data:"):
                problems.append(f"request to {requested}")
    return problems, images, base64.b64decode(shot)


def test_the_demo_report_loads_offline_without_errors_and_every_picture_decodes(tmp_path, monkeypatch,
                                                                                record_property):
    _browser()
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["demo", "demo"])
    assert result.exit_code == 0, result.output
    report = tmp_path / "demo" / "report.html"
    assert "demo/report.html" in result.output
    problems, images, shot = inspect(report, tmp_path)

    screenshot = tmp_path / "demo-report.png"
    screenshot.write_bytes(shot)
    record_property("screenshot", str(screenshot))
    print(f"screenshot of the demo's HTML report ({report.stat().st_size:,} bytes): {screenshot}")
    assert problems == []
    assert len(images) >= 10  # the value chart and the pictures of five codes
    undecoded = [image for image in images if image.get("error") or not image["width"] or not image["height"]]
    assert undecoded == []
    page = np.asarray(Image.open(io.BytesIO(shot)).convert("RGB"))
    assert page.shape[0] > 900 and page.shape[1] == 1200
    assert np.all(page == MARK, axis=-1).sum() > 100  # the marked pixels of the pictures are drawn


def test_the_inspection_sees_errors_requests_and_broken_pictures(tmp_path):
    """The checks above are not vacuous: a page with a console error, a request to a server
    and a picture that does not decode has each named."""
    _browser()
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><body><script>console.error("planted")</script>'
                    '<img alt="remote" src="https://example.invalid/a.png">'
                    '<img alt="broken" src="data:image/png;base64,iVBORw0KGgo="></body></html>', encoding="utf-8")
    problems, images, _ = inspect(page, tmp_path)
    assert any("planted" in problem for problem in problems)
    assert any(problem == "request to https://example.invalid/a.png" for problem in problems)
    assert {image["alt"] for image in images if image.get("error")} == {"remote", "broken"}
