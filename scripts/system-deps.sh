#!/usr/bin/env bash
# Debian packages the test suite needs, installed only when missing. Each feature that needs a real service
# (a database server, a browser) adds its package here; the tests start the service themselves.
set -euo pipefail
packages=()
packages+=(postgresql)   # the results store's tests run against a throwaway cluster (tests/_postgres.py)
packages+=(bubblewrap)   # the bwrap sandbox and its isolation tests (tests/sandbox/test_bwrap.py)
# npm installs the coding-agent CLIs the tests drive (scripts/coding-clis.sh); any Node.js 18+ with npm will do
command -v npm >/dev/null || packages+=(nodejs npm)
packages+=(chromium)     # the viewer's browser tests: Playwright drives /usr/bin/chromium (tests/web/_viewer.py)
missing=()
for pkg in "${packages[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo apt-get update -qq && sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
    echo "niceeval tests: missing Debian packages: ${missing[*]} (install them as root; the tests that need them" \
         "are skipped, or fail under CI=true)" >&2
fi
