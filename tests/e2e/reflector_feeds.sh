#!/usr/bin/env bash
# The reflector end to end against `feedplane serve --shards 3`: accounts and subscriptions
# through the API and the admin bulk route (errors with the right status), articles in the
# real store's log (feedplane_test_put_articles, while serve is stopped; serve replays the
# log at start-up and the shards re-match it), then every feed polled in its three formats
# with curl (ETag, 304, gzip) and read by python3-feedparser (bozo 0, the right entries in
# order, hostile text inert) and newsboat. Subscriptions survive restarts; a subscription
# made after some articles starts with its matches among them (backfill), or none with
# "backfill": false, and keeps exactly that after a restart; previews; rotation,
# Idempotency-Key and the limits; the web page in headless Chromium. Stopped by pid.
# feedparser is Debian's (/usr/bin/python3), whatever python3 is first on PATH.
set -euo pipefail
bin=$1
put=$2
tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/serve.log" ] && tail -20 "$tmp/serve.log" >&2; exit 1; }

admin=admin-token-for-e2e
printf '[reflector]\nmax_subscriptions = 3\n[api]\nsignups_per_hour = 6\naccount_requests_per_s = 50\n' >"$tmp/feedplane.toml"
start() {
  : >"$tmp/serve.log"  # now, not in the child: a grep before it truncates would read the last port
  FEEDPLANE_ADMIN_TOKEN=$admin "$bin" serve --config "$tmp/feedplane.toml" --listen 127.0.0.1:0 \
    --data "$tmp/data" --shards 3 --no-pin >"$tmp/serve.log" 2>&1 &
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
stop() {
  kill "$pid"
  wait "$pid" || true
  pid=""
}
# call METHOD PATH [BODY] [TOKEN]: prints the body to $tmp/out, returns the status in $code.
call() {
  local args=(-s -o "$tmp/out" -w '%{http_code}' -X "$1")
  [ $# -ge 3 ] && [ -n "$3" ] && args+=(--data-binary "$3")
  [ $# -ge 4 ] && args+=(-H "Authorization: Bearer $4")
  code=$(curl "${args[@]}" "$base$2")
}
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$tmp/out" "$1"; }
expect() { # expect STATUS ERROR-CODE
  [ "$code" = "$1" ] || fail "expected $1, got $code: $(cat "$tmp/out")"
  [ -z "${2:-}" ] || grep -q "\"error\": \"$2\"" "$tmp/out" || fail "expected error $2: $(cat "$tmp/out")"
}

start
# ---- accounts and subscriptions ----
call POST /api/accounts; expect 201
alice=$(field secret); alice_id=$(field id)
[ "${#alice}" -ge 60 ] || fail "secret too short: $alice"
call POST /api/accounts; expect 201
bob=$(field secret)

call POST /api/subscriptions '{"query": "rust tokio", "title": "Rust <async>"}' "$alice"; expect 201
rust_id=$(field id)
rust=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["feeds"]["rss"])' "$tmp/out")
call POST /api/subscriptions '{"query": "linux -windows", "k": 2}' "$alice"; expect 201
linux_id=$(field id)
linux=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["feeds"]["rss"])' "$tmp/out")
grep -q '"k": 2' "$tmp/out" || fail "k: $(cat "$tmp/out")"

# Errors: malformed JSON, unknown field, a bad k, a query the matcher refuses (its message
# and column), no secret, a wrong secret, someone else's subscription, no such one.
call POST /api/subscriptions '{"query": ' "$alice"; expect 400 bad_json
call POST /api/subscriptions '{"query": "a", "colour": 1}' "$alice"; expect 400 unknown_field
call POST /api/subscriptions '{"query": "a", "k": 101}' "$alice"; expect 400 bad_value
call POST /api/subscriptions '{"query": "rust \"tokio"}' "$alice"; expect 400 invalid_query
grep -q '"reason": "unbalanced_quotes", "column": 6' "$tmp/out" || fail "query error: $(cat "$tmp/out")"
call POST /api/subscriptions '{"query": "rust"}'; expect 401 unauthenticated
call POST /api/subscriptions '{"query": "rust"}' "${alice%?}x"; expect 401 unauthenticated
call GET "/api/subscriptions/$rust_id" "" "$bob"; expect 403 not_yours
call DELETE "/api/subscriptions/$rust_id" "" "$bob"; expect 403 not_yours
call GET /api/subscriptions/s_nosuchthing "" "$alice"; expect 404 not_found
call POST /api/subscriptions:bulk '{"account": "x", "query": "y"}' "$alice"; expect 401 unauthenticated

# PATCH and DELETE by the owner.
call POST /api/subscriptions '{"query": "temporary"}' "$bob"; expect 201
tmp_id=$(field id)
tmp_feed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["feeds"]["json"])' "$tmp/out")
call PATCH "/api/subscriptions/$tmp_id" '{"title": "renamed", "k": 3}' "$bob"; expect 200
grep -q '"title": "renamed"' "$tmp/out" || fail "patch: $(cat "$tmp/out")"
call GET "$tmp_feed"; expect 200
call DELETE "/api/subscriptions/$tmp_id" "" "$bob"; expect 204
call GET "$tmp_feed"; expect 404 not_found
call GET "/api/subscriptions/$tmp_id" "" "$bob"; expect 404 not_found

