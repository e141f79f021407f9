# syntax=docker/dockerfile:1
# The gadget-code server image: the web IDE's static build and the server as one bundled file
# (docs/decisions/0009-container-images.md). Build from the repository root:
#   docker build -f docker/server.Dockerfile -t gadget-code-server .

FROM node:20-bookworm-slim AS build
ENV COREPACK_ENABLE_DOWNLOAD_PROMPT=0 CI=true
WORKDIR /repo
RUN corepack enable pnpm
# Dependencies first, keyed on the lockfile alone, so editing source does not download them again.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml .npmrc ./
RUN pnpm fetch
COPY . .
RUN pnpm install --offline --frozen-lockfile --filter "@gadget/server..." --filter "@gadget/web..." --filter "gadget-drone..."
RUN pnpm --filter @gadget/web build && pnpm --filter @gadget/server build
# The drone package of this release, handed out at /install.sh and /downloads.
RUN scripts/pack-drone.sh /repo/drone-package

FROM node:20-bookworm-slim
# HOST: listen on every interface of the container. GADGET_DATA_DIR is only used when
# MONGO_URL/REDIS_URL are unset (private services, which this image does not contain).
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    GADGET_WEB_DIR=/app/web \
    GADGET_DRONE_PACKAGE=/app/drone \
    GADGET_DATA_DIR=/data
WORKDIR /app
COPY --from=build /repo/apps/server/dist/ /app/
COPY --from=build /repo/apps/web/dist/ /app/web/
COPY --from=build /repo/drone-package/ /app/drone/
RUN ln -s /app/gadget-code.mjs /usr/local/bin/gadget-code \
 && mkdir -p /data && chown node:node /data
USER node
EXPOSE 3000
# Liveness: the process answers HTTP. Readiness (/readyz: MongoDB, Redis, not draining) is for the
# load balancer, which should stop sending requests before the container stops.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => r.json()).then((body) => process.exit(body.ok === true ? 0 : 1), () => process.exit(1))"]
CMD ["gadget-code", "serve"]
