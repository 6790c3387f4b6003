#!/usr/bin/env bash
# `feedplane parse FILE`: the model as JSON, recoveries named, named errors for unreadable
# documents; URLs fetched over loopback with named fetch errors.
set -euo pipefail
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

corpus="$src/../shared/corpus/gofeed/testdata"
if [ -d "$corpus" ]; then
  "$bin" parse "$corpus/parser/rss/rss_channel_item_xml_base.xml" >"$tmp/a.json"
  [ "$(json "$tmp/a.json" 'd["entries"][0]["link"]')" = "http://example.org/feeds/post/1" ] ||
    fail "xml:base link: $(cat "$tmp/a.json")"
  "$bin" parse "$corpus/parser/rss/issue_305_bare_ampersand.xml" >"$tmp/b.json"
  [ "$(json "$tmp/b.json" 'd["feed"]["title"]')" = "Fish & Chips & more <3" ] || fail "bare & title"
  [ "$(json "$tmp/b.json" 'd["recovered"]')" = "['bare_ampersand']" ] || fail "recovered not named"
fi

cat >"$tmp/atom.xml" <<'XML'
<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>E2E</title>
<entry><id>urn:1</id><title>One</title><link href="/one"/>
<published>2024-05-06T07:08:09+02:00</published><summary>s</summary>
<author><name>A</name></author><category term="c"/></entry></feed>
XML
"$bin" parse "$tmp/atom.xml" --base-url https://e2e.example/feed >"$tmp/c.json"
[ "$(json "$tmp/c.json" 'd["entries"][0]["link"]')" = "https://e2e.example/one" ] || fail "base url"
[ "$(json "$tmp/c.json" 'd["entries"][0]["published"]')" = "2024-05-06T05:08:09Z" ] || fail "date"
[ "$(json "$tmp/c.json" 'd["entries"][0]["authors"][0]["name"]')" = "A" ] || fail "authors"
[ "$(json "$tmp/c.json" 'd["entries"][0]["categories"]')" = "['c']" ] || fail "categories"

# Content-Type's charset counts: the same bytes read as KOI8-R.
printf '<rss version="2.0"><channel><title>\xf0\xd2\xc9\xd7\xc5\xd4</title></channel></rss>' >"$tmp/k.xml"
"$bin" parse "$tmp/k.xml" --content-type 'application/rss+xml; charset=KOI8-R' >"$tmp/k.json"
[ "$(json "$tmp/k.json" 'd["feed"]["title"]')" = "Привет" ] || fail "charset: $(cat "$tmp/k.json")"

# Recovered document: exit 0, recoveries named.
printf '<rss version="2.0"><channel><item><title>a<br></title></item><item><title>b\x01</title>' >"$tmp/r.xml"
"$bin" parse "$tmp/r.xml" >"$tmp/r.json" || fail "recoverable document refused"
rec=$(json "$tmp/r.json" 'sorted(d["recovered"])')
[ "$rec" = "['control_chars_stripped', 'malformed_xml', 'truncated']" ] || fail "recovered: $rec"
[ "$(json "$tmp/r.json" 'len(d["entries"])')" = "2" ] || fail "entries after recovery"

# Unreadable documents: non-zero exit with a named error.
echo '<html><body>Sign in</body></html>' >"$tmp/h.xml"
if "$bin" parse "$tmp/h.xml" >/dev/null 2>"$tmp/err"; then fail "html accepted"; fi
grep -q html_not_feed "$tmp/err" || fail "html error not named: $(cat "$tmp/err")"
echo '{"version": ' >"$tmp/j.json"
if "$bin" parse "$tmp/j.json" >/dev/null 2>"$tmp/err"; then fail "bad json accepted"; fi
grep -q json_invalid "$tmp/err" || fail "json error not named"
if "$bin" parse "$tmp/missing.xml" 2>"$tmp/err"; then fail "missing file accepted"; fi
grep -q "cannot open" "$tmp/err" || fail "missing file message"
# A directory is a file that cannot be read: exit 2 with a message, not a libstdc++ one.
set +e; "$bin" parse "$tmp" >/dev/null 2>"$tmp/err"; st=$?; set -e
[ "$st" -eq 2 ] || fail "directory: exit $st ($(cat "$tmp/err"))"
grep -q "cannot open '$tmp': it is a directory" "$tmp/err" || fail "directory message: $(cat "$tmp/err")"
# Over the 32 MiB cap: too_large before reading, so a 2 GB (sparse) file fits in 512 MB of
# address space and a device that never ends stops at the cap. (ASan reserves terabytes of
# address space for its shadow: no address-space limit there, the exit code still counts.)
as_limit=524288
grep -qa __asan_init "$bin" && as_limit=unlimited
truncate -s 2G "$tmp/huge.xml"
set +e; (ulimit -v $as_limit; "$bin" parse "$tmp/huge.xml" >/dev/null 2>"$tmp/err"); st=$?; set -e
rm -f "$tmp/huge.xml"
[ "$st" -eq 3 ] && grep -q "too_large" "$tmp/err" || fail "2 GB file: exit $st ($(head -c 300 "$tmp/err"))"
set +e; (ulimit -v $as_limit; timeout 60 "$bin" parse /dev/zero >/dev/null 2>"$tmp/err"); st=$?; set -e
[ "$st" -eq 3 ] && grep -q "too_large" "$tmp/err" || fail "/dev/zero: exit $st ($(head -c 300 "$tmp/err"))"