# Bulk: JSON Lines in, one answer line per input line, in order; accounts on first use.
printf '%s\n' '{"account": "load-1", "query": "kernel", "k": 5}' 'not json' \
  '{"account": "load-2", "query": "rust", "backfill": false}' '{"account": "load-1", "query": "-x"}' \
  '{"account": "load-3", "query": "windows", "colour": 2}' '{"account": "load-1", "query": "the of"}' \
  >"$tmp/bulk.jsonl"
call POST /api/subscriptions:bulk "@$tmp/bulk.jsonl" "$admin"; expect 200
python3 - "$tmp/out" <<'PY' || fail "bulk answer: $(cat "$tmp/out")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l["line"] for l in lines] == [1, 2, 3, 4, 5, 6], lines
assert "id" in lines[0] and lines[0]["feed"].startswith("/f/"), lines[0]
assert lines[1]["error"] == "bad_json", lines[1]
assert "id" in lines[2], lines[2]
assert lines[3]["error"] == "invalid_query" and lines[3]["reason"] == "only_exclusions", lines[3]
assert lines[4]["error"] == "unknown_field", lines[4]
# plain words, but only frequent ones: refused (the plain-word check is not the whole test)
assert lines[5]["error"] == "invalid_query" and lines[5]["reason"] == "only_frequent_words", lines[5]
open(sys.argv[1] + ".feed", "w").write(lines[0]["feed"])
PY
kernel=$(cat "$tmp/out.feed")

