#!/usr/bin/env bash
# bench/shard_match_ratio.sh: issue 11's "matching on shards: articles/s matched against 1M
# and 10M subscriptions spread over the shards, as a ratio to the single-core matcher
# benchmark".
#
#   OUT=DIR RUNS=5 SUBS=10000000 [PROBES=64] bench/shard_match_ratio.sh [FEEDPLANE_BIN] [MATCHER_BENCH]
#
# Each run, alternated: (a) `feedplane load --probes P` with SUBS subscriptions of Cobra's
# workload spread over the shards (2 by default, one per core here); after each tenth of its
# bulk load, POST /api/match-time has every shard match P probe articles of 61, 500 and 2,000
# words (64 of each by default) once each, in turn, against the subscriptions it owns, all
# shards at once, and the report's Figure 10 table keeps the slower shard's median: the
# shards' time per article in a stream, so 1e6 / it is their articles per second (a stream
# is bound by its slower shard). (b) matcher_bench's single-core rows
# `match/index/subs:N/words:W` (the same workload generator; the median per article of a
# pool of 256, or 64 at 2,000 words, matched in turn). The ratio is (b) / (a) at 1M and SUBS
# subscriptions, 61 and 2,000 words: the shards' articles/s over one core's. The index alone
# on both sides (match-time leaves the lists untouched); an ideal spread over S shards on S
# idle cores gives S. The shards' figure is wall time between the loop's other work, the
# benchmark's CPU time on an otherwise idle thread.
# Needs an idle machine: nothing else may run beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/dataplane/feedplane}
mbench=${2:-build/bench/matcher_bench}
out=${OUT:-/tmp/shard_match_ratio}
runs=${RUNS:-5}
subs=${SUBS:-10000000}
shards=${SHARDS:-2}
probes=${PROBES:-64}
mkdir -p "$out"
rows="1000000|$subs"
filter="^match/index/subs:(${rows})/words:(61|2000)\$"
for i in $(seq 1 "$runs"); do
  echo "== run $i: feedplane load ($subs subscriptions over $shards shards)" >&2
  rm -rf "$out/load-$i"
  "$bin" load --feeds 2000 --subscriptions "$subs" --shards "$shards" --probes "$probes" \
    --duration 2 --speed 120 \
    --restarts 0 --check-subscriptions 200 --out "$out/load-$i" >"$out/load-$i.log" 2>&1 ||
    { echo "load run $i failed: $out/load-$i.log" >&2; exit 1; }
  echo "== run $i: matcher_bench (one core)" >&2
  big=()  # matcher_bench builds 10M subscriptions only when FEEDPLANE_BENCH_10M is set
  [ "$subs" -gt 1000000 ] && big=(FEEDPLANE_BENCH_10M=1)
  env "${big[@]}" "$mbench" --benchmark_filter="$filter" --benchmark_format=json \
    --benchmark_out="$out/matcher-$i.json" >/dev/null 2>"$out/matcher-$i.log" ||
    { echo "matcher_bench run $i failed: $out/matcher-$i.log" >&2; exit 1; }
done
python3 - "$out" "$runs" "$subs" "$shards" <<'PY'
import json, re, statistics, sys
out, runs, subs, shards = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
sizes = sorted({1000000, subs})
cols = {61: 1, 500: 2, 2000: 3}
ratios = {(n, w): [] for n in sizes for w in (61, 2000)}
print(f"| run | subscriptions | words | shards' slowest median (us) | shards' articles/s | one core's median (us) | one core's articles/s | ratio |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for i in range(1, runs + 1):
    rep = open(f"{out}/load-{i}/report.md").read()
    table = {}
    for line in rep.splitlines():
        m = re.match(r"^\| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", line)
        if m:
            table[int(m.group(1))] = [float(m.group(k)) for k in (2, 3, 4)]
    bench = {}
    for b in json.load(open(f"{out}/matcher-{i}.json"))["benchmarks"]:
        m = re.match(r"^match/index/subs:(\d+)/words:(\d+)$", b["name"])
        if m:
            bench[(int(m.group(1)), int(m.group(2)))] = b["median_us"]
    for n in sizes:
        for w in (61, 2000):
            if n not in table or (n, w) not in bench:
                sys.exit(f"run {i}: no figure for {n} subscriptions and {w} words")
            s_us, b_us = table[n][cols[w] - 1], bench[(n, w)]
            r = b_us / s_us
            ratios[(n, w)].append(r)
            print(f"| {i} | {n:,} | {w} | {s_us:.1f} | {1e6 / s_us:,.0f} | {b_us:.1f} | {1e6 / b_us:,.0f} | {r:.2f}x |")
print()
print(f"shards' articles/s over one core's ({shards} shards), median (range) of {runs} runs:")
for (n, w), rs in ratios.items():
    print(f"  {n:>10,} subscriptions, {w:>4} words: {statistics.median(rs):.2f}x ({min(rs):.2f}-{max(rs):.2f})")
PY
