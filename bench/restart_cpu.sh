#!/usr/bin/env bash
# One restart of `feedplane serve` on the data of a finished `feedplane load --out DIR` run:
# the time from exec to /readyz answering 200, and each thread's CPU seconds at that moment
# (from /proc/PID/task/*/stat), so that a change to start-up shows where its time went, and
# what the start did (articles re-matched, lists restored from snapshots); then how long
# its clean stop takes. It prints the resident memory at ready too.
# Run it alternately with two binaries to compare them (the VM's noise is large).
#   bench/restart_cpu.sh FEEDPLANE DIR
set -euo pipefail
. "$(dirname "$0")/serve_port.sh"
bin=$1 d=$2
log=$(mktemp)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -f "$log"' EXIT
# True once GET /readyz on 127.0.0.1:$1 answers 200 (bash's /dev/tcp: no process per poll).
ready() {
  local line
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET /readyz HTTP/1.0\r\n\r\n' >&3
  read -r line <&3
  exec 3>&-
  [[ $line == *" 200"* ]]
}
t0=$(date +%s.%N)
# A load run's directory has the farm's pins: they keep the crawler's host names (real
# names such as example.neocities.org) on loopback. Without them (restart_log.sh writes
# its pins into its config instead) the crawler would ask the machine's resolver.
pins=()
[ -f "$d/pins.txt" ] && pins=(--resolve-file "$d/pins.txt")
"$bin" serve --listen 127.0.0.1:0 --data "$d/data" --config "$d/feedplane.toml" "${pins[@]}" \
  --no-pin >"$log" 2>&1 &
pid=$!
port=$(serve_port "$log" "$pid")
until ready "$port" 2>/dev/null; do sleep 0.01; done
t1=$(date +%s.%N)
cpu=$(for t in /proc/$pid/task/*; do awk '{ c = ($14 + $15) / 100; if (c > 0) printf "%s %.2f  ", $2, c }' "$t/stat"; done)
rss=$(awk '$1 == "VmRSS:" { printf "%d", $2 / 1024 }' "/proc/$pid/status")
m=$(curl -s -m 5 "http://127.0.0.1:$port/metrics")
metric() { echo "$m" | awk -v k="$1" '$1 == k { print $2 }'; }
echo "ready in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s; articles replayed $(metric feedplane_store_articles_replayed_total) from sequence $(metric feedplane_store_replay_first_seq), articles matched $(metric feedplane_reflector_articles_matched_total), lists restored $(metric feedplane_reflector_restored_lists_total), subscriptions $(metric feedplane_reflector_subscriptions); resident ${rss} MiB; thread CPU-s: $cpu"
# Then the clean stop: SIGTERM to exit (the stop writes the list snapshots its partitions
# still owe, and flushes the store).
sleep 0.5
t2=$(date +%s.%N)
kill "$pid"
wait "$pid" || true
pid=""
echo "stopped in $(awk -v a="$t2" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}') s (SIGTERM to exit)"
