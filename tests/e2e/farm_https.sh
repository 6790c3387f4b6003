#!/usr/bin/env bash
# The farm's HTTPS end to end: `feedplane farm --https-share 1 --ca-out CA` serves every
# host over TLS with a leaf per SNI name issued by its CA; `feedplane serve` trusts that CA
# through [client] ca_file and reaches the farm's names through the pins it wrote
# (--resolve-file). Checks: the OPML and truth log name https:// URLs; curl --cacert
# fetches one (the name verified against its own certificate); the crawler fetches an
# HTTPS feed (200, no error), and once the farm publishes, the feed's new entries arrive
# as articles; the farm counted the handshakes and issued certificates. Both processes
# are stopped by pid.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
farm_pid=""
pid=""
cleanup() {
  for p in $pid $farm_pid; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [ -f "$tmp/serve.log" ] && tail -20 "$tmp/serve.log" >&2
  [ -f "$tmp/farm.err" ] && tail -5 "$tmp/farm.err" >&2
  exit 1
}

"$bin" farm --feeds 40 --seed 5 --hosts none --listen 127.0.0.1:0 --start-paused --speed 200000 \
  --https-share 1 --ca-out "$tmp/ca.pem" --truth "$tmp/truth.jsonl" --opml "$tmp/farm.opml" \
  --pins "$tmp/pins" >"$tmp/farm.out" 2>"$tmp/farm.err" &
farm_pid=$!
for _ in $(seq 200); do
  grep -q '^farm: listening on http://127.0.0.1:' "$tmp/farm.out" && break
  kill -0 "$farm_pid" 2>/dev/null || fail "the farm exited"
  sleep 0.05
done
fport=$(sed -n 's|^farm: listening on http://127.0.0.1:\([0-9]*\)$|\1|p' "$tmp/farm.out")
[ -n "$fport" ] || fail "no listening line"
grep -q '^farm: https on https://127.0.0.1:[0-9]* for [0-9]* hosts$' "$tmp/farm.out" ||
  fail "no https line: $(cat "$tmp/farm.out")"
grep -q 'BEGIN CERTIFICATE' "$tmp/ca.pem" || fail "--ca-out wrote no certificate"

# The busiest feed (it posts within seconds at this speed), its URL and pin.
read -r url host feed < <(python3 - "$tmp" <<'PY'
import json, sys, xml.etree.ElementTree as ET
tmp = sys.argv[1]
feeds = [l for l in map(json.loads, open(f"{tmp}/truth.jsonl")) if l["kind"] == "feed"]
assert feeds and all(f["https"] and f["url"].startswith("https://") for f in feeds), feeds[:2]
urls = [o.get("xmlUrl") for o in ET.parse(f"{tmp}/farm.opml").getroot().iter("outline")]
assert urls == [f["url"] for f in feeds]
f = max(feeds, key=lambda f: f["rate_per_day"])
print(f["url"], f["host"], f["feed"])
PY
) || fail "truth log or OPML"
pin=$(grep "^$host:" "$tmp/pins") || fail "no pin for $host"
code=$(curl -sS --cacert "$tmp/ca.pem" --resolve "$pin" -o "$tmp/doc" -w '%{http_code}' "$url") ||
  fail "curl --cacert $url"
[ "$code" = 200 ] || fail "curl got $code"
grep -q '<rss\|<feed\|"version"' "$tmp/doc" || fail "not a feed: $(head -c 200 "$tmp/doc")"

# feedplane, trusting the farm's CA.
cat >"$tmp/feedplane.toml" <<EOF
[client]
ca_file = "$tmp/ca.pem"
[crawler]
min_interval_s = 1
max_interval_s = 2
per_domain_rate = 0
EOF
export FEEDPLANE_ADMIN_TOKEN=test-admin-token
auth="Authorization: Bearer $FEEDPLANE_ADMIN_TOKEN"
: >"$tmp/serve.log"  # now, not in the child: a grep before it truncates would read the last port
"$bin" serve --config "$tmp/feedplane.toml" --listen 127.0.0.1:0 --data "$tmp/data" --shards 1 \
  --no-pin --resolve-file "$tmp/pins" >"$tmp/serve.log" 2>&1 &
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
for _ in $(seq 50); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ] && break
  sleep 0.1
done
code=$(curl -s -o "$tmp/a.json" -w '%{http_code}' -X POST -H "$auth" \
  -d "{\"url\": \"$url\"}" "$base/api/sources")
[ "$code" = 201 ] || fail "add gave $code $(cat "$tmp/a.json")"
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/a.json")

status() {  # status CHECK: until the source's status passes the python CHECK on r (20 s)
  for _ in $(seq 200); do
    curl -s -H "$auth" "$base/api/sources/$id" >"$tmp/status.json"
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if ($1) else 1)" \
      "$tmp/status.json" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "source status never satisfied [$1]: $(cat "$tmp/status.json")"
}
# The first fetch over HTTPS: 200, verified (an unknown CA would be last_error).
status 'r.get("last_fetch") and r["last_fetch"]["status"] == 200 and r["last_error"] is None'
# Publishing: the feed's new entries arrive as articles through HTTPS re-fetches.
curl -s -X POST "http://127.0.0.1:$fport/_farm/start" >/dev/null
status 'r["articles"] > 0 and r["last_error"] is None'
curl -s "http://127.0.0.1:$fport/_farm/stats" >"$tmp/stats.json"
python3 - "$tmp/stats.json" <<'PY' || fail "farm stats: $(cat "$tmp/stats.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["tls_handshakes"] >= 1 and s["tls_failed"] == 0 and s["certs_issued"] == 1, s
PY
echo "farm_https: ok"
