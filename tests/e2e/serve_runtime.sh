#!/usr/bin/env bash
# `feedplane serve --shards N`: shards joined by rings with a store thread, end to end.
# /healthz and /readyz; a cross-shard request (GET /api/shards/{n}) answered by every shard
# from every shard, pipelined on one connection; a connection closed while its request is
# away on another shard; /metrics accepted by `promtool check metrics` (Debian prometheus);
# kill -9 and a restart on the same data directory. The server is stopped by its pid.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/serve.log" ] && tail -20 "$tmp/serve.log" >&2; exit 1; }

start() {
  : >"$tmp/serve.log"  # now, not in the child: a grep before it truncates would read the last port
  "$bin" serve --listen 127.0.0.1:0 --data "$tmp/data" --shards "$1" --no-pin >"$tmp/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    port=$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/serve.log" 2>/dev/null | cut -d: -f3 || true)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || fail "serve exited at start-up"
    sleep 0.1
  done
  [ -n "$port" ] || fail "serve did not print its address"
  for _ in $(seq 50); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ] && return 0
    sleep 0.1
  done
  fail "/readyz never answered 200"
}

shards=3
start $shards
base="http://127.0.0.1:$port"
[ "$(curl -s "$base/healthz")" = "ok" ] || fail "/healthz"
grep -q "with $shards shard(s) and a store in" "$tmp/serve.log" || fail "start-up line"

# Every shard answers for itself, whichever shard holds the connection (SO_REUSEPORT
# spreads connections; 30 connections reach every shard with overwhelming likelihood, and
# the answer says which shard produced it, so a wrong route cannot pass).
for i in $(seq 30); do
  n=$((i % shards))
  out=$(curl -s -m 5 "$base/api/shards/$n") || fail "curl /api/shards/$n"
  echo "$out" | grep -q "\"shard\": $n," || fail "/api/shards/$n answered: $out"
done
code=$(curl -s -o "$tmp/e.json" -w '%{http_code}' "$base/api/shards/99")
[ "$code" = 404 ] || fail "/api/shards/99 gave $code"
grep -q '"error": "not_found"' "$tmp/e.json" || fail "404 body: $(cat "$tmp/e.json")"

# Pipelining: 3 x shards requests in one write on one connection, answered in order, and a
# connection that goes away while its request is on another shard.
python3 - "$port" "$shards" <<'PY' || fail "pipelining / closed connection"
import socket, sys, time
port, shards = int(sys.argv[1]), int(sys.argv[2])
reqs = [f"GET /api/shards/{i % shards} HTTP/1.1\r\nHost: x\r\n\r\n" for i in range(3 * shards)]
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall("".join(reqs).encode())
buf = b""
while buf.count(b"\"shard\": ") < len(reqs):
    chunk = s.recv(65536)
    if not chunk:
        sys.exit("connection closed early")
    buf += chunk
order = [int(part.split(b",")[0]) for part in buf.split(b"\"shard\": ")[1:]]
if order != [i % shards for i in range(len(reqs))]:
    sys.exit(f"answers out of order: {order}")
s.close()
for _ in range(20):  # closed before the answer comes back
    c = socket.create_connection(("127.0.0.1", port), timeout=5)
    c.sendall(b"GET /api/shards/1 HTTP/1.1\r\nHost: x\r\n\r\n")
    c.close()
time.sleep(0.2)
PY
kill -0 "$pid" || fail "serve died"
[ "$(curl -s "$base/healthz")" = "ok" ] || fail "/healthz after closed connections"

# /metrics: valid exposition format, the runtime's and the store's figures.
curl -s "$base/metrics" >"$tmp/metrics.txt" || fail "/metrics"
promtool check metrics <"$tmp/metrics.txt" >"$tmp/promtool.txt" 2>&1 ||
  fail "promtool check metrics: $(cat "$tmp/promtool.txt")"
for m in feedplane_loop_turns_total feedplane_ring_occupancy feedplane_ring_wakeups_total \
  feedplane_ring_stalls_total feedplane_tasks_run_total feedplane_store_queue_depth \
  feedplane_store_fsync_seconds_bucket feedplane_store_group_writes_bucket \
  feedplane_articles_alive_bytes feedplane_loop_completions_total; do
  grep -q "^$m" "$tmp/metrics.txt" || fail "/metrics has no $m"
done
# Every shard contributed: tasks run for other shards add up to at least the cross-shard
# answers above.
runs=$(awk '/^feedplane_tasks_run_total /{print $2}' "$tmp/metrics.txt")
[ "${runs:-0}" -ge 10 ] || fail "feedplane_tasks_run_total = $runs"

# kill -9, then a restart on the same store with another shard count.
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=""
start 2
[ "$(curl -s "http://127.0.0.1:$port/healthz")" = "ok" ] || fail "/healthz after restart"
out=$(curl -s -m 5 "http://127.0.0.1:$port/api/shards/1")
echo "$out" | grep -q '"store_streamed": true' || fail "after restart: $out"

kill "$pid"
wait "$pid" || fail "serve exited non-zero on SIGTERM"
pid=""
echo "serve runtime e2e: ok"
