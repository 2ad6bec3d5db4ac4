#!/usr/bin/env bash
# Build agentscript-<version>.vsix from this folder, outside the checkout:
#   editors/vscode/build.sh [OUT_DIR]      (default OUT_DIR: a new temporary folder)
# Needs Node.js 20 or newer and npm (@vscode/vsce 3 requires Node 20); everything else comes from the
# npm registry (vscode-languageclient, @vscode/vsce), installed in the build folder only.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$(mktemp -d)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$here/." "$work/"
cd "$work"
npm install --omit=dev --no-audit --no-fund --loglevel=error >/dev/null
npm exec --yes --package=@vscode/vsce@3 -- vsce package --skip-license --allow-missing-repository \
    --out "$out" >/dev/null
ls "$out"/*.vsix
