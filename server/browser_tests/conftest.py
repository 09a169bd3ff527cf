"""The dashboard in a real browser: Debian's chromium, headless, driven by Playwright for Python.

Run by `make test-browser` (it installs chromium with apt; nothing here downloads a browser). Kept
out of the default test run (pyproject's testpaths), which needs no browser.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from cortadel_server.testing import ServerProcess, running_server

CHROMIUM = "/usr/bin/chromium"
#: every switch that keeps the browser from talking to anything but the server under test
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
#: the screenshots docs/dashboard.md shows
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "dashboard"
SECRET = "browser-test-secret"


@pytest.fixture(scope="session")
def server() -> Iterator[ServerProcess]:
    with running_server() as srv:
        yield srv


@pytest.fixture(scope="session")
def secured() -> Iterator[ServerProcess]:
    with running_server(env={"CORTADEL_AUTH_SECRET": SECRET}) as srv:
        yield srv


@pytest.fixture()
def api(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        yield client


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture()
def page(browser: Browser, server: ServerProcess) -> Iterator[Page]:
    """A fresh browser context on the open server that fails the test on any script dialog (a
    stored ``<script>`` that ran) and on any request to another host."""
    context = browser.new_context(base_url=server.base_url, viewport={"width": 1280, "height": 900})
    dialogs: list[str] = []
    foreign: list[str] = []
    opened = context.new_page()
    opened.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    opened.on("request", lambda request: None if request.url.startswith(server.base_url) else foreign.append(request.url))
    yield opened
    context.close()
    assert dialogs == []
    assert foreign == []


def screenshot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
