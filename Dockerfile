# Multi-stage: build a virtualenv, copy it into a slim runtime image that runs as non-root.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY crds ./crds
COPY manifests ./manifests
COPY united ./united
RUN python -m venv /venv && /venv/bin/pip install --no-cache-dir .

FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PATH=/venv/bin:$PATH
COPY --from=build /venv /venv
USER 65532:65532
ENTRYPOINT ["united"]
CMD ["run", "--leader-elect", "--log-format", "json"]
