# The operator image: `docker build -t <registry>/ceph-osd-operator:0.1.0 .`, then point
# deploy/ (kustomize `images:` or Helm `image.repository`) at it. The Deployment passes `run ...`.
# Not built by this project's CI: its machines have no container engine.
FROM docker.io/library/rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p ceph-osd-operator

# Debian's ceph-common: the `ceph` CLI the Ceph gate asks (ok-to-stop, noout, pg stat), kept
# connected through its own python3-rados and python3-ceph-argparse (dependencies of the package).
FROM docker.io/library/debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ceph-common \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/ceph-osd-operator /usr/local/bin/ceph-osd-operator
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/ceph-osd-operator"]
