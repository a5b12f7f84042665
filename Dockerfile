# Slim runtime image: the app and its migrations, run as a non-root user.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    DATABASE_URL=sqlite:////data/elicitation.db

RUN useradd --create-home --uid 10001 elicit && mkdir /data && chown elicit /data
WORKDIR /app
COPY pyproject.toml README.md ./
COPY elicitation ./elicitation
COPY app ./app
COPY migrations ./migrations
COPY templates ./templates
COPY static ./static
# Editable install keeps templates/, static/ and migrations/ next to the package, where the app finds them.
RUN pip install -e . && chown -R elicit /app

USER elicit
VOLUME ["/data"]
EXPOSE 8000
# Migrate first so a new image never serves an old schema, then serve the app factory.
CMD ["sh", "-c", "alembic upgrade head && exec uvicorn --factory app.main:create_app --host 0.0.0.0 --port 8000 --proxy-headers"]
