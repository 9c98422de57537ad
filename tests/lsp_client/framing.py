"""Content-Length framing of JSON-RPC messages, both ways."""
import json


class ProtocolError(RuntimeError):
    """The server broke the protocol, went quiet for too long, or went away."""


def frame(payload):
    """One frame: `payload` as JSON (bytes are sent as they are) behind its Content-Length header."""
    body = payload if isinstance(payload, (bytes, bytearray)) else json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class FrameReader:
    """Collects bytes as they arrive and hands back every message whose frame is complete."""

    def __init__(self):
        self.buf = bytearray()

    def feed(self, chunk):
        self.buf += chunk
        messages = []
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return messages
            headers = {}
            for line in bytes(self.buf[:end]).decode("ascii").split("\r\n"):
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
            try:
                length = int(headers["content-length"])
            except (KeyError, ValueError):
                raise ProtocolError(f"bad frame header {headers}") from None
            if len(self.buf) < end + 4 + length:
                return messages
            messages.append(json.loads(bytes(self.buf[end + 4:end + 4 + length])))
            del self.buf[:end + 4 + length]
