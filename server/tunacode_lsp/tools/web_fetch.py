"""web_fetch: one web page as Markdown (markdownify), asked like bash, under the shell's network
policy (`shellNetwork: false` refuses it), bounded in size, time and redirects.

Addresses: the host is resolved here and every address it has must be a public one (not
loopback, link-local, private, shared, multicast or reserved) unless `webFetchPrivateAddresses`
is on; the connection then goes to the address that was checked (the URL's host is kept for
the Host header and TLS's server name), so a name cannot resolve to a public address for the
check and a private one for the connection. Every redirect is checked the same way. No
proxy from the environment is used.

Bodies: the bound is on what is decoded, and decoding stops at it (one gzip or deflate layer,
decompressed at most MAX_BODY_BYTES + 1 at a time); stacked encodings (`gzip, gzip`: 980 bytes
that decode to a gigabyte in one step) and others are refused.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import zlib
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx
from tinyagent.agent_types import AgentTool, AgentToolResult

from tunacode_lsp.core.abort import race_abort
from tunacode_lsp.core.text import clip
from tunacode_lsp.tools.base import ToolCall, make_tool, text_result
from tunacode_lsp.tools.errors import ToolCancelled, ToolError
from tunacode_lsp.tools.kept_outputs import keep_output, kept_note
from tunacode_lsp.tools.settings import ToolSettings
from tunacode_lsp.tools.textfile import cut_middle
from tunacode_lsp.tools.timeouts import tool_seconds

MAX_URL_CHARS = 4_096
MAX_BODY_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 5
CONNECT_SECONDS = 10.0
READ_SECONDS = 20.0
RESOLVE_SECONDS = 10.0
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml", "application/javascript")
USER_AGENT = "tunacode-lsp web_fetch"

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "maxLength": MAX_URL_CHARS, "description": "The http:// or https:// address of the page."},
    },
    "required": ["url"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Fetch one web page (http or https) and get it as Markdown (HTML converted; plain text, JSON and "
    "XML as they are), e.g. documentation or an issue. Needs the user's approval like a shell command. "
    f"Follows at most {MAX_REDIRECTS} redirects, reads at most {MAX_BODY_BYTES // (1024 * 1024)} MB; a long page is "
    "cut and the whole of it kept in a file read_file can read. Local and private network addresses "
    "are refused."
)


def address_problem(address: str, allow_private: bool) -> str | None:
    """Why a resolved address may not be fetched, or None."""

    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:  # judged by the IPv4 address it leads to
            ip = embedded
    if ip.is_multicast or ip.is_unspecified:
        return "a multicast or unspecified address"
    if ip.is_loopback:
        problem = "a loopback address (this machine)"
    elif ip.is_link_local:
        problem = "a link-local address (e.g. a cloud metadata service)"
    elif not ip.is_global:
        problem = "a private network address"
    else:
        return None
    return None if allow_private else problem


_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))  # well-known, local-use
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for: mapped (::ffff:a.b.c.d), IPv4-compatible
    (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d: a NAT64 gateway connects to a.b.c.d, private ones of its
    network included) and 6to4 (2002:aabb:ccdd::)."""

    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64[0] or (ip in _IPV4_COMPATIBLE and int(ip) > 1):  # :: and ::1 are judged as themselves
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _NAT64[1]:  # local-use NAT64 (its IPv4 address may sit anywhere in it): private
        return ipaddress.IPv4Address("10.0.0.0")
    return None


async def resolve(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP), RESOLVE_SECONDS
        )
    except (OSError, TimeoutError) as exc:
        raise ToolError(f"Cannot resolve '{clip(host, 200)}': {exc}.") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def checked_address(url: str, allow_private: bool) -> tuple[httpx.URL, str]:
    """The URL and the one address to connect to, or a ToolError saying why not."""

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ToolError(f"'{clip(url, 200)}' is not a usable URL: {exc}.") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ToolError(f"'{clip(url, 200)}' is not an http:// or https:// URL.")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    addresses = await resolve(parsed.host, port)
    if not addresses:
        raise ToolError(f"'{clip(parsed.host, 200)}' has no address.")
    for address in addresses:  # all of them: a name must not have one public and one private address
        problem = address_problem(address, allow_private)
        if problem:
            raise ToolError(
                f"Refused: {clip(parsed.host, 200)} is {problem} ({address}). web_fetch reaches only public "
                "addresses unless the setting tunacode.webFetchPrivateAddresses is on."
            )
    return parsed, addresses[0]


