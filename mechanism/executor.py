"""Where a job's work ran: the executor's kind, its own id for the work and the exit code (recorded, never priced)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

EXECUTOR_KINDS = ("local", "slurm")  # a subprocess of the agent (external_id: its pid), or a Slurm job (its id)
MAX_EXTERNAL_ID = 128  # characters of an executor's id for the work
INT32 = (-(2**31), 2**31 - 1)  # the exit code travels as a protobuf int32


class ExecutorInfoError(ValueError):
    """Executor info that breaks a rule; the message names the field, the value and the bound."""


@dataclass(frozen=True)
class ExecutorInfo:
    """Where a started job runs or ran; `exit_code` only once its work ended."""

    kind: str
    external_id: str
    exit_code: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in EXECUTOR_KINDS:
            raise ExecutorInfoError(f"executor.kind={self.kind!r} is not one of {', '.join(EXECUTOR_KINDS)}")
        if not 1 <= len(self.external_id) <= MAX_EXTERNAL_ID or not self.external_id.isprintable():
            raise ExecutorInfoError(f"executor.external_id={self.external_id[:MAX_EXTERNAL_ID + 1]!r} must have 1 to "
                                    f"{MAX_EXTERNAL_ID} printable characters")
        code = self.exit_code
        if code is not None and (isinstance(code, bool) or not isinstance(code, int)
                                 or not INT32[0] <= code <= INT32[1]):
            raise ExecutorInfoError(f"executor.exit_code={code!r} is not an int32")

    def same_work(self, other: ExecutorInfo) -> bool:
        """Whether both name the same launched work (kind and external id; the exit code aside)."""
        return (self.kind, self.external_id) == (other.kind, other.external_id)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "external_id": self.external_id}
        if self.exit_code is not None:
            out["exit_code"] = self.exit_code
        return out

    @staticmethod
    def from_dict(data: dict[str, Any]) -> ExecutorInfo:
        """From a logged command's body (`to_dict`'s form); raises ExecutorInfoError on anything else."""
        if not isinstance(data, dict) or not set(data) <= {"kind", "external_id", "exit_code"}:
            raise ExecutorInfoError(f"executor={data!r} is not an object of kind, external_id and exit_code")
        kind, external = data.get("kind", ""), data.get("external_id", "")
        if not isinstance(kind, str) or not isinstance(external, str):
            raise ExecutorInfoError(f"executor={data!r}: kind and external_id must be text")
        return ExecutorInfo(kind, external, data.get("exit_code"))
