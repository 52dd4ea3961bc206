# syntax=docker/dockerfile:1
#
# The report gateway's image. Build (docs/operations/deploy.md): docker build -t report-gateway:0.1.0
#   --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) --build-arg CREATED=<RFC 3339 time> .
# Three stages: production dependencies, the TypeScript build, and the runtime that
# holds only dist/, config/, package.json and production node_modules.
#
# The base is pinned to an exact release, the Node the test suite runs on (the `node`
# devDependency), so a rebuild does not change Node under the same source. Move both
# together; pin harder with a digest (--build-arg NODE_IMAGE=node:24.21.0-bookworm-slim@sha256:...).
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

# ---- production dependencies only (no install scripts: none of the dependencies has one)
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts

# ---- build: every dependency, then tsc into dist/
FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
COPY package.json package-lock.json ./
# --ignore-scripts: the `prepare` script (npm run build) would run before src/ is here;
# the build runs explicitly below, after the sources are copied.
RUN --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# The gateway's build only (the server and the console's script): `npm run build` also
# builds the typed client of packages/client, a package for callers that the image
# neither holds nor needs. No step of it is silenced: a failure prints why. Its
# incremental records (dist/*.tsbuildinfo) serve a developer's next build, not the image.
RUN npm run build:gateway && rm dist/.tsbuildinfo dist/.console.tsbuildinfo

# ---- runtime
FROM ${NODE_IMAGE} AS runtime
# Global ARGs are visible inside a stage only when declared again.
ARG NODE_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="report-gateway" \
      org.opencontainers.image.description="One in-house URL in front of the advertising platform's API: token injection, report cache, per-team keys." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"
# The commit the image was built from: gateway_build_info and /admin/status show it.
ENV NODE_ENV=production GATEWAY_COMMIT=${REVISION}
# V8's young generation at most 16 MiB per semi-space, the same on every machine. Node 24
# lets it grow to 64 MiB per semi-space (128 MiB of new space, with or without
# --max-old-space-size) within minutes of steady traffic, and those pages stay resident:
# about 70 MB more RSS for nothing, the gateway's young objects being requests that live
# milliseconds (docs/configuration.md, "Memory"). The chart's extraEnv may set
# NODE_OPTIONS otherwise; scripts/soak.mjs runs its replicas with this line's value.
ENV NODE_OPTIONS=--max-semi-space-size=16
# glibc hands an allocation of 16 KiB or more to mmap and gives it back to the kernel when
# freed. A socket's reads are such allocations (64 KiB each on plain TCP, 16 KiB over TLS),
# dead as soon as an answer's bytes are copied out but freed only at V8's next collection;
# in glibc's main heap they left its high-water mark resident, on top of the memory alive
# later, and an answer's 1 MiB blocks would come from there too once glibc raised its own
# threshold. Mapped on their own, resident memory is what is alive plus what waits for a
# collection: in test/slow/answer-memory.test.ts glibc's main heap held 119-158 MiB at the
# peak with a 128 KiB threshold, 8-27 MiB with this one. Its price: 0.5 ms more CPU per MiB
# read in large answers; none on small reads (docs/configuration.md, "Memory").
ENV MALLOC_MMAP_THRESHOLD_=16384
WORKDIR /app
# Files stay owned by root and read-only to the gateway's user: the process cannot
# change its own code, and the root filesystem can be mounted read-only.
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY config ./config
# The base image's `node` user, by number so Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
# 8080: proxy listener (HOST/PORT). 8081: admin listener (ADMIN_HOST/ADMIN_PORT), which
# binds 127.0.0.1 unless ADMIN_HOST says otherwise (the Helm chart sets the pod's IP, so
# that the kubelet and Prometheus reach it and nothing else in the pod's network does).
EXPOSE 8080 8081
# Docker-only health check (Kubernetes uses the chart's probes). No curl in slim
# images: node's fetch asks /healthz, which both listeners answer.
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The gateway handles SIGTERM itself (stops accepting, finishes requests in flight
# within shutdownGrace, then exits) and starts no child processes, so node runs as
# PID 1 directly: no npm in between (npm would not forward the signal in time) and no
# init is needed. `docker run --init` adds tini if you want one anyway. As PID 1 a signal
# reaches node only through a handler, so main.ts sets its SIGTERM and SIGINT handlers
# before anything else: a stop during the start ends the start (exit 0, nothing served).
STOPSIGNAL SIGTERM
CMD ["node", "dist/main.js"]
