# The operator image: `docker build -t <registry>/ceph-osd-operator:0.1.0 .` (or `buildah build`),
# then point deploy/ (kustomize `images:` or Helm `image.repository`) at it. The Deployment passes
# `run ...`. CI builds this file and runs the result: `molecule-like-tests/image test`.
FROM docker.io/library/rust:1-bookworm AS build
WORKDIR /src
COPY . .
# The crates and the build output are kept between builds (BuildKit and buildah cache mounts):
# a rebuild compiles only what changed.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p ceph-osd-operator \
    && cp target/release/ceph-osd-operator /usr/local/bin/ceph-osd-operator

# Debian's ceph-common: the `ceph` CLI the Ceph gate asks (ok-to-stop, noout, pg stat), kept
# connected through its own python3-rados and python3-ceph-argparse (dependencies of the package).
FROM docker.io/library/debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ceph-common \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/ceph-osd-operator /usr/local/bin/ceph-osd-operator
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/ceph-osd-operator"]
