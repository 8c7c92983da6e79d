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
RUN for p in app domain schema resolvers workers tools migrations; do \
      mkdir -p "$p" && touch "$p/__init__.py"; done \
 && touch README.md \
 && pip install . \
 && pip uninstall --yes roost \
 && rm -rf /srv/roost/*

COPY . .
# GraphiQL's assets go into the package (no npm here: straight from the npm CDN, each
# checked against its SRI hash; without the internet the page falls back to the CDN).
RUN python -m app.graphiql fetch \
 && pip install --no-deps . \
 && useradd --create-home --uid 10001 roost

USER roost
# The real graph shipped in data/ (`roost load-graph` in a container loads it).
ENV HOST=0.0.0.0 PORT=8000 ROOST_GRAPH_PATH=/srv/roost/data/soc-Slashdot0902.txt.gz
EXPOSE 8000

HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD python -c "import os, urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{os.environ.get(\"PORT\", \"8000\")}/healthz', timeout=2)"

CMD ["roost", "serve"]
