"""One way to wait for something: poll with a deadline, and let the caller say what did not happen."""

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_until(check: Callable[[], T], timeout_s: float, interval_s: float = 0.1) -> T:
    """check() until it returns something true or timeout_s passes; its last answer (false: it never happened)."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = check()
        if answer or time.monotonic() >= deadline:
            return answer
        time.sleep(interval_s)
