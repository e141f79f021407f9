# syntax=docker/dockerfile:1
# The gadget-drone image: the npm package built by apps/drone/scripts/build.mjs, installed the way a
# user installs it, with git and ripgrep for the agent's tools (docs/decisions/0009-container-images.md).
# Build from the repository root:
#   docker build -f docker/drone.Dockerfile -t gadget-drone .

FROM node:20-bookworm-slim AS build
ENV COREPACK_ENABLE_DOWNLOAD_PROMPT=0 CI=true
WORKDIR /repo
RUN corepack enable pnpm
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml .npmrc ./
RUN pnpm fetch
COPY . .
RUN pnpm install --offline --frozen-lockfile --filter "gadget-drone..."
RUN pnpm --filter gadget-drone build && mkdir /out && cd apps/drone/dist && npm pack --pack-destination /out

FROM node:20-bookworm-slim
# git: clones and change tracking; ripgrep: the grep tool; tini: PID 1 that forwards signals and
# reaps what the agent's commands leave behind; bubblewrap: the sandbox of every command (it needs
# user namespaces inside the container: see docker/README.md, "The drone's sandbox").
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git ripgrep tini bubblewrap \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /tmp/gadget-drone/
RUN npm install --global --omit=dev /tmp/gadget-drone/gadget-drone-*.tgz \
 && rm -rf /tmp/gadget-drone && npm cache clean --force
COPY --chmod=755 docker/drone-entrypoint.sh /usr/local/bin/drone-entrypoint
# The config, its log, the event journal and the project checkouts all live on the /data volume.
ENV GADGET_DRONE_CONFIG=/data/config.json
RUN mkdir -p /data && chown node:node /data
USER node
WORKDIR /home/node
# Healthy while the drone is connected to a server (`gadget-drone start` keeps runtime.json beside
# the config up to date; `gadget-drone status` exits 0 even when the server is unreachable).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD grep -q '"connected":true' "$(dirname "$GADGET_DRONE_CONFIG")/runtime.json"
ENTRYPOINT ["tini", "--", "drone-entrypoint"]
