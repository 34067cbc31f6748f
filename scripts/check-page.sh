#!/usr/bin/env bash
# make check-page: render a summary.html with headless Chromium at a phone's width (390 px) and
# a desktop's (1280 px) and fail when anything on it is wider than its box: every element whose
# scrollWidth exceeds its clientWidth (a table running off the page, a scroll box, a clipped
# figure), so every figure is seen without scrolling sideways.
#
# Usage: scripts/check-page.sh [summary.html]   (default: the newest reports/<date>/summary.html)
#        CHECK_PAGE_WIDTHS="390 1280" (the widths, px), CHROMIUM=chromium (the browser to run)
# Exit 0: nothing overflows at any width; 1: something does (each element listed); 2: cannot check.
#
# The page itself carries no script; a copy of it in a temporary folder gets one, which opens every
# <details> (the tables behind "Numbers" are checked too) and measures each element after load;
# what it finds ends up in the DOM Chromium prints (--dump-dom).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
page=${1:-}
if [ -z "$page" ]; then
  page=$(ls -1d "$here"/reports/20*/summary.html 2>/dev/null | tail -1 || true)
  [ -n "$page" ] || { echo "no reports yet: run make demo first, or name a summary.html"; exit 2; }
fi
[ -f "$page" ] || { echo "$page: no such file"; exit 2; }
browser=${CHROMIUM:-chromium}
command -v "$browser" >/dev/null || { echo "install chromium (sudo apt-get install -y chromium)"; exit 2; }
widths=${CHECK_PAGE_WIDTHS:-390 1280}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-page.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The copy, with the measuring script after </html> (parsed into the body; it runs once the page
# has loaded). It posts its lines to the frame around it, which writes them into its own DOM.
{
  cat "$page"
  cat <<'SCRIPT'
<script>
window.addEventListener("load", function () {
  document.querySelectorAll("details").forEach(function (d) { d.open = true; });
  var lines = [], n = 0;
  document.querySelectorAll("*").forEach(function (el) {
    n++;
    if (el.scrollWidth <= el.clientWidth + 1) return;
    var text = (el.innerText !== undefined ? el.innerText : el.textContent) || "";
    text = text.replace(/\s+/g, " ").trim().slice(0, 60);
    lines.push("OVERFLOW <" + el.tagName.toLowerCase() + ">" +
      (el.id ? " id=" + el.id : "") +
      (el.getAttribute("class") ? " class=\"" + el.getAttribute("class") + "\"" : "") +
      " scrollWidth=" + el.scrollWidth + " clientWidth=" + el.clientWidth + " text=\"" + text + "\"");
  });
  lines.push("CHECKED viewport=" + window.innerWidth + " elements=" + n);
  window.parent.postMessage(lines.join("\n"), "*");
});
</script>
SCRIPT
} >"$tmp/page.html"

# Headless Chromium's window is at least 500 px wide, so the page is shown in a frame of the
# width asked for: the frame is its viewport (media queries, percentages, 100vw).
frame() {
  cat <<FRAME
<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0}iframe{border:0;display:block}</style></head>
<body><iframe src="page.html" width="$1" height="900"></iframe><pre id="overflow-report"></pre>
<script>
window.addEventListener("message", function (m) {
  document.getElementById("overflow-report").textContent = "\n" + m.data + "\n";
});
</script></body></html>
FRAME
}

failed=0
for w in $widths; do
  frame "$w" >"$tmp/frame-$w.html"
  if ! "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/profile" \
       --window-size="$((w < 500 ? 500 : w)),1000" --virtual-time-budget=2000 --dump-dom "file://$tmp/frame-$w.html" \
       >"$tmp/dom-$w.html" 2>"$tmp/chromium-$w.log"; then
    echo "chromium failed at $w px:"; tail -20 "$tmp/chromium-$w.log"; exit 2
  fi
  # The report's lines, as the DOM dump escapes them.
  report=$(grep -E '^(OVERFLOW|CHECKED) ' "$tmp/dom-$w.html" | sed -e 's/&lt;/</g; s/&gt;/>/g; s/&quot;/"/g; s/&amp;/\&/g' || true)
  checked=$(grep '^CHECKED ' <<<"$report" || true)
  [ -n "$checked" ] || { echo "no report from chromium at $w px (did the page load?)"; tail -20 "$tmp/chromium-$w.log"; exit 2; }
  viewport=$(sed -E 's/.*viewport=([0-9]+).*/\1/' <<<"$checked")
  [ "$viewport" = "$w" ] || { echo "chromium showed the page $viewport px wide, not $w px"; exit 2; }
  overflows=$(grep '^OVERFLOW ' <<<"$report" || true)
  if [ -n "$overflows" ]; then
    echo "FAIL $w px: $(grep -c . <<<"$overflows") element(s) wider than their box ($page)"
    sed 's/^OVERFLOW /  /' <<<"$overflows"
    failed=1
  else
    echo "OK $w px: nothing overflows (${checked#CHECKED }) ($page)"
  fi
done
exit $failed
