#!/usr/bin/env python3
"""crawler_caps.sh's checks, on caps_server.py's /_stats and feedplane's admin API.

  caps_check.py wait-acked SERVER PHASE TIMEOUT [FEED_FROM N]
      until every feed that must be acknowledged in PHASE was: its last request in PHASE
      carried If-None-Match with its current ETag and was answered 304 (so the crawler
      holds that version durably: no fetch starts while a source's write is in flight).
      Without FEED_FROM N: every feed but those of the slow, limited, cached and moved
      hosts (those are checked apart). Prints progress; exit 1 on timeout.
  caps_check.py caps SERVER RATE CONNS RETRY_AFTER
      the politeness caps over the whole run so far (see check_caps).
  caps_check.py first SERVER
      after the first phase: hints, redirects, a slow host stalling no one.
  caps_check.py articles SERVER FEEDPLANE TOKEN
      each acknowledged feed's source has exactly as many articles as the feed has entries
      (delivered once each, across a restart too).
  caps_check.py second SERVER
      after the restart: every request of an acknowledged feed was conditional, no hinted
      feed was fetched again early.
"""
import http.client
import json
import sys
import time
from urllib.parse import urlsplit

SPECIAL = ("slow", "limited", "cached", "moved")


def stats(server):
    u = urlsplit(server)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request("GET", "/_stats")
    r = c.getresponse()
    return json.loads(r.read())


def role(s, f):
    return s["hosts"][f["host"]]["role"]


def acked(f, phase):
    mine = [r for r in f["requests"] if r[0] == phase]
    return bool(mine) and mine[-1][2] == 304 and mine[-1][3] == f["etag"]


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def wait_acked(server, phase, timeout, sel=None):
    end = time.monotonic() + timeout
    while True:
        s = stats(server)
        feeds = s["feeds"]
        want = feeds[sel[0]:sel[0] + sel[1]] if sel else [f for f in feeds if role(s, f) not in SPECIAL]
        left = [f for f in want if not acked(f, phase)]
        if not left:
            print(f"caps: {len(want)} feeds acknowledged in phase {phase} at {s['now']:.1f} s")
            return s
        if time.monotonic() > end:
            ex = left[0]
            fail(f"{len(left)} of {len(want)} feeds not acknowledged in phase {phase}; e.g. "
                 f"{ex['host']}{ex['path']} {ex['etag']}: {ex['requests'][-5:]}")
        time.sleep(2)


def check_caps(server, rate, conns, retry_after):
    s = stats(server)
    # Start slots are 1/rate apart: at most window * rate + 1 starts in a window. The arrival
    # times are this server's, whose one thread stalls now and then (serving these stats, a
    # burst of new connections at a restart) and then stamps what waited at once: half a
    # second of slots more.
    window = 10.0
    allowed = int(window * rate) + 1 + int(rate / 2)
    most = 0
    for name, k in s["keys"].items():
        if k["max_in_flight"] > conns:
            fail(f"{name}: {k['max_in_flight']} requests in flight at once (cap {conns})")
        a = k["arrivals"]
        j = 0
        worst, worst_at = 0, 0
        for i in range(len(a)):
            while a[i] - a[j] >= window:
                j += 1
            if i - j + 1 > worst:
                worst, worst_at = i - j + 1, j
        if worst > allowed:
            fail(f"{name}: {worst} requests within {window} s (rate cap {rate}/s allows {allowed}) from {a[worst_at]:.2f} s")
        most = max(most, worst)
        for t0, t1 in k["retry_windows"]:
            # Requests the crawler started before it read the 429 arrive just after it.
            inside = [t for t in a if t0 + 0.5 < t < t1 - 0.2]
            if inside:
                fail(f"{name}: {len(inside)} requests within Retry-After {t0:.2f}..{t1:.2f}: {inside[:5]}")
    for name, h in s["hosts"].items():
        if h["max_open"] > conns:
            fail(f"{name}: {h['max_open']} connections open at once (cap {conns})")
    limited = s["keys"]["site10.test"]["retry_windows"]
    if len(limited) < 2:
        fail(f"the 429 host answered 429 only {len(limited)} times")
    busiest = max(k["max_in_flight"] for k in s["keys"].values())
    if busiest < conns:
        fail(f"no key ever reached {conns} in flight: the caps were never tested")
    print(f"caps: {len(s['keys'])} politeness keys, {len(s['hosts'])} hosts, at most {most} starts in "
          f"{window:.0f} s per key (cap {rate}/s), "
          f"{sum(len(k['arrivals']) for k in s['keys'].values())} requests; at most {busiest} "
          f"in flight per key, {max(h['max_open'] for h in s['hosts'].values())} connections "
          f"per host; {len(limited)} Retry-After pauses respected")
    if s["bad"]:
        fail(f"requests the server could not place: {s['bad']}")