# An empty feed: 200 with an ETag; 304 when it is sent back.
curl -s -D "$tmp/h0" -o "$tmp/empty.xml" "$base$rust" || fail "poll"
etag0=$(grep -i '^etag:' "$tmp/h0" | cut -d' ' -f2 | tr -d '\r')
[ -n "$etag0" ] || fail "no ETag: $(cat "$tmp/h0")"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag0" "$base$rust")" = 304 ] || fail "no 304"
call GET /api/subscriptions "" "$alice"; expect 200
[ "$(grep -o '"id": "s_' "$tmp/out" | wc -l)" = 2 ] || fail "alice's list: $(cat "$tmp/out")"
# Every account survives the restart, those made on first use by the bulk route included
# (their records travel with their subscriptions' writes).
accounts_before=$(curl -s "$base/metrics" | awk '$1 == "feedplane_reflector_accounts" {print $2}')
[ "${accounts_before:-0}" -ge 4 ] || fail "accounts before the restart: $accounts_before"
stop

# ---- articles, through the store's log ----
now=$(date +%s)
cat >"$tmp/a1.jsonl" <<EOF
{"title": "Rust and Tokio 1.0", "link": "https://blog.example/rust-tokio", "guid": "tag:blog.example,2026:1", "summary": "<p>The <b>Tokio</b> runtime for Rust.</p>", "source_url": "https://blog.example/feed.xml", "published": $((now - 500))}
{"title": "Linux 6.1 released", "link": "https://lwn.example/61", "guid": "lwn-61", "summary": "The Linux kernel 6.1.", "source_url": "https://lwn.example/rss", "published": $((now - 400))}
{"title": "Linux 6.2 and windows", "link": "https://lwn.example/62", "guid": "lwn-62", "summary": "Not for the linux subscription.", "source_url": "https://lwn.example/rss", "published": $((now - 300))}
{"title": "Linux 6.3 released", "link": "https://lwn.example/63", "guid": "lwn-63", "summary": "Kernel news.", "source_url": "https://lwn.example/rss", "published": $((now - 200))}
{"title": "<script>alert(1)</script> rust & tokio", "link": "https://evil.example/x?a=1&b=2", "guid": "evil-1", "summary": "<img src=x onerror=alert(1)><a href=\"javascript:alert(2)\">rust</a> tokio ]]> &amp; <style>*{}</style>", "source_url": "https://evil.example/feed", "published": $((now - 100))}
{"title": "Linux 6.4 released", "link": "https://lwn.example/64", "guid": "lwn-64", "summary": "Kernel.", "source_url": "https://lwn.example/rss", "published": $((now - 50))}
EOF
"$put" "$tmp/data/db" <"$tmp/a1.jsonl" >"$tmp/seqs1" || fail "put_articles"
[ "$(wc -l <"$tmp/seqs1")" = 6 ] || fail "sequences: $(cat "$tmp/seqs1")"
rust_seq=$(awk '$2 == "tag:blog.example,2026:1" {print $1}' "$tmp/seqs1")
# An update of the Rust entry: it replaces the first version in place.
echo "{\"title\": \"Rust and Tokio 1.0 (updated)\", \"link\": \"https://blog.example/rust-tokio\", \"guid\": \"tag:blog.example,2026:1\", \"summary\": \"Tokio for Rust, updated.\", \"source_url\": \"https://blog.example/feed.xml\", \"published\": $((now - 500)), \"replaces\": $rust_seq}" |
  "$put" "$tmp/data/db" >"$tmp/seqs2" || fail "put_articles (update)"

start
call GET /api/subscriptions "" "$alice"; expect 200
[ "$(grep -o '"id": "s_' "$tmp/out" | wc -l)" = 2 ] || fail "subscriptions lost in the restart: $(cat "$tmp/out")"
accounts_after=$(curl -s "$base/metrics" | awk '$1 == "feedplane_reflector_accounts" {print $2}')
[ "$accounts_after" = "$accounts_before" ] ||
  fail "accounts: $accounts_before before the restart, $accounts_after after"
# A subscription made now starts with its matches among the recent articles (backfill:
# the 201 already counts them); one made by bulk with "backfill": false starts empty.
call POST /api/subscriptions '{"query": "kernel"}' "$bob"; expect 201
late=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["feeds"]["json"])' "$tmp/out")
grep -q '"entries": 3' "$tmp/out" || fail "backfill: $(cat "$tmp/out")"
call POST /api/subscriptions:bulk '{"account": "load-9", "query": "kernel", "backfill": false}' "$admin"; expect 200
nobf=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["feed"])' "$tmp/out").json
# Preview: what a query would match among recent articles, newest first, sanitized.
call POST /api/preview '{"query": "linux -windows", "k": 2}' "$bob"; expect 200
python3 - "$tmp/out" <<'PY' || fail "preview: $(cat "$tmp/out")"
import json, sys
p = json.load(open(sys.argv[1]))
assert [i["title"] for i in p["items"]] == ["Linux 6.4 released", "Linux 6.3 released"], p
assert p["items"][0]["matched"] == ["linux"] and p["items"][0]["source"] == "https://lwn.example/rss", p
PY
call POST /api/preview '{"query": "rust", "colour": 1}' "$bob"; expect 400 unknown_field
# Rotating a feed token: the old token answers 404 at once, the new one the same feed.
call POST "/api/subscriptions/$linux_id:rotate" "" "$alice"; expect 200
old_linux=$linux
linux=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["feeds"]["rss"])' "$tmp/out")
[ "$linux" != "$old_linux" ] || fail "rotation kept the token"
call GET "$old_linux"; expect 404 not_found
call POST "/api/subscriptions/$linux_id:rotate" "" "$bob"; expect 403 not_yours
# Idempotency-Key: a retry gets what the first request made; another body, 409.
idem() { code=$(curl -s -o "$tmp/out" -D "$tmp/idem.h" -w '%{http_code}' -X POST -H "Authorization: Bearer $bob" -H "Idempotency-Key: $1" --data-binary "$2" "$base/api/subscriptions"); }
idem key-1 '{"query": "idempotent"}'; expect 201
idem_id=$(field id)
idem key-1 '{"query": "idempotent"}'; expect 201
[ "$(field id)" = "$idem_id" ] || fail "a retry created another subscription"
grep -qi '^idempotent-replayed: true' "$tmp/idem.h" || fail "no Idempotent-Replayed"
idem key-1 '{"query": "something else"}'; expect 409 idempotency_conflict
# A new query starts again from its matches among the recent articles.
call PATCH "/api/subscriptions/$idem_id" '{"query": "linux -windows"}' "$bob"; expect 200
grep -q '"entries": 3' "$tmp/out" || fail "PATCH backfill: $(cat "$tmp/out")"
call DELETE "/api/subscriptions/$idem_id" "" "$bob"; expect 204
call POST /api/preview '{"query": "rust"}'; expect 401 unauthenticated

