#!/usr/bin/env bash
# report.html in headless Chromium: the page's script runs to the end (it
# marks <body data-ready="1">), the console stays silent (no errors, no
# failed loads: the page must fetch nothing), and the screenshot is not
# blank. A page with a deliberate script error checks the detector itself.
# Usage: html_chromium_test.sh REPORT_FIXTURE CHROMIUM TEST_SOURCE_DIR
set -euo pipefail
fixture=$1 chromium=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$fixture" "$work"
html=$work/report/report.html
[ -s "$html" ] || fail "no report.html"
# Self-contained: no external scripts, styles, images or fonts.
if grep -Eq '(src|href)="(https?:)?//' "$html"; then fail "report.html references the network"; fi

browse() {  # browse URL EXTRA_ARGS... -> stdout, stderr in $work/stderr
  timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --user-data-dir="$work/profile" --enable-logging=stderr --v=0 \
    "${@:2}" "$1" 2>"$work/stderr"
}

# The detector must see a broken page's error, or a silent console proves nothing.
echo '<html><body><script>undefinedFn();</script></body></html>' >"$work/bad.html"
browse "file://$work/bad.html" --dump-dom >/dev/null
grep -q 'CONSOLE.*Uncaught ReferenceError' "$work/stderr" || fail "console errors are not detected"

browse "file://$html" --dump-dom >"$work/dom.html"
grep -q 'data-ready="1"' "$work/dom.html" || fail "the page's script did not run to the end"
grep -q '<svg class="chart"' "$work/dom.html" || fail "no SVG chart in the DOM"
if grep -q 'CONSOLE' "$work/stderr"; then
  grep 'CONSOLE' "$work/stderr" >&2
  fail "console messages while loading report.html"
fi

browse "file://$html" --window-size=1000,1200 --screenshot="$work/shot.png" >/dev/null
[ -s "$work/shot.png" ] || fail "no screenshot"
read -r width height colours non_white < <(/usr/bin/python3 "$src/png_stats.py" "$work/shot.png")
echo "screenshot ${width}x${height}: $colours colours, non-white fraction $non_white"
# A blank page has one colour; the charts and table give hundreds.
[ "$colours" -ge 50 ] || fail "screenshot looks blank ($colours colours)"
awk -v f="$non_white" 'BEGIN { exit !(f >= 0.05) }' || fail "screenshot nearly all white ($non_white)"
echo PASS
