#!/usr/bin/env bash
# Installs what Patchbay needs on a Debian or Ubuntu machine, then its npm packages.
#   ./bootstrap.sh          git, bubblewrap (the sandbox), socat (its egress relay), ripgrep (the search tool)
#   ./bootstrap.sh --test   the same, plus Chromium for the browser tests and curl for the egress tests
# Node.js >= 20 and npm must be there already; npm installs Node 24 for the project's own scripts.
set -euo pipefail
cd "$(dirname "$0")"

want=(git:git bwrap:bubblewrap rg:ripgrep socat:socat)
if [[ "${1:-}" == "--test" ]]; then want+=(chromium:chromium curl:curl); fi

missing=()
for pair in "${want[@]}"; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done

if ((${#missing[@]})); then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: please install ${missing[*]} with your package manager" >&2
    exit 1
  fi
  as_root=()
  if [[ $(id -u) -ne 0 ]]; then as_root=(sudo); fi
  echo "bootstrap: installing ${missing[*]}"
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm ci when node_modules is missing or older than the lock file.
if [[ ! -d node_modules || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund
fi
