#!/usr/bin/env bash
# Render a pitlog HTML report to a PNG in headless Chromium, to look at it.
#
#   scripts/render_report.sh REPORT.html OUT.png [WIDTH,HEIGHT]
#
# Needs Debian's chromium package: apt-get update && apt-get install -y chromium
# (CHROMIUM=/path/to/chromium to use another binary). Nothing is fetched: the report is
# self-contained, and the flags below keep Chromium off the network.
set -euo pipefail

if [ "$#" -lt 2 ]; then
  echo "usage: $0 REPORT.html OUT.png [WIDTH,HEIGHT]" >&2
  exit 2
fi
report=$(realpath "$1")
out=$(realpath -m "$2")
size=${3:-1280,2000}
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  echo "no chromium at $chromium: apt-get update && apt-get install -y chromium" >&2
  exit 3
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --hide-scrollbars --window-size="$size" \
  --screenshot="$out" "file://$report" >/dev/null 2>&1
test -s "$out"
echo "$out"
