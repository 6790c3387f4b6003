#!/usr/bin/env bash
# The same document again, without validators (issue 10): a feed whose server sends no ETag
# and ignores If-Modified-Since (nginx `etag off; if_modified_since off;`) answers every
# conditional GET with a 200 and the same bytes. The crawler recognises it by the document's
# hash ("unchanged") and, as for a 304, writes the feed's record only when something a
# restart needs moved: not once per fetch. Fetched every second ([crawler] min_interval_s =
# max_interval_s = 1); the store's acknowledged writes must stay far below the fetches.
# Checked to fail when every unchanged fetch is a crawl write (8 writes for 8 fetches).
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
  [ -f "$tmp/serve.log" ] && grep -v '^feedplane: shard' "$tmp/serve.log" | tail -30 >&2
  [ -f "$tmp/access.log" ] && tail -20 "$tmp/access.log" >&2
  exit 1
}
command -v nginx >/dev/null || fail "nginx is not installed (scripts/setup installs it)"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

mkdir -p "$tmp/feeds"
{
  echo '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>same</title>'
  echo "<item><guid>same-1</guid><title>the same</title><pubDate>$(date -u -R)</pubDate></item>"
  echo '</channel></rss>'
} >"$tmp/feeds/same.xml"

nport=$(free_port)
cat >"$tmp/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/error.log;
events { worker_connections 64; }
http {
  log_format t '\$msec \$status';
  access_log $tmp/access.log t;
  server { listen 127.0.0.1:$nport; root $tmp/feeds; etag off; if_modified_since off; }
}
NGINX
nginx -c "$tmp/nginx.conf" -p "$tmp" >"$tmp/nginx.out" 2>&1 &
ngx=$!
for _ in $(seq 50); do
  [ -f "$tmp/nginx.pid" ] && break
  sleep 0.1
done

cat >"$tmp/feedplane.toml" <<TOML
[crawler]
min_interval_s = 1
max_interval_s = 1
TOML
export FEEDPLANE_ADMIN_TOKEN=test-admin-token
auth="Authorization: Bearer $FEEDPLANE_ADMIN_TOKEN"
: >"$tmp/serve.log"
"$bin" serve --config "$tmp/feedplane.toml" --listen 127.0.0.1:0 --data "$tmp/data" \
  --shards 1 --no-pin --resolve "same.example:$nport:127.0.0.1" >"$tmp/serve.log" 2>&1 &
pid=$!
port=""
for _ in $(seq 100); do
  port=$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/serve.log" 2>/dev/null | cut -d: -f3 || true)
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || fail "serve exited at start-up"
  sleep 0.1
done
[ -n "$port" ] || fail "serve did not print its address"
base="http://127.0.0.1:$port"
for _ in $(seq 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ] && break
  sleep 0.1
done
metric() {  # metric NAME [LABELS]: its value in /metrics (0 when absent)
  curl -s "$base/metrics" | awk -v n="$1${2:-}" '$1 == n { v = $2 } END { print v + 0 }'
}
: >"$tmp/access.log"
curl -s -X POST -H "$auth" -d "{\"url\": \"http://same.example:$nport/same.xml\"}" "$base/api/sources" |
  grep -q '"id"' || fail "add source"
# The first fetch parses the document and writes its record; from the second on, each is
# the same document.
for _ in $(seq 100); do
  [ "$(metric feedplane_crawler_fetches_total '{result="unchanged"}')" -ge 1 ] && break
  sleep 0.1
done
writes0=$(metric feedplane_store_writes_acked_total)
unchanged0=$(metric feedplane_crawler_fetches_total '{result="unchanged"}')
[ "$unchanged0" -ge 1 ] || fail "no unchanged fetch after 10 s"
grep -q ' 200$' "$tmp/access.log" || fail "nginx answered no 200"
grep -v ' 200$' "$tmp/access.log" | grep -q . && fail "nginx answered something else than 200"
for _ in $(seq 200); do
  [ "$(metric feedplane_crawler_fetches_total '{result="unchanged"}')" -ge $((unchanged0 + 8)) ] && break
  sleep 0.1
done
writes=$(($(metric feedplane_store_writes_acked_total) - writes0))
unchanged=$(($(metric feedplane_crawler_fetches_total '{result="unchanged"}') - unchanged0))
[ "$unchanged" -ge 8 ] || fail "$unchanged unchanged fetches in 20 s, wanted 8"
# Shard 0's liveness beat (every 10 s) may write once or twice meanwhile.
[ "$writes" -le 2 ] || fail "$writes store writes for $unchanged unchanged fetches"
echo "crawler_unchanged: $unchanged unchanged fetches (200, the same document), $writes store writes"
kill "$pid"
wait "$pid" || true
pid=""
echo "crawler_unchanged: passed"
