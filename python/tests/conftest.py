"""Shared fixtures: fresh random seeds (reported on failure, fixed with BATCHQR_TEST_SEED)."""

import os
import random

import pytest


def _fresh_seed() -> int:
    env = os.environ.get("BATCHQR_TEST_SEED")
    if env:
        return int(env, 0)
    return random.SystemRandom().getrandbits(63)


@pytest.fixture
def seed(request):
    """A fresh seed per test; printed in the failure report (rerun with BATCHQR_TEST_SEED=<seed>)."""
    s = _fresh_seed()
    request.node.user_properties.append(("seed", s))
    return s


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        seeds = [v for k, v in item.user_properties if k == "seed"]
        if seeds:
            report.sections.append(
                ("batchqr seed", f"seed={seeds[0]} (reproduce with BATCHQR_TEST_SEED={seeds[0]})"))
