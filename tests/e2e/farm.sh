#!/usr/bin/env bash
# `feedplane farm` end to end: starts the farm (exec'd feedplane-farm) paused on a free
# loopback port, fetches feeds of every format and validator kind with curl through the
# --resolve pins it wrote, parses them with python3-feedparser (Debian's; JSON Feed with
# python's json: feedparser 6.0 reads no JSON Feed), checks 304 on revalidation and 404 for a
# host that does not carry the feed, checks one host of each misbehaviour (30% of hosts
# misbehave here), then starts publishing and checks that a new entry
# appears both in its feed and in the truth log, with the text the log says. Stops the farm
# by pid.
set -euo pipefail
bin=$1
py=/usr/bin/python3 # Debian's python, where python3-feedparser is installed
tmp=$(mktemp -d)
farm_pid=""
cleanup() {
  if [ -n "$farm_pid" ]; then kill "$farm_pid" 2>/dev/null || true; wait "$farm_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/err" ] && tail -5 "$tmp/err" >&2; exit 1; }

grep -q -- --start-paused <<<"$("$bin" farm --help)" || fail "feedplane farm --help is not the farm's"

: >"$tmp/out" # exists before the farm's shell opens it, for the wait below
"$bin" farm --feeds 400 --seed 3 --listen 127.0.0.1:0 --start-paused --speed 20000 \
  --misbehaving 0.3 --slow-seconds 1 \
  --truth "$tmp/truth.jsonl" --opml "$tmp/farm.opml" --pins "$tmp/pins" >"$tmp/out" 2>"$tmp/err" &
farm_pid=$!
for _ in $(seq 200); do
  grep -q '^farm: listening on http://127.0.0.1:' "$tmp/out" && break
  kill -0 "$farm_pid" 2>/dev/null || fail "the farm exited"
  sleep 0.05
done
port=$(sed -n 's|^farm: listening on http://127.0.0.1:\([0-9]*\)$|\1|p' "$tmp/out")
[ -n "$port" ] || fail "no listening line"
base="http://127.0.0.1:$port"

# Nothing is published while paused; the pins cover every host of the OPML file.
"$py" - "$tmp" "$port" <<'PY' || fail "truth log, OPML or pins"
import json, sys, xml.etree.ElementTree as ET
tmp, port = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(f"{tmp}/truth.jsonl")]
feeds = [l for l in lines if l["kind"] == "feed"]
entries = [l for l in lines if l["kind"] == "entry"]
assert lines[0]["kind"] == "farm" and lines[0]["feeds"] == 400, lines[0]
assert len(feeds) == 400
assert all(e["initial"] for e in entries), "published while paused"
assert sum(f["keep"] for f in feeds) == len(entries)
assert not any(l["kind"] == "start" for l in lines)
urls = [o.get("xmlUrl") for o in ET.parse(f"{tmp}/farm.opml").getroot().iter("outline")]
assert urls == [f["url"] for f in feeds]
pins = {l.strip() for l in open(f"{tmp}/pins")}
want = {f'{f["host"]}:{f["url"].split(":")[2].split("/")[0]}:127.0.0.1' for f in feeds}
assert pins == want, "pins do not match the hosts"
assert sum(p.endswith(f":{port}:127.0.0.1") for p in pins) > len(pins) / 2
kinds = {f["misbehaviour"] for f in feeds}
assert len(kinds) == 9, kinds
PY

# One feed of each kind: (format, validators) -> url.
"$py" - "$tmp" >"$tmp/picks" <<'PY'
import json, sys
seen = {}
for l in open(f"{sys.argv[1]}/truth.jsonl"):
    f = json.loads(l)
    if f["kind"] == "feed" and f["misbehaviour"] == "none":
        seen.setdefault((f["format"], f["validators"]), f["url"])
for (fmt, val), url in sorted(seen.items()):
    print(fmt, val, url)
PY
[ "$(wc -l <"$tmp/picks")" -ge 7 ] || fail "too few kinds of feed: $(cat "$tmp/picks")"

