"""What the past teaches at a given instant: the jobs completed so far and each user's recent runtimes."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from types import SimpleNamespace

from models.predict.jobs import JobTable

RECENT = 5  # runtimes kept per user (the longest baseline, "last five", needs five)


@dataclass
class History:
    """Completions in the order they happened; only `observe` adds knowledge (that is what keeps it causal)."""

    table: JobTable
    completed: list[int] = field(default_factory=list)
    recent: dict[int, deque[int]] = field(default_factory=dict)
    user_count: dict[int, int] = field(default_factory=dict)
    columns: SimpleNamespace = field(init=False, repr=False)  # the table's columns as lists of ints (fast reads)

    def __post_init__(self) -> None:
        t = self.table
        self.columns = SimpleNamespace(**{name: getattr(t, name).tolist() for name in (
            "submit", "runtime", "requested", "size", "user", "group", "executable", "queue", "partition")})

    def observe(self, index: int) -> None:
        """Job `index` completed: its runtime becomes known."""
        user = self.columns.user[index]
        self.completed.append(index)
        self.user_count[user] = self.user_count.get(user, 0) + 1
        self.recent.setdefault(user, deque(maxlen=RECENT)).append(self.columns.runtime[index])

    def user_recent(self, index: int) -> tuple[int, ...]:
        """The runtimes of the last (up to five) completed jobs of job `index`'s user, oldest first."""
        return tuple(self.recent.get(int(self.table.user[index]), ()))
