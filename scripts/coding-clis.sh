#!/usr/bin/env bash
# The coding-agent command lines the tests drive (tests/agents/test_coding_clis.py): Claude Code and Codex from
# the npm registry, pinned, installed into the git-ignored .tools/npm of this repository, only when missing.
# niceeval itself never downloads them; users install them as docs/agents.md says.
set -euo pipefail
cd "$(dirname "$0")/.."
CLAUDE_CODE_VERSION=2.1.330
CODEX_VERSION=0.169.0
prefix=.tools/npm
installed() {  # package version
    local manifest="$prefix/node_modules/$1/package.json"
    [ -f "$manifest" ] && grep -q "\"version\": \"$2\"" "$manifest"
}
wanted=()
installed @anthropic-ai/claude-code "$CLAUDE_CODE_VERSION" || wanted+=("@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION")
installed @openai/codex "$CODEX_VERSION" || wanted+=("@openai/codex@$CODEX_VERSION")
[ ${#wanted[@]} -eq 0 ] && exit 0
if ! command -v npm >/dev/null; then
    echo "niceeval tests: npm is missing, so Claude Code and Codex are not installed (the tests that drive them" \
         "are skipped, or fail under CI=true); install Node.js 20+ and npm" >&2
    exit 0
fi
mkdir -p "$prefix"
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "${wanted[@]}" >/dev/null
