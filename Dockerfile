# The manager image, for builders with a registry (`make docker-build`, and the release
# workflow's docker buildx). `make image` builds the same content without a container
# engine or a registry (hack/image): the static binary at /manager, built with the flags
# of GO_BUILD_FLAGS in the Makefile, the CA certificates it carries at
# /etc/ssl/certs/ca-certificates.crt, and the nonroot user (65532) in /etc/passwd and
# /etc/group, on an empty base.
# The build stage runs on the builder's own platform and cross-compiles for the target's
# (docker buildx --platform linux/amd64,linux/arm64), so no stage runs under emulation.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY internal/ internal/
COPY hack/image/ hack/image/
ARG VERSION=dev
ARG SOURCE_DATE_EPOCH=0
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -buildvcs=false -ldflags "-s -w -buildid= -X main.version=${VERSION}" -o /out/manager ./cmd
# The layer of `make image`, unpacked with its owners, modes and times; COPY --from keeps
# them (/home/nonroot stays 65532's).
RUN go run ./hack/image -layer /out/layer.tar -binary ${TARGETOS}/${TARGETARCH}=/out/manager -epoch ${SOURCE_DATE_EPOCH} \
 && mkdir /rootfs && tar -xpf /out/layer.tar -C /rootfs

FROM scratch
ARG VERSION=dev
ARG REVISION=
LABEL org.opencontainers.image.source=https://github.com/sandbar-dev/sandbar \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${REVISION}
COPY --from=build /rootfs/ /
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/manager"]
