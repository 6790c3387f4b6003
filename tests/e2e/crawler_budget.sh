#!/usr/bin/env bash
# The crawler's fetch budget inside `feedplane serve` (Sia and Cho's allocation): a feed
# whose first document shows three weeks of postings has enough history, so with
# [crawler] fetch_budget_per_hour set its next fetch comes from the allocation and its
# status names that rule; a feed with no history stays on the adaptive interval; the
# learnt history survives a restart. nginx serves both feeds (as in crawler_serve.sh).
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
chmod 755 "$tmp"  # nginx's workers run as another user when started by root
pid=""
ngx=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ -n "$ngx" ]; then kill "$ngx" 2>/dev/null || true; wait "$ngx" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [ -f "$tmp/serve.log" ] && tail -20 "$tmp/serve.log" >&2
  exit 1
}
command -v nginx >/dev/null || fail "nginx is not installed (scripts/setup installs it)"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

mkdir -p "$tmp/feeds"
{
  echo '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>busy</title>'
  for i in $(seq 1 21); do
    echo "<item><guid>busy-$i</guid><title>busy $i</title><pubDate>$(date -u -R -d "-$i days")</pubDate></item>"
  done
  echo '</channel></rss>'
} >"$tmp/feeds/busy.xml"
{
  echo '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>new</title>'
  echo "<item><guid>new-1</guid><title>new 1</title><pubDate>$(date -u -R)</pubDate></item>"
  echo '</channel></rss>'
} >"$tmp/feeds/new.xml"

nport=$(free_port)
cat >"$tmp/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/error.log;
events { worker_connections 64; }
http { access_log off; server { listen 127.0.0.1:$nport; root $tmp/feeds; } }
NGINX
nginx -c "$tmp/nginx.conf" -p "$tmp" >"$tmp/nginx.out" 2>&1 &
ngx=$!
for _ in $(seq 50); do
  curl -s -o /dev/null "http://127.0.0.1:$nport/busy.xml" && break
  sleep 0.1
done

cat >"$tmp/feedplane.toml" <<TOML
[crawler]
min_interval_s = 1
max_interval_s = 2
fetch_budget_per_hour = 100
TOML
export FEEDPLANE_ADMIN_TOKEN=test-admin-token
auth="Authorization: Bearer $FEEDPLANE_ADMIN_TOKEN"
start() {
  : >"$tmp/serve.log"  # now, not in the child: a grep before it truncates would read the last port
  "$bin" serve --config "$tmp/feedplane.toml" --listen 127.0.0.1:0 --data "$tmp/data" \
    --shards 1 --no-pin --resolve "busy.example:$nport:127.0.0.1" \
    --resolve "new.example:$nport:127.0.0.1" >"$tmp/serve.log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 100); do
    port=$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/serve.log" 2>/dev/null | cut -d: -f3 || true)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || fail "serve exited at start-up"
    sleep 0.1
  done
  [ -n "$port" ] || fail "serve did not print its address"
  for _ in $(seq 50); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ] && break
    sleep 0.1
  done
  base="http://127.0.0.1:$port"
}
stop() { kill "$pid"; wait "$pid" || true; pid=""; }
add() { curl -s -X POST -H "$auth" -d "{\"url\": \"$1\"}" "$base/api/sources" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
status() { curl -s -H "$auth" "$base/api/sources/$1"; }
wait_fetched() {  # until the source has been fetched at least once (10 s)
  for _ in $(seq 100); do
    status "$1" | grep '"last_fetch": {' >/dev/null && return 0
    sleep 0.1
  done
  fail "source $1 was not fetched: $(status "$1")"
}

start
busy=$(add "http://busy.example:$nport/busy.xml")
new=$(add "http://new.example:$nport/new.xml")
wait_fetched "$busy"
wait_fetched "$new"
sleep 0.5
status "$busy" >"$tmp/busy.json"
status "$new" >"$tmp/new.json"
python3 - "$tmp/busy.json" "$tmp/new.json" <<'PY' || fail "status: $(cat "$tmp/busy.json") $(cat "$tmp/new.json")"
import json, sys
b = json.load(open(sys.argv[1]))
n = json.load(open(sys.argv[2]))
s = b["schedule"]
assert s["rule"] == "allocation" and s["enough_history"], b
assert 0.5 < s["postings_per_day"] < 2, b
# The only feed with history takes the whole budget: 100 fetches an hour, one per 36 s.
assert s["budget_interval_s"] == 36, b
assert b["next_fetch"]["reason"].startswith("fetch budget"), b
t = n["schedule"]
assert t["rule"] == "adaptive" and not t["enough_history"] and t["budget_interval_s"] is None, n
assert n["next_fetch"]["reason"].startswith("adaptive interval"), n
PY
since=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["schedule"]["history_since_ms"])' "$tmp/busy.json")

# A restart resumes the learnt history (persisted with the crawl state).
stop
start
sleep 0.5
status "$busy" >"$tmp/busy2.json"
python3 - "$tmp/busy2.json" "$since" <<'PY' || fail "after restart: $(cat "$tmp/busy2.json")"
import json, sys
b = json.load(open(sys.argv[1]))
s = b["schedule"]
assert s["history_since_ms"] == int(sys.argv[2]), (s, sys.argv[2])
assert s["rule"] == "allocation" and 0.5 < s["postings_per_day"] < 2, b
PY
stop
echo "crawler_budget: ok"
