"""A tiny YAML subset reader for kernel_task.yaml (PyYAML is not guaranteed
on the host).

Supported: `key: value` mappings (nested by indentation), block lists
(`- item`), inline lists (`[a, b]`), `#` comments, single/double quoted
strings, block scalars (`|`, `|-`, `|+`, `>`, `>-`, `>+`, with an optional
indentation digit: MaxKernel's `input_gen_code: |-`), and scalars: int,
float (also `1e-5`), true/false/yes/no/on/off, null/~.  Not supported:
anchors, multi-line quoted strings, flow mappings, tags.
"""

from __future__ import annotations

import json
import re


class YamlError(ValueError):
    def __init__(self, message: str, line: int | None = None):
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line


_INT_RE = re.compile(r"^[-+]?(0|[1-9][0-9_]*)$")
_FLOAT_RE = re.compile(r"^[-+]?(\d[\d_]*\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|\d+[eE][-+]?\d+)$")


def _find_unquoted(text: str, stop) -> int:
    """Index of the first character outside '...' and "..." for which stop(text, i) holds, or -1."""
    quote = None
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif stop(text, i):
            return i
    return -1


def _strip_comment(text: str) -> str:
    end = _find_unquoted(text, lambda t, i: t[i] == "#" and (i == 0 or t[i - 1] in " \t"))
    return (text if end < 0 else text[:end]).rstrip()


def _split_flow(text: str, line: int) -> list[str]:
    items, cur, quote, depth = [], [], None, 0
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if quote or depth:
        raise YamlError("unbalanced quotes or brackets", line)
    last = "".join(cur).strip()
    if last or items:
        items.append(last)
    return items


# A block scalar's text travels through the line parser as one token: this
# marker followed by the JSON-encoded string (no YAML line can contain a NUL).
_BLOCK_TOKEN = "\x00"
# `key: |-`, `- >`, `key: |2` ...: the header of a block scalar ends the line.
_BLOCK_HEADER = re.compile(r"(?:^|:[ ]+|^-[ ]+)([|>](?:[1-9][+-]?|[+-][1-9]?)?)$")


def _block_scalar(raw_lines, start: int, parent_indent: int, header: str, line: int):
    """(text, next line index) of the block scalar whose header is on line start-1."""
    style, rest = header[0], header[1:]
    chomp = "+" if "+" in rest else "-" if "-" in rest else ""
    digits = [c for c in rest if c.isdigit()]
    indent = parent_indent + int(digits[0]) if digits else None
    body: list[str] = []
    i = start
    while i < len(raw_lines):
        raw = raw_lines[i]
        if raw.strip() == "":
            # Spaces beyond the block's indentation are content (a blank line of code).
            body.append(raw[indent:] if indent is not None and len(raw) > indent else "")
            i += 1
            continue
        ind = len(raw) - len(raw.lstrip(" "))
        if indent is None:
            if ind <= parent_indent:
                break
            indent = ind
        if ind < indent:
            break
        body.append(raw[indent:])
        i += 1
    # Trailing empty lines belong to the block only for chomping; the next
    # construct starts after them either way.
    content = body
    while content and content[-1].strip() == "":
        content = content[:-1]
    trailing = len(body) - len(content)
    if style == "|":
        text = "\n".join(content)
    else:
        text = _fold(content)
    if not content:
        return ("\n" * trailing if chomp == "+" else ""), i
    if chomp == "-":
        return text, i
    if chomp == "+":
        return text + "\n" * (trailing + 1), i
    return text + "\n", i


def _fold(lines: list[str]) -> str:
    """YAML folding: line breaks between plain lines become spaces, an empty
    line stays a newline, more-indented lines keep their breaks."""
    out = ""
    prev_plain = False
    pending_empty = 0
    for ln in lines:
        if ln == "":
            pending_empty += 1
            continue
        plain = not ln.startswith((" ", "\t"))
        if out or pending_empty:
            if pending_empty:
                out += "\n" * (pending_empty if (prev_plain and plain) else pending_empty + 1)
            elif prev_plain and plain:
                out += " "
            else:
                out += "\n"
        out += ln
        prev_plain = plain
        pending_empty = 0
    return out


