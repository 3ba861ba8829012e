# The image deploy/helm/sluice runs (repository `sluice`, tag = the chart's
# appVersion):
#
#   docker build -t sluice:0.1.0 .
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
# ca-certificates: backend TLS with verify_ca/verify_identity against public CAs.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/sluice /usr/local/bin/sluice
COPY --from=build /src/config/sluice.yaml /etc/sluice/sluice.yaml
# 65532: the chart's runAsUser; no shell login, no home to write to.
USER 65532:65532
ENV TMPDIR=/tmp
EXPOSE 6033 9033
ENTRYPOINT ["/usr/local/bin/sluice"]
CMD ["serve", "--config", "/etc/sluice/sluice.yaml"]
