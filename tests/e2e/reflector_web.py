#!/usr/bin/env python3
"""Drives feedplane's web page in headless Chromium (Debian chromium) over the DevTools
protocol: create an account, add a subscription, see its feed URL, see a matching article
(from the articles already in the store) with its words marked. A screenshot of each step
goes to ARTIFACT_DIR. Usage: reflector_web.py BASE_URL ARTIFACT_DIR QUERY EXPECTED_TITLE

Only the standard library: a minimal WebSocket client (RFC 6455) is below."""
import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

base, artifacts, query, expected = sys.argv[1:5]
os.makedirs(artifacts, exist_ok=True)


class WebSocket:
    def __init__(self, url):
        m = re.match(r"ws://([^/:]+):(\d+)(/.*)", url)
        self.s = socket.create_connection((m.group(1), int(m.group(2))), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall((f"GET {m.group(3)} HTTP/1.1\r\nHost: {m.group(1)}:{m.group(2)}\r\n"
                        f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.s.recv(1)
        assert b" 101 " in head.split(b"\r\n")[0], head
        self.buf = b""

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        hdr = bytes([0x81])
        if n < 126:
            hdr += bytes([0x80 | n])
        elif n < 65536:
            hdr += bytes([0x80 | 126]) + n.to_bytes(2, "big")
        else:
            hdr += bytes([0x80 | 127]) + n.to_bytes(8, "big")
        self.s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = int.from_bytes(self._read(2), "big")
            elif n == 127:
                n = int.from_bytes(self._read(8), "big")
            payload = self._read(n)
            msg += payload
            if b0 & 0x80:
                return msg.decode()


class Page:
    def __init__(self, ws):
        self.ws = ws
        self.next = 0

    def call(self, method, **params):
        self.next += 1
        self.ws.send(json.dumps({"id": self.next, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.next:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m["result"]

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait(self, expr, what, timeout=15):
        end = time.time() + timeout
        while time.time() < end:
            if self.js(expr):
                return
            time.sleep(0.1)
        self.shot("failed")
        raise SystemExit(f"timed out waiting for {what}")

    def shot(self, name):
        png = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        with open(os.path.join(artifacts, name + ".png"), "wb") as f:
            f.write(png)


# Chromium puts its singleton socket under TMPDIR (org.chromium.Chromium.*), outside the
# profile: point TMPDIR into the scratch directory so that the test leaves nothing behind.
scratch = tempfile.mkdtemp()
profile = os.path.join(scratch, "profile")
os.mkdir(profile)
os.mkdir(os.path.join(scratch, "tmp"))
browser = subprocess.Popen(
    ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
     "--disable-component-update", "--no-first-run", "--remote-debugging-port=0",
     f"--user-data-dir={profile}", "--window-size=1100,1400", "about:blank"],
    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    env=dict(os.environ, TMPDIR=os.path.join(scratch, "tmp")))
try:
    devtools = None
    for line in browser.stderr:
        m = re.search(r"DevTools listening on (ws://\S+)", line)
        if m:
            devtools = m.group(1)
            break
    assert devtools, "chromium printed no DevTools address"
    port = re.match(r"ws://[^:]+:(\d+)/", devtools).group(1)
    targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
    page_ws = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
    p = Page(WebSocket(page_ws))
    p.call("Page.enable")
    p.call("Runtime.enable")
    p.call("Page.navigate", url=base + "/")
    p.wait("document.readyState === 'complete' && !!document.getElementById('create-account')", "the page")
    p.shot("1-page")

    p.js("document.getElementById('create-account').click()")
    p.wait("!document.getElementById('signed-in').hidden && !document.getElementById('new-secret').hidden",
           "the new account")
    secret = p.js("localStorage.getItem('feedplane-secret')")
    assert secret and secret.startswith(p.js("document.getElementById('account-id').textContent")), secret
    assert secret not in p.js("location.href"), "the secret is in the URL"
    p.shot("2-account")

    # An invalid query shows the matcher's error inline.
    p.js("document.getElementById('query').value = 'rust \"tokio';"
         "document.getElementById('add-form').requestSubmit()")
    p.wait("!document.getElementById('add-error').hidden", "the inline query error")
    err = p.js("document.getElementById('add-error').textContent")
    assert "column" in err, err
    p.shot("3-query-error")

    p.js(f"document.getElementById('query').value = {json.dumps(query)};"
         "document.getElementById('preview-button').click()")
    p.wait("document.querySelectorAll('#preview-items li a').length > 0", "the preview")
    assert expected in p.js("document.getElementById('preview-items').textContent")
    p.shot("4-preview")

    p.js("document.getElementById('add-form').requestSubmit()")
    p.wait("document.querySelectorAll('#subscription-list .sub').length === 1", "the new subscription")
    feed = p.js("document.querySelector('#subscription-list .feeds a').getAttribute('href')")
    assert re.fullmatch(r"/f/[A-Za-z0-9_-]{30}", feed), feed
    p.shot("5-subscription")

    p.js("document.querySelector('#subscription-list .latest').click()")
    p.wait("document.querySelectorAll('#subscription-list .items li a').length > 0", "the matches")
    text = p.js("document.querySelector('#subscription-list .items').textContent")
    assert expected in text, text
    assert p.js("document.querySelectorAll('#subscription-list .items mark').length") > 0, "no <mark>"
    p.shot("6-matches")

    # The served feed behind the page's link is the subscription's.
    body = urllib.request.urlopen(base + feed + ".json").read().decode()
    assert expected in body, body
    print(f"web page: ok ({len(os.listdir(artifacts))} screenshots in {artifacts})")
finally:
    browser.kill()
    browser.wait()
    shutil.rmtree(scratch, ignore_errors=True)
