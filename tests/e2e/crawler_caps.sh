#!/usr/bin/env bash
# The crawler's politeness at scale (issue 10): `feedplane serve` crawls 10,000 feeds over 50
# host names from a server of the test's own (caps_server.py, one loopback port, the Host
# header picks the host), which counts what the crawler must never exceed. 42 politeness
# keys: 40 registrable domains, five hosts of one domain (a..e.multi.test), five blogs of a
# shared platform (u1..u5.github.io, in [crawler] shared_domains by default). Checks
# (caps_check.py):
#   - never more than per_domain_connections (the default, 2) requests in flight per key,
#     nor connections open per host; never more starts than per_domain_rate allows in any
#     10 s; slowish hosts make the connection cap bind, the others the rate cap;
#   - 429 with Retry-After: nothing reaches the domain until Retry-After has passed, and the
#     feed answered 429 is the first fetched when it has (it keeps its place in the queue);
#   - Cache-Control max-age: those feeds are never fetched sooner, also across the restart,
#     though all new at every fetch (RSS <ttl>, in minutes, is in crawler_serve.sh);
#   - a 301 becomes the stored URL after exactly 3 observations;
#   - a host answering 4 s late stalls no one: every other feed is done while it is not;
#   - every feed's source holds exactly as many articles as the feed has entries (one
#     published on 100 feeds as it runs), and again after a restart on another shard count
#     while 100 feeds changed; after it every fetch of a known feed is conditional and the
#     hinted feeds wait.
set -euo pipefail
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
pid=""
srv=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ -n "$srv" ]; then kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [ -f "$tmp/serve.log" ] && tail -20 "$tmp/serve.log" >&2
  [ -f "$tmp/server.log" ] && tail -20 "$tmp/server.log" >&2
  exit 1
}
rate=20
retry_after=5

python3 "$here/caps_server.py" "$tmp/port" --retry-after "$retry_after" >"$tmp/server.log" 2>&1 &
srv=$!
for _ in $(seq 100); do
  [ -s "$tmp/port" ] && break
  sleep 0.1
done
[ -s "$tmp/port" ] || fail "the feed server did not start"
sport=$(cat "$tmp/port")
server="http://127.0.0.1:$sport"
check() { python3 "$here/caps_check.py" "$1" "$server" "${@:2}" || fail "caps_check $1"; }

# A known feed comes round again within the test: a new source starts at the ceiling (20 s);
# the cached host's feeds, all new at every fetch, would halve to the floor (2 s) but for
# their 15 s max-age (the ceiling caps hints, so it stays above).
cat >"$tmp/feedplane.toml" <<EOF
[crawler]
min_interval_s = 2
max_interval_s = 20
per_domain_rate = $rate
EOF
echo "*:$sport:127.0.0.1" >"$tmp/pins.txt"
export FEEDPLANE_ADMIN_TOKEN=caps-admin-token
auth="Authorization: Bearer $FEEDPLANE_ADMIN_TOKEN"

start() {
  : >"$tmp/serve.log"
  "$bin" serve --config "$tmp/feedplane.toml" --listen 127.0.0.1:0 --data "$tmp/data" \
    --shards "$1" --no-pin --resolve-file "$tmp/pins.txt" >"$tmp/serve.log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 100); do
    port=$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/serve.log" 2>/dev/null | cut -d: -f3 || true)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || fail "serve exited at start-up"
    sleep 0.1
  done
  [ -n "$port" ] || fail "serve did not print its address"
  for _ in $(seq 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ] && break
    sleep 0.1
  done
  base="http://127.0.0.1:$port"
}
stop() { kill "$pid"; wait "$pid" || true; pid=""; }

start 2
curl -s "$server/_opml" >"$tmp/feeds.opml"
out=$(curl -s -X POST -H "$auth" -H 'Content-Type: text/x-opml' --data-binary "@$tmp/feeds.opml" "$base/api/sources:import")
echo "$out" | grep -q '"added": 10000, "duplicates": 0' || fail "import answered $out"

check wait-acked first 150
check caps "$rate" 2 "$retry_after"
# A new entry in 100 feeds (site16.test) while it runs.
curl -s -X POST "$server/_publish?from=3840&n=100" >/dev/null
check wait-acked first 90 3840 100
check first "$base" "$FEEDPLANE_ADMIN_TOKEN" "$retry_after"
check articles "$base" "$FEEDPLANE_ADMIN_TOKEN" first

# Restart on 3 shards (sources move between shards) while 100 feeds (site25.test) change.
stop
curl -s -X POST "$server/_phase?name=down" >/dev/null
curl -s -X POST "$server/_publish?from=6000&n=100" >/dev/null
curl -s -X POST "$server/_phase?name=second" >/dev/null
start 3
check wait-acked second 90 6000 100
sleep 5  # more known feeds come round
check second
check caps "$rate" 2 "$retry_after"
check articles "$base" "$FEEDPLANE_ADMIN_TOKEN" second
stop
echo "crawler_caps: ok"
