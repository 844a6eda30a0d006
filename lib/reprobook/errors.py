"""Errors, grouped by who has to act.

``ConfigError``      the user's configuration or parameters: fix the input.
``TestbedError``     the machine: unreachable, authentication, host keys, locks.
``ExperimentError``  the experiment ran and failed: read its log.
``OutputError``      outputs missing or malformed: which file, which field.
``ArtifactError``    an artifact repository or file could not be obtained.

Every message names the file, host, key or command involved and says what to
do next.
"""

from __future__ import annotations

from pathlib import Path


class ReprobookError(Exception):
    """Base class of every error reprobook raises on purpose."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class ConfigError(ReprobookError):
    """A configuration file or parameter is wrong.

    Parameters
    ----------
    message : str
        What is wrong and how to fix it.
    file : path, optional
        The file that holds the bad value.
    key : str, optional
        The key path inside the file, such as ``claims[1].checks[0].kind``.
    """

    def __init__(self, message: str, *, file: str | Path | None = None, key: str | None = None):
        where = ""
        if file is not None:
            where = f"{file}"
            if key:
                where += f": {key}"
            where += ": "
        super().__init__(where + message)
        self.file = str(file) if file is not None else None
        self.key = key


class TestbedError(ReprobookError):
    """The testbed is in the way: a host is unreachable, refuses us, or is busy."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, message: str, *, host: str | None = None):
        super().__init__(f"host {host!r}: {message}" if host else message)
        self.host = host


class HostUnreachable(TestbedError):
    """No SSH session could be set up with the host in bounded time."""


class AuthenticationFailed(TestbedError):
    """The host refused every key we offered."""


class HostKeyError(TestbedError):
    """The host's key is unknown or differs from ``known_hosts``."""


class StepTimeout(TestbedError):
    """The host accepted a command and then sent nothing for too long; the message names the step."""


class HostBusy(TestbedError):
    """Another run holds the host's benchmark lock."""

    def __init__(self, message: str, *, host: str | None = None, holder: str | None = None):
        super().__init__(message, host=host)
        self.holder = holder


class RequirementsNotMet(TestbedError):
    """The host lacks what the claim's experiment needs (cores, OS, ...)."""


class RunBusy(ReprobookError):
    """Another process (of the same user) is working on the run; ``holder`` says which."""

    def __init__(self, message: str, *, holder=None):
        super().__init__(message)
        self.holder = holder


class ExperimentError(ReprobookError):
    """A command ran on a host and failed.

    Parameters
    ----------
    message : str
        A one-line description.
    command : str
        The command as it was run.
    exit_code : int or None
        Its exit status; ``None`` when the process vanished without one.
    log_tail : str
        The last lines of its output.
    """

    def __init__(self, message: str, *, command: str = "", exit_code: int | None = None,
                 log_tail: str = "", host: str | None = None):
        parts = [message]
        if host:
            parts.append(f"host: {host}")
        if command:
            parts.append(f"command: {command}")
        parts.append(f"exit code: {exit_code if exit_code is not None else 'none (process lost)'}")
        if log_tail:
            tail = "\n".join("    " + line for line in log_tail.rstrip("\n").splitlines())
            parts.append("last lines of its log:\n" + tail)
        super().__init__("\n".join(parts))
        self.command = command
        self.exit_code = exit_code
        self.log_tail = log_tail
        self.host = host


class RunLost(ExperimentError):
    """A detached run's process is gone and it left no exit code."""


class OutputError(ReprobookError):
    """An output file is missing or malformed.

    Parameters
    ----------
    message : str
        What is missing or wrong.
    file : path
        The file.
    line : int, optional
        The 1-based line number.
    field : str, optional
        The field or column.
    """

    def __init__(self, message: str, *, file: str | Path, line: int | None = None,
                 field: str | None = None):
        where = str(file)
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")
        self.file = str(file)
        self.line = line
        self.field = field


class LimitExceeded(OutputError):
    """A run's outputs go over one of their limits (files, bytes, one file's size, an archive's expansion):
    refused before anything of them is kept (`reprobook.core.archives.Limits`)."""


class OutputsRefused(OutputError):
    """A host sent records or bytes that reprobook refused (paths leaving the run directory, outputs
    never asked for, sizes that do not match, links, malformed records).

    What arrived properly is saved first and listed in ``fetched``; ``records`` holds each refused
    record (as received, shortened) with the reason.
    """

    def __init__(self, message: str, *, file: str | Path, host: str, records: list[tuple[str, str]],
                 fetched: list | None = None):
        super().__init__(f"host {host!r}: {message}", file=file)
        self.host = host
        self.records = records
        self.fetched = list(fetched or [])


class ArtifactError(ReprobookError):
    """An artifact file or repository could not be obtained from anywhere."""
