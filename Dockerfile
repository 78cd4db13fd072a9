# The pitlog CLI, projector and server (docker-compose.yml runs `pitlog serve` with it).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
# The dependencies are pinned in pyproject.toml. schemas/ sits beside the packages because the
# codec finds it relative to events/ (or through PITLOG_SCHEMAS).
COPY pyproject.toml ./
COPY schemas ./schemas
COPY events ./events
COPY projections ./projections
COPY cli ./cli
RUN pip install -e . \
    && useradd --create-home --uid 1000 pitlog \
    && mkdir -p /data && chown pitlog /data

# Not root. /data holds the DuckDB file and its snapshot (a named volume in docker-compose.yml).
USER pitlog
VOLUME ["/data"]
ENV PITLOG_DB=/data/pitlog.duckdb

# Exec form, no shell in between: pitlog is PID 1 and receives `docker stop`'s SIGTERM itself,
# so the projector or server commits its batch and closes the database before exiting.
EXPOSE 8750
CMD ["pitlog", "--help"]
