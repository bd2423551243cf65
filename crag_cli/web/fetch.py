"""Fetching pages safely: http(s) only, public addresses unless allowed (every redirect hop), timeouts, a size cap,
an HTML/plain-text allow-list; and the main text of a fetched page."""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
from dataclasses import dataclass
from typing import Sequence
from urllib.parse import urljoin, urlsplit

from ..documents.passages import paragraphs
from ..documents.types import html_main_text
from ..errors import one_line
from ..version import __version__
from ..unpack import ACCEPT_ENCODING, UnpackError, read_bounded

USER_AGENT = f"crag-cli/{__version__} (corrective question answering; https://pypi.org/project/crag-cli/)"
ALLOWED_TYPES = ("text/html", "application/xhtml+xml", "text/plain")
MAX_REDIRECTS = 3


@functools.lru_cache(maxsize=1)
def tls_context():
    """The TLS settings of every search and fetch in this process (httpx's defaults), made once.

    httpx reads the CA bundle for each new client, about 20 ms; crag opens two
    clients a question (the search and the pages), so a batch made each its own.
    """
    import httpx

    return httpx.create_ssl_context()


def whole_limit(timeout: float) -> float:
    """The time limit on one whole request (a page with its redirects, a search's answer): twice its connect and
    read ``timeout``, so that a server sending a byte now and then cannot hold a question past it."""
    return timeout * 2


# Not globally reachable (IANA's special-purpose registries) though some Python 3.11 releases' ``is_global`` says so.
NOT_GLOBAL = tuple(
    ipaddress.ip_network(net)
    for net in (
        "192.0.0.0/24",  # IETF protocol assignments (192.0.0.8, dummy; .9 and .10, anycast: no web pages either)
        "192.88.99.0/24",  # 6to4 relay anycast, deprecated
        "64:ff9b:1::/48",  # NAT64 for local use: where its IPv4 address sits is the network's choice
        "100:0:0:1::/64",  # dummy prefix
        "3fff::/20",  # documentation
        "5f00::/16",  # segment routing (SRv6) identifiers
        "fec0::/10",  # site-local, deprecated
    )
)
NAT64 = ipaddress.ip_network("64:ff9b::/96")  # the well-known prefix: the IPv4 address is its last 32 bits


