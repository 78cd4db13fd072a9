"""The one exception tree of pitlog: the CLI turns any PitlogError into `Error: ...`.

Every class says what went wrong; the message says where (file, line, offset) and what to do.
"""

import errno
import re


class PitlogError(Exception):
    """Base of every error pitlog raises on purpose."""


class RuleError(PitlogError):
    """A rule or paytable is violated or ill-formed."""


class SchemaError(PitlogError):
    """The schemas/ folder is missing a schema or holds one that does not parse."""


class DecodeError(PitlogError):
    """Bytes that are not a pitlog event: bad framing, unknown fingerprint, corrupt body,
    or a structurally impossible value (a rank of 15). Such input is quarantined, never used."""


class EncodeError(PitlogError):
    """An event that cannot be encoded (a value outside its schema)."""


class LogError(PitlogError):
    """The event log cannot be opened, read or appended to."""


class LogCorruptError(LogError):
    """A segment file is damaged somewhere other than a torn tail. `partition` says where, so
    a reader can go on with the other partitions."""

    def __init__(self, message: str, partition: int | None = None) -> None:
        super().__init__(message)
        self.partition = partition


class LogGoneError(LogError):
    """The log this reader opened is no longer at its address: its folder was moved away or
    removed, or another log was made there (another log id). A follower waits for it to come
    back rather than read the other log (docs/operating.md, "Health and metrics")."""


class ConcurrencyError(PitlogError):
    """Another writer appended to the same table first: the expected sequence number is taken.
    Reload the table's head and retry.

    `recorded`: the keys (table ids) whose events of the batch were appended all the same. On
    Kafka with fencing each table commits in its own transaction, so a conflict on one table
    can come after others committed; retrying those would record them twice."""

    def __init__(self, message: str, recorded: tuple[bytes, ...] = ()) -> None:
        super().__init__(message)
        self.recorded = recorded


class ProjectionError(PitlogError):
    """The DuckDB views cannot be built or queried."""


class NotFoundError(PitlogError):
    """The shoe, table, round or file asked for does not exist."""


class IngestError(PitlogError):
    """A device line could not be turned into an event."""


# fastavro names its buffer by repr ("cannot read boolean from <_io.BytesIO object at
# 0x7f...>"): a memory address would make a reason differ between two readings of the same bytes.
_OBJECT_REPR = re.compile(r"<[^<>]* at 0x[0-9a-fA-F]+>")


def corrupt_reason(exc: BaseException) -> str:
    """Why bytes could not be read, as `TypeName: text`, an object's repr in the text (and so
    its memory address) replaced by "the message": the same bytes give the same reason."""
    return f"{type(exc).__name__}: {_OBJECT_REPR.sub('the message', str(exc))}"


# The machine's answers that mean no room to write: a full disk, a quota, a file too large.
NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its name when it has none): DuckDB appends
    "Possible solutions" and a link to its own messages, which an `Error:` line leaves out."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where a command must clean up as after Ctrl-C (a half-written export's
    temporary file); the CLI then exits 143. `received` stays set: Typer turns any
    KeyboardInterrupt into exit code 130, and the CLI tells the two apart by it."""

    received = False
