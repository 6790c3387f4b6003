#!/usr/bin/env bash
# scripts/demo end to end (DEMO_ONCE=1, against the built binary): the farm, feedplane, the
# OPML import, the user and bulk APIs, and a sample subscription's feed with matches.
set -euo pipefail
bin=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(FEEDPLANE_DEMO_BIN=$bin DEMO_ONCE=1 "$src/scripts/demo" 2>&1) || { echo "$out"; echo "FAIL: demo exited non-zero"; exit 1; }
fail() { echo "$out"; echo "FAIL: $*" >&2; exit 1; }
grep -q 'GET /healthz -> ok' <<<"$out" || fail "healthz"
grep -Eq 'POST /api/sources:import -> \{"added": 300, "duplicates": 0' <<<"$out" || fail "OPML import"
[ "$(grep -c -- ' -> http://127.0.0.1:[0-9]*/f/' <<<"$out")" -eq 5 ] || fail "five sample subscriptions"
grep -q 'POST /api/subscriptions:bulk -> 10000 subscriptions' <<<"$out" || fail "bulk load"
grep -Eq "^   'school': [1-9][0-9]* matches" <<<"$out" || fail "no match for 'school'"
# Every item shown for 'school' (one or two: the demo stops at the first match) names the
# word it matched, found in the content, not only the title.
shown=$(grep -A2 "^   'school':" <<<"$out" | grep -c '^      - ' || true)
named=$(grep -A2 "^   'school':" <<<"$out" | grep -c '(matched school)' || true)
[ "$shown" -ge 1 ] && [ "$named" -eq "$shown" ] || fail "matched words (found in the content, not only the title)"
grep -q '== feedplane is running' <<<"$out" || fail "URLs to open"
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
