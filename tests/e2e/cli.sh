#!/usr/bin/env bash
# The feedplane binary's command line: help lists subcommands, config errors are clear.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Outputs are captured before grep: `grep -q` stops reading at its match, and a writer
# with more to say then dies of SIGPIPE, which pipefail reports as a failure.
help=$("$bin" --help)
grep -q config <<<"$help" || fail "--help does not list config"
defaults=$("$bin" config)
grep -Eq "^listen = ['\"]127.0.0.1:8080" <<<"$defaults" || fail "config defaults"
printf '[server]\nlisten = "127.0.0.1:9"\n' >"$tmp/ok.toml"
from_file=$("$bin" config --config "$tmp/ok.toml")
grep -Eq "^listen = ['\"]127.0.0.1:9" <<<"$from_file" || fail "config file value"
printf '[server]\nlisen = "x"\n' >"$tmp/bad.toml"
if "$bin" config --config "$tmp/bad.toml" 2>"$tmp/err"; then fail "unknown key accepted"; fi
grep -q "unknown key 'server.lisen'" "$tmp/err" || fail "unknown key not named: $(cat "$tmp/err")"
if "$bin" config --config "$tmp/missing.toml" 2>"$tmp/err"; then fail "missing file accepted"; fi
grep -q "cannot open" "$tmp/err" || fail "missing file message"
# A directory is not a configuration file: config and serve refuse it with exit 2.
set +e; "$bin" config --config "$tmp" >/dev/null 2>"$tmp/err"; st=$?; set -e
[ "$st" -eq 2 ] && grep -q "it is a directory" "$tmp/err" || fail "config --config DIR: exit $st ($(cat "$tmp/err"))"
set +e; timeout 20 "$bin" serve --config "$tmp" --listen 127.0.0.1:0 >/dev/null 2>"$tmp/err"; st=$?; set -e
[ "$st" -eq 2 ] && grep -q "it is a directory" "$tmp/err" || fail "serve --config DIR: exit $st ($(cat "$tmp/err"))"
# Every bad value is reported, each with its line, in file order.
printf '[server]\nshards = -1\nlisten = "nohost"\ngzip = "yes"\n[client]\nmax_redirects = 99\nuser_agnt = "x"\n' >"$tmp/bad2.toml"
if "$bin" config --config "$tmp/bad2.toml" 2>"$tmp/err"; then fail "bad values accepted"; fi
grep -o "bad2.toml:[0-9]*: [a-z ]* '[a-z_.]*'" "$tmp/err" >"$tmp/got" || true
printf "bad2.toml:%s'\n" "2: bad value for 'server.shards" "3: bad value for 'server.listen" \
  "4: bad value for 'server.gzip" "6: bad value for 'client.max_redirects" \
  "7: unknown key 'client.user_agnt" | diff -u - "$tmp/got" || fail "bad values: $(cat "$tmp/err")"
# The README tells a new user the truth: each subcommand's synopsis lists exactly the long
# options its --help lists, the query language section names AND and the word limit, and
# nothing links outside the repository.
src=$(cd "$(dirname "$0")/../.." && pwd)
python3 - "$bin" "$src/README.md" <<'PY' || fail "README out of step with the binary"
import re, subprocess, sys
binary, readme = sys.argv[1], open(sys.argv[2]).read()
bad = []
for sub in ("serve", "fetch", "parse", "match", "config", "farm", "load"):
    m = re.search(r"\| `feedplane " + sub + r"\b([^`]*)`", readme)
    if not m:
        bad.append(f"no synopsis for {sub}")
        continue
    synopsis = set(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", m.group(1)))
    helptext = subprocess.run([binary, sub, "--help"], capture_output=True, text=True).stdout
    # "  -H,--header TEXT  ..." -> {"-H", "--header"}; documented under either name.
    options = [set(o.split(",")) for o in re.findall(r"^\s+((?:-\w,)?--[\w-]+)", helptext, re.M)]
    options = [o for o in options if "--help" not in o]
    missing = [max(o, key=len) for o in options if not o & synopsis]
    unknown = [f for f in synopsis if not any(f in o for o in options)]
    if missing or unknown:
        bad.append(f"{sub}: not in the README synopsis {missing}, not in --help {unknown}")
ql = readme[readme.find("### The query language"):]
if "AND" not in ql[:2000] or "16 words" not in ql[:2000]:
    bad.append("query language section lacks AND or the 16-word limit")
if "../shared" in readme:
    bad.append("README links ../shared, which a clone does not have")
for line in bad:
    print("README:", line)
sys.exit(1 if bad else 0)
PY
grep -qi "serves each subscription's matches as a private feed" <<<"$help" || fail "--help does not say what serve does (private feeds)"
if "$bin" nosuchcommand 2>/dev/null; then fail "unknown subcommand accepted"; fi
# The build's mimalloc backs the heap with 2 MiB pages unless MIMALLOC_LARGE_OS_PAGES says
# otherwise (dataplane/src/allocator_setup.cc): the opt-out the README names must work.
if ldd "$bin" | grep libmimalloc >/dev/null; then
  on=$(MIMALLOC_VERBOSE=1 "$bin" --help 2>&1 >/dev/null || true)
  off=$(MIMALLOC_VERBOSE=1 MIMALLOC_LARGE_OS_PAGES=0 "$bin" --help 2>&1 >/dev/null || true)
  grep -q "option 'large_os_pages': 1" <<<"$on" || fail "huge pages not on by default: $(grep large_os <<<"$on")"
  grep -q "option 'large_os_pages': 0" <<<"$off" || fail "MIMALLOC_LARGE_OS_PAGES=0 ignored: $(grep large_os <<<"$off")"
  # Freed pages go back after 1 s, not 25 ms, unless MIMALLOC_DECOMMIT_DELAY says otherwise.
  grep -q "option 'decommit_delay': 1000" <<<"$on" || fail "decommit delay not 1 s by default: $(grep decommit <<<"$on")"
  mine=$(MIMALLOC_VERBOSE=1 MIMALLOC_DECOMMIT_DELAY=25 "$bin" --help 2>&1 >/dev/null || true)
  grep -q "option 'decommit_delay': 25$" <<<"$mine" || fail "MIMALLOC_DECOMMIT_DELAY=25 ignored: $(grep decommit <<<"$mine")"
fi
echo "cli ok"
