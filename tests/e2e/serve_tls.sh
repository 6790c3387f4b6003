#!/usr/bin/env bash
# `feedplane serve --tls-cert --tls-key`: HTTPS on every shard, end to end with curl
# --cacert (a CA and a leaf for localhost made with the openssl CLI, as an operator would):
# /healthz over HTTPS on fresh connections (SO_REUSEPORT spreads them over the shards),
# keep-alive across requests, cross-shard (deferred) answers, session resumption on
# either shard (openssl s_client -sess_in), plain HTTP on the HTTPS port answered 400, the
# same from [server] tls_cert / tls_key in a config file, and refusals at start-up for a
# missing key or a key that does not match. The server is stopped by its pid.
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

cd "$tmp"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
  -out ca.pem -days 2 -subj /CN=feedplane-e2e-ca 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key \
  -out leaf.csr -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >ext.cnf
openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 2 \
  -extfile ext.cnf 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout other.key \
  -out other.csr -subj /CN=other 2>/dev/null

start() {
  "$bin" serve --listen 127.0.0.1:0 --data "$tmp/data" --shards 2 --no-pin "$@" \
    >"$tmp/serve.log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 100); do
    port=$(grep -o 'https://127.0.0.1:[0-9]*' "$tmp/serve.log" 2>/dev/null | cut -d: -f3 || true)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || fail "serve exited at start-up"
    sleep 0.1
  done
  [ -n "$port" ] || fail "serve did not print an https:// address"
  for _ in $(seq 50); do
    [ "$(curl -s --cacert ca.pem -o /dev/null -w '%{http_code}' \
      "https://localhost:$port/readyz")" = 200 ] && return 0
    sleep 0.1
  done
  fail "/readyz never answered 200 over HTTPS"
}
stop() {
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
}

start --tls-cert leaf.pem --tls-key leaf.key
base="https://localhost:$port"
for _ in $(seq 10); do
  [ "$(curl -sS --cacert ca.pem "$base/healthz")" = "ok" ] || fail "/healthz over HTTPS"
done
# By IP too (the certificate names 127.0.0.1), and the certificate is checked: without
# --cacert curl refuses it.
[ "$(curl -sS --cacert ca.pem "https://127.0.0.1:$port/healthz")" = "ok" ] || fail "by IP"
if curl -s -o /dev/null "$base/healthz"; then fail "curl accepted an unknown CA"; fi
# Keep-alive: two URLs, one connection.
out=$(curl -sS --cacert ca.pem -w ' %{num_connects}\n' "$base/healthz" "$base/healthz")
[ "$out" = "$(printf 'ok\n 1\nok\n 0')" ] || fail "keep-alive: $out"
# Deferred answers over TLS: /api/shards/{n} from whichever shard holds the connection
# (the other shard answers through the ring, then this shard encrypts and sends).
for i in $(seq 10); do
  n=$((i % 2))
  out=$(curl -sS --cacert ca.pem "$base/api/shards/$n") || fail "curl /api/shards/$n"
  echo "$out" | grep -q "\"shard\": $n," || fail "/api/shards/$n answered: $out"
done
# Resumption across shards: one session (its TLS 1.3 ticket saved by openssl s_client),
# then 6 new connections resuming it. SO_REUSEPORT puts them on both shards with
# overwhelming likelihood; a shard without the shared ticket keys would answer "New".
req='GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'
# shellcheck disable=SC2059
printf "$req" | openssl s_client -connect "127.0.0.1:$port" -servername localhost -CAfile ca.pem \
  -sess_out sess.pem -ign_eof >s0.txt 2>/dev/null || fail "s_client: $(cat s0.txt)"
grep -q '^New, TLSv1.3' s0.txt || fail "first session: $(grep -E '^(New|Reused)' s0.txt)"
for i in $(seq 6); do
  # shellcheck disable=SC2059
  printf "$req" | openssl s_client -connect "127.0.0.1:$port" -servername localhost \
    -CAfile ca.pem -sess_in sess.pem -ign_eof >s.txt 2>/dev/null || fail "s_client $i"
  grep -q '^Reused, TLSv1.3' s.txt || fail "connection $i did not resume: $(grep -E '^(New|Reused)' s.txt)"
  grep -q '^ok$' s.txt || fail "connection $i: no answer"
done
# Plain HTTP on the HTTPS port is told what is wrong.
out=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$port/healthz")
echo "$out" | grep -q 'plain HTTP request sent to an HTTPS port' || fail "plain HTTP: $out"
echo "$out" | grep -q ' 400$' || fail "plain HTTP status: $out"
stop

# The same from the config file.
printf '[server]\ntls_cert = "%s/leaf.pem"\ntls_key = "%s/leaf.key"\n' "$tmp" "$tmp" >tls.toml
start --config tls.toml
[ "$(curl -sS --cacert ca.pem "https://localhost:$port/healthz")" = "ok" ] || fail "config"
stop

# Refusals at start-up: a certificate without a key, a key that is not the certificate's.
if "$bin" serve --listen 127.0.0.1:0 --data "$tmp/data" --tls-cert leaf.pem >err.txt 2>&1; then
  fail "serve started with --tls-cert alone"
fi
grep -q 'needs both --tls-cert and --tls-key' err.txt || fail "message: $(cat err.txt)"
if "$bin" serve --listen 127.0.0.1:0 --data "$tmp/data" --tls-cert leaf.pem \
  --tls-key other.key >err.txt 2>&1; then
  fail "serve started with a key that does not match"
fi
grep -q 'does not match' err.txt || fail "message: $(cat err.txt)"
echo "serve_tls: ok"
