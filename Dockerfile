# The nodeprov CLI in a container, for admins who prefer one:
#   docker build -t nodeprov .
#   docker run --rm -it -v "$PWD/inventory.yaml:/work/inventory.yaml:ro" \
#     -v "$HOME/.ssh:/root/.ssh:ro" nodeprov apply inventory.yaml --check
# (the testbed needs root on the host itself, so it is not for this image)
FROM python:3.12-slim

# Debian's security updates replace pinned versions; the base image tag pins the release.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends openssh-client \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY pyproject.toml README.md ./
COPY nodeprov ./nodeprov
RUN pip install --no-cache-dir . && rm -rf /src

WORKDIR /work
ENTRYPOINT ["nodeprov"]
CMD ["--help"]