# URL: fetched with net's HTTP client from a real server on loopback (python3 http.server,
# started here on a free port and stopped by its pid); links resolve against the final URL.
mkdir -p "$tmp/www/dir"
echo '<rss version="2.0"><channel><item><title>u</title><link>post/1</link></item></channel></rss>' >"$tmp/www/dir/f.xml"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$tmp/www" "$port" >/dev/null 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$port/dir/f.xml" >/dev/null && break; sleep 0.1; done
"$bin" parse "http://127.0.0.1:$port/dir/f.xml" >"$tmp/u.json" || fail "URL fetch+parse"
[ "$(json "$tmp/u.json" 'd["entries"][0]["link"]')" = "http://127.0.0.1:$port/dir/post/1" ] ||
  fail "URL base: $(cat "$tmp/u.json")"
if "$bin" parse "http://127.0.0.1:$port/none.xml" 2>"$tmp/err"; then fail "404 accepted"; fi
grep -q http_status_404 "$tmp/err" || fail "404 not named: $(cat "$tmp/err")"
kill $srv
wait $srv 2>/dev/null || true

# `parse URL` and `fetch URL` send the same User-Agent from the same configuration (both
# build their client from [client]), with and without --config: a loopback server that
# records the User-Agent of every request.
cat >"$tmp/ua_server.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(sys.argv[2], "a") as f:
            f.write(self.headers.get("User-Agent", "-") + "\n")
        body = b'<rss version="2.0"><channel><item><title>ua</title></item></channel></rss>'
        self.send_response(200)
        self.send_header("Content-Type", "application/rss+xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
python3 "$tmp/ua_server.py" "$port" "$tmp/ua.log" &
srv=$!
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$port/x" >/dev/null && break; sleep 0.1; done
: >"$tmp/ua.log"
printf '[client]\nuser_agent = "e2e-agent/1.0 (+test)"\n' >"$tmp/ua.toml"
"$bin" parse "http://127.0.0.1:$port/f.xml" >/dev/null || fail "parse for UA"
"$bin" fetch "http://127.0.0.1:$port/f.xml" >/dev/null || fail "fetch for UA"
"$bin" parse --config "$tmp/ua.toml" "http://127.0.0.1:$port/f.xml" >/dev/null || fail "parse --config"
"$bin" fetch --config "$tmp/ua.toml" "http://127.0.0.1:$port/f.xml" >/dev/null || fail "fetch --config"
kill $srv
wait $srv 2>/dev/null || true
default_ua=$("$bin" config | sed -n "s/^user_agent = [\"']\(.*\)[\"']\$/\1/p")
printf '%s\n%s\ne2e-agent/1.0 (+test)\ne2e-agent/1.0 (+test)\n' "$default_ua" "$default_ua" |
  diff -u - "$tmp/ua.log" || fail "User-Agents differ between parse and fetch"
if "$bin" parse --config "$tmp" "http://127.0.0.1:$port/f.xml" 2>"$tmp/err"; then fail "parse --config DIR accepted"; fi
grep -q "it is a directory" "$tmp/err" || fail "parse --config DIR: $(cat "$tmp/err")"

if "$bin" parse "http://127.0.0.1:$port/dir/f.xml" 2>"$tmp/err"; then fail "closed port accepted"; fi
grep -q connect_refused "$tmp/err" || fail "refused not named: $(cat "$tmp/err")"
echo "feed parse ok"
