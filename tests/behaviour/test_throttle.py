"""The web view's login throttle on a clock of its own: who waits, how long, and what a
login that succeeds takes back."""

from __future__ import annotations

from spade_memory.web.throttle import LoginThrottle


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_failures_past_the_free_ones_wait_longer_each_time() -> None:
    clock = Clock()
    throttle = LoginThrottle(free=3, first=1.0, most=8.0, clock=clock)
    assert [throttle.begin("alice@localhost", "10.0.0.1") for _ in range(3)] == [0.0] * 3
    assert throttle.begin("alice@localhost", "10.0.0.1") == 1.0  # the third failure's wait
    assert throttle.begin("ALICE@localhost", "10.0.0.2") == 1.0  # the account, any address
    assert throttle.begin("bob@localhost", "10.0.0.1") == 1.0  # the address, any account
    assert throttle.begin("bob@localhost", "10.0.0.9") == 0.0  # neither
    waits = []
    for _ in range(4):
        wait = throttle.begin("alice@localhost", "10.0.0.3")  # refused: how long to wait
        waits.append(wait)
        clock.now += wait
        assert throttle.begin("alice@localhost", "10.0.0.3") == 0.0  # tried, and failed
    assert waits == [1.0, 2.0, 4.0, 8.0]  # doubling with each failure, up to the most
    assert throttle.begin("alice@localhost", "10.0.0.3") == 8.0


def test_a_login_that_succeeds_clears_its_account_and_takes_its_attempt_back() -> None:
    clock = Clock()
    throttle = LoginThrottle(free=2, first=5.0, clock=clock)
    for _ in range(2):
        throttle.begin("alice@localhost", "10.0.0.1")
    assert throttle.begin("alice@localhost", "10.0.0.1") == 5.0
    clock.now += 5.0
    assert throttle.begin("alice@localhost", "10.0.0.1") == 0.0  # after the wait, it may try
    throttle.succeeded("alice@localhost", "10.0.0.1")
    assert throttle.begin("alice@localhost", "10.0.0.7") == 0.0  # the account is clear
    throttle.succeeded("alice@localhost", "10.0.0.7")
    # the address keeps its two failures (not the login's own): the first wait again
    assert throttle.begin("carol@localhost", "10.0.0.1") == 5.0


def test_what_it_remembers_is_bounded() -> None:
    throttle = LoginThrottle(free=1, first=60.0, clock=Clock(), keys=4)
    for n in range(100):
        throttle.begin(f"user{n}@localhost", f"10.0.{n}.1")
    assert len(throttle._counts) == 4
