"""A local web server and a headless Chromium, to look at the built book as a reader would.

Chromium is Debian's (``/usr/bin/chromium``, installed by
``.ci/install-system-deps.sh``), driven by Playwright; Playwright's own browser
downloads are never used. Example::

    with serve_directory(book_html) as url, browser() as b:
        page = b.new_page()
        page.goto(url + "index.html")
        report = page_report(page)
        assert all(img["naturalWidth"] > 0 for img in report["images"])
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = os.environ.get("REPROBOOK_CHROMIUM", "/usr/bin/chromium")

# --headless: Playwright adds it too when headless=True; kept so the flags
# read as a complete list. --no-sandbox: Chromium refuses to run as root with
# its sandbox. The rest keep it off the network: there is none here but
# loopback, and a page that needs a CDN must fail the same way everywhere
# rather than hang on DNS or reach out where CI has a network.
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
)


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass  # a line per request would bury pytest's report


COMPRESSED = (".html", ".css", ".js", ".json", ".svg", ".txt", ".map")
"""What a static host (GitHub Pages, nginx's gzip, Netlify) sends compressed when the browser accepts it."""


class _GzipHandler(_QuietHandler):
    """A web host as GitHub Pages is one: text files sent with ``Content-Encoding: gzip`` to a browser that accepts
    it, and every file with ``Cache-Control: max-age=600`` (a browser keeps what it fetched for ten minutes)."""

    def end_headers(self):
        self.send_header("Cache-Control", "max-age=600")
        super().end_headers()

    def send_head(self):
        path = Path(self.translate_path(self.path))
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if not accepts or path.suffix not in COMPRESSED or not path.is_file():
            return super().send_head()
        import gzip
        import io
        body = gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Last-Modified", self.date_time_string(int(path.stat().st_mtime)))
        self.end_headers()
        return io.BytesIO(body)


@contextlib.contextmanager
def serve_directory(path, *, gzip: bool = False) -> Iterator[str]:
    """Serve `path` over HTTP on 127.0.0.1 and yield the base URL, ending in ``/``.

    Binds port 0, so there is no race for the port. The server runs in a
    thread and is shut down when the block exits. ``gzip``: text files are sent
    compressed (`COMPRESSED`), as a web host sends them.
    """
    root = Path(path).resolve()
    if not root.is_dir():
        raise NotADirectoryError(f"cannot serve {root}: not a directory")
    handler = functools.partial(_GzipHandler if gzip else _QuietHandler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextlib.contextmanager
def browser(executable_path: str | None = None, *, extra_args=()) -> Iterator[Browser]:
    """Launch headless Chromium through Playwright and yield the ``Browser``.

    Parameters
    ----------
    executable_path : str, optional
        The Chromium binary; by default ``$REPROBOOK_CHROMIUM`` or ``/usr/bin/chromium``.
    extra_args : sequence of str
        More command-line flags, after `CHROMIUM_ARGS`.
    """
    from playwright.sync_api import sync_playwright  # only the browser tests need it

    executable = executable_path or CHROMIUM
    if not Path(executable).is_file():
        raise FileNotFoundError(f"Chromium not found at {executable}; install it with .ci/install-system-deps.sh")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=executable,
            headless=True,
            args=[*CHROMIUM_ARGS, *extra_args],
            timeout=30_000,
        )
        try:
            yield chromium
        finally:
            chromium.close()


_PAGE_REPORT_JS = """
() => ({
    title: document.title,
    text: document.body ? document.body.innerText : "",
    images: Array.from(document.images).map(img => ({
        src: img.currentSrc || img.src,
        alt: img.alt,
        naturalWidth: img.naturalWidth,
        naturalHeight: img.naturalHeight,
        complete: img.complete,
    })),
})
"""


def page_report(page: Page) -> dict:
    """What a reader of `page` sees: title, visible text and every image.

    Returns ``{"title": str, "text": str, "images": [{"src", "alt",
    "naturalWidth", "naturalHeight", "complete"}, ...]}``. ``text`` is the
    body's ``innerText`` (rendered text only: no hidden elements, no markup).
    An ``<img>`` whose file is missing or not an image has ``naturalWidth``
    0 once ``complete``. Call it after ``page.goto``, which waits for the
    load event and so for the images; ``loading="lazy"`` images below the
    fold are only fetched once scrolled into view.
    """
    return page.evaluate(_PAGE_REPORT_JS)


def unfold(page: Page) -> None:
    """Open every folded block of ``page`` (the code and evidence a claim page folds), as a reader clicking them would."""
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")


class Traffic:
    """What a page's loads cost on the wire, read from Chromium's own network events (DevTools protocol).

    ``bytes`` counts what was transferred (headers and compressed bodies; a file taken from the browser's cache
    costs nothing), ``requests`` every request that reached the server or its cache (``data:`` URIs are not
    requests). `reset` starts a new count, e.g. before the next page. Example::

        traffic = Traffic(context, page)
        page.goto(url, wait_until="networkidle")
        assert traffic.bytes <= 600 * 1024
    """

    def __init__(self, context, page) -> None:
        self._cdp = context.new_cdp_session(page)
        self._cdp.send("Network.enable")
        self.urls: dict[str, str] = {}
        self.sizes: dict[str, int] = {}
        self._cdp.on("Network.requestWillBeSent", self._sent)
        self._cdp.on("Network.loadingFinished", lambda e: self.sizes.__setitem__(e["requestId"], e["encodedDataLength"]))

    def _sent(self, event) -> None:
        if not event["request"]["url"].startswith("data:"):
            self.urls[event["requestId"]] = event["request"]["url"]

    def reset(self) -> None:
        self.urls.clear()
        self.sizes.clear()

    @property
    def requests(self) -> int:
        return len(self.urls)

    @property
    def bytes(self) -> int:
        return sum(n for rid, n in self.sizes.items() if rid in self.urls)

    def heaviest(self, n: int = 5) -> list[str]:
        """The ``n`` costliest requests, for a failure's message."""
        rows = sorted(((self.sizes.get(rid, 0), url) for rid, url in self.urls.items()), reverse=True)[:n]
        return [f"{size / 1024:.1f} KB {url}" for size, url in rows]
