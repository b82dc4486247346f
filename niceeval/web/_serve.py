"""`niceeval view`: bind, print the URL (with the token when one is needed), serve with uvicorn until Ctrl-C.

The viewer's one door for the command line (`niceeval.cli` imports `serve` and `ServeOptions` from here, nothing
else of this package's private modules): serving with uvicorn is the command's business, not a public name of
`niceeval.web`, whose users mount `create_app` in a server of their own.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import webbrowser
from dataclasses import dataclass

import uvicorn

from niceeval.store import Store
from niceeval.web._app import ViewerSettings, create_app
from niceeval.web._security import Access, is_loopback, new_token

DEFAULT_PORT = 7575


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """The command line of `niceeval view`.

    Args:
        store: The results store to read.
        host: Address to listen on; anything but loopback requires a token.
        port: Port; `0` picks a free one.
        token: The access token; generated when needed and not given.
        open_browser: Open the viewer in the default browser once it listens.
    """

    store: Store
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str | None = None
    open_browser: bool = False


def access_for(host: str, token: str | None) -> Access:
    """The access rules for a bind address: loopback needs no token (one given is still enforced)."""
    loopback = is_loopback(host)
    if not loopback and not token:
        token = new_token()
    return Access(token=token or None, loopback=loopback)


def serve(options: ServeOptions) -> None:
    """Serve the viewer in the foreground until Ctrl-C or SIGTERM.

    Raises:
        OSError: The address cannot be bound (port in use, unknown address).
    """
    access = access_for(options.host, options.token)
    sock = bind(options.host, options.port)
    url = viewer_url(options.host, sock.getsockname()[1], access.token)
    app = create_app(ViewerSettings(store=options.store, access=access))
    config = uvicorn.Config(app, http="h11", ws="none", lifespan="off", log_level="warning", access_log=False)
    print(f"niceeval viewer on {url}", flush=True)
    if not access.loopback:
        print("  listening beyond this machine: every request needs the token in that URL", flush=True)
    print("Press Ctrl-C to stop.", flush=True)
    if options.open_browser:
        threading.Timer(0.3, webbrowser.open, args=(url,)).start()
    try:
        with contextlib.suppress(KeyboardInterrupt):
            uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port` (IPv6 when `host` has a colon).

    Raises:
        OSError: The address cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only for a TCP listening socket.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def viewer_url(host: str, port: int, token: str | None) -> str:
    """The URL to open: the bind address (the machine's name for a wildcard bind) and the token when there is one."""
    shown = socket.gethostname() if host in ("0.0.0.0", "::", "[::]") else host.strip("[]")
    base = f"http://[{shown}]:{port}/" if ":" in shown else f"http://{shown}:{port}/"
    return f"{base}?token={token}" if token else base
