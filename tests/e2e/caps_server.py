#!/usr/bin/env python3
"""The feed server of crawler_caps.sh: many feeds under many host names on one loopback
port, counting what a polite crawler must never exceed.

It serves /feed/N.xml for every feed of every host (the Host header picks the host), RSS
with an ETag and a 304 to a matching If-None-Match, and records, per politeness key (the
registrable domain, or the shared platform), the requests in flight at once (of one phase:
one feedplane process), the request
arrival times, and per host the connections open at once (also per phase). Some hosts behave in ways the
crawler must honour:
  slowish hosts   answer after SLOWISH seconds (the connection cap binds, not the rate)
  the slow host   answers after SLOW seconds (it must not stall anyone else)
  the 429 host    answers 429 with Retry-After on its first request and then after every
                  30 it served, and must then see nothing until Retry-After passed
  the cached host sends Cache-Control: max-age, and its feeds are all new at every request
                  (so only the hint keeps the adaptive interval from halving to the floor)
  the moved host  answers 301 for its first feeds (the crawler adopts the new URL only
                  after 3 observations)

Control (on any host name):
  POST /_publish?from=A&n=N   one new entry in each of feeds A .. A+N-1 (global numbering)
  POST /_phase?name=P         later requests are recorded under phase P
  GET  /_stats                JSON: every counter (see stats())
  GET  /_opml                 the OPML of every feed
Usage: caps_server.py PORT_FILE [--slowish S] [--slow S] [--retry-after S] [--max-age S]
"""
import argparse
import asyncio
import json
import sys
import time
from urllib.parse import parse_qs, urlsplit

FEEDS_PER_HOST = 240
SMALL = 40  # feeds per host of the shared keys (5 hosts each)


def build_hosts():
    hosts = []  # (name, key, role, feeds)
    for i in range(40):
        role = "plain"
        if i < 10:
            role = "slowish"
        elif i == 10:
            role = "limited"
        elif i == 11:
            role = "cached"
        elif i == 13:
            role = "moved"
        elif i == 14:
            role = "slow"
        name = f"site{i:02d}.test"
        hosts.append((name, name, role, FEEDS_PER_HOST))
    for c in "abcde":  # five hosts of one registrable domain: one politeness key
        hosts.append((f"{c}.multi.test", "multi.test", "plain", SMALL))
    for u in range(1, 6):  # five blogs of a shared platform ([crawler] shared_domains)
        hosts.append((f"u{u}.github.io", "github.io", "plain", SMALL))
    return hosts


class Feed:
    __slots__ = ("gid", "host", "path", "entries", "version", "requests", "served")

    def __init__(self, gid, host, path):
        self.gid = gid
        self.host = host
        self.path = path
        self.entries = [f"{host}-{path}-e0", f"{host}-{path}-e1"]
        self.version = 1
        self.requests = []  # (phase, conditional, status, ETag answered, seconds)
        self.served = 0  # entries in the last 200 body


