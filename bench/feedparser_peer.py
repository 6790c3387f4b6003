#!/usr/bin/python3
"""python3-feedparser (Debian) timed on the documents feed_bench parses, for the ratio in
bench/RESULTS.md ("## feed parsing").

    build/bench/feed_bench --dump /tmp/feeddocs
    bench/feedparser_peer.py /tmp/feeddocs

Checks each parse (10 entries, titles and links present) before timing, then reports
feeds/s and MB/s over at least 2 seconds per document.
"""
import os
import sys
import time

import feedparser


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "/tmp/feeddocs"
    print(f"feedparser {feedparser.__version__}")
    for name in ("rss.xml", "atom.xml", "feed.json", "broken.xml"):
        path = os.path.join(d, name)
        data = open(path, "rb").read()
        r = feedparser.parse(data)
        ok = len(r.entries) == 10 and r.entries[0].get("title") and r.entries[9].get("link")
        if not ok:
            print(f"{name:11s} feedparser does not read it ({len(r.entries)} entries, "
                  f"bozo={r.bozo}): not timed")
            continue
        n = 0
        t0 = time.perf_counter()
        while True:
            feedparser.parse(data)
            n += 1
            dt = time.perf_counter() - t0
            if dt >= 2.0:
                break
        print(f"{name:11s} {len(data)} bytes  {n / dt:10.1f} feeds/s  "
              f"{n * len(data) / dt / 1e6:8.3f} MB/s  bozo={int(bool(r.bozo))}")


if __name__ == "__main__":
    main()
