# The spacevault binary in a container image, for networks of vaults on
# container hosts (deploy/README.md). The binary is linked statically, so
# the image needs nothing of the build's system; the slim base is there
# for the shell that deploy/vault.sh runs in.
#
#   docker build -t spacevault .
FROM rust:1-bookworm AS build
# The proof of time's class group arithmetic links GMP, statically here.
RUN apt-get update && apt-get install -y --no-install-recommends libgmp-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The build machine's own target named, so that the static flag reaches
# the binary and not the build scripts (on x86-64 and arm64 alike).
RUN host=$(rustc -vV | sed -n 's/^host: //p') \
 && RUSTFLAGS="-C target-feature=+crt-static" \
    cargo build --release --locked -p spacevault-cli --target "$host" \
 && cp "target/$host/release/spacevault" /spacevault \
 && strip /spacevault

FROM debian:bookworm-slim
COPY --from=build /spacevault /usr/local/bin/spacevault
COPY deploy/vault.sh /usr/local/bin/spacevault-vault
ENV SPACEVAULT_CONFIG_DIR=/data/config
VOLUME ["/data"]
EXPOSE 7733 8733
ENTRYPOINT ["spacevault"]
CMD ["--help"]
