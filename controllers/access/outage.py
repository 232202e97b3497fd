"""An outage of what a long-running task depends on (an apiserver, the checkpoint storage), as the task lives through
it: said once when it begins, with the first error, and once when it ends, with how long it lasted. The task carries
on meanwhile and tries again at its own pace; the failures in between are logged at debug only, so a member that is
down for an hour does not write a warning every poll.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class Outage:
    """One dependency of one task. `failed` is the event of the outage's first failure (a warning), `recovered` the
    event of its end (info, with `seconds`)."""

    def __init__(self, logger: Any, failed: str, recovered: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.log, self.failed_event, self.recovered_event, self.clock = logger, failed, recovered, clock
        self.since: float | None = None

    @property
    def ongoing(self) -> bool:
        return self.since is not None

    def failed(self, **fields: Any) -> None:
        if self.since is None:
            self.since = self.clock()
            self.log.warning(self.failed_event, **fields)
        else:
            self.log.debug(self.failed_event, **fields)

    def succeeded(self, **fields: Any) -> None:
        if self.since is not None:
            seconds = round(self.clock() - self.since, 1)
            self.since = None
            self.log.info(self.recovered_event, seconds=seconds, **fields)