def _to_markdown(html: str) -> str:
    from bs4 import BeautifulSoup  # loaded with the first page
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    for element in soup(["script", "style", "noscript", "iframe", "svg", "template", "head"]):
        element.decompose()  # their text is no part of the page
    text = MarkdownConverter(heading_style="ATX").convert_soup(soup)
    lines = [line.rstrip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:  # at most one blank line in a row
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip() + "\n"


class _BodyDecoder:
    """The response's Content-Encoding undone, never more than `room` bytes per step."""

    def __init__(self, header: str) -> None:
        codings = [c.strip().lower() for c in header.split(",") if c.strip().lower() not in ("", "identity")]
        if len(codings) > 1:
            raise ToolError(f"The page is sent with stacked encodings ({clip(header, 100)}): refused.")
        self.coding = codings[0] if codings else None
        if self.coding not in (None, "gzip", "x-gzip", "deflate"):
            raise ToolError(f"The page is sent with the encoding '{clip(self.coding or '', 50)}', which web_fetch does not read.")
        self.raw_deflate = False
        self.first = True
        self.inflater = zlib.decompressobj(16 + zlib.MAX_WBITS if self.coding in ("gzip", "x-gzip") else zlib.MAX_WBITS)

    def decode(self, data: bytes, room: int) -> bytes:
        if self.coding is None:
            return data[:room]
        try:
            try:
                return self.inflater.decompress(data, room)
            except zlib.error:
                if self.coding != "deflate" or not self.first:
                    raise
                self.inflater = zlib.decompressobj(-zlib.MAX_WBITS)  # deflate without its zlib header
                return self.inflater.decompress(data, room)
        except zlib.error as exc:
            raise ToolError(f"The page's {self.coding} body is corrupt: {exc}.") from None
        finally:
            self.first = False


async def _get(client: httpx.AsyncClient, url: httpx.URL, address: str, call: ToolCall) -> tuple[httpx.Response, bytes]:
    host = url.host
    target = url.copy_with(host=address)
    headers = {"Host": url.netloc.decode("ascii"), "User-Agent": USER_AGENT, "Accept-Encoding": "gzip, deflate",
               "Accept": "text/html, text/*;q=0.9, */*;q=0.5"}
    extensions = {"sni_hostname": host} if url.scheme == "https" else {}
    request = client.build_request("GET", target, headers=headers, extensions=extensions)
    response = await client.send(request, stream=True)
    try:
        decoder = _BodyDecoder(response.headers.get("content-encoding", ""))
        body = bytearray()
        async for chunk in response.aiter_raw():  # decoded here, bounded: never more than the bound + 1
            call.check_abort()
            body += decoder.decode(chunk, MAX_BODY_BYTES + 1 - len(body))
            if len(body) > MAX_BODY_BYTES:
                body = body[:MAX_BODY_BYTES]
                break
        return response, bytes(body)
    finally:
        await response.aclose()


def create_web_fetch_tool(settings: ToolSettings | None = None) -> AgentTool:
    settings = settings or ToolSettings()

    async def run(args: dict[str, Any], call: ToolCall) -> AgentToolResult:
        raced = await race_abort(fetch(args, call), call.signal)  # an abort ends a wait on a silent server too
        if raced.aborted:
            raise ToolCancelled()
        return raced.task.result()

    async def fetch(args: dict[str, Any], call: ToolCall) -> AgentToolResult:
        if not settings.shell_network:
            raise ToolError("The network is off for tools here (tunacode.shellNetwork is false): web_fetch is refused.")
        url = args["url"].strip()
        timeout = httpx.Timeout(READ_SECONDS, connect=CONNECT_SECONDS)
        async with httpx.AsyncClient(timeout=timeout, trust_env=False, follow_redirects=False) as client:
            for hop in range(MAX_REDIRECTS + 1):
                parsed, address = await checked_address(url, settings.web_private_addresses)
                try:
                    response, body = await _get(client, parsed, address, call)
                except httpx.HTTPError as exc:
                    raise ToolError(f"Fetching {clip(url, 200)} failed: {type(exc).__name__}: {clip(str(exc), 300)}.") from None
                if response.is_redirect and "location" in response.headers:
                    if hop == MAX_REDIRECTS:
                        raise ToolError(f"More than {MAX_REDIRECTS} redirects from {clip(args['url'], 200)}: stopped.")
                    url = urljoin(str(parsed), response.headers["location"])
                    continue
                break
        return await _result(url, response, body)

    async def _result(url: str, response: httpx.Response, body: bytes) -> AgentToolResult:
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind and not kind.startswith(TEXT_TYPES):
            raise ToolError(f"{clip(url, 200)} is {kind} ({len(body):,} bytes), not a page that can be shown as text.")
        charset = response.charset_encoding or "utf-8"
        try:
            text = body.decode(charset, errors="replace")
        except LookupError:
            text = body.decode("utf-8", errors="replace")
        if kind in ("text/html", "application/xhtml+xml") or (not kind and "<html" in text[:1000].lower()):
            text = await asyncio.to_thread(_to_markdown, text)
        shown, cut = cut_middle(text, settings.max_output_chars)
        note = ""
        if cut:
            data = text.encode("utf-8", "replace")
            note = kept_note(await asyncio.to_thread(keep_output, settings.outputs_dir, "web_fetch", data), len(data))
        status = f"{response.status_code} {response.reason_phrase}".strip()
        header = f"{_shown_url(url)} ({status}, {kind or 'no content type'}, {len(body):,} bytes)"
        return text_result(f"{header}\n\n{shown}{note}", url=_shown_url(url), status=response.status_code,
                           content_type=kind, bytes=len(body), truncated=cut > 0)

    return make_tool(
        name="web_fetch", label="Fetch page", description=DESCRIPTION, parameters=PARAMETERS, run=run,
        seconds=tool_seconds(settings.tool_timeouts, "web_fetch"),
    )


def _shown_url(url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]  # no user:password in what is shown
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