def unwrapped(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The IPv4 address an IPv6 address carries (IPv4-mapped, 6to4, NAT64's well-known prefix), else ``addr``.

    >>> str(unwrapped(ipaddress.ip_address("2002:7f00:1::"))), str(unwrapped(ipaddress.ip_address("64:ff9b::a00:1")))
    ('127.0.0.1', '10.0.0.1')
    """
    if isinstance(addr, ipaddress.IPv6Address):
        if addr in NAT64:
            return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
        return addr.ipv4_mapped or addr.sixtofour or addr
    return addr


def address_is_public(ip: str) -> bool:
    """Whether ``ip`` is a globally reachable unicast address, and so is the IPv4 address it carries, if any.

    Refuses loopback, private, link-local, shared (100.64.0.0/10), benchmarking, documentation, multicast,
    reserved and the other special-purpose ranges, in IPv4 and IPv6, and IPv6 addresses that wrap one of them
    (6to4 ``2002:7f00:1::`` is 127.0.0.1). Teredo (2001::/32), whose client address is hidden, is never public.

    >>> [address_is_public(a) for a in ("8.8.8.8", "2002:808:808::", "192.0.0.8", "2002:7f00:1::", "2001::1")]
    [True, True, False, False, False]
    """
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.teredo:
        return False
    addr = unwrapped(addr)
    if any(addr in net for net in NOT_GLOBAL):
        return False
    return addr.is_global and not (addr.is_multicast or addr.is_reserved or addr.is_unspecified)


def check_url(url: str, allow_private: bool, trusted_hosts: Sequence[str] = ()) -> str | None:
    """Why ``url`` must not be fetched, or ``None`` when it may be.

    Refuses non-http(s) schemes always, and hosts resolving to a non-public
    address unless ``allow_private`` or the host is one of ``trusted_hosts``
    (names the user gave explicitly, such as their SearxNG instance's). The
    check resolves the name itself; a DNS answer that changes between the check
    and the connection is not covered.
    """
    try:
        parts = urlsplit(url)
        port = parts.port  # raises for a port that is not a number in 0-65535
    except (ValueError, TypeError) as exc:  # "http://[::1" and the like
        return f"malformed URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return f"refused: scheme {parts.scheme or '(none)'!r} is not http(s)"
    if not parts.hostname:
        return "refused: no host"
    if allow_private or parts.hostname in trusted_hosts:
        return None
    try:
        infos = socket.getaddrinfo(parts.hostname, port or (443 if parts.scheme == "https" else 80))
    except (socket.gaierror, UnicodeError) as exc:
        return f"cannot resolve {parts.hostname}: {exc}"
    for info in infos:
        ip = info[4][0]
        if not address_is_public(ip):
            return f"refused: {parts.hostname} resolves to non-public address {ip} (use --allow-private to allow)"
    return None


@dataclass
class Page:
    url: str
    status: int | None = None
    error: str | None = None
    content_type: str = ""
    body: str = ""
    truncated: bool = False
    cached: bool = False

    def record(self) -> dict:
        out = {"url": self.url, "status": self.status, "error": self.error}
        if self.truncated:
            out["truncated"] = True
        if self.cached:
            out["cached"] = True
        return out


class Fetcher:
    """Concurrent, bounded page fetching with httpx.

    Parameters
    ----------
    timeout : float
        Connect and read timeout; a whole page (every redirect, and a body that trickles in) is given up
        after :func:`whole_limit` of it (twice it).
    max_bytes : int
        Bodies are cut at this size (the page is marked ``truncated``), as they are unpacked (gzip, deflate,
        stacked): a page that unpacks to more is never unpacked further (:mod:`.unpack`).
    allow_private : bool
        Allow loopback/private/link-local addresses.
    trusted_hosts : sequence of str
        Host names allowed even when private (exactly as written in the URL).
    """

    def __init__(
        self,
        timeout: float,
        max_bytes: int,
        allow_private: bool,
        trusted_hosts: Sequence[str] = (),
    ) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.allow_private = allow_private
        self.trusted_hosts = tuple(trusted_hosts)

    def fetch_all(self, urls: Sequence[str]) -> list[Page]:
        """Fetch every URL concurrently; one :class:`Page` per URL, in order, never raising."""
        if not urls:
            return []
        return asyncio.run(self._fetch_all(list(urls)))

    async def _fetch_all(self, urls: list[str]) -> list[Page]:
        import httpx

        timeout = httpx.Timeout(self.timeout, connect=min(self.timeout, 5.0))
        async with httpx.AsyncClient(
            timeout=timeout,
            verify=tls_context(),
            follow_redirects=False,
            headers={"User-Agent": USER_AGENT, "Accept": ", ".join(ALLOWED_TYPES), "Accept-Encoding": ACCEPT_ENCODING},
        ) as client:
            return list(await asyncio.gather(*(self._fetch_bounded(client, u) for u in urls)))

    async def _fetch_bounded(self, client, url: str) -> Page:
        limit = whole_limit(self.timeout)
        try:
            return await asyncio.wait_for(self._fetch(client, url), timeout=limit)
        except asyncio.TimeoutError:
            return Page(url, error=f"timed out after {limit:g} s")

    async def _fetch(self, client, url: str) -> Page:
        import httpx

        current = url
        for _hop in range(MAX_REDIRECTS + 1):
            problem = await asyncio.to_thread(check_url, current, self.allow_private, self.trusted_hosts)
            if problem:
                return Page(url, error=problem if current == url else f"redirect to {current}: {problem}")
            try:
                async with client.stream("GET", current) as resp:
                    if resp.is_redirect:
                        location = resp.headers.get("location")
                        if not location:
                            return Page(url, resp.status_code, "redirect without a location")
                        current = urljoin(current, location)
                        continue
                    if resp.status_code != 200:
                        return Page(url, resp.status_code, f"HTTP {resp.status_code}")
                    ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
                    if ctype not in ALLOWED_TYPES:
                        return Page(url, resp.status_code, f"unsupported content type {ctype or '(none)'}")
                    body, truncated = await read_bounded(resp, self.max_bytes)  # cut as it is unpacked
                    text = body.decode(resp.encoding or "utf-8", errors="replace")
                    return Page(url, resp.status_code, None, ctype, text, truncated)
            except UnpackError as exc:
                return Page(url, resp.status_code, str(exc))
            except httpx.TimeoutException:
                return Page(url, error=f"timed out after {self.timeout:g} s")
            except (httpx.HTTPError, httpx.InvalidURL, ValueError, UnicodeError) as exc:  # a bad URL or redirect
                return Page(url, error=f"{type(exc).__name__}: {one_line(exc)}")
        return Page(url, error=f"more than {MAX_REDIRECTS} redirects")


MAX_PAGE_WORDS = 3000  # words of a page's main text that are refined (bounds the evaluator's work per page)


def page_text(page: Page, max_words: int = MAX_PAGE_WORDS) -> tuple[str, str]:
    """``(title, main text)`` of a fetched page: readability for HTML, paragraphs for plain text.

    Only whole paragraphs within the first ``max_words`` words are kept (at least one).
    """
    if page.content_type == "text/plain":
        title, paras = "", paragraphs(page.body)
    else:
        title, text = html_main_text(page.body)
        paras = text.split("\n\n") if text else []
    kept, words = [], 0
    for para in paras:
        n = len(para.split())
        if kept and words + n > max_words:
            break
        kept.append(para)
        words += n
    return title, "\n\n".join(kept)