for fmt in "" .atom .json; do
  curl -s -D "$tmp/h" -o "$tmp/rust$fmt" "$base$rust$fmt" || fail "poll $fmt"
  grep -q '^HTTP/1.1 200' "$tmp/h" || fail "poll $fmt: $(cat "$tmp/h")"
  etag=$(grep -i '^etag:' "$tmp/h" | cut -d' ' -f2 | tr -d '\r')
  grep -qi '^last-modified:' "$tmp/h" || fail "no Last-Modified"
  [ "$etag" != "$etag0" ] || fail "the ETag did not change with the content"
  [ "$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "$base$rust$fmt")" = 304 ] || fail "304 $fmt"
  # The same bytes gzip'd (pre-compressed once per change).
  curl -s -H 'Accept-Encoding: gzip' -D "$tmp/hz" -o "$tmp/rust$fmt.gz" "$base$rust$fmt"
  grep -qi '^content-encoding: gzip' "$tmp/hz" || fail "no gzip for $fmt"
  gunzip -c "$tmp/rust$fmt.gz" | cmp -s - "$tmp/rust$fmt" || fail "gzip body differs ($fmt)"
done
for fmt in "" .atom .json; do curl -s -o "$tmp/linux$fmt" "$base$linux$fmt"; done
for fmt in "" .atom .json; do curl -s -o "$tmp/kernel$fmt" "$base$kernel$fmt"; done
curl -s -o "$tmp/late.json" "$base$late"
curl -s -o "$tmp/nobf.json" "$base$nobf"

/usr/bin/python3 - "$tmp" <<'PY' || fail "feed contents"
import json, sys, feedparser
d = sys.argv[1]
def parse(name):
    f = feedparser.parse(open(f"{d}/{name}", "rb").read())
    assert f.bozo == 0, (name, f.get("bozo_exception"))
    return f
for fmt in ["", ".atom"]:
    r = parse("rust" + fmt)
    titles = [e.title for e in r.entries]
    # Newest first: the hostile entry (seq 5), then the Rust entry, updated in place.
    assert titles == ["<script>alert(1)</script> rust & tokio", "Rust and Tokio 1.0 (updated)"], titles
    assert r.feed.title == "Rust <async>", r.feed.title
    assert r.entries[1].link == "https://blog.example/rust-tokio"
    assert r.entries[0].link == "https://evil.example/x?a=1&b=2"
    s = r.entries[0].summary
    # feedparser sanitizes too; check the raw document has no live markup instead.
    raw = open(f"{d}/rust{fmt}").read()
    for bad in ["<script", "<img", "onerror=", "<style", "javascript:"]:
        assert bad not in raw.replace("&lt;script", "").replace("&lt;img", "").replace("&lt;style", ""), (fmt, bad)
    assert "rust" in s and "tokio" in s, s  # feedparser drops <mark>: look at the raw text
    # The summary went through the sanitizer: the link lost its javascript: href, the
    # image its handler, the style element is gone; the words are marked.
    assert "&lt;mark&gt;rust&lt;/mark&gt;&lt;/a&gt; &lt;mark&gt;tokio&lt;/mark&gt;" in raw, raw
    assert "&lt;img src=&quot;x&quot; /&gt;" in raw, raw
    l = parse("linux" + fmt)
    assert [e.title for e in l.entries] == ["Linux 6.4 released", "Linux 6.3 released"], [e.title for e in l.entries]
    k = parse("kernel" + fmt)
    assert [e.title for e in k.entries] == ["Linux 6.4 released", "Linux 6.3 released", "Linux 6.1 released"], [e.title for e in k.entries]