def scalar(text: str, line: int | None = None):
    t = text.strip()
    if t == "":
        return None
    if t.startswith(_BLOCK_TOKEN):
        return json.loads(t[len(_BLOCK_TOKEN):])
    if t[0] in "'\"":
        if len(t) < 2 or t[-1] != t[0]:
            raise YamlError(f"unterminated string {t!r}", line)
        body = t[1:-1]
        if t[0] == "'":
            return body.replace("''", "'")
        return bytes(body, "utf-8").decode("unicode_escape")
    if t.startswith("["):
        if not t.endswith("]"):
            raise YamlError(f"unterminated list {t!r}", line)
        return [scalar(x, line) for x in _split_flow(t[1:-1], line)]
    if t.startswith("{"):
        raise YamlError("flow mappings ({...}) are not supported", line)
    low = t.lower()
    if low in ("null", "~", "none"):
        return None
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if _INT_RE.match(t):
        return int(t.replace("_", ""))
    if _FLOAT_RE.match(t):
        return float(t.replace("_", ""))
    if low in (".inf", "+.inf"):
        return float("inf")
    if low == "-.inf":
        return float("-inf")
    if low == ".nan":
        return float("nan")
    return t


def loads(text: str):
    lines = []
    raw_lines = text.splitlines()
    i = 0
    while i < len(raw_lines):
        raw = raw_lines[i]
        n = i + 1
        i += 1
        if raw.strip() in ("---", "..."):
            continue
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise YamlError("tabs are not allowed for indentation", n)
        body = _strip_comment(raw)
        if not body.strip():
            continue
        indent = len(body) - len(body.lstrip(" "))
        stripped = body.strip()
        m = _BLOCK_HEADER.search(stripped)
        if m and not stripped.startswith(("'", '"')):
            # The block's parent is the key (or the `- ` item) that owns it.
            head = stripped[:m.start(1)]
            parent = indent + (2 if head.startswith("- ") and ":" in head else 0)
            text_value, i = _block_scalar(raw_lines, i, parent, m.group(1), n)
            stripped = head + _BLOCK_TOKEN + json.dumps(text_value)
        lines.append((n, indent, stripped))
    if not lines:
        return {}
    value, pos = _block(lines, 0, lines[0][1])
    if pos != len(lines):
        raise YamlError("unexpected indentation", lines[pos][0])
    return value


def _block(lines, pos, indent):
    body = lines[pos][2]
    if body.startswith("- ") or body == "-":
        return _list(lines, pos, indent)
    return _map(lines, pos, indent)


def _split_key(body: str, n: int):
    colon = _find_unquoted(body, lambda t, i: t[i] == ":" and (i + 1 == len(t) or t[i + 1] == " "))
    if colon < 0:
        raise YamlError(f"expected 'key: value', got {body!r}", n)
    key = body[:colon].strip()
    if key[:1] in "'\"":
        key = scalar(key, n)
    return key, body[colon + 1:].strip()


def _map(lines, pos, indent):
    out = {}
    while pos < len(lines):
        n, ind, body = lines[pos]
        if ind < indent:
            break
        if ind > indent:
            raise YamlError("unexpected indentation", n)
        if body.startswith("- "):
            raise YamlError("list item where a key was expected", n)
        key, rest = _split_key(body, n)
        if key in out:
            raise YamlError(f"duplicate key {key!r}", n)
        pos += 1
        if rest:
            out[key] = scalar(rest, n)
        elif pos < len(lines) and (lines[pos][1] > indent or
                                   (lines[pos][1] == indent and lines[pos][2].startswith("-"))):
            out[key], pos = _block(lines, pos, lines[pos][1])
        else:
            out[key] = None
    return out, pos


def _list(lines, pos, indent):
    out = []
    while pos < len(lines):
        n, ind, body = lines[pos]
        if ind < indent or not (body.startswith("- ") or body == "-"):
            break
        if ind > indent:
            raise YamlError("unexpected indentation", n)
        rest = body[1:].strip()
        pos += 1
        if not rest:
            if pos < len(lines) and lines[pos][1] > indent:
                item, pos = _block(lines, pos, lines[pos][1])
            else:
                item = None
            out.append(item)
            continue
        # "- key: value" starts an inline mapping item.
        if re.match(r"^[^'\"\[][^:]*:( |$)", rest):
            sub_indent = ind + (len(body) - len(rest))
            sub = [(n, sub_indent, rest)]
            j = pos
            while j < len(lines) and lines[j][1] >= sub_indent:
                sub.append(lines[j])
                j += 1
            item, used = _map(sub, 0, sub_indent)
            if used != len(sub):
                raise YamlError("bad list item mapping", n)
            pos = j
            out.append(item)
        else:
            out.append(scalar(rest, n))
    return out, pos
