# One image for web (gunicorn), worker, beat and the Spark pipeline (docker-compose.yml).

# The front-end files pinned in package-lock.json (the partial plotly.js bundle); the
# browser tests' axe-core is a dev dependency and stays out.
FROM node:20-slim AS assets
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    OPSDASH_VAR_DIR=/var/lib/opsdash \
    HOME=/var/lib/opsdash \
    DJANGO_SETTINGS_MODULE=config.settings.prod

# A JRE for PySpark (the pipeline service); procps gives Spark's scripts `ps`; the OpenLDAP
# and SASL libraries for LDAP login (python-ldap).
RUN apt-get update \
    && apt-get install -y --no-install-recommends default-jre-headless procps \
       libldap-2.5-0 libsasl2-2 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.lock ./
# python-ldap builds from source: its compiler and headers are removed once it is built.
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev libldap2-dev libsasl2-dev \
    && pip install -r requirements.lock \
    && apt-get purge -y --auto-remove gcc libc6-dev libldap2-dev libsasl2-dev \
    && rm -rf /var/lib/apt/lists/*

COPY . .
COPY --from=assets /app/node_modules ./node_modules
RUN pip install --no-deps -e . \
    && SECRET_KEY=collectstatic-only-not-a-secret METRICS_PUBLIC=1 \
       python manage.py collectstatic --no-input

RUN useradd --system --uid 10001 --home-dir /var/lib/opsdash opsdash \
    && mkdir -p /var/lib/opsdash/beat /var/lib/opsdash/pipelines \
    && chown -R opsdash /var/lib/opsdash
USER opsdash

EXPOSE 8000
CMD ["gunicorn", "config.wsgi"]
