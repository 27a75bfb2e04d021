# Patchbay server image: Node 24, git, bubblewrap, socat and ripgrep, running as a non-root user.
# bubblewrap needs unprivileged user namespaces inside the container: run with
#   docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined ...
# (or, on a trusted single-tenant host only, SANDBOX=unsafe-local).
FROM node:24-bookworm-slim

RUN apt-get update \
 && apt-get install -y --no-install-recommends git bubblewrap socat ripgrep ca-certificates tini \
 && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 10001 patchbay \
 && mkdir -p /data && chown patchbay:patchbay /data

WORKDIR /app
COPY package.json package-lock.json ./
# The image's own Node 24 runs the server, so the `node` devDependency and the test tools stay out.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY src ./src
COPY db ./db
COPY sandbox ./sandbox
COPY integrations ./integrations
# The web page is bundled from web/ by esbuild (a runtime dependency) when the server starts.
COPY web ./web

USER patchbay
ENV NODE_ENV=production DATA_DIR=/data PORT=3000
VOLUME ["/data"]
EXPOSE 3000
# Without PATCHBAY_API_TOKEN the server listens on loopback only; set it to reach the API from outside.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "src/cli.ts", "serve"]
