"""Credentials kept out of what a run records: manifests and logs name a URL without its secret.

A host's ``git_url_rewrites`` may point at a mirror with a token in its URL
(``https://user:TOKEN@git.example.org/``). The run's script carries it (git needs it), but the
manifest that records the script, and the log a run fetches, are files an evaluator shares:
there the URL's user information is masked.
"""

from __future__ import annotations

import re

MASK = "***"
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/\s@:'\"]*)(?::(?P<password>[^/\s@'\"]*))?@")


def mask_credentials(text: str) -> str:
    """``text`` with every URL's password masked, and for http(s) its user too (a token is often the user).

    >>> mask_credentials("url.https://me:s3cret@git.example.org/.insteadOf")
    'url.https://***@git.example.org/.insteadOf'
    >>> mask_credentials("ssh://git@github.com/o/r")
    'ssh://git@github.com/o/r'
    """
    def hide(m: re.Match) -> str:
        scheme = m["scheme"]
        web = scheme.lower().endswith(("http://", "https://", "ftp://", "ftps://"))  # also in "url.https://"
        if web or m["password"] is not None:
            user = "" if web or not m["user"] else m["user"] + ":"
            return f"{scheme}{user}{MASK}@"
        return m.group(0)
    return _URL_USERINFO.sub(hide, text)
