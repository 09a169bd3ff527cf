"""The Cortadel image, built once per run from the Dockerfile on the local base (containers.BASE)."""

from __future__ import annotations

import time

import pytest
from containers import IMAGE, REPO, build, podman


@pytest.fixture(scope="session")
def image() -> str:
    started = time.monotonic()
    build(IMAGE, REPO)
    size = int(podman("image", "inspect", IMAGE, "--format", "{{.Size}}"))
    print(f"\nimage built in {time.monotonic() - started:.1f} s, {size / 1e6:.0f} MB")
    return IMAGE
