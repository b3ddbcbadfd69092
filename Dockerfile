# connect-grpc worker image: Python 3.11, a Java 17 runtime for Spark, the package installed
# with `pip install .` (the same step as the README's install, without the [dev] extra).
#
#   docker build -t connect-grpc .
#   docker run --rm -p 8083:8083 connect-grpc standalone /config/worker.properties
#
# Bookworm, not the default trixie: Debian 13 no longer ships openjdk-17.
FROM python:3.11-slim-bookworm

# Debian's security updates replace exact package versions, so pinning them (DL3008) would
# break the build within weeks; the base image tag pins the Debian release instead.
# procps: Spark's launch scripts call `ps`.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/connect-grpc \
    PATH=/opt/connect-grpc/bin:$PATH

WORKDIR /src
COPY pyproject.toml README.md ./
COPY connect_grpc ./connect_grpc
# Dependency versions are declared in pyproject.toml, the one place: grpcio's exactly, the
# others as ranges (e.g. pyspark>=4.0,<5), so a rebuild may install newer releases within them.
RUN python -m venv "$VIRTUAL_ENV" \
    && pip install --no-cache-dir .

# A non-root user with a numeric id, so `USER` resolves even where /etc/passwd differs.
# /tmp/connect-local/input.txt is the demo source file (compose seeds a volume from it).
RUN groupadd --gid 10001 connect \
    && useradd --create-home --uid 10001 --gid 10001 --shell /usr/sbin/nologin connect \
    && mkdir -p /config /var/lib/connect-grpc /tmp/connect-local \
    && touch /tmp/connect-local/input.txt \
    && chown -R connect:connect /var/lib/connect-grpc /tmp/connect-local
COPY config/worker-docker.properties /config/worker.properties

USER 10001:10001
WORKDIR /home/connect
EXPOSE 8083
ENTRYPOINT ["connect-grpc"]
CMD ["standalone", "/config/worker.properties"]
