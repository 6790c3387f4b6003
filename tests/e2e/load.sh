#!/usr/bin/env bash
# The load harness end to end: `feedplane load` starts a feed farm and feedplane, imports
# the farm's feeds (OPML), loads subscriptions through the bulk API, runs while the farm
# publishes and pollers poll, then checks delivery against the farm's truth log with the
# reference matcher. Passes only when the driver exits 0 (no unexplained miss, no
# duplicate, something expected) and its last line is the delivery line. feedplane is
# restarted once after the subscriptions are loaded (the run goes on with the restarted
# instance, so what a restart loads is what the delivery check reads), and the report must
# give the restart time. With --restart-during-run (the CI-sized run) it is restarted again
# halfway through publishing, and the delivery check spans that restart too.
#   load.sh FEEDPLANE FEEDS SUBSCRIPTIONS SECONDS SPEED [--restart-during-run]
set -euo pipefail
bin=$1 feeds=$2 subs=$3 secs=$4 speed=$5 during=${6:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
"$bin" load --feeds "$feeds" --subscriptions "$subs" --duration "$secs" --speed "$speed" \
  --shards 2 --min-interval 2 --max-interval 10 --restarts 1 $during --out "$tmp/out" \
  >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
cat "$tmp/out/report.md" 2>/dev/null || true
if [ "$rc" -ne 0 ]; then
  echo "FAIL: feedplane load exited $rc" >&2
  tail -30 "$tmp/stderr" >&2
  tail -20 "$tmp/out/feedplane.log" >&2 || true
  exit 1
fi
last=$(tail -1 "$tmp/stdout")
echo "$last"
[[ "$last" =~ ^delivery:\ ([0-9]+)\ expected,\ ([0-9]+)\ delivered,\ ([0-9]+)\ pushed\ out,\ 0\ unexplained,\ 0\ duplicates$ ]] ||
  { echo "FAIL: last line is not a clean delivery line" >&2; exit 1; }
[ "${BASH_REMATCH[1]}" -gt 0 ] && [ "${BASH_REMATCH[2]}" -gt 0 ] ||
  { echo "FAIL: nothing expected or nothing delivered" >&2; exit 1; }
grep -q "^- restarts with $subs subscriptions" "$tmp/out/report.md" ||
  { echo "FAIL: the report gives no restart time" >&2; exit 1; }
if [ -n "$during" ]; then
  grep -q "^- restart during publishing, at " "$tmp/out/report.md" ||
    { echo "FAIL: the report gives no restart during publishing" >&2; exit 1; }
fi
grep -q "^- intra-network latency to the reflectors" "$tmp/out/report.md" ||
  { echo "FAIL: the report gives no fetch-to-lists latency (Figure 13)" >&2; exit 1; }
# Figure 10: a row per step of the bulk load, every probe answered (-1 is a failed probe).
rows=$(grep -cE "^\| [0-9]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$" "$tmp/out/report.md" || true)
[ "$rows" -ge 2 ] || { echo "FAIL: the report has $rows match-time rows (Figure 10)" >&2; exit 1; }
# The exact tail (GET /api/match-stats): the row of every article length holds articles.
grep -qE "^\| all \| [1-9][0-9]* \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|" "$tmp/out/report.md" ||
  { echo "FAIL: the report has no exact match-time tail (GET /api/match-stats)" >&2; exit 1; }
# The index's upkeep ran on the shards (re-filing under the rarest word as counts move).
grep -qE "^The index's upkeep .*: [1-9][0-9]* passes" "$tmp/out/report.md" ||
  { echo "FAIL: the report shows no pass of the index's upkeep" >&2; exit 1; }
# The machine's own tail beside it (bench/machine_tail.h): timed samples, p99 >= p50 > 0.
[[ "$(grep "^The machine's own tail" "$tmp/out/report.md" || true)" =~ :\ ([0-9]+)\ samples,\ p50\ ([0-9.]+)\ us,\ p99\ ([0-9.]+)\ us ]] ||
  { echo "FAIL: the report gives no machine's own tail" >&2; exit 1; }
python3 -c "import sys; n, p50, p99 = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]); sys.exit(0 if n >= 100 and 0 < p50 <= p99 else 1)" \
  "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" ||
  { echo "FAIL: the machine's own tail: ${BASH_REMATCH[0]}" >&2; exit 1; }
# Every sample itself (match-samples.json), read by bench/match_samples.py: every article
# length, so the small runs' short articles count.
here=$(cd "$(dirname "$0")" && pwd)
python3 "$here/../../bench/match_samples.py" --min-words 0 --max-words 1000000 "$tmp/out" \
  >"$tmp/samples" 2>&1 || { cat "$tmp/samples" >&2; echo "FAIL: match_samples.py" >&2; exit 1; }
grep -qE "^$tmp/out: [1-9][0-9]* articles; wall p50 " "$tmp/samples" ||
  { cat "$tmp/samples" >&2; echo "FAIL: no match samples in match-samples.json" >&2; exit 1; }
grep '^feedplane_reflector_snapshot_encode_seconds_count' "$tmp/out/metrics.txt" >/dev/null ||
  { echo "FAIL: no final /metrics in OUT/metrics.txt" >&2; exit 1; }
for png in lag intra delivered poll memory match; do
  [ -s "$tmp/out/$png.png" ] || { echo "FAIL: no $png.png" >&2; exit 1; }
done
# Run again into the same --out (as the default --out is): the earlier run's store and
# truth log are not this run's, so it loads only its own subscriptions and its delivery
# check is clean (the farm appends to its truth log; feedplane opens the store it finds).
if [ -z "$during" ]; then
  rc=0
  "$bin" load --feeds 50 --subscriptions 300 --duration 1 --speed "$speed" --shards 2 \
    --min-interval 1 --max-interval 2 --quiet 2 --restarts 1 --out "$tmp/out" \
    >"$tmp/stdout2" 2>"$tmp/stderr2" || rc=$?
  [ "$rc" -eq 0 ] || { tail -30 "$tmp/stderr2" >&2; echo "FAIL: a run into an earlier run's --out exited $rc" >&2; exit 1; }
  grep "removing the earlier run's store" "$tmp/stderr2" >/dev/null ||
    { echo "FAIL: the earlier run's store was not removed" >&2; exit 1; }
  grep "^- restarts with 300 subscriptions" "$tmp/out/report.md" >/dev/null ||
    { grep "^- restarts" "$tmp/out/report.md" >&2; echo "FAIL: the second run loaded more than its own subscriptions" >&2; exit 1; }
  tail -1 "$tmp/stdout2"
  [[ "$(tail -1 "$tmp/stdout2")" =~ ^delivery:\ [1-9][0-9]*\ expected,\ [0-9]+\ delivered,\ [0-9]+\ pushed\ out,\ 0\ unexplained,\ 0\ duplicates$ ]] ||
    { echo "FAIL: the second run's last line is not a clean delivery line" >&2; exit 1; }
fi
echo "PASS"
