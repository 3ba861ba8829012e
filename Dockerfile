# The image deploy/helm/sluice runs (repository `sluice`, tag = the chart's
# appVersion):
#
#   docker build -t sluice:0.1.0 .
#
# scripts/test-image builds it with podman (no Docker engine needed) and runs
# it as the chart does against a local master + replica.
#
# A static-enough binary on a small Debian base, run as an unprivileged user
# with nothing writable but what the pod mounts (the chart mounts an emptyDir
# at /tmp and the configuration Secret at /etc/sluice).

# The toolchain sluice is built and tested with.
FROM rust:1.95-bookworm AS build
WORKDIR /src
# Dependencies first, so a change of sluice's own code reuses their layer.
COPY Cargo.toml Cargo.lock ./
RUN mkdir -p src benches \
    && echo 'fn main() {}' > src/main.rs \
    && touch src/lib.rs \
    && echo 'fn main() {}' > benches/statement.rs \
    && cargo build --release --locked --bin sluice \
    && rm -rf src benches
COPY src src
COPY benches benches
COPY config config
# The dependency layer built a stub with the same name: make cargo rebuild sluice.
RUN touch src/main.rs src/lib.rs \
    && cargo build --release --locked --bin sluice \
    && strip --strip-debug target/release/sluice \
    && target/release/sluice --version

FROM debian:bookworm-slim
# sluice never reads the system's CA store (backend TLS with verify_ca or
# verify_identity needs `ca:` in the config, rustls does the rest), so no
# package is installed here: no apt-get, no openssl. The build image's CA
# bundle is copied for a server whose certificate chains to a public CA:
# `ca: /etc/ssl/certs/ca-certificates.crt`.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /src/target/release/sluice /usr/local/bin/sluice
COPY --from=build /src/config/sluice.yaml /etc/sluice/sluice.yaml
# 65532: the chart's runAsUser; no shell login, no home to write to.
USER 65532:65532
ENV TMPDIR=/tmp
EXPOSE 6033 9033
ENTRYPOINT ["/usr/local/bin/sluice"]
CMD ["serve", "--config", "/etc/sluice/sluice.yaml"]
