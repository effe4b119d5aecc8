# syntax=docker/dockerfile:1
# The built-in LLM fine-tuning trainer (BuiltinTrainer / torchtune-* runtimes): torch with CUDA,
# and trainjob's trainer (full, LoRA, QLoRA, DoRA) started by torchrun.
#   docker build -f docker/trainer.Dockerfile -t ghcr.io/trainjob/trainjob-trainer:v0.1.0 .
ARG TORCH_IMAGE=pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime

FROM ${TORCH_IMAGE}
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
COPY manifests/runtimes ./manifests/runtimes
# torch comes from the base image; the trainer's own dependencies from the `llm` extra.
RUN pip install --no-cache-dir ".[llm]" && rm -rf /src
ENV PYTHONUNBUFFERED=1
WORKDIR /workspace
CMD ["python", "-m", "trainjob.trainers.llm"]
