"""A small HTTP/1.1 server on one asyncio event loop, shaped like uvicorn
serving ATOM's FastAPI app: keep-alive connections (closed after
--timeout-keep-alive idle seconds), chunked streaming bodies, an access
line per response, the kernel's accept backlog of 2048. Handlers are
coroutines; one that calls a blocking function stalls the whole loop, and
with it every connection, exactly as in ATOM (connections are still
accepted by the kernel, nothing is read or answered).

Only what ATOM's clients use: request bodies by Content-Length or
chunked, 'Expect: 100-continue', no TLS, no upgrades.
"""
import asyncio
import email.utils
import http
import json
import sys

import simcommon as sc

MAX_HEAD_BYTES = 64 << 10
MAX_BODY_BYTES = 16 << 20


class BadRequest(Exception):
    pass


class Request:
    def __init__(self, method, target, version, headers, peer):
        self.method = method
        self.target = target
        self.path = target.split("?", 1)[0]
        self.version = version
        self.headers = headers          # lower-case names
        self.peer = peer
        self.body = b""

    def json(self):
        return json.loads(self.body) if self.body.strip() else None


class Response:
    """A whole body, or `stream`: an async iterator of bytes chunks."""

    def __init__(self, status, doc=None, body=None, ctype="application/json",
                 stream=None, headers=()):
        self.status = status
        if doc is not None:
            body = json.dumps(doc, separators=(",", ":")).encode()
        self.body = body or b""
        self.ctype = ctype
        self.stream = stream
        self.headers = list(headers)


def phrase(status):
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


async def read_head(reader):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise BadRequest("head too large")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest("bad request line")
    headers = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise BadRequest("bad header")
        headers[name.strip().lower()] = value.strip()
    return parts[0], parts[1], parts[2][5:], headers


async def read_body(reader, writer, headers):
    if headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return await read_chunked(reader)
    try:
        n = int(headers.get("content-length", "0"))
    except ValueError:
        raise BadRequest("bad content-length")
    if n < 0 or n > MAX_BODY_BYTES:
        raise BadRequest("bad content-length")
    return await reader.readexactly(n) if n else b""


async def read_chunked(reader):
    body = b""
    while True:
        line = await reader.readuntil(b"\r\n")
        try:
            n = int(line.split(b";")[0], 16)
        except ValueError:
            raise BadRequest("bad chunk size")
        if n == 0:
            await reader.readuntil(b"\r\n")
            return body
        body += await reader.readexactly(n + 2)
        body = body[:-2]
        if len(body) > MAX_BODY_BYTES:
            raise BadRequest("body too large")


class Server:
    """serve() connections with `app(request) -> Response`."""

    def __init__(self, app, access_log=True, keep_alive_s=5):
        self.app = app
        self.access_log = access_log
        self.keep_alive_s = keep_alive_s
        self.busy = set()       # connections inside a request
        self.idle = set()       # connections waiting for one
        self.closing = False

    async def listen(self, host, port):
        """Binds; asyncio's OSError on failure ('[Errno 98] error while
        attempting to bind on address ...'), which uvicorn logs."""
        self.server = await asyncio.start_server(
            self.connection, host, port, backlog=2048,
            limit=MAX_HEAD_BYTES, reuse_address=True)

    def stop_listening(self):
        self.server.close()
        self.closing = True
        for w in list(self.idle):
            w.close()

    async def connection(self, reader, writer):
        peer = writer.get_extra_info("peername") or ("?", 0)
        first = True
        try:
            while not self.closing:
                self.idle.add(writer)
                try:
                    head = await self.next_head(reader, first)
                finally:
                    self.idle.discard(writer)
                if head is None:
                    break
                first = False
                self.busy.add(writer)
                try:
                    keep = await self.exchange(reader, writer, head, peer)
                finally:
                    self.busy.discard(writer)
                if not keep:
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except BadRequest:
            sc.uvicorn_log("WARNING", "Invalid HTTP request received.")
            await self.send_plain(writer, 400, b"Invalid HTTP request")
        finally:
            writer.close()

    async def next_head(self, reader, first):
        """The next request head, or None when the client is gone or the
        keep-alive timer ran out (it runs only between requests)."""
        try:
            if first:
                return await read_head(reader)
            return await asyncio.wait_for(read_head(reader),
                                          self.keep_alive_s)
        except (asyncio.TimeoutError, asyncio.IncompleteReadError):
            return None

    async def exchange(self, reader, writer, head, peer):
        method, target, version, headers = head
        req = Request(method, target, version, headers, peer)
        req.body = await read_body(reader, writer, headers)
        keep = version == "1.1" and \
            headers.get("connection", "").lower() != "close"
        resp = await self.app(req)
        keep = keep and not self.closing
        if self.access_log:
            sc.uvicorn_log("INFO", '%s:%d - "%s %s HTTP/%s" %d %s' % (
                peer[0], peer[1], method, target, version, resp.status,
                phrase(resp.status)), sys.stdout)
        if resp.stream is None:
            await self.send(writer, resp, keep, req.method == "HEAD")
            return keep
        await self.send_stream(writer, resp, keep and version == "1.1")
        return keep and version == "1.1"

    @staticmethod
    def head_bytes(status, headers):
        lines = ["HTTP/1.1 %d %s" % (status, phrase(status)),
                 "date: " + email.utils.formatdate(usegmt=True),
                 "server: uvicorn"] + ["%s: %s" % h for h in headers]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def send(self, writer, resp, keep, head_only=False):
        headers = [("content-length", str(len(resp.body))),
                   ("content-type", resp.ctype)] + resp.headers
        if not keep:
            headers.append(("connection", "close"))
        writer.write(self.head_bytes(resp.status, headers) +
                     (b"" if head_only else resp.body))
        await writer.drain()

    async def send_plain(self, writer, status, text):
        try:
            await self.send(writer, Response(status, body=text,
                                             ctype="text/plain; charset="
                                                   "utf-8"), False)
        except ConnectionError:
            pass

    async def send_stream(self, writer, resp, chunked):
        """Each piece as one chunk (HTTP/1.1) or raw until close (1.0).
        A client that goes away closes the iterator: its request is
        aborted by the iterator's cleanup."""
        headers = [("content-type", resp.ctype)] + resp.headers
        headers.append(("transfer-encoding", "chunked") if chunked
                       else ("connection", "close"))
        writer.write(self.head_bytes(resp.status, headers))
        try:
            async for piece in resp.stream:
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece)
                             if chunked else piece)
                await writer.drain()
            if chunked:
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        finally:
            await resp.stream.aclose()
