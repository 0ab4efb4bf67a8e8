# syntax=docker/dockerfile:1
#
# Firegate image: build a release binary with the Swift runtime linked statically, then run it
# on a slim Debian with only the shared libraries it still needs.
#
#   docker build -t firegate .
#   docker run -p 8080:8080 -v firegate-data:/data firegate

# ─────────────────────────── build ───────────────────────────
FROM swift:6.3-bookworm AS build

# System libraries the package links against (GRDB uses the system SQLite; zlib for gzip).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libsqlite3-dev zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src

# Resolve dependencies first so this layer is cached while only sources change.
# (Package.resolved is optional: the glob copies it when it is there.)
COPY Package.swift Package.resolved* ./
RUN swift package resolve

# Sources, the test target folders the manifest declares (SwiftPM checks they exist),
# and Public/ when the repository has it (.dockerignore keeps the rest out).
COPY . .

# The same build command CI runs. Then stage the binary (stripped of its debug information:
# about 156 MB → 81 MB), any SwiftPM resource bundles and the static dashboard (Public/, empty
# when absent) for the runtime image.
RUN swift build -c release --static-swift-stdlib --product firegate \
    && mkdir -p /staging/bin /staging/app/Public \
    && cp .build/release/firegate /staging/bin/ \
    && strip /staging/bin/firegate \
    && find -L .build/release/ -maxdepth 1 -name '*.resources' -exec cp -R {} /staging/bin/ \; \
    && if [ -d Public ]; then cp -R Public/. /staging/app/Public/; fi

# ─────────────────────────── run ───────────────────────────
FROM debian:bookworm-slim

# Runtime needs of a --static-swift-stdlib binary: glibc, libstdc++, libgcc_s and zlib (already
# in the base image, listed to be explicit), the system SQLite that GRDB links, and curl for the
# health check. Versions are not pinned: they follow bookworm's security updates.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libsqlite3-0 zlib1g libstdc++6 libgcc-s1 curl \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 firegate \
    && useradd --system --uid 10001 --gid firegate --home-dir /app --shell /usr/sbin/nologin firegate \
    && mkdir -p /data /app \
    && chown firegate:firegate /data /app

COPY --from=build /staging/bin/ /usr/local/bin/
COPY --from=build --chown=firegate:firegate /staging/app/ /app/

ENV FIREGATE_HOST=0.0.0.0 \
    FIREGATE_PORT=8080 \
    FIREGATE_DATA_DIR=/data

WORKDIR /app
USER 10001:10001
VOLUME ["/data"]
EXPOSE 8080

HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["sh", "-c", "curl -fsS -o /dev/null \"http://127.0.0.1:${FIREGATE_PORT:-8080}/healthz\" || exit 1"]

ENTRYPOINT ["firegate"]
CMD ["serve"]
