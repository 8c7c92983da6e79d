# Roost's production image: one image, three roles (see docker-compose.yml):
#   roost migrate | roost serve | roost worker
# DATABASE_URL and REDIS_URL must be set; the embedded servers are for development only.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /srv/roost

# Install the dependencies first so that a code change does not reinstall them: an
# empty stub of each of Roost's top-level packages lets `pip install .` run on it alone.
COPY pyproject.toml ./
RUN for p in app domain schema resolvers workers migrations; do \
      mkdir -p "$p" && touch "$p/__init__.py"; done \
 && touch README.md \
 && pip install . \
 && pip uninstall --yes roost \
 && rm -rf /srv/roost/*

COPY . .
RUN pip install --no-deps . \
 && useradd --create-home --uid 10001 roost

USER roost
ENV HOST=0.0.0.0 PORT=8000
EXPOSE 8000

HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD python -c "import os, urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{os.environ.get(\"PORT\", \"8000\")}/healthz', timeout=2)"

CMD ["roost", "serve"]
