#!/usr/bin/env bash
# Screenshots of a report page, one PNG per section (for docs/report.md), taken in
# Debian's headless chromium and cut with ImageMagick's convert.
#
#   scripts/report_screenshots.sh REPORT.html OUT_DIR [WIDTH]
set -euo pipefail
page=$(readlink -f "${1:?usage: report_screenshots.sh REPORT.html OUT_DIR [WIDTH]}")
out=${2:?usage: report_screenshots.sh REPORT.html OUT_DIR [WIDTH]}
width=${3:-1280}
mkdir -p "$out"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless=new --no-sandbox --disable-gpu --no-first-run --disable-background-networking
       --user-data-dir="$profile" --window-size="$width,9000")
chromium "${flags[@]}" --dump-dom "file://$page" 2>/dev/null >"$profile/dom.html"
chromium "${flags[@]}" --screenshot="$profile/full.png" "file://$page" 2>/dev/null
python3 - "$profile/dom.html" <<'PY' | while read -r id top height; do
import html, json, re, sys
m = re.search(r'data-report-check="([^"]*)"', open(sys.argv[1]).read())
for sid, (top, height) in json.loads(html.unescape(m.group(1)))["sections"].items():
    print(sid, top, height)
PY
  convert "$profile/full.png" -crop "${width}x${height}+0+${top}" +repage "$out/report-$id.png"
  echo "$out/report-$id.png"
done
