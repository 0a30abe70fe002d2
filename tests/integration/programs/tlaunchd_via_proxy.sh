#!/bin/sh
# For test_tamper.py: starts the real tlaunchd with its --connect address replaced by the test's
# proxy (TLAUNCH_TEST_PROXY=host:port), after writing the frontend's real address to
# $TLAUNCH_TEST_PROXY_TARGET for the proxy to forward to. Only node local0's daemon goes through it.
real="$TLAUNCH_TEST_REAL_DAEMON"
node=""
prev=""
for a in "$@"; do
  [ "$prev" = "--node-name" ] && node="$a"
  prev="$a"
done
if [ "$node" != "local0" ]; then exec "$real" "$@"; fi
out=""
prev=""
for a in "$@"; do
  if [ "$prev" = "--connect" ]; then
    printf '%s\n' "$a" > "$TLAUNCH_TEST_PROXY_TARGET"
    a="$TLAUNCH_TEST_PROXY"
  fi
  out="$out '$a'"
  prev="$a"
done
eval exec "\"$real\"" "$out"
