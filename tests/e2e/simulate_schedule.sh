#!/usr/bin/env bash
# `feedplane simulate-schedule`: a generated trace, one policy's output format, Table II's
# ordering (combined at least 45% below uniform at every interval and below every other
# policy), comma-separated traces with comments, and named errors.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" simulate-schedule --generate-trace "$tmp/t.txt" --feeds 300 --seed 7 >"$tmp/gen.out"
grep -q '^wrote [0-9]* postings from 300 feeds over 13 weeks' "$tmp/gen.out" || fail "generator: $(cat "$tmp/gen.out")"
head -1 "$tmp/t.txt" | grep -q '^# feedplane simulate-schedule trace' || fail "trace header"

"$bin" simulate-schedule --trace "$tmp/t.txt" --interval-hours 12 --policy combined >"$tmp/one.out"
grep -Eq '^mean delay [0-9]+\.[0-9]+ h$' "$tmp/one.out" || fail "mean delay: $(cat "$tmp/one.out")"
grep -Eq '^p90 delay [0-9]+\.[0-9]+ h$' "$tmp/one.out" || fail "p90 delay: $(cat "$tmp/one.out")"
grep -Eq '^missed entries [0-9]+$' "$tmp/one.out" || fail "missed entries: $(cat "$tmp/one.out")"
"$bin" simulate-schedule --trace "$tmp/t.txt" --interval-hours 12 --policy uniform --k 5 >"$tmp/k5.out"
"$bin" simulate-schedule --trace "$tmp/t.txt" --interval-hours 12 --policy uniform --k 20 >"$tmp/k20.out"
m5=$(awk '/^missed entries/ {print $3}' "$tmp/k5.out")
m20=$(awk '/^missed entries/ {print $3}' "$tmp/k20.out")
[ "$m5" -gt "$m20" ] || fail "a shorter feed must lose more entries: k=5 $m5, k=20 $m20"

"$bin" simulate-schedule --trace "$tmp/t.txt" --table >"$tmp/table.out"
# The minutes table: | policy | 6 h | 8 h | 12 h | 24 h |
awk -F'|' '
  /^mean delay in minutes/ { on = 1; next }
  on && $2 ~ /[a-z]/ && $2 !~ /policy/ && $3 ~ /[0-9]/ {
    p = $2; gsub(/ /, "", p)
    for (i = 3; i <= 6; ++i) { v[p, i] = $i + 0 }
    names[++n] = p
  }
  END {
    if (n != 6) { print "expected 6 policies, got " n; exit 1 }
    for (i = 3; i <= 6; ++i) {
      if (v["combined", i] > 0.55 * v["uniform", i]) { print "combined not 45% below uniform in column " i; exit 1 }
      for (j = 1; j <= n; ++j) {
        if (names[j] != "combined" && v["combined", i] >= v[names[j], i]) {
          print "combined not below " names[j] " in column " i; exit 1
        }
      }
    }
  }' "$tmp/table.out" || fail "table ordering: $(cat "$tmp/table.out")"
grep -q '^| uniform | 6 | ' "$tmp/table.out" || fail "detailed rows"

# Commas, comments and any feed ids; too short a trace is refused with a reason.
{
  echo "# a comment"
  for w in $(seq 0 20); do
    echo "blog-a,$((1096243200 + w * 86400 * 7 / 3))"
    echo "news b $((1096243200 + w * 86400))" | tr ' ' '_' | sed 's/_\([0-9]*\)$/ \1/'
  done
} >"$tmp/c.txt"
"$bin" simulate-schedule --trace "$tmp/c.txt" --interval-hours 24 --policy scheduling >"$tmp/c.out"
grep -q '^trace: 2 feeds, 42 postings' "$tmp/c.out" || fail "comma trace: $(cat "$tmp/c.out")"
echo "a 1096243200" >"$tmp/short.txt"
if "$bin" simulate-schedule --trace "$tmp/short.txt" --interval-hours 6 --policy uniform 2>"$tmp/err"; then
  fail "a one-day trace was accepted"
fi
grep -q 'two weeks or less' "$tmp/err" || fail "short trace reason: $(cat "$tmp/err")"
if "$bin" simulate-schedule --trace "$tmp/t.txt" --interval-hours 6 --policy nope 2>"$tmp/err"; then
  fail "an unknown policy was accepted"
fi
grep -q 'one of uniform' "$tmp/err" || fail "policy error: $(cat "$tmp/err")"
echo "simulate_schedule: ok"
