"""Shared state of the serving checks: is the API up, and does it let us in? Asked once per run.

When /health does not answer, test_health fails with what it saw and the other serving checks are
skipped with that reason (they cannot say anything more); the same for a refused key and test_api_key.
A server that stops answering later in the run (connection refused or reset) makes the check that asked
it skip with what the client saw: not checked, never a pass.
"""

import pytest

# gb10check.serving (and the openai client it imports) is imported when a serving check runs, not when a
# preflight or network run collects this folder.


@pytest.fixture(scope="session")
def api_state(api):
    from gb10check.serving import ApiUnreachable

    try:
        health = api.get("/health", root=True)
    except ApiUnreachable as exc:
        return {"health": None, "health_error": str(exc), "models": None}
    try:
        models = api.get("/models")
    except ApiUnreachable as exc:
        return {"health": health, "health_error": str(exc), "models": None}
    return {"health": health, "health_error": None, "models": models}


@pytest.fixture
def served(api_state, api):
    """The API, for checks that need it up and letting us in; skip (with the reason) when it is not."""
    if api_state["health"] is None or api_state["health"].status != 200:
        pytest.skip(f"the API at {api.root} is not serving: see test_health")
    if api_state["models"] is None:
        pytest.skip(f"the API at {api.root} answered /health but not GET /v1/models: {api_state['health_error']}")
    if api_state["models"].status in (401, 403):
        pytest.skip(f"the API refuses this client ({api_state['models'].status}): see test_api_key")
    return api


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    from gb10check.serving import ApiUnreachable

    try:
        return (yield)
    except ApiUnreachable as exc:
        pytest.skip(f"could not ask the API: {exc} (see test_health)")
