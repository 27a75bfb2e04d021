# Patchbay server image: Node 24, git, bubblewrap, socat and ripgrep, running as a non-root user.
#
# The server needs no `seccomp=unconfined`. bubblewrap, which it starts for every sandbox command,
# makes user, mount, pid, ipc, uts and network namespaces and mounts inside them, which Docker's
# default seccomp profile allows only to CAP_SYS_ADMIN. Run with Docker's default profile plus these
# calls allowed for everyone (copy moby's profiles/seccomp/default.json and add them to the first
# "SCMP_ACT_ALLOW" rule):
#   unshare, clone, clone3 (namespace flags), setns, mount, umount2, pivot_root
#   docker run --security-opt seccomp=patchbay-seccomp.json --security-opt apparmor=unconfined --security-opt systempaths=unconfined ...
# /proc: bubblewrap mounts a fresh proc in its pid namespace, which the kernel refuses while the
# container's /proc has paths masked over: --security-opt systempaths=unconfined (podman: unmask=ALL);
# without it the server stops at start with "bwrap: Can't mount proc on /newroot/proc".
# AppArmor: Docker's default profile forbids mount; on Ubuntu 24.04 hosts user namespaces also need
# kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile that allows userns).
# Inside, Patchbay applies its own, stricter seccomp filter to every sandbox command.
# Limits: as uid 10001 RLIMIT_NPROC holds; with `--cgroupns=private` and the memory and pids
# controllers delegated, each command also gets its own cgroup (SANDBOX_LIMITS, see docs/configuration.md).
# (On a trusted single-tenant host only: SANDBOX=unsafe-local, no isolation at all.)
# BASE_IMAGE: any Debian bookworm with Node 24 and npm in /usr/local (scripts/container-smoke.sh builds
# one with debootstrap where no registry is reachable).
ARG BASE_IMAGE=node:24-bookworm-slim
FROM ${BASE_IMAGE}

RUN apt-get update \
 && apt-get install -y --no-install-recommends git bubblewrap socat ripgrep util-linux ca-certificates tini python3 \
 && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 10001 patchbay \
 && mkdir -p /data && chown patchbay:patchbay /data

WORKDIR /app
COPY package.json package-lock.json ./
# The image's own Node 24 runs the server, so the `node` devDependency and the test tools stay out.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY src ./src
COPY db ./db
COPY sandbox ./sandbox
COPY integrations ./integrations
# The web page is bundled from web/ by esbuild (a runtime dependency) when the server starts.
COPY web ./web

USER patchbay
# The image's Node and npm live in /usr/local (the node base image puts them there), and sandboxed
# checks of a JavaScript repository need them: show /usr/local in the sandbox (read-only). It holds
# nothing else here; on a host install the default stays off (host software and its config).
ENV NODE_ENV=production DATA_DIR=/data PORT=3000 SANDBOX_USR_LOCAL=true
VOLUME ["/data"]
EXPOSE 3000
# Without PATCHBAY_API_TOKEN the server listens on loopback only; set it to reach the API from outside.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "src/cli.ts", "serve"]