# The hinted feeds' fetches (caps_server.py: max-age 15 s) are never closer.
HINT_S = {"cached": 15}


def check_hint_gaps(s):
    twice = 0
    for f in s["feeds"]:
        h = HINT_S.get(role(s, f))
        if h is None:
            continue
        t = [q[4] for q in f["requests"]]
        twice += len(t) > 1
        for a, b in zip(t, t[1:]):
            if b - a < h - 1:
                fail(f"{f['host']}{f['path']} fetched {b - a:.1f} s apart (its hint: {h} s): {f['requests']}")
    return twice


def source_status(server, feedplane, token, feeds):
    """feedplane's own status of these feeds' sources (what a failure message shows)."""
    u = urlsplit(feedplane)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    sport = urlsplit(server).port
    want = {f"http://{f['host']}:{sport}{f['path']}" for f in feeds}
    out, after = [], None
    while True:
        page = get_json(c, "/api/sources?limit=1000" + (f"&after={after}" if after else ""), token)
        for src in page["sources"]:
            if src["url"] in want:
                out.append(get_json(c, f"/api/sources/{src['id']}", token))
        after = page["next"]
        if after is None:
            return out


def check_first(server, feedplane, token, retry_after):
    s = stats(server)
    check_hint_gaps(s)
    slow = [f for f in s["feeds"] if role(s, f) == "slow"]
    done = sum(1 for f in slow if f["requests"])
    if done >= len(slow):
        fail("the slow host finished before the others: nothing shows it stalls no one")
    lim = [f for f in s["feeds"] if role(s, f) == "limited"]
    never = [f for f in lim if not any(r[2] == 200 for r in f["requests"])]
    if never:
        most = max(lim, key=lambda f: len(f["requests"]))
        for st in source_status(server, feedplane, token, never[:3]):
            print(f"caps: a feed never fetched, as feedplane sees it: {st}", file=sys.stderr)
        fail(f"{len(never)} of the 429 host's {len(lim)} feeds were never fetched between its "
             f"pauses (e.g. {never[0]['path']}: {never[0]['requests']}), while "
             f"{most['path']} was asked {len(most['requests'])} times")
    # A feed answered 429 keeps its place: it is the first fetched when the pause ends, not
    # queued behind everything that fell due meanwhile. (Its next request may be another
    # 429.) Only a feed's first two 429s (at most two errors in a row, whose back-off, 2 s
    # and 4 s, is shorter than the pause), and not the last pause, which may not have ended.
    host = next(n for n, h in s["hosts"].items() if h["role"] == "limited")
    late = []
    answered = [a for a in s["hosts"][host]["answered_429"] if a[1] == "first"]
    for t0, _, path in answered:
        if t0 + retry_after + 3 > s["now"]:
            continue
        f = next(f for f in lim if f["path"] == path)
        before = [a[0] for a in answered if a[2] == path and a[0] < t0]
        if len(before) >= 2:
            continue
        after = [r[4] for r in f["requests"] if r[4] > t0]
        after += [a[0] for a in answered if a[2] == path and a[0] > t0]
        if not after or min(after) > t0 + retry_after + 2:
            late.append((round(t0, 1), path, round(min(after) - t0, 1) if after else None))
    if late:
        fail(f"feeds answered 429 were not fetched first when the pause ({retry_after} s) ended: "
             f"{late[:5]} (429 time, feed, seconds to its next request)")
    print(f"caps: hinted feeds never fetched sooner than their hints; {len(answered)} feeds "
          f"answered 429, each fetched again as its pause ended; the slow host at {done} of "
          f"{len(slow)} feeds while every other feed was done")


