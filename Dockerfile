# Two stages: build the wheel from the checkout, then install only that wheel into a slim runtime image
# that migrates and serves as a non-root user. The wheel carries the templates, static files, migrations and
# translations.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY elicitation ./elicitation
COPY app ./app
COPY migrations ./migrations
COPY templates ./templates
COPY static ./static
COPY locales ./locales
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    DATABASE_URL=sqlite:////data/elicitation.db
RUN useradd --create-home --uid 10001 elicit && mkdir /data && chown elicit /data
COPY --from=build /dist /dist
RUN pip install /dist/*.whl && rm -rf /dist
USER elicit
WORKDIR /home/elicit
VOLUME ["/data"]
EXPOSE 8000
# Ready means: the database answers and is migrated to this image's head (see /healthz).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
# `elicit serve` migrates first, so a new image never serves an old schema.
CMD ["elicit", "serve", "--host", "0.0.0.0", "--port", "8000"]
