"""Who may use the viewer, and what a page may do once loaded.

- **Token.** On a loopback address only this machine can connect, so no token is needed. On any other address
  every request must carry the token: `?token=...` once (it becomes an HttpOnly cookie and the browser is sent
  to the same URL without it, so the token leaves the address bar and history), then the cookie, or an
  `Authorization: Bearer` header for scripts.
- **Host header.** On loopback, only `127.0.0.1`, `localhost` and `[::1]` are accepted as `Host`: a web page
  cannot use DNS rebinding to read the viewer through a name of its own.
- **CSRF.** Every form carries a per-browser secret that must match its SameSite=Strict cookie
  (double submit), and a request whose `Origin` is another site is refused before any handler runs.
- **Headers.** A strict Content-Security-Policy (scripts and styles from this server only, nothing inline, no
  frames, forms post only here), no sniffing, no referrer sent to other sites.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_COOKIE = "niceeval_token"
CSRF_COOKIE = "niceeval_csrf"
CSRF_FIELD = "csrf"

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
)
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
_UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (`127.0.0.0/8`, `::1`, `localhost`)."""
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    """A fresh random access token (32 bytes of entropy, URL-safe)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class Access:
    """The access rules of one viewer process.

    Args:
        token: Required on every request when set (any non-loopback bind); `None` on loopback.
        loopback: The server listens on a loopback address: only loopback `Host` headers are accepted.
    """

    token: str | None
    loopback: bool


class Guard:
    """ASGI middleware enforcing `Access`, the CSRF cookie and the security headers on every response."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        cookies = _cookies(headers)
        refusal = self._refusal(scope, headers, cookies)
        if refusal is not None:
            await refusal(scope, receive, _secured(send, None))
            return
        csrf = cookies.get(CSRF_COOKIE) or ""
        fresh_csrf = None
        if not _valid_csrf_shape(csrf):
            csrf = fresh_csrf = secrets.token_urlsafe(24)
        scope.setdefault("state", {})["csrf"] = csrf
        await self.app(scope, receive, _secured(send, fresh_csrf))

    def _refusal(self, scope: Scope, headers: Headers, cookies: dict[str, str]) -> Response | None:
        if self.access.loopback and not is_loopback(_host_name(headers.get("host", ""))):
            return PlainTextResponse("This viewer answers only on 127.0.0.1, localhost or [::1].", status_code=400)
        if self.access.token is not None:
            verdict = self._token_verdict(scope, headers, cookies, self.access.token)
            if verdict is not None:
                return verdict
        if scope["method"] in _UNSAFE_METHODS and not _same_origin(headers):
            return PlainTextResponse("Cross-site request refused.", status_code=403)
        return None

    @staticmethod
    def _token_verdict(scope: Scope, headers: Headers, cookies: dict[str, str], token: str) -> Response | None:
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        offered = dict(query).get("token")
        if offered is not None and _same(offered, token):
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            redirect = RedirectResponse(scope["path"] + (f"?{rest}" if rest else ""), status_code=303)
            redirect.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
            return redirect
        bearer = headers.get("authorization", "")
        if _same(cookies.get(TOKEN_COOKIE, ""), token) or (
            bearer.startswith("Bearer ") and _same(bearer[len("Bearer ") :], token)
        ):
            return None
        return PlainTextResponse(
            "This viewer needs its access token: open the URL `niceeval view` printed (it ends in ?token=...).",
            status_code=401,
        )


def form_is_genuine(submitted: str | None, cookie: str) -> bool:
    """True when a form's CSRF field matches the browser's CSRF cookie."""
    return submitted is not None and _valid_csrf_shape(cookie) and _same(submitted, cookie)


def _secured(send: Send, fresh_csrf: str | None) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            present = {name.lower() for name, _ in headers}
            headers += [(name, value) for name, value in SECURITY_HEADERS if name not in present]
            if fresh_csrf is not None:
                cookie = f"{CSRF_COOKIE}={fresh_csrf}; Path=/; HttpOnly; SameSite=Strict"
                headers.append((b"set-cookie", cookie.encode("latin-1")))
            message = {**message, "headers": headers}
        await send(message)

    return wrapped


def _cookies(headers: Headers) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except CookieError:  # a malformed Cookie header counts as no cookies
        return {}
    return {name: morsel.value for name, morsel in jar.items()}


def _host_name(host_header: str) -> str:
    if host_header.startswith("["):
        return host_header.split("]", 1)[0] + "]"
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


def _same_origin(headers: Headers) -> bool:
    """False when the browser says the request comes from another site; a script sending neither header passes.

    Browsers send `Sec-Fetch-Site`, which is decisive when present (`Origin` may be `null` on a same-origin form
    post under some referrer policies). Without it, an `Origin` must name this host.
    """
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site in ("same-origin", "none")
    origin = headers.get("origin")
    if origin is None:
        return True
    host = headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")


def _valid_csrf_shape(value: str) -> bool:
    return 16 <= len(value) <= 64 and all(c.isalnum() or c in "-_" for c in value)


def _same(offered: str, expected: str) -> bool:
    return hmac.compare_digest(offered.encode(), expected.encode())
