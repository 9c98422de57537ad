"""The one Python LSP client of the tests and the benches (stdlib only).

Import it with `tests/` on sys.path:  sys.path.insert(0, str(ROOT / "tests"))  # tests/lsp_client
  framing     Content-Length frames both ways (frame, FrameReader, ProtocolError)
  connection  Connection: a server child process, stamped messages, server requests answered,
              single-threaded select() or one reader thread
  client      LspClient: the transcript tests' driver of maxkernel-lsp over a Connection
  edits       apply_text_edits: LSP TextEdits (UTF-16 positions) applied to a str
"""
from .client import LspClient, default_capabilities, server_binary
from .edits import apply_text_edits
from .connection import NO_REPLY, Connection, ServerClosed, ServerTimeout, clock, collector_paused
from .framing import FrameReader, ProtocolError, frame

__all__ = [
           "NO_REPLY",
           "Connection",
           "FrameReader",
           "LspClient",
           "ProtocolError",
           "ServerClosed",
           "ServerTimeout",
           "apply_text_edits",
           "clock",
           "collector_paused",
           "default_capabilities",
           "frame",
           "server_binary",
]
