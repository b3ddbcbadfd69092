# connect-grpc worker image: Python 3.11, a Java 17 runtime for Spark, the package installed
# with `pip install .` (the same step as the README's install, without the [dev] extra), the
# JVM side that hosts Kafka Connect's Java plugins (jvm/, built by Maven in its own stage) and
# the Spark driver's class-data archive.
#
#   docker build -t connect-grpc .
#   docker run --rm -p 8083:8083 connect-grpc standalone /config/worker.properties
#   docker run --rm -p 8083:8083 -v /path/to/plugins:/plugins:ro connect-grpc standalone /config/worker.properties

# The JVM side: its jar and lib/ (Kafka's connect-runtime and its dependencies, the versions
# jvm/pom.xml pins), as `make install` builds them into jvm/target. The task-host protocol's
# Java classes are generated from proto/ by the build.
FROM maven:3.9.9-eclipse-temurin-17 AS jvm
WORKDIR /src
COPY proto ./proto
COPY jvm ./jvm
RUN mvn -B -q -f jvm/pom.xml -DskipTests package \
    && mkdir -p /out \
    && cp jvm/target/connect-grpc-jvm.jar /out/ \
    && cp -r jvm/target/lib /out/lib

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
    PATH=/opt/connect-grpc/bin:$PATH \
    CONNECT_GRPC_JVM_TARGET=/opt/connect-grpc-jvm

WORKDIR /src
COPY pyproject.toml README.md ./
COPY connect_grpc ./connect_grpc
# Dependency versions are declared in pyproject.toml, the one place: grpcio's exactly, the
# others as ranges (e.g. pyspark>=4.0,<5), so a rebuild may install newer releases within them.
RUN python -m venv "$VIRTUAL_ENV" \
    && pip install --no-cache-dir .
# An installed package has no jvm/target of its own: CONNECT_GRPC_JVM_TARGET names this one.
COPY --from=jvm /out /opt/connect-grpc-jvm

# A non-root user with a numeric id, so `USER` resolves even where /etc/passwd differs.
# /tmp/connect-local/input.txt is the demo source file (compose seeds a volume from it).
# /plugins is the worker files' plugin.path: empty in the image, a mount point for plugin jars.
RUN groupadd --gid 10001 connect \
    && useradd --create-home --uid 10001 --gid 10001 --shell /usr/sbin/nologin connect \
    && mkdir -p /config /plugins /var/lib/connect-grpc /tmp/connect-local \
    && touch /tmp/connect-local/input.txt \
    && chown -R connect:connect /var/lib/connect-grpc /tmp/connect-local
COPY config/worker-docker.properties /config/worker.properties

USER 10001:10001
WORKDIR /home/connect
# The Spark driver's class-data archive (docs/decisions/0131), dumped by a throwaway driver
# into the user's cache: every worker's driver JVM then starts on about half the CPU. It is
# keyed by this image's PySpark jars and java binary, so it is used as long as they are.
RUN python -m connect_grpc.runtime.class_archive
EXPOSE 8083
ENTRYPOINT ["connect-grpc"]
CMD ["standalone", "/config/worker.properties"]