def get_json(conn, path, token):
    conn.request("GET", path, headers={"Authorization": "Bearer " + token})
    r = conn.getresponse()
    body = r.read()
    if r.status != 200:
        fail(f"GET {path}: {r.status} {body[:200]!r}")
    return json.loads(body)


def check_articles(server, feedplane, token, phase):
    s = stats(server)
    u = urlsplit(feedplane)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    ids = {}
    after = None
    while True:
        page = get_json(c, "/api/sources?limit=1000" + (f"&after={after}" if after else ""), token)
        for src in page["sources"]:
            ids[src["url"]] = src["id"]
        after = page["next"]
        if after is None:
            break
    sport = urlsplit(server).port
    checked = 0
    moved = 0
    for f in s["feeds"]:
        url = f"http://{f['host']}:{sport}{f['path']}"
        if role(s, f) == "moved" and url[:-4] + "-new.xml" in ids:
            url = url[:-4] + "-new.xml"
            moved += 1
        if url not in ids:
            fail(f"no source for {url}")
        if not acked(f, phase):
            continue
        st = get_json(c, f"/api/sources/{ids[url]}", token)
        if st["articles"] != f["entries"]:
            fail(f"{url}: {st['articles']} articles delivered for {f['entries']} entries: {st}")
        checked += 1
    if phase == "second" and moved != 5:
        fail(f"{moved} redirected feeds carry their new URL (5 expected)")
    print(f"caps: {checked} acknowledged feeds each delivered exactly their entries")


def check_second(server):
    s = stats(server)
    firsts = 0
    for f in s["feeds"]:
        r = role(s, f)
        second = [q for q in f["requests"] if q[0] == "second"]
        if not acked(f, "first") or not second:
            continue
        firsts += 1
        if not all(q[1] for q in second):
            fail(f"{f['host']}{f['path']}: an unconditional fetch after the restart: {second}")
    moved_old, moved_new = s["moved_old"], s["moved_new"]
    if sorted(moved_old.values()) != [3] * 5:
        fail(f"old URLs of redirected feeds requested {moved_old} times (3 each expected)")
    if len(moved_new) != 5:
        fail(f"redirect targets requested: {moved_new}")
    twice = check_hint_gaps(s)
    if twice < 100:
        fail(f"only {twice} hinted feeds were fetched twice: the hints' gaps are untested")
    if firsts < 1000:
        fail(f"only {firsts} acknowledged feeds fetched again after the restart")
    print(f"caps: {firsts} feeds fetched after the restart, every fetch conditional; 5 redirects adopted after exactly 3 observations; {twice} hinted feeds fetched again, never sooner than their hints")


def main():
    cmd, server = sys.argv[1], sys.argv[2]
    if cmd == "wait-acked":
        sel = (int(sys.argv[5]), int(sys.argv[6])) if len(sys.argv) > 6 else None
        wait_acked(server, sys.argv[3], float(sys.argv[4]), sel)
    elif cmd == "caps":
        check_caps(server, float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
    elif cmd == "first":
        check_first(server, sys.argv[3], sys.argv[4], float(sys.argv[5]))
    elif cmd == "articles":
        check_articles(server, sys.argv[3], sys.argv[4], sys.argv[5])
    elif cmd == "second":
        check_second(server)
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main()
