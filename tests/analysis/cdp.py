"""Headless Chromium driven over the DevTools protocol on a pipe (no websocket library needed).

``chromium --remote-debugging-pipe`` reads JSON commands from fd 3 and writes replies and
events to fd 4, each message ended by a NUL byte. :class:`Chromium` starts it offline
(every host maps to nothing, the proxy points nowhere), opens one page and offers what
the report tests need: load a file, evaluate JavaScript, screenshot the page or one
element at a fixed width.

    with Chromium(binary, tmp_path / "profile") as c:
        c.open(html_path.as_uri(), width=1280, height=900)
        c.evaluate("document.title")
        c.screenshot_element("#summary-section", tmp_path / "summary.png", height=1000)
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any, Self

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-extensions", "--disable-sync",
         "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars",
         "--remote-debugging-pipe"]


class Chromium:
    """One headless browser and one page, spoken to through the DevTools pipe."""

    def __init__(self, binary: str, profile: Path, timeout: float = 60.0):
        self.timeout = timeout
        to_child_r, self._w = os.pipe()  # os.pipe fds are close-on-exec: the child keeps only fds 3 and 4
        self._r, from_child_w = os.pipe()
        hi_r, hi_w = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_child_r, from_child_w))  # above 4

        def fds() -> None:  # in the child: fd 3 reads our commands, fd 4 carries its replies (dup2: inheritable)
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"], close_fds=False,
                                     preexec_fn=fds,  # noqa: PLW1509 - only dup2 (async-signal-safe) runs there
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for fd in (to_child_r, from_child_w, hi_r, hi_w):
            os.close(fd)
        self._buf = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium exited (code {self.proc.poll()})")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, params: dict[str, Any] | None = None, session: bool = True) -> dict[str, Any]:
        """One command; its result (events that arrive meanwhile are kept in :attr:`events`)."""
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read(deadline))

    def open(self, url: str, width: int = 1280, height: int = 900) -> None:
        """A new page of ``width`` x ``height`` CSS pixels (scale 1) showing ``url``, after its load event."""
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        self.send("Page.enable")
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                         "mobile": False})
        self.send("Page.navigate", {"url": url})
        self.wait_for(f"document.URL === {json.dumps(url)} && document.readyState === 'complete'", self.timeout)

    def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        """Poll a JavaScript expression until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise TimeoutError(f"never true: {expression}")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (JSON-serialisable values only)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"javascript failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, x: float, y: float, width: float, height: float) -> Path:
        """A PNG of the page region (page coordinates, CSS pixels)."""
        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                    "clip": {"x": x, "y": y, "width": width, "height": height,
                                                             "scale": 1}})["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def screenshot_element(self, selector: str, path: Path, height: float | None = None, pad: float = 8) -> Path:
        """A PNG from the top of the element matching ``selector``, the page's full width, ``height`` tall."""
        box = self.evaluate(f"""(() => {{ const r = document.querySelector({json.dumps(selector)})
            .getBoundingClientRect(); return [r.top + window.scrollY, r.height, document.documentElement.clientWidth]
            }})()""")
        top, h, width = box
        return self.screenshot(path, 0, max(0.0, top - pad), width, height or h + 2 * pad)