# fetch URL OUT [curl args]: through the pin for URL's host; prints the status.
fetch() {
  local url=$1 out=$2
  shift 2
  local host=${url#http://}
  host=${host%%:*}
  curl -sS --compressed --resolve "$host:$port:127.0.0.1" -D "$out.h" -o "$out" -w '%{http_code}' "$@" "$url"
}
header() { sed -n "s/^$1: \\(.*\\)\\r\$/\\1/Ip" "$2" | head -1; }

n=0
while read -r fmt val url; do
  n=$((n + 1))
  code=$(fetch "$url" "$tmp/doc$n")
  [ "$code" = 200 ] || fail "$url: $code"
  "$py" - "$tmp/truth.jsonl" "$url" "$tmp/doc$n" "$fmt" <<'PY' || fail "$url: parse"
import json, sys
truth, url, doc, fmt = sys.argv[1:]
lines = [json.loads(l) for l in open(truth)]
feed = next(l for l in lines if l["kind"] == "feed" and l["url"] == url)
want = sorted((e for e in lines if e["kind"] == "entry" and e["url"] == url),
              key=lambda e: -e["seq"])[:feed["keep"]]
if fmt == "json":
    d = json.load(open(doc))
    assert d["version"] == "https://jsonfeed.org/version/1.1"
    got = [(i["id"], i["title"], i["content_text"]) for i in d["items"]]
else:
    import feedparser
    d = feedparser.parse(open(doc, "rb").read())
    assert d.bozo == 0, d.get("bozo_exception")
    assert d.version == {"rss": "rss20", "atom": "atom10"}[fmt], d.version
    got = [(e.id, e.title, e.summary) for e in d.entries]
assert got == [(e["guid"], e["title"], e["text"]) for e in want], (url, got[:1], want[:1])
PY
  etag=$(header ETag "$tmp/doc$n.h")
  lm=$(header Last-Modified "$tmp/doc$n.h")
  case $val in
    etag+last-modified)
      [ -n "$etag" ] && [ -n "$lm" ] || fail "$url: validators missing"
      [ "$(fetch "$url" "$tmp/re" -H "If-None-Match: $etag")" = 304 ] || fail "$url: no 304 on If-None-Match"
      [ "$(fetch "$url" "$tmp/re" -H "If-Modified-Since: $lm")" = 304 ] || fail "$url: no 304 on If-Modified-Since"
      # fetch asks for gzip: the 200's tag was weak, and so is the 304's (the farm skips
      # rendering for it).
      [ "${etag#W/}" != "$etag" ] || fail "$url: the gzip'd 200 has a strong ETag $etag"
      [ "$(header ETag "$tmp/re.h")" = "$etag" ] || fail "$url: the 304's ETag is not the 200's" ;;
    last-modified)
      [ -z "$etag" ] && [ -n "$lm" ] || fail "$url: want Last-Modified only"
      [ "$(fetch "$url" "$tmp/re" -H "If-Modified-Since: $lm")" = 304 ] || fail "$url: no 304 on If-Modified-Since" ;;
    none)
      [ -z "$etag" ] && [ -z "$lm" ] || fail "$url: want no validators"
      [ "$(fetch "$url" "$tmp/re" -H 'If-None-Match: "x"')" = 200 ] || fail "$url: want 200" ;;
  esac
done <"$tmp/picks"