j = json.load(open(f"{d}/rust.json"))
assert j["version"] == "https://jsonfeed.org/version/1.1"
ids = [i["id"] for i in j["items"]]
assert ids == ["evil-1", "tag:blog.example,2026:1"], ids
assert j["items"][1]["url"] == "https://blog.example/rust-tokio"
fp = [i["_feedplane"] for i in j["items"]]
assert fp[0]["source"] == "https://evil.example/feed" and fp[1]["source"] == "https://blog.example/feed.xml", fp
assert fp[0]["seq"] == 5 and fp[1]["seq"] == 7, fp  # 7: the update took the place of 1
assert sorted(fp[1]["matched"]) == ["rust", "tokio"], fp
assert "<mark>Tokio</mark>" in j["items"][1]["content_html"], j["items"][1]["content_html"]
# The plain-text summary, made from the HTML at the first render.
assert j["items"][1]["summary"] == "Tokio for Rust, updated.", j["items"][1]
late = json.load(open(f"{d}/late.json"))
assert [i["title"] for i in late["items"]] == ["Linux 6.4 released", "Linux 6.3 released", "Linux 6.1 released"], late
assert json.load(open(f"{d}/nobf.json"))["items"] == []
PY

# newsboat loads the RSS and the Atom feed.
if command -v newsboat >/dev/null; then
  printf '%s\n' "$base$rust" "$base$linux.atom" >"$tmp/urls"
  HOME=$tmp newsboat -u "$tmp/urls" -c "$tmp/nb.db" -C /dev/null -x reload >"$tmp/nb.log" 2>&1 || fail "newsboat reload: $(cat "$tmp/nb.log")"
  HOME=$tmp newsboat -u "$tmp/urls" -c "$tmp/nb.db" -C /dev/null -x print-unread >"$tmp/nb.out" 2>&1 || fail "newsboat: $(cat "$tmp/nb.out")"
  grep -q '^4 unread articles' "$tmp/nb.out" || fail "newsboat: $(cat "$tmp/nb.out") $(cat "$tmp/nb.log")"
else
  fail "newsboat is not installed (scripts/setup installs it)"
fi

# The web page in headless Chromium: account, subscription, feed URL, a matching article
# with its words marked; a screenshot of each step is kept (build/test-artifacts/).
artifacts=${FEEDPLANE_ARTIFACTS:-$(cd "$(dirname "$bin")/.." && pwd)/test-artifacts}/reflector_web
/usr/bin/python3 "$(dirname "$0")/reflector_web.py" "$base" "$artifacts" "rust tokio" \
  "Rust and Tokio 1.0 (updated)" || fail "web page"

