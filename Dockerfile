# Workload Doctor: the Slack bot and CLI. Runs as a non-root user on a read-only root filesystem
# (deploy/base/deployment.yaml sets readOnlyRootFilesystem; only /tmp is writable, an emptyDir).
# Dependencies come from requirements.lock (hash-pinned; regenerate with the command in its header).
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY requirements.lock ./
RUN python -m venv /opt/venv && /opt/venv/bin/pip install --require-hashes -r requirements.lock
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY handlers ./handlers
COPY diagnosis ./diagnosis
COPY sandbox ./sandbox
RUN /opt/venv/bin/pip install --no-deps . && /opt/venv/bin/python -m compileall -q /opt/venv

FROM python:3.11-slim
ENV PATH=/opt/venv/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 WD_LOG_FORMAT=json
RUN groupadd --gid 10001 doctor && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin doctor
COPY --from=build /opt/venv /opt/venv
USER 10001:10001
EXPOSE 8080 3000
ENTRYPOINT ["workload-doctor"]
CMD ["serve", "--socket", "--host", "0.0.0.0", "--health-port", "8080"]
