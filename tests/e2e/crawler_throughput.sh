#!/usr/bin/env bash
# bench/crawler_throughput.sh in a tiny mode (200 feeds, half the fetches finding their feed
# changed, 3 s windows, one run of each), so the benchmark cannot rot: it must run end to
# end and print sane figures: changed feeds fetched by both feedplane and the bare client,
# their articles handed to the store and sequenced, CPU counted, a ratio above 0. Nothing
# about speed is asserted.
set -euo pipefail
bin=$1 peer=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if ! FEEDS=200 CHANGE=0.5 DURATION=3 RUNS=1 WARMUP=1 SUBS=20 MAX_IN_FLIGHT=64 ADDRESSES=2 \
  OUT="$tmp/out" "$src/bench/crawler_throughput.sh" "$bin" "$peer" >"$tmp/log" 2>&1; then
  cat "$tmp/log" >&2
  fail "bench/crawler_throughput.sh failed"
fi
cat "$tmp/log"
python3 - "$tmp/log" "$tmp/out/runs.tsv" <<'PY' || fail "figures out of range"
import re, sys
log, tsv = open(sys.argv[1]).read(), [l.split("\t") for l in open(sys.argv[2]).read().splitlines()]
m = re.search(r"^result changed_per_cpu_s=(\d+) feeds_per_cpu_s=(\d+) peer_per_cpu_s=(\d+) ratio=([\d.]+)$", log, re.M)
assert m, "no result line"
changed, feeds, peer, ratio = int(m[1]), int(m[2]), int(m[3]), float(m[4])
assert changed > 0 and feeds >= changed and peer > 0 and ratio > 0, m[0]
assert "summary over 1 feedplane and 1 bare-client runs" in log
kinds = {r[1]: r for r in tsv}
assert set(kinds) == {"feedplane", "peer"}, kinds
for kind, r in kinds.items():
    fetches, changed_n, errors, cpu = int(r[3]), int(r[4]), int(r[5]), float(r[6])
    assert fetches > 0 and cpu > 0, (kind, r)
    # Half the fetches change their feed: far from none and from all.
    assert 0.2 < changed_n / fetches < 0.8, (kind, r)
    assert errors <= fetches / 10, (kind, r)
fp = kinds["feedplane"]
# Every changed fetch brings one new entry: articles reach the store and are sequenced.
assert int(fp[7]) >= int(fp[4]) * 0.9 and int(fp[8]) > 0, fp
print("crawler_throughput ok:", m[0])
PY