# A second restart: the same content gives the same ETag (no false 304, no new tag).
etag1=$(curl -s -D - -o /dev/null "$base$rust.json" | grep -i '^etag:' | cut -d' ' -f2 | tr -d '\r')
stop
start
# The replay gives each list what it had: the backfilled one its backfill, the other none.
curl -s -o "$tmp/late2.json" "$base$late"
cmp -s "$tmp/late.json" "$tmp/late2.json" || fail "the backfilled list changed in a restart: $(cat "$tmp/late2.json")"
curl -s -o "$tmp/nobf2.json" "$base$nobf"
grep -q '"items": \[\]' "$tmp/nobf2.json" || fail "a replay gave old articles to a subscription without backfill: $(cat "$tmp/nobf2.json")"
etag2=$(curl -s -D - -o /dev/null "$base$rust.json" | grep -i '^etag:' | cut -d' ' -f2 | tr -d '\r')
[ "$etag1" = "$etag2" ] || fail "the ETag changed across a restart: $etag1 $etag2"
curl -s "$base/metrics" >"$tmp/metrics"
grep -q '^feedplane_reflector_subscriptions 7$' "$tmp/metrics" || fail "metrics: $(grep reflector_subscriptions "$tmp/metrics")"
# A clean stop snapshots every list: the start restores them instead of re-matching.
grep -q '^feedplane_reflector_restored_lists_total 7$' "$tmp/metrics" ||
  fail "lists not restored from snapshots: $(grep -E 'restored_lists|matches_total' "$tmp/metrics")"

# Limits. Subscriptions per account (3 here; counted again at start-up from the shards
# that hold them): alice has 2.
call POST /api/subscriptions '{"query": "third"}' "$alice"; expect 201
third=$(field id)
call POST /api/subscriptions '{"query": "fourth"}' "$alice"; expect 403 subscription_limit
call DELETE "/api/subscriptions/$third" "" "$alice"; expect 204
call POST /api/subscriptions '{"query": "fourth"}' "$alice"; expect 201
# The admin bulk route has no limit.
for i in 1 2 3 4; do echo "{\"account\": \"$alice_id\", \"query\": \"bulk$i\", \"backfill\": false}"; done >"$tmp/b2"
call POST /api/subscriptions:bulk "@$tmp/b2" "$admin"; expect 200
[ "$(grep -c '"feed"' "$tmp/out")" = 4 ] || fail "bulk past the limit: $(cat "$tmp/out")"
# Requests per second per account (50 here): a burst meets 429 with Retry-After.
python3 - "$port" "$bob" <<'PY' || fail "rate limit"
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=5)
codes = []
for _ in range(150):  # one keep-alive connection: far faster than 50 per second
    c.request("GET", "/api/subscriptions", headers={"Authorization": "Bearer " + sys.argv[2]})
    r = c.getresponse()
    r.read()
    codes.append(r.status)
    if r.status == 429:
        assert r.getheader("Retry-After") == "1", r.getheaders()
assert 200 in codes and 429 in codes, codes
PY
# An account's secret rotated (the old one stops at once), then the account deleted with
# its subscriptions (their feeds answer 404).
call POST /api/accounts "" "$admin"; expect 201
dave=$(field secret)
call POST /api/subscriptions '{"query": "linux"}' "$dave"; expect 201
dave_feed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["feeds"]["json"])' "$tmp/out")
call POST /api/account:rotate "" "$dave"; expect 200
dave2=$(field secret)
call GET /api/subscriptions "" "$dave"; expect 401 unauthenticated
call GET /api/subscriptions "" "$dave2"; expect 200
call DELETE /api/account "" "$dave2"; expect 204
call GET "$dave_feed"; expect 404 not_found
call GET /api/subscriptions "" "$dave2"; expect 401 unauthenticated
# Signups per address and hour (6 here; alice and bob were in another process).
for i in $(seq 6); do call POST /api/accounts; expect 201; done
call POST /api/accounts; expect 429 too_many_signups
call POST /api/accounts "" "$admin"; expect 201  # the admin token is not limited
# API requests by route and answer status.
curl -s "$base/metrics" >"$tmp/metrics"
grep -q '^feedplane_api_requests_total{route="POST /api/subscriptions",status="403"} [1-9]' "$tmp/metrics" ||
  fail "API requests by route and status: $(grep api_requests "$tmp/metrics")"
grep -q '^feedplane_api_requests_total{route="POST /api/accounts",status="429"} [1-9]' "$tmp/metrics" ||
  fail "bulk requests: $(grep api_requests "$tmp/metrics")"
grep -q '^feedplane_api_requests_total{route="POST /api/subscriptions",status="201"} [1-9]' "$tmp/metrics" ||
  fail "API requests: $(grep api_requests "$tmp/metrics")"
stop
echo "reflector e2e: ok"
