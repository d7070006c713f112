# The official Fluent Bit image with the MongoDB output added, for linux/amd64
# and linux/arm64:
#
#   docker build -t fluent-bit-mongodb:4.2.8 .
#   docker buildx build --platform linux/amd64,linux/arm64 -t REGISTRY/fluent-bit-mongodb:4.2.8 --push .
#
# The plugin is built by make dist-$TARGETARCH (cross-compiled on the build
# machine's platform) in Go's image of the Debian release the Fluent Bit
# image is built on (fluent/fluent-bit 4.2.x: distroless cc-debian13, Debian
# 13 "trixie", glibc 2.41), so it is linked against the C library it runs
# with; its glibc floor is held to that one (GLIBC_MAX), not to the README's
# floor for other systems, which make dist measures. It lands in
# /fluent-bit/plugins/, and /fluent-bit/etc/plugins.conf, which the image's
# default configuration loads, names it.
ARG FLUENT_BIT_VERSION=4.2.8

FROM --platform=$BUILDPLATFORM golang:1.26-trixie AS build
ARG TARGETARCH
ARG BUILDARCH
# The version the plugin reports; unset: git describe of the build context
# (dev without .git).
ARG VERSION=
RUN set -eu; \
    case "$TARGETARCH" in \
      "$BUILDARCH") ;; \
      arm64) apt-get update && apt-get install -y --no-install-recommends gcc-aarch64-linux-gnu libc6-dev-arm64-cross ;; \
      amd64) apt-get update && apt-get install -y --no-install-recommends gcc-x86-64-linux-gnu libc6-dev-amd64-cross ;; \
      *) echo "TARGETARCH $TARGETARCH is not built: linux/amd64 and linux/arm64 are" >&2; exit 1 ;; \
    esac; \
    rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN set -eu; \
    cc=gcc; \
    if [ "$TARGETARCH" != "$BUILDARCH" ]; then \
      case "$TARGETARCH" in arm64) cc=aarch64-linux-gnu-gcc ;; amd64) cc=x86_64-linux-gnu-gcc ;; esac; \
    fi; \
    make dist-$TARGETARCH CC_$TARGETARCH=$cc GLIBC_MAX=GLIBC_2.41 ${VERSION:+VERSION=$VERSION}

FROM fluent/fluent-bit:${FLUENT_BIT_VERSION}
ARG TARGETARCH
COPY --from=build /src/dist/out_mongodb-*-linux-${TARGETARCH}.so /fluent-bit/plugins/out_mongodb.so
COPY deploy/image/plugins.conf /fluent-bit/etc/plugins.conf
