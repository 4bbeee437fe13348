#!/bin/sh
# Installs the pinned vendor CLIs from package-lock.json and links `claude`, `codex` and `gemini` into a bin
# directory (docs/adapters/common.md#pins): `vendors/install.sh [BIN_DIR]`, BIN_DIR defaulting to $HOME/.local/bin.
# Idempotent: `npm ci` rebuilds node_modules from the lockfile and the links are replaced in place.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
bin_dir=${1:-${HOME:?HOME is not set and no bin directory was given}/.local/bin}

cd "$here"
npm ci --no-audit --no-fund

claude_pkg="$here/node_modules/@anthropic-ai/claude-code"
if ! "$claude_pkg/bin/claude.exe" --version >/dev/null 2>&1; then
    # The wrapper's postinstall copies the native executable over its placeholder; run it when
    # the npm in use skipped install scripts.
    (cd "$claude_pkg" && node install.cjs)
fi

mkdir -p "$bin_dir"
ln -sfn "$here/node_modules/.bin/claude" "$bin_dir/claude"
ln -sfn "$here/node_modules/.bin/codex" "$bin_dir/codex"
ln -sfn "$here/node_modules/.bin/gemini" "$bin_dir/gemini"

"$bin_dir/claude" --version
"$bin_dir/codex" --version
"$bin_dir/gemini" --version
