# bugloop's GitHub App server (`bugloop serve`). Build: `docker build -t bugloop .`
# Run with compose.yaml (server + PostgreSQL), or alone with the SQLite queue in a volume.

FROM rust:1.90-bookworm AS build
# The embedded model (llama.cpp) is built with cmake and clang.
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake clang libclang-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p bugloop-cli --bin bugloop
# The default static analyzers at their pinned versions, each checked against its SHA-256
# (scripts/fetch-analyzers downloads them with pip and npm).
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-pip npm \
 && rm -rf /var/lib/apt/lists/* \
 && BUGLOOP_ANALYZERS_DIR=/opt/bugloop/analyzers scripts/fetch-analyzers

FROM debian:bookworm-slim
# git: the workers' clones; bubblewrap: the sandbox every command of a job runs in (it needs
# user namespaces: see compose.yaml's security_opt); ca-certificates: GitHub and model APIs;
# python3: runs bugloop's own Python rules (bugloop-python) in the sandbox.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git bubblewrap python3 \
 && rm -rf /var/lib/apt/lists/*
RUN useradd --system --create-home --home-dir /var/lib/bugloop --shell /usr/sbin/nologin bugloop
COPY --from=build /src/target/release/bugloop /usr/local/bin/bugloop
COPY --from=build /opt/bugloop/analyzers /opt/bugloop/analyzers
ENV BUGLOOP_ANALYZERS_DIR=/opt/bugloop/analyzers
USER bugloop
# The default SQLite queue and the workers' clones live here (a volume).
ENV XDG_DATA_HOME=/var/lib/bugloop/data
VOLUME ["/var/lib/bugloop/data"]
EXPOSE 8080
ENTRYPOINT ["bugloop"]
CMD ["serve", "--listen", "0.0.0.0:8080"]