# A host that does not carry the feed.
url=$(head -1 "$tmp/picks" | cut -d' ' -f3)
path=${url#http://*/}
[ "$(curl -sS -o /dev/null -w '%{http_code}' --resolve "nobody.example:$port:127.0.0.1" "http://nobody.example:$port/$path")" = 404 ] ||
  fail "a feed served under a host that does not carry it"

# Misbehaving hosts, one feed of each kind.
"$py" - "$tmp" >"$tmp/bad" <<'PY'
import json, sys
seen = {}
for l in open(f"{sys.argv[1]}/truth.jsonl"):
    f = json.loads(l)
    if f["kind"] == "feed" and f["misbehaviour"] != "none":
        seen.setdefault(f["misbehaviour"], (f["url"], f["format"], f["redirects"]))
for kind, (url, fmt, redirects) in sorted(seen.items()):
    print(kind, url, fmt, redirects)
PY
while read -r kind url fmt redirects; do
  host=${url#http://}
  host=${host%%/*}
  pin="${host%%:*}:${host##*:}:127.0.0.1"
  case $kind in
    too_many_requests | too_many_requests_bare)
      [ "$(fetch "$url" "$tmp/m")" = 429 ] || fail "$kind: want 429"
      ra=$(header Retry-After "$tmp/m.h")
      if [ "$kind" = too_many_requests ]; then [ "$ra" = 60 ] || fail "$kind: Retry-After '$ra'"; else [ -z "$ra" ] || fail "$kind: Retry-After"; fi
      [ "$(fetch "$url" "$tmp/m")" = 200 ] || fail "$kind: the next request wants 200" ;;
    frozen_last_modified)
      [ "$(fetch "$url" "$tmp/m")" = 200 ] || fail "$kind: want 200"
      [ -z "$(header ETag "$tmp/m.h")" ] && [ -n "$(header Last-Modified "$tmp/m.h")" ] || fail "$kind: validators"
      header Last-Modified "$tmp/m.h" >"$tmp/frozen_lm"
      echo "$url" >"$tmp/frozen_url" ;;
    redirect_chain)
      out=$(curl -sS --compressed --resolve "$pin" -L --max-redirs 10 -o "$tmp/m" -w '%{http_code} %{num_redirects}' "$url")
      [ "$out" = "200 $redirects" ] || fail "$kind: '$out', want 200 after $redirects redirects"
      [ "$(fetch "$url" "$tmp/m")" = 301 ] || fail "$kind: the first hop is not a 301" ;;
    malformed)
      [ "$(fetch "$url" "$tmp/m")" = 200 ] || fail "$kind: want 200"
      "$py" - "$tmp/m" "$fmt" <<'PY' || fail "$kind: the document is well-formed"
import json, sys
doc, fmt = sys.argv[1:]
if fmt == "json":
    try:
        json.load(open(doc))
        sys.exit(1)
    except ValueError:
        pass
else:
    import feedparser
    d = feedparser.parse(open(doc, "rb").read())
    assert d.bozo == 1 and d.entries, d.bozo
PY
      ;;
    slow)
      out=$(curl -sS --resolve "$pin" -o /dev/null -w '%{http_code} %{time_total}' "$url")
      [ "${out%% *}" = 200 ] || fail "$kind: $out"
      "$py" -c 'import sys; sys.exit(float(sys.argv[1]) < 0.9)' "${out##* }" || fail "$kind: answered in ${out##* } s" ;;
    reset)
      rc=0
      curl -sS --resolve "$pin" -o /dev/null "$url" 2>"$tmp/m.err" || rc=$?
      [ "$rc" = 56 ] || fail "$kind: curl exit $rc, want 56 (reset): $(cat "$tmp/m.err")" ;;
    endless)
      rc=0
      curl -sS --resolve "$pin" -o "$tmp/m" --max-time 2.5 "$url" 2>/dev/null || rc=$?
      [ "$rc" = 28 ] || fail "$kind: curl exit $rc, want 28 (timed out)"
      grep -q 'more is coming' "$tmp/m" || fail "$kind: no chunks" ;;
    *) fail "unknown misbehaviour $kind" ;;
  esac
done <"$tmp/bad"
[ "$(wc -l <"$tmp/bad")" = 8 ] || fail "misbehaviours: $(cat "$tmp/bad")"

# Publishing: the busiest feed gets a new entry, in the document and in the truth log.
busy=$("$py" -c '
import json, sys
feeds = (json.loads(l) for l in open(sys.argv[1]) if "\"kind\":\"feed\"" in l)
f = max((f for f in feeds if f["misbehaviour"] == "none"), key=lambda f: f["rate_per_day"])
print(f["url"])' "$tmp/truth.jsonl")
curl -sS -X POST "$base/_farm/start" | grep '"publishing":true' >/dev/null || fail "POST /_farm/start"
for _ in $(seq 200); do
  grep -q "\"url\":\"$busy\".*\"initial\":false" "$tmp/truth.jsonl" && break
  sleep 0.05
done
[ "$(fetch "$busy" "$tmp/busy")" = 200 ] || fail "$busy after start"
"$py" - "$tmp/truth.jsonl" "$busy" "$tmp/busy" <<'PY' || fail "a published entry is not in both the feed and the truth log"
import json, sys, time
truth, url, doc = sys.argv[1:]
# The farm is still publishing and its stdio buffer can end mid-line, so read the file in
# one go and drop the piece after its last newline: iterating lines of a growing file can
# yield a line's head at the moment's end of file and then its tail as a "line" of its own.
text = open(truth).read()
lines = [json.loads(l) for l in text[: text.rfind("\n") + 1].splitlines() if l]
assert sum(l["kind"] == "start" for l in lines) == 1
logged = {e["guid"]: e for e in lines if e["kind"] == "entry" and e["url"] == url}
if url.endswith(".json"):
    items = [(i["id"], i["content_text"]) for i in json.load(open(doc))["items"]]
else:
    import feedparser
    d = feedparser.parse(open(doc, "rb").read())
    assert d.bozo == 0
    items = [(e.id, e.summary) for e in d.entries]
new = [g for g, _ in items if g in logged and not logged[g]["initial"]]
assert new, "no new entry in the feed"
for g, text in items:  # every served entry is in the log, with the text served
    assert g in logged and logged[g]["text"] == text, g
e = logged[new[0]]
assert abs(e["published"] - time.time()) < 60, e["published"]
PY
stats=$(curl -sS "$base/_farm/stats")
"$py" -c '
import json, sys
s = json.loads(sys.argv[1])
assert s["feeds"] == 400 and s["publishing"] and s["published"] > 0, s
assert s["not_modified"] >= 7 and s["not_found"] == 1 and s["requests"] >= 20, s
assert s["misbehaved"] >= 7 and s["raw_connections"] == 2, s' "$stats" ||
  fail "stats: $stats"

kill "$farm_pid"
wait "$farm_pid" || true
farm_pid=""
grep -q 'farm: stopping' "$tmp/err" || fail "the farm did not stop on SIGTERM"
echo "e2e farm: ok"
