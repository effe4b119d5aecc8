# syntax=docker/dockerfile:1
# The dataset and model initializer images (one Dockerfile, two images):
#   docker build -f docker/initializer.Dockerfile --build-arg INITIALIZER=dataset \
#       -t ghcr.io/trainjob/dataset-initializer:v0.1.0 .
#   docker build -f docker/initializer.Dockerfile --build-arg INITIALIZER=model \
#       -t ghcr.io/trainjob/model-initializer:v0.1.0 .
# Driven by STORAGE_URI (hf://, s3://, file://) and upper-cased env vars, like upstream's.
ARG PYTHON=3.12

FROM python:${PYTHON}-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
COPY manifests/runtimes ./manifests/runtimes
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".[initializers]"

FROM python:${PYTHON}-slim
ARG INITIALIZER=dataset
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels "trainjob[initializers]" \
    && rm -rf /wheels
ENV PYTHONUNBUFFERED=1 TRAINJOB_INITIALIZER=${INITIALIZER}
WORKDIR /workspace
# Upstream's initializers run as root by default too (they write into the shared volume).
CMD ["sh", "-c", "exec python -m trainjob.initializers.${TRAINJOB_INITIALIZER}"]
