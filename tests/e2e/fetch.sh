#!/usr/bin/env bash
# `feedplane fetch` against a real nginx on a free loopback port (started here, stopped by
# pid): JSON shape for 200, gzip, a redirect chain, 404, --output, -H, and the error object.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
chmod 755 "$tmp"  # nginx workers run as www-data when started by root
nginx_pid=""
cleanup() {
  if [ -n "$nginx_pid" ]; then kill "$nginx_pid" 2>/dev/null || true; wait "$nginx_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/error.log" ] && tail -5 "$tmp/error.log" >&2; exit 1; }

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
tls_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# A CA and a server certificate for localhost, made with the openssl CLI.
(cd "$tmp" &&
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
    -days 2 -subj /CN=feedplane-e2e-ca 2>/dev/null &&
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr \
    -subj /CN=localhost 2>/dev/null &&
  printf 'subjectAltName=DNS:localhost\n' >ext.cnf &&
  openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 2 \
    -extfile ext.cnf 2>/dev/null) || fail "openssl could not make the test certificates"
mkdir -p "$tmp/www" "$tmp/t"
python3 -c 'import sys; sys.stdout.write(("<rss><channel>" + "<item><title>x</title></item>"*300 + "</channel></rss>"))' >"$tmp/www/feed.xml"
cat >"$tmp/nginx.conf" <<CONF
worker_processes 1;
error_log $tmp/error.log warn;
pid $tmp/nginx.pid;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $tmp/t/b; proxy_temp_path $tmp/t/p; fastcgi_temp_path $tmp/t/f;
  uwsgi_temp_path $tmp/t/u; scgi_temp_path $tmp/t/s;
  types { application/rss+xml xml; }
  server {
    listen 127.0.0.1:$port;
    root $tmp/www;
    gzip on; gzip_types application/rss+xml; gzip_min_length 0;
    location = /old { return 301 /feed.xml; }
  }
  server {
    listen 127.0.0.1:$tls_port ssl;
    ssl_certificate $tmp/leaf.pem;
    ssl_certificate_key $tmp/leaf.key;
    root $tmp/www;
  }
}
CONF
/usr/sbin/nginx -p "$tmp" -c "$tmp/nginx.conf" -g 'daemon off;' &
nginx_pid=$!
for _ in $(seq 100); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
  sleep 0.05
done

base="http://127.0.0.1:$port"
check() {  # check JSON_FILE PYTHON_EXPR...
  local f=$1; shift
  python3 - "$f" "$@" <<'PY' || fail "JSON check failed on $(cat "$f")"
import json, sys
d = json.load(open(sys.argv[1]))
for expr in sys.argv[2:]:
    if not eval(expr, {"d": d}):
        print("failed:", expr, file=sys.stderr); sys.exit(1)
PY
}

"$bin" fetch "$base/feed.xml" >"$tmp/a.json" || fail "fetch 200 exited non-zero"
size=$(stat -c %s "$tmp/www/feed.xml")
check "$tmp/a.json" 'd["status"] == 200' "d[\"decoded_bytes\"] == $size" 'd["wire_bytes"] < d["decoded_bytes"]' \
  'd["headers"]["Content-Encoding"] == "gzip"' 'd["redirects"] == []' "d[\"final_url\"] == \"$base/feed.xml\"" \
  'isinstance(d["elapsed_ms"], int)'

"$bin" fetch "$base/old" -o "$tmp/body.xml" >"$tmp/b.json" || fail "fetch redirect exited non-zero"
check "$tmp/b.json" 'd["status"] == 200' 'len(d["redirects"]) == 1' 'd["redirects"][0]["permanent"] is True' \
  'd["redirects"][0]["status"] == 301' "d[\"final_url\"] == \"$base/feed.xml\"" \
  "d[\"permanent_url\"] == \"$base/feed.xml\""
cmp -s "$tmp/body.xml" "$tmp/www/feed.xml" || fail "--output body differs"

etag=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["headers"].get("ETag",""))' "$tmp/b.json")
if [ -n "$etag" ]; then
  "$bin" fetch "$base/feed.xml" -H "If-None-Match: $etag" >"$tmp/c.json" || fail "fetch 304 exited non-zero"
  check "$tmp/c.json" 'd["status"] == 304' 'd["decoded_bytes"] == 0'
fi

"$bin" fetch "$base/missing" >"$tmp/d.json" || fail "fetch 404 exited non-zero"
check "$tmp/d.json" 'd["status"] == 404'

dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
if "$bin" fetch "http://127.0.0.1:$dead/" >"$tmp/e.json"; then fail "refused connection exited zero"; fi
check "$tmp/e.json" 'd["error"] == "connect_refused"' 'len(d["message"]) > 0'
if "$bin" fetch "gopher://x/" >"$tmp/f.json"; then fail "bad scheme exited zero"; fi
check "$tmp/f.json" 'd["error"] == "unsupported_scheme"'
if "$bin" fetch "$base/" -H "NoColon" >"$tmp/g.json"; then fail "bad -H exited zero"; fi
check "$tmp/g.json" 'd["error"] == "bad_request_header"'

tls="https://localhost:$tls_port/feed.xml"
"$bin" fetch "$tls" --cacert "$tmp/ca.pem" >"$tmp/h.json" || fail "https with --cacert exited non-zero: $(cat "$tmp/h.json")"
check "$tmp/h.json" 'd["status"] == 200' "d[\"decoded_bytes\"] == $size"
if "$bin" fetch "$tls" >"$tmp/i.json"; then fail "https without the CA exited zero"; fi
check "$tmp/i.json" 'd["error"] == "tls_unknown_ca"'
"$bin" fetch "$tls" --insecure >"$tmp/j.json" || fail "https --insecure exited non-zero"
check "$tmp/j.json" 'd["status"] == 200'
if "$bin" fetch "https://127.0.0.1:$tls_port/" --cacert "$tmp/ca.pem" >"$tmp/k.json"; then
  fail "https to a name the certificate does not cover exited zero"
fi
check "$tmp/k.json" 'd["error"] == "tls_name_mismatch"'
if "$bin" fetch "$tls" --cacert "$tmp/nonexistent.pem" >"$tmp/l.json"; then fail "missing CA file exited zero"; fi
check "$tmp/l.json" 'd["error"] == "bad_ca_file"'
echo "fetch ok"
