"""The attack suite's servers, its budget switch and its tally.

Every test here attacks its own real servers on loopback, so a server it crashes or poisons cannot
fail the rest of the suite. ``--attack-long`` selects the long budget (``make test-attack``); the
tally of generated cases and responses is printed at the end of the run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from attack import budget
from cortadel_server.testing import ServerProcess, running_server

AUTH_SECRET = "attack-secret-not-for-production"
TALLY = pytest.StashKey[Counter[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--attack-long", action="store_true", default=False,
                     help="run the attack suite at its long budget (make test-attack)")


def pytest_configure(config: pytest.Config) -> None:
    budget.select(budget.LONG if config.getoption("--attack-long") else budget.BOUNDED)
    config.stash[TALLY] = Counter()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    counts = config.stash.get(TALLY, Counter())
    if counts:
        terminalreporter.section(f"attack tally ({budget.current().name} budget)")
        for name, count in sorted(counts.items()):
            terminalreporter.write_line(f"{name}: {count}")


@pytest.fixture(scope="session")
def tally(pytestconfig: pytest.Config) -> Counter[str]:
    return pytestconfig.stash[TALLY]


@pytest.fixture(scope="session")
def open_target() -> Iterator[ServerProcess]:
    """A server with auth off, attacked by this suite alone."""
    with running_server() as srv:
        yield srv


@pytest.fixture(scope="session")
def auth_target() -> Iterator[ServerProcess]:
    """A server with auth on, attacked by this suite alone."""
    with running_server(env={"CORTADEL_AUTH_SECRET": AUTH_SECRET}) as srv:
        yield srv
