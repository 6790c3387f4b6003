# Sourced by the bench scripts that start `feedplane serve --listen 127.0.0.1:0` with its
# stderr in a file: serve_port LOG PID prints the port it said it listens on, once it has,
# or shows LOG and fails if PID exits first.
serve_port() {
  local log=$1 pid=$2 port=""
  while [ -z "$port" ]; do
    port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$log" | cut -d: -f3 || true)
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; return 1; }
    [ -n "$port" ] || sleep 0.01
  done
  echo "$port"
}
