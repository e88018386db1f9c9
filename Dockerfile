# syntax=docker/dockerfile:1
# stablerail: the service binary and its adapters, run as a non-root user.
# Built with the same scripts CI runs (scripts/build-adapters.sh, cargo build).

FROM rust:1.95-bookworm AS build
WORKDIR /src
RUN rustup target add wasm32-wasip2
COPY . .
RUN scripts/build-adapters.sh \
 && cargo build --release --locked --bin stablerail

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /opt/stablerail --shell /usr/sbin/nologin stablerail
WORKDIR /opt/stablerail
COPY --from=build /src/target/release/stablerail /usr/local/bin/stablerail
# chains.toml resolves adapters_dir relative to itself.
COPY --from=build /src/adapters/target/wasm32-wasip2/release/*.wasm adapters/target/wasm32-wasip2/release/
COPY chains.toml ./chains.toml
# Writable state (adapter cache; key and pepper files when not given by
# STABLERAIL_MASTER_KEY / STABLERAIL_PEPPER). Mount a volume here.
RUN mkdir -p .stablerail && chown stablerail:stablerail .stablerail
USER stablerail
ENV STABLERAIL_CONFIG=/opt/stablerail/chains.toml \
    STABLERAIL_LISTEN=0.0.0.0:8402 \
    STABLERAIL_LOG_FORMAT=json
EXPOSE 8402
HEALTHCHECK --interval=10s --timeout=3s CMD curl -fsS http://127.0.0.1:8402/healthz || exit 1
ENTRYPOINT ["stablerail"]
CMD ["serve"]
