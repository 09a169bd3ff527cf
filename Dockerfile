# Cortadel server image: REST + MCP on port 3001, data in the /data volume.
#
#   docker build -t cortadel .
#   docker run -p 3001:3001 -v cortadel-data:/data -e CORTADEL_AUTH_SECRET=… cortadel
#
# Configuration only through CORTADEL_* variables (docs/configuration.md); no file inside the image
# is meant to be edited. BASE may name any Debian-like image with python3 >= 3.11 and its venv
# module (the container test builds from a locally made Debian base). The bundled wordllama model
# ships inside the wheel: nothing is downloaded at run time. pip may be handed a CA bundle as the
# build secret `pip_cert` (behind a TLS-inspecting proxy); it is used by that one step, never stored.
ARG BASE=python:3.11-slim

FROM ${BASE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
# Dependencies first, at the versions of the lock, so a code change rebuilds only the last layer.
COPY requirements.lock ./
COPY server/pyproject.toml server/
RUN --mount=type=secret,id=pip_cert \
    if [ -s /run/secrets/pip_cert ]; then export PIP_CERT=/run/secrets/pip_cert; fi \
 && python3 -m venv /opt/cortadel \
 && python3 -c "import tomllib; p = tomllib.load(open('server/pyproject.toml', 'rb'))['project']; print('\n'.join(p['dependencies'] + p['optional-dependencies']['postgres']))" > requirements.txt \
 && /opt/cortadel/bin/pip install --quiet -c requirements.lock -r requirements.txt
COPY server/cortadel_server server/cortadel_server
RUN --mount=type=secret,id=pip_cert \
    if [ -s /run/secrets/pip_cert ]; then export PIP_CERT=/run/secrets/pip_cert; fi \
 && /opt/cortadel/bin/pip install --quiet --no-deps ./server \
 && /opt/cortadel/bin/pip uninstall --quiet --yes pip setuptools \
 && python3 -m compileall -q -j 0 /opt/cortadel/lib  # the server's user cannot write bytecode: ship it

FROM ${BASE}
ENV PATH=/opt/cortadel/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    XDG_CACHE_HOME=/home/cortadel/.cache \
    CORTADEL_HOST=0.0.0.0 \
    CORTADEL_PORT=3001 \
    CORTADEL_DATA=/data/cortadel.db \
    CORTADEL_LOG_FORMAT=json
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/cortadel cortadel \
 && mkdir /data && chown cortadel:cortadel /data
COPY --from=build /opt/cortadel /opt/cortadel
COPY LICENSE /opt/cortadel/LICENSE
USER cortadel
# Stage the bundled model's tokenizer into the cache now, not at the first start.
RUN python3 -c "from cortadel_server.providers.embedding.wordllama import WordLlamaEmbedder; WordLlamaEmbedder().embed(['warm up'])"
VOLUME /data
EXPOSE 3001
# Ready = the database answers and the embedder embeds; open even with an auth secret.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readyz' % os.environ['CORTADEL_PORT'], timeout=4)"]
# uvicorn stops on SIGTERM: it finishes the requests in flight, then the database is closed.
STOPSIGNAL SIGTERM
ENTRYPOINT ["cortadel"]
CMD ["serve"]
