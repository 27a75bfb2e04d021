#!/usr/bin/env bash
# Installs what Patchbay needs on a Debian or Ubuntu machine, then its npm packages.
#   ./bootstrap.sh          git, bubblewrap (the sandbox), socat (its egress relay), ripgrep (the search tool),
#                           prlimit and du (sandbox limits), setpriv, unshare and mount (a root server's sandbox user)
#   ./bootstrap.sh --test   the same, plus Chromium for the browser tests, curl for the egress tests and
#                           python3 for the sandbox kernel-surface and limit tests
# Node.js >= 22.18 and npm must be there already; npm installs Node 24 for the project's own scripts.
set -euo pipefail
cd "$(dirname "$0")"

# The Node that runs npm should satisfy package.json's engines, or npm ci warns for many packages;
# the project's scripts themselves run on the Node 24 that npm installs.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "bootstrap: Patchbay needs Node.js 22.18 or later and npm; install them from nodejs.org or your package manager" >&2
  exit 1
fi
node --input-type=module -e "
  import { readFileSync } from 'node:fs';
  import { nodeVersionProblem } from './bin/node-version.js';
  const problem = nodeVersionProblem(process.versions.node, JSON.parse(readFileSync('package.json', 'utf8')).engines.node);
  if (problem) console.error('bootstrap: warning: ' + problem.replace(/ Run it through npm.*/, ' npm ci will print engine warnings; npm start and the other scripts still run on the Node 24 npm installs.'));
"

want=(git:git bwrap:bubblewrap rg:ripgrep socat:socat prlimit:util-linux du:coreutils setpriv:util-linux unshare:util-linux mount:mount)
if [[ "${1:-}" == "--test" ]]; then want+=(chromium:chromium curl:curl python3:python3); fi

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
