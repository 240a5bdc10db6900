#!/bin/sh
# Screenshots of five representative answers (issue 13) and of a digest (issue 27), made from the real payloads:
#   workload-doctor diagnose --snapshot CASE --format json  ->  docs/tools/blockkit_preview.py  ->  headless Chromium
# Usage (from the repository root, with ../shared/cases beside it and Debian's `chromium` installed):
#   sh docs/tools/screenshots.sh
set -eu
CASES=${CASES:-../shared/cases}
OUT=docs/screenshots
PY=${PY:-.venv/bin/python}
CLI=${CLI:-.venv/bin/workload-doctor}
CHROME=${CHROME:-chromium}
mkdir -p "$OUT"
for pair in oom:runai/oom-recurring-tier2 image-pull:runai/image-pull-manifest-unknown \
            pending:runai/pending-unschedulable crash:runai/crash-app-traceback osmo-failed:osmo/osmo-failed-app; do
  name=${pair%%:*}; case=${pair#*:}
  "$CLI" diagnose --snapshot "$CASES/$case.json" --format json > "$OUT/$name.json"
  "$PY" docs/tools/blockkit_preview.py "$OUT/$name.json" "$OUT/$name.html"
  "$PY" docs/tools/blockkit_preview.py "$OUT/$name.json" "$OUT/$name-thread.html" --thread
  for size in desktop:1000 phone:390; do
    label=${size%%:*}; width=${size#*:}
    # first pass: the page height (the preview writes it into <title>), then the screenshot at that height
    height=$("$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$width,200" \
      --dump-dom "file://$PWD/$OUT/$name.html?w=$width" 2>/dev/null | sed -n 's:.*<title>\([0-9]*\)</title>.*:\1:p')
    "$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
      --window-size="$width,${height:-900}" --screenshot="$PWD/$OUT/$name-$label.png" \
      "file://$PWD/$OUT/$name.html?w=$width" >/dev/null 2>&1
  done
  # the thread the Evidence and Logs buttons post, at desktop width
  height=$("$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,200 \
    --dump-dom "file://$PWD/$OUT/$name-thread.html?w=1000" 2>/dev/null | sed -n 's:.*<title>\([0-9]*\)</title>.*:\1:p')
  "$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
    --window-size="1000,${height:-2000}" --screenshot="$PWD/$OUT/$name-thread-desktop.png" \
    "file://$PWD/$OUT/$name-thread.html?w=1000" >/dev/null 2>&1
done
ls -1 "$OUT"
# The digest (issue 27): the bundled snapshot's main message (desktop and phone: one phone screen) and its thread
SNAP=${SNAP:-sandbox/snapshots/digest.json}
"$CLI" digest --snapshot "$SNAP" --format json > "$OUT/digest.json"
"$PY" docs/tools/blockkit_preview.py "$OUT/digest.json" "$OUT/digest.html"
"$PY" docs/tools/blockkit_preview.py "$OUT/digest.json" "$OUT/digest-thread.html" --thread
for shot in desktop:1000:digest phone:390:digest thread-desktop:1000:digest-thread; do
  label=${shot%%:*}; rest=${shot#*:}; width=${rest%%:*}; page=${rest#*:}
  height=$("$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$width,200" \
    --dump-dom "file://$PWD/$OUT/$page.html?w=$width" 2>/dev/null | sed -n 's:.*<title>\([0-9]*\)</title>.*:\1:p')
  echo "digest $label: ${height:-?} px tall at $width px"
  "$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
    --window-size="$width,${height:-900}" --screenshot="$PWD/$OUT/digest-$label.png" \
    "file://$PWD/$OUT/$page.html?w=$width" >/dev/null 2>&1
done
