"""What a parameter's value may look like: the named patterns a claim parameter declares (``pattern: user``), or a
regular expression of its own, matched against the whole value.

A parameter's value reaches a shell: as ``RB_<NAME>`` in a step, on ssh's command line (a guest's host and user),
in a script the authors wrote (Pesto's ``upload_data_remote.sh`` splices ``-u`` and ``-e`` unquoted into an rsync
command line). The steps quote what they can; the pattern is what makes the rest safe: a value that does not
match it is refused by `reprobook.core.plan.resolve` before anything runs, naming the parameter, the value and
what is allowed. Every named pattern refuses a leading ``-`` (ssh, rsync and git would read it as an option),
white space, quotes and shell metacharacters.

The empty string always passes: it means "not given", and a claim that needs the value says so when it is used.

Examples
--------
>>> Pattern.parse("user").allows("fs435"), Pattern.parse("user").allows("x;id>/tmp/p;#")
(True, False)
>>> Pattern.parse("name").allows("pequin\\n")
False
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NAMED: dict[str, tuple[str, str]] = {
    "hostname": (r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}|\[?[0-9A-Fa-f:.]{2,45}\]?",
                 "a host name or address (letters, digits, '.', '_' and '-', not starting with '-')"),
    "user": (r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}",
             "a user name (letters, digits, '.', '_' and '-', not starting with '-'; at most 64)"),
    "name": (r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}",
             "a name (letters, digits, '_' and '-', starting with a letter or digit; at most 64)"),
    "port": (r"[0-9]{1,5}", "a port number"),
    "path": (r"[^\x00-\x20\x7f-][^\x00-\x1f\x7f]*",
             "a path (no control characters, not starting with '-' or a space)"),
}
"""Pattern name -> (regular expression, what it allows in words)."""

IMPLIED = {"guest_host": "hostname", "guest_user": "user", "guest_port": "port", "guest_key": "path"}
"""The pattern of a parameter the engine itself puts on a command line (a ``where: guest`` step's ssh), when its
declaration names none."""


@dataclass(frozen=True)
class Pattern:
    """A parameter's pattern: ``spec`` as written (a name of `NAMED`, or a regular expression)."""

    spec: str
    regex: re.Pattern
    what: str

    @classmethod
    def parse(cls, spec: str) -> "Pattern":
        """The pattern ``spec`` names or spells; `re.error` for a regular expression that does not compile."""
        if spec in NAMED:
            regex, what = NAMED[spec]
            return cls(spec, re.compile(regex), what)
        return cls(spec, re.compile(spec), f"a value matching the pattern {spec!r}")

    def allows(self, value) -> bool:
        """Whether ``value`` (as text) matches the whole pattern; the empty string always does (not given)."""
        s = str(value).lower() if isinstance(value, bool) else str(value)
        return s == "" or self.regex.fullmatch(s) is not None
