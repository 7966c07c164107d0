#!/usr/bin/env bash
# Fetch the JavaScript that the built book serves from its own _static/ instead of a CDN, so that it works
# opened from disk without a network: MathJax 3 (Sphinx's math renderer), RequireJS and the Jupyter widgets
# HTML manager (renders the widget state embedded in notebook pages), and Vega, Vega-Lite and vega-embed (draw the
# explorer's Vega-Lite chart: socm_lib/viz/mystnb.py); and, for the tests only, axe-core (the accessibility audit
# of tests/test_accessibility.py), in DEST/.axe-core: Sphinx copies no dot-folder of a static path, so the
# published book does not carry it. Exact versions from npm, each tarball checked against its pinned SHA-256; the
# result is written to DEST (ignored by git, never committed).
# Usage: scripts/fetch_assets.sh DEST    (the Makefile calls it with _build/vendor)
set -euo pipefail
DEST=${1:?usage: scripts/fetch_assets.sh DEST}

# package@version  sha256 of the npm tarball
PINS=(
  "mathjax@3.2.2 1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09"
  "requirejs@2.3.8 777158e89275e16bd51aec3ef714fbcb5dc45789e7078659933bc814916d7dec"
  # html-manager 1.x is the major that renders ipywidgets 8 widget state
  "@jupyter-widgets/html-manager@1.0.15 2b9d65cb7913e1c7d671757a10008b32c9c2448d4429513371e55c07d6107638"
  # Vega 5 / Vega-Lite 5, the majors of Altair 5's specs and of JupyterLab 4's own renderer
  "vega@5.33.1 1b8504b6731c5311be3269c4d84ca996a5cc293bc772283293ede20c490e16c3"
  "vega-lite@5.23.0 e4cbfdd8f6f1abe381c59cd558fd6a559c12b1496bfdf2e0c3295263a40fe4da"
  "vega-embed@6.29.0 ecf1ee709c2bac9e0a4ead6908114b05b62c71493e10a8a4308109bb070f8eb1"
  "axe-core@4.11.4 97175f79b2bd57adf1d4a55837f574093883bd9eb8096ea66abfafe2f2bdbdb9"
)

command -v npm >/dev/null || { echo "fetch_assets: npm is needed (apt-get install nodejs npm)" >&2; exit 1; }
if command -v sha256sum >/dev/null; then SHA256=sha256sum; else SHA256="shasum -a 256"; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for pin in "${PINS[@]}"; do
  read -r spec sha <<<"$pin"
  name=${spec%@*}
  tarball=$(cd "$tmp" && npm pack --silent "$spec" | tail -n 1)
  echo "$sha  $tmp/$tarball" | $SHA256 --check --quiet - \
    || { echo "fetch_assets: $spec does not match its pinned SHA-256" >&2; exit 1; }
  mkdir -p "$tmp/${name##*/}"
  tar xzf "$tmp/$tarball" -C "$tmp/${name##*/}" --strip-components=1
done

rm -rf "$DEST"
mkdir -p "$DEST/mathjax" "$DEST/requirejs" "$DEST/html-manager" "$DEST/vega" "$DEST/.axe-core"
cp -r "$tmp/mathjax/es5/." "$tmp/mathjax/LICENSE" "$DEST/mathjax/"  # components load their parts lazily
cp "$tmp/requirejs/require.js" "$DEST/requirejs/"
# embed-amd.js and the icon fonts it references; not the other bundles or source maps
find "$tmp/html-manager/dist" -maxdepth 1 -type f \
  \( -name embed-amd.js -o -name '*.LICENSE.txt' -o -name '*.woff*' -o -name '*.ttf' -o -name '*.eot' \
     -o -name '*.svg' \) -exec cp {} "$DEST/html-manager/" \;
# the UMD builds (each defines a global: vega, vegaLite, vegaEmbed) and their licences (BSD-3-Clause; the vega
# package itself ships no licence file)
for pkg in vega vega-lite vega-embed; do
  cp "$tmp/$pkg/build/$pkg.min.js" "$DEST/vega/"
done
cp "$tmp/vega-lite/LICENSE" "$DEST/vega/vega-lite.LICENSE.txt"
cp "$tmp/vega-embed/LICENSE" "$DEST/vega/vega-embed.LICENSE.txt"
cp "$tmp/axe-core/axe.min.js" "$tmp/axe-core/LICENSE" "$DEST/.axe-core/"
touch "$DEST/.fetched"
