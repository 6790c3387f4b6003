#!/usr/bin/env bash
# bench/restart_time.sh BIN DIR: starts `BIN serve` on a load run's output directory DIR
# (its data/, feedplane.toml and pins.txt, as `feedplane load --out DIR` leaves them), prints
# the seconds from start until /readyz is 200, then stops it with SIGTERM. Interleave two
# binaries to compare restarts (bench/RESULTS.md, "load harness: 1M feeds x 10M ...").
set -euo pipefail
bin=$1
dir=$2
log=$(mktemp /tmp/fp-restart.XXXXXX)
trap 'rm -f "$log"' EXIT
t0=$(date +%s.%N)
FEEDPLANE_ADMIN_TOKEN=restart-bench "$bin" serve --listen 127.0.0.1:0 --data "$dir/data" \
  --config "$dir/feedplane.toml" --resolve-file "$dir/pins.txt" --no-pin >"$log" 2>&1 &
pid=$!
ready=0
for _ in $(seq 6000); do
  u=$(grep -o 'http://127.0.0.1:[0-9]*' "$log" | head -1 || true)
  if [ -n "$u" ] && curl -sf -o /dev/null "$u/readyz"; then
    ready=1
    break
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
t1=$(date +%s.%N)
kill -TERM "$pid" 2>/dev/null || true
wait "$pid" || true
[ "$ready" = 1 ] || { echo "feedplane did not become ready:" >&2; tail -5 "$log" >&2; exit 1; }
python3 -c "print(f'{$t1 - $t0:.1f}')"
