FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    PIP_NO_CACHE_DIR=1

RUN useradd --create-home --uid 10001 proxy
WORKDIR /app
COPY pyproject.toml README.md ./
COPY proxy ./proxy
COPY rules ./rules
RUN pip install '.[litellm,otel]'

RUN mkdir -p /home/proxy/.local/state/recovery-proxy && chown -R proxy /home/proxy/.local
USER proxy
# The default SQLite session store lives here; mount a volume to keep sessions across restarts.
VOLUME ["/home/proxy/.local/state/recovery-proxy"]
EXPOSE 8787
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8787/healthz', timeout=2).status != 200)"
CMD ["recovery-proxy", "serve", "--host", "0.0.0.0", "--port", "8787"]
