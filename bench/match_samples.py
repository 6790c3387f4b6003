#!/usr/bin/env python3
"""bench/match_samples.py [--min-words A] [--max-words B] RUN_DIR...

What the slow matches of load runs have in common. Reads each run's match-samples.json
(`feedplane load --out RUN_DIR` writes it from GET /api/match-stats?samples=1: every live
article each shard matched, with when, its words, the index's time in wall and thread CPU
time, the time with the list appends, the index's work, and what else was under way) and
prints, for articles of A to B words (default 50-75, matcher_bench's 61-word case):

  - per run and pooled over the runs: the index's p50 and p99 and their ratio, in wall
    and in CPU time (pooling gives a p99 over thousands of articles, not a few hundred);
  - the share of slow articles (index time over 3x its shard's median in that run) by the
    time since the shard's previous article, by the previous article's list-append time,
    and by what else was under way (an upkeep pass, a list snapshot round, the article
    log's collection, a RocksDB flush or compaction);
  - how many articles were slow on every shard at once (a cause outside the shard: the
    machine, or work the shards share) against slow on one shard only.
"""
import argparse
import json
import os
import statistics
import sys

BUSY = [(1, "an upkeep pass"), (2, "a list snapshot round"), (4, "the collection"),
        (8, "a RocksDB flush or compaction")]


def quantile(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def tail(values):
    p50, p99 = quantile(values, 0.5), quantile(values, 0.99)
    return f"p50 {p50 / 1e3:.1f} us, p99 {p99 / 1e3:.1f} us, p99/p50 {p99 / p50:.2f}x"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-words", type=int, default=50)
    ap.add_argument("--max-words", type=int, default=75)
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    rows = []  # (gap_ms, previous appends us, index ns / shard median, busy)
    every_wall, every_cpu = [], []
    both = one = 0
    for run in a.runs:
        path = os.path.join(run, "match-samples.json")
        try:
            with open(path) as f:
                doc = json.load(f)
            fields = doc["sample_fields"]
            shards = [sh["samples"] for sh in doc["shards"]]
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"{path}: not a match-samples file ({e})")
        col = {name: i for i, name in enumerate(fields)}
        at, words, idx, cpu, total, busy = (col[k] for k in (
            "at_ms", "words", "index_ns", "index_cpu_ns", "total_ns", "busy"))

        def wanted(s):
            return a.min_words <= s[words] <= a.max_words

        wall = [s[idx] for sh in shards for s in sh if wanted(s)]
        cpus = [s[cpu] for sh in shards for s in sh if wanted(s)]
        if not wall:
            print(f"{run}: no article of {a.min_words}-{a.max_words} words")
            continue
        every_wall += wall
        every_cpu += cpus
        print(f"{run}: {len(wall)} articles; wall {tail(wall)}; CPU {tail(cpus)}")
        slow_sets = []
        for sh in shards:
            med = statistics.median(s[idx] for s in sh if wanted(s))
            slow = set()
            for i, s in enumerate(sh):
                if not wanted(s):
                    continue
                ratio = s[idx] / med
                if ratio > 3:
                    slow.add(i)
                if i == 0:
                    continue
                prev = sh[i - 1]
                rows.append((s[at] - prev[at], (prev[total] - prev[idx]) / 1e3, ratio, s[busy]))
            slow_sets.append(slow)
        # Every shard matches every article in the same order: the i-th sample of each
        # shard is one article while no shard's ring (65,536) has wrapped.
        if len({len(sh) for sh in shards}) == 1 and len(shards) > 1:
            common = set.intersection(*slow_sets)
            both += len(common)
            one += sum(len(s - common) for s in slow_sets)

    if len(a.runs) > 1 and every_wall:
        print(f"pooled: {len(every_wall)} articles; wall {tail(every_wall)}; "
              f"CPU {tail(every_cpu)}")

    def by(name, key, edges):
        print(f"slow (> 3x the shard's median) by {name}:")
        for lo, hi in zip(edges, edges[1:]):
            g = [r for r in rows if lo <= key(r) < hi]
            if g:
                share = 100 * sum(1 for r in g if r[2] > 3) / len(g)
                med = statistics.median(r[2] for r in g)
                print(f"  [{lo}, {hi if hi < 1e9 else 'inf'}): {len(g)} articles, "
                      f"{share:.1f}% slow, median {med:.2f}x the shard's")

    by("the time since the shard's previous article (ms)", lambda r: r[0],
       [0, 1, 10, 50, 100, 300, 1000, 1e18])
    by("the previous article's list appends (us)", lambda r: r[1],
       [0, 50, 150, 300, 600, 1e18])
    for bit, name in BUSY:
        by(f"whether {name} was under way", lambda r, b=bit: 1 if r[3] & b else 0, [0, 1, 2])
    print(f"slow on every shard at once: {both} articles (each counted once per shard: "
          f"{both * 2} samples); slow on one shard only: {one} samples")


if __name__ == "__main__":
    main()
