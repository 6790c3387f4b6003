#!/usr/bin/env bash
# bench/matcher_series.sh ROUNDS FILTER COMMAND...: runs each matcher_bench COMMAND once per
# round, interleaved (A B C A B C ...), each in a fresh process with
# --benchmark_filter=FILTER, and prints every row's median and p99 per run, then the
# median of the per-run medians for each command and row. On a host whose memory system
# is shared, one process's figure moves by +-25%; interleaving puts every command through
# the same minutes.
#
#   bench/matcher_series.sh 8 'match/(index|counting)/subs:1000000/words:61$' \
#     /tmp/start/build/bench/matcher_bench build/bench/matcher_bench \
#     'env MIMALLOC_LARGE_OS_PAGES=0 build/bench/matcher_bench'
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 ROUNDS FILTER COMMAND..." >&2; exit 2; }
rounds=$1 filter=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((r = 1; r <= rounds; r++)); do
  echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
  for ((c = 1; c <= $#; c++)); do
    cmd=${!c}
    bash -c "$cmd --benchmark_filter='$filter'" 2>/dev/null |
      awk -v c="$c" '/^match\// { m = ""; p = "";
        for (i = 1; i <= NF; i++) { if ($i ~ /^median_us=/) m = substr($i, 11); if ($i ~ /^p99_us=/) p = substr($i, 8) }
        print c, $1, m, p }' | tee -a "$out" | awk '{ printf "  [%s] %s median %s us p99 %s us\n", $1, $2, $3, $4 }'
  done
done
echo "median of the per-run medians:"
for ((c = 1; c <= $#; c++)); do
  for row in $(awk -v c="$c" '$1 == c { print $2 }' "$out" | sort -u); do
    med=$(awk -v c="$c" -v r="$row" '$1 == c && $2 == r { print $3 }' "$out" | sort -g |
      awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    echo "  [$c] ${!c}: $row $med us"
  done
done
