#!/usr/bin/env bash
# Builds the Dockerfile with podman and runs the server in the image until /healthz answers.
#
# No container registry needs to be reachable: the base image (what node:24-bookworm-slim would
# be) is made here, Debian bookworm from debootstrap with Node 24 and npm in /usr/local, from the
# `node` package in node_modules and the npm that runs this script, and imported with
# `podman import`. The Dockerfile is then built on it (its BASE_IMAGE argument) as it stands: apt
# packages from Debian, `npm ci --omit=dev` from the npm registry. Everything lives in a podman
# store of its own under a temporary directory, removed at the end.
#
#   scripts/container-smoke.sh                                   # as root (debootstrap, chroot builds)
#   CONTAINER_SMOKE_WORK=/tmp/smoke scripts/container-smoke.sh   # keep the store there; a rerun reuses its images
#
# .ci/run runs it in the background while the static checks run.
#
# DEBIAN_MIRROR picks another Debian mirror. The machine's own CA certificates
# (/usr/local/share/ca-certificates) go into the base image, as they would into a pulled one on a
# network that inspects TLS.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

if [[ $(id -u) -ne 0 ]]; then
  echo "container-smoke: run as root (debootstrap and podman's chroot isolation need it)" >&2
  exit 1
fi
missing=()
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v runc >/dev/null 2>&1 || missing+=(runc)
if ((${#missing[@]})); then
  echo "container-smoke: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

node_binary=$(ls "$repo"/node_modules/node/node_modules/node-linux-*/bin/node 2>/dev/null | head -n 1 || true)
npm_package="$(npm root -g)/npm"
if [[ -z $node_binary || ! -f $npm_package/bin/npm-cli.js ]]; then
  echo "container-smoke: needs the node package's binary in node_modules (npm ci) and a global npm" >&2
  exit 1
fi

work=${CONTAINER_SMOKE_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/patchbay-container-smoke.XXXXXX")}
mkdir -p "$work"
# Storage: overlay where this kernel lets root mount it over $work (layers shared, a container starts in
# seconds); vfs otherwise (every layer and container a full copy of the image: minutes). A store keeps the
# driver it was made with, so a rerun on an existing store uses that one.
storage_driver() {
  if [[ -d $work/storage/overlay ]]; then echo overlay; return; fi
  if [[ -d $work/storage/vfs ]]; then echo vfs; return; fi
  local probe
  probe=$(mktemp -d "$work/overlay-probe.XXXXXX")
  mkdir "$probe"/{lower,upper,work,merged}
  if mount -t overlay overlay -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" "$probe/merged" 2>/dev/null; then
    umount "$probe/merged"
    echo overlay
  else
    echo vfs
  fi
  rm -rf "$probe"
}
driver=$(storage_driver)
# runc, not crun: crun refuses a host with cgroup v1 and v2 hierarchies mounted side by side ("cgroups in
# hybrid mode not supported"), as in the nested containers CI runs in.
podman=(podman --root "$work/storage" --runroot "$work/run" --storage-driver "$driver" --cgroup-manager cgroupfs --runtime runc)
container=patchbay-smoke-$$
cleanup() {
  "${podman[@]}" rm -f -v "$container" >/dev/null 2>&1 || true
  if [[ -z ${CONTAINER_SMOKE_WORK:-} ]]; then
    "${podman[@]}" system reset --force >/dev/null 2>&1 || true
    rm -rf "$work"
  fi
}
trap cleanup EXIT
started=$SECONDS
phase() { echo "container-smoke: [$((SECONDS - started)) s] $*"; }

has_image() { "${podman[@]}" image exists "$1"; }

make_base_image() {
  phase "debootstrap bookworm (minbase)"
  rm -rf "$work/rootfs"
  debootstrap --variant=minbase bookworm "$work/rootfs" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/*
  mkdir -p "$work/rootfs/usr/local/bin" "$work/rootfs/usr/local/lib/node_modules" "$work/rootfs/usr/local/share/ca-certificates"
  cp "$node_binary" "$work/rootfs/usr/local/bin/node"
  cp -r "$npm_package" "$work/rootfs/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/rootfs/usr/local/bin/npx"
  cp /usr/local/share/ca-certificates/*.crt "$work/rootfs/usr/local/share/ca-certificates/" 2>/dev/null || true
  phase "podman import (Node $(chroot "$work/rootfs" /usr/local/bin/node --version), npm $(chroot "$work/rootfs" /usr/local/bin/node /usr/local/bin/npm --version))"
  tar -C "$work/rootfs" -c . | "${podman[@]}" import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
    - localhost/patchbay-smoke-base:bookworm >/dev/null
  rm -rf "$work/rootfs"
}

base=localhost/patchbay-smoke-base:bookworm
has_image "$base" || make_base_image
phase "podman build (the Dockerfile on $base, $driver storage)"
"${podman[@]}" build --isolation chroot --network host --build-arg BASE_IMAGE="$base" \
  -t localhost/patchbay:smoke "$repo" >"$work/build.log" 2>&1 \
  || { tail -n 30 "$work/build.log" >&2; exit 1; }

# Host network, no API token: the server listens on loopback, which is this host's loopback.
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
phase "podman run, then GET http://127.0.0.1:$port/healthz"
# Limits no higher than this process's own: podman's defaults (1048576 open files, its process count)
# cannot be set where the outer container caps them ("setrlimit RLIMIT_NOFILE: Operation not permitted").
nproc=$(ulimit -u); [[ $nproc == unlimited || $nproc -gt 16384 ]] && nproc=16384
# bubblewrap mounts a fresh /proc in its pid namespace, which the kernel refuses while the container's
# /proc has paths masked over ("Can't mount proc on /newroot/proc: Operation not permitted"): unmask them
# (Docker: --security-opt systempaths=unconfined), as for the workers in docker-compose.yml.
"${podman[@]}" run -d --name "$container" --network host --security-opt seccomp=unconfined --security-opt unmask=ALL \
  --ulimit "nofile=$(ulimit -n):$(ulimit -n)" --ulimit "nproc=$nproc:$nproc" \
  -e PORT="$port" localhost/patchbay:smoke >/dev/null
health=''
for _ in $(seq 120); do
  health=$(curl -fsS "http://127.0.0.1:$port/healthz" 2>/dev/null || true)
  [[ $health == *'"ok":true'* ]] && break
  if [[ $("${podman[@]}" inspect -f '{{.State.Running}}' "$container") != true ]]; then break; fi
  sleep 1
done
if [[ $health != *'"ok":true'* ]]; then
  echo "container-smoke: FAILED: /healthz did not answer ok (last answer: ${health:-none}); the server's log:" >&2
  "${podman[@]}" logs "$container" 2>&1 | tail -n 40 >&2
  exit 1
fi
phase "healthz: $health"

# The image's node and npm are in /usr/local, which the sandbox shows only with SANDBOX_USR_LOCAL (the
# image sets it): a scripted session in the container (`patchbay run`, a DATA_DIR of its own) runs
# `node --version` and `npm --version` in its sandbox and pushes what they printed.
phase "a sandboxed command in the container finds node and npm"
toolchain=$("${podman[@]}" exec -i "$container" sh -s <<'SCRIPT' 2>&1
set -eu
cd /tmp
rm -rf toolchain && mkdir toolchain && cd toolchain
git init -q -b main repo
git -C repo -c user.name=smoke -c user.email=smoke@localhost commit -q --allow-empty -m init
cat > scenario.json <<'JSON'
{"turns": [
  {"toolCalls": [{"name": "run_shell", "input": {"command": "printf 'node %s npm %s\\n' \"$(node --version)\" \"$(npm --version)\" > TOOLCHAIN.txt"}}]},
  {"text": "Wrote TOOLCHAIN.txt."}
],
 "verifier": [{"toolCalls": [{"name": "record_verdict", "input": {"relevance": {"score": 2, "reason": "asked"}, "completeness": {"score": 2, "reason": "all"}, "correctness": {"score": 2, "reason": "ran"}, "scope": {"score": 2, "reason": "one file"}, "summary": "Writes TOOLCHAIN.txt."}}]}]}
JSON
cd /app
DATA_DIR=/tmp/toolchain/data MODEL_PROVIDER=scripted SCRIPTED_SCENARIO=/tmp/toolchain/scenario.json PORT=0 \
  node src/cli.ts run --repo /tmp/toolchain/repo "Write the toolchain versions to TOOLCHAIN.txt"
branch=$(git -C /tmp/toolchain/repo for-each-ref --format='%(refname:short)' refs/heads/patchbay/)
git -C /tmp/toolchain/repo show "$branch:TOOLCHAIN.txt"
SCRIPT
) || { echo "$toolchain" | tail -n 30 >&2; echo "container-smoke: FAILED: the scripted session in the container did not push" >&2; exit 1; }
versions=$(echo "$toolchain" | tail -n 1)
if [[ ! $versions =~ ^node\ v[0-9]+\.[0-9]+\.[0-9]+\ npm\ [0-9]+\.[0-9]+ ]]; then
  echo "$toolchain" | tail -n 30 >&2
  echo "container-smoke: FAILED: in the sandbox: '$versions' (node or npm not found: /usr/local not shown?)" >&2
  exit 1
fi
phase "in the sandbox: $versions"
phase "passed"
