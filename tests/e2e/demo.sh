#!/usr/bin/env bash
# scripts/demo end to end (DEMO_ONCE=1, against the built binary): every step must work and
# the sample subscriptions must match the sample entries they were written for.
set -euo pipefail
bin=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(FEEDPLANE_DEMO_BIN=$bin DEMO_ONCE=1 "$src/scripts/demo" 2>&1) || { echo "$out"; echo "FAIL: demo exited non-zero"; exit 1; }
fail() { echo "$out"; echo "FAIL: $*" >&2; exit 1; }
grep -q 'GET /healthz -> ok' <<<"$out" || fail "healthz"
grep -q '"status": 200' <<<"$out" || fail "fetch 200"
grep -q '"status": 304' <<<"$out" || fail "revalidation 304"
grep -q "feed: 'feedplane demo feed', 7 entries" <<<"$out" || fail "parse"
grep -A1 "'Linux kernel 6.18 brings faster io_uring networking'" <<<"$out" | grep -q "'io_uring', 'linux kernel -windows'" || fail "match io_uring"
grep -A1 "'Windows and Linux kernel drivers share code'" <<<"$out" | grep -q "(none)" || fail "NOT excluded"
grep -A1 "'PostgreSQL 19 release notes'" <<<"$out" | grep -q "'title:release', 'database'" || fail "title: field"
# The build step's progress filter (the demo's first five minutes are a build): a line per
# tenth of the build, compiler errors passed through whole.
progress=$(printf '[1/40] a\n[4/40] b\n[20/40] c\n[40/40] d\n' | "$src/scripts/build-progress")
[ "$(grep -c 'build: ' <<<"$progress")" -eq 4 ] && grep -q 'build: 100% (40/40 steps' <<<"$progress" ||
  fail "build progress: $progress"
progress=$(printf '[1/3] a\nFAILED: x.o\nx.cc:1:2: error: bad\n' | "$src/scripts/build-progress")
grep -q 'x.cc:1:2: error: bad' <<<"$progress" || fail "build errors hidden: $progress"
grep -q '== 0. packages' "$src/scripts/demo" && grep -q 'scripts/build-progress' "$src/scripts/demo" ||
  fail "scripts/demo does not show its build"
echo "demo ok"
