#!/usr/bin/env bash
# The feedplane binary's command line: help lists subcommands, config errors are clear.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" --help | grep -q config || fail "--help does not list config"
"$bin" config | grep -Eq "^listen = ['\"]127.0.0.1:8080" || fail "config defaults"
printf '[server]\nlisten = "127.0.0.1:9"\n' >"$tmp/ok.toml"
"$bin" config --config "$tmp/ok.toml" | grep -Eq "^listen = ['\"]127.0.0.1:9" || fail "config file value"
printf '[server]\nlisen = "x"\n' >"$tmp/bad.toml"
if "$bin" config --config "$tmp/bad.toml" 2>"$tmp/err"; then fail "unknown key accepted"; fi
grep -q "unknown key 'server.lisen'" "$tmp/err" || fail "unknown key not named: $(cat "$tmp/err")"
if "$bin" config --config "$tmp/missing.toml" 2>"$tmp/err"; then fail "missing file accepted"; fi
grep -q "cannot open" "$tmp/err" || fail "missing file message"
if "$bin" nosuchcommand 2>/dev/null; then fail "unknown subcommand accepted"; fi
echo "cli ok"
