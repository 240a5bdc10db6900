# Workload Doctor: the Slack bot and CLI. Runs as a non-root user; needs no write access.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY handlers ./handlers
COPY diagnosis ./diagnosis
COPY sandbox ./sandbox
RUN pip install --no-cache-dir . && useradd --uid 10001 --no-create-home doctor
USER 10001
ENTRYPOINT ["workload-doctor"]
CMD ["serve", "--socket", "--health-port", "8080"]
