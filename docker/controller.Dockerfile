# syntax=docker/dockerfile:1
# The trainjob controller image: `trainjob controller` (admission webhooks included).
#   docker build -f docker/controller.Dockerfile -t ghcr.io/trainjob/trainjob-controller:v0.1.0 .
# Runs as a non-root user on a read-only root filesystem (the Deployment mounts /tmp).
ARG PYTHON=3.12

FROM python:${PYTHON}-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
COPY manifests/runtimes ./manifests/runtimes
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:${PYTHON}-slim
LABEL org.opencontainers.image.title="trainjob-controller" \
      org.opencontainers.image.description="Kubeflow Trainer V2 compatible TrainJob controller" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels trainjob && rm -rf /wheels
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 9443 8080 8081
ENTRYPOINT ["trainjob"]
CMD ["controller"]