class Server:
    def __init__(self, args):
        self.args = args
        self.t0 = time.monotonic()
        self.phase = "first"
        self.hosts = {}
        self.feeds = []
        self.by_path = {}
        for name, key, role, n in build_hosts():
            self.hosts[name] = {"key": key, "role": role, "open": {}, "max_open": 0, "served": 0,
                                "last_429": None, "answered_429": []}
            for j in range(n):
                f = Feed(len(self.feeds), name, f"/feed/{j}.xml")
                self.feeds.append(f)
                self.by_path[(name, f.path)] = f
        self.keys = {}
        for h in self.hosts.values():
            self.keys.setdefault(h["key"], {"in_flight": {}, "max_in_flight": 0, "arrivals": [],
                                            "retry_windows": []})
        self.moved_paths = {f"/feed/{j}.xml" for j in range(5)}
        self.old_requests = {}  # path on the moved host -> requests of it
        self.new_requests = {}
        self.bad = []  # requests the server could not place
        self.now_rfc = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime())

    def now(self):
        return time.monotonic() - self.t0

    def rss(self, f):
        items = "".join(
            f"<item><guid isPermaLink=\"false\">{e}</guid><title>entry {e}</title>"
            f"<link>http://{f.host}/{e}</link><pubDate>{self.now_rfc}</pubDate>"
            f"<description>caps test entry {e}</description></item>" for e in f.entries)
        return (f'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel>'
                f"<title>{f.host}{f.path}</title><link>http://{f.host}/</link>{items}"
                f"</channel></rss>").encode()

    async def answer(self, method, target, headers):
        """Returns (status, headers list, body)."""
        u = urlsplit(target)
        host = headers.get("host", "").split(":")[0].lower()
        if u.path.startswith("/_"):
            return self.control(method, u)
        h = self.hosts.get(host)
        if h is None:
            self.bad.append(f"{host} {target}")
            return 404, [], b"no such host\n"
        key = self.keys[h["key"]]
        role = h["role"]
        t = self.now()
        # A redirect hop is part of its fetch (the crawler's rate cap counts fetches, and the
        # client follows at once): only the request of the target counts as a start.
        if not (role == "moved" and u.path in self.moved_paths):
            key["arrivals"].append(t)
        # Per phase: requests a stopped feedplane left behind (the slow host still sleeping
        # on them) are not the next process's.
        phase = self.phase
        fl = key["in_flight"]
        fl[phase] = fl.get(phase, 0) + 1
        key["max_in_flight"] = max(key["max_in_flight"], fl[phase])
        try:
            if role == "slowish":
                await asyncio.sleep(self.args.slowish)
            elif role == "slow":
                await asyncio.sleep(self.args.slow)
            if role == "limited" and (h["last_429"] is None or h["served"] >= 30):
                h["served"] = 0
                h["last_429"] = self.now()
                h["answered_429"].append([h["last_429"], phase, u.path])
                key["retry_windows"].append(
                    [h["last_429"], h["last_429"] + self.args.retry_after])
                return 429, [("Retry-After", str(self.args.retry_after))], b"slow down\n"
            if role == "moved":
                if u.path in self.moved_paths:
                    self.old_requests[u.path] = self.old_requests.get(u.path, 0) + 1
                    return 301, [("Location", f"http://{host}:{self.port}{u.path[:-4]}-new.xml")], b""
                if u.path.endswith("-new.xml"):
                    self.new_requests[u.path] = self.new_requests.get(u.path, 0) + 1
                    u = urlsplit(u.path[:-8] + ".xml")
            f = self.by_path.get((host, u.path))
            if f is None:
                self.bad.append(f"{host} {target}")
                return 404, [], b"no such feed\n"
            h["served"] += 1
            if role == "cached":
                # Every answer all new: four new entries replace the four before.
                f.version += 1
                f.entries = [f"{f.host}-{f.path}-v{f.version}-{j}" for j in range(4)]
            etag = f'"v{f.version}"'
            inm = headers.get("if-none-match")
            conditional = inm is not None or "if-modified-since" in headers
            extra = [("ETag", etag)]
            if role == "cached":
                extra.append(("Cache-Control", f"max-age={self.args.max_age}"))
            if inm == etag:
                f.requests.append((self.phase, conditional, 304, etag, round(t, 3)))
                return 304, extra, b""
            f.requests.append((self.phase, conditional, 200, etag, round(t, 3)))
            f.served = len(f.entries)
            return 200, extra + [("Content-Type", "application/rss+xml")], self.rss(f)
        finally:
            fl[phase] -= 1

    def control(self, method, u):
        q = parse_qs(u.query)
        if method == "POST" and u.path == "/_publish":
            a, n = int(q["from"][0]), int(q["n"][0])
            for f in self.feeds[a:a + n]:
                f.entries.append(f"{f.host}-{f.path}-e{len(f.entries)}")
                f.version += 1
            return 200, [], b"ok\n"
        if method == "POST" and u.path == "/_phase":
            self.phase = q["name"][0]
            return 200, [], b"ok\n"
        if u.path == "/_stats":
            return 200, [("Content-Type", "application/json")], json.dumps(self.stats()).encode()
        if u.path == "/_opml":
            out = ['<?xml version="1.0"?><opml version="2.0"><head><title>caps</title></head><body>']
            for f in self.feeds:
                out.append(f'<outline text="{f.host}{f.path}" xmlUrl="http://{f.host}:{self.port}{f.path}"/>')
            out.append("</body></opml>")
            return 200, [("Content-Type", "text/x-opml")], "\n".join(out).encode()
        return 404, [], b"unknown control\n"

    def stats(self):
        return {
            "now": self.now(),
            "hosts": {n: {k: v for k, v in h.items()} for n, h in self.hosts.items()},
            "keys": {n: {"max_in_flight": k["max_in_flight"], "arrivals": k["arrivals"],
                         "retry_windows": k["retry_windows"]} for n, k in self.keys.items()},
            "feeds": [{"host": f.host, "path": f.path, "entries": len(f.entries),
                       "etag": f'"v{f.version}"', "requests": f.requests} for f in self.feeds],
            "moved_old": self.old_requests,
            "moved_new": self.new_requests,
            "bad": self.bad[:20],
        }

    async def handle(self, reader, writer):
        host = None
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                method, target, _ = line.decode("latin-1").split(" ", 2)
                headers = {}
                while True:
                    hl = await reader.readline()
                    if hl in (b"\r\n", b"\n", b""):
                        break
                    k, _, v = hl.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                n = int(headers.get("content-length", "0") or 0)
                if n:
                    await reader.readexactly(n)
                name = headers.get("host", "").split(":")[0].lower()
                if host is None and name in self.hosts:
                    host, phase = name, self.phase  # per phase, as requests in flight
                    op = self.hosts[host]["open"]
                    op[phase] = op.get(phase, 0) + 1
                    self.hosts[host]["max_open"] = max(self.hosts[host]["max_open"], op[phase])
                status, extra, body = await self.answer(method, target, headers)
                reason = {200: "OK", 301: "Moved Permanently", 304: "Not Modified",
                          404: "Not Found", 429: "Too Many Requests"}[status]
                head = [f"HTTP/1.1 {status} {reason}"] + [f"{k}: {v}" for k, v in extra]
                if status != 304:
                    head.append(f"Content-Length: {len(body)}")
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, ValueError, asyncio.IncompleteReadError):
            pass
        finally:
            if host is not None:
                self.hosts[host]["open"][phase] -= 1
            writer.close()


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("port_file")
    p.add_argument("--slowish", type=float, default=0.25)
    p.add_argument("--slow", type=float, default=4.0)
    p.add_argument("--retry-after", type=int, default=5)
    p.add_argument("--max-age", type=int, default=15)
    args = p.parse_args()
    s = Server(args)
    srv = await asyncio.start_server(s.handle, "127.0.0.1", 0, backlog=1024)
    s.port = srv.sockets[0].getsockname()[1]
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(s.port))
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
