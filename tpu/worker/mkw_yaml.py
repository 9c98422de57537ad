"""A tiny YAML subset reader for kernel_task.yaml (PyYAML is not guaranteed
on the host).

Supported: `key: value` mappings (nested by indentation), block lists
(`- item`), inline lists (`[a, b]`), `#` comments, single/double quoted
strings, and scalars: int, float (also `1e-5`), true/false/yes/no/on/off,
null/~.  Not supported: anchors, multi-line strings, flow mappings, tags.
"""

from __future__ import annotations

import re


class YamlError(ValueError):
    def __init__(self, message: str, line: int | None = None):
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line


_INT_RE = re.compile(r"^[-+]?(0|[1-9][0-9_]*)$")
_FLOAT_RE = re.compile(r"^[-+]?(\d[\d_]*\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|\d+[eE][-+]?\d+)$")


def _strip_comment(text: str) -> str:
    out, quote = [], None
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            break
        out.append(ch)
    return "".join(out).rstrip()


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


def scalar(text: str, line: int | None = None):
    t = text.strip()
    if t == "":
        return None
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
    for n, raw in enumerate(text.splitlines(), start=1):
        if raw.strip() in ("---", "..."):
            continue
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise YamlError("tabs are not allowed for indentation", n)
        body = _strip_comment(raw)
        if not body.strip():
            continue
        indent = len(body) - len(body.lstrip(" "))
        lines.append((n, indent, body.strip()))
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
    quote = None
    for i, ch in enumerate(body):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == ":" and (i + 1 == len(body) or body[i + 1] == " "):
            key = body[:i].strip()
            if key[:1] in "'\"":
                key = scalar(key, n)
            return key, body[i + 1:].strip()
    raise YamlError(f"expected 'key: value', got {body!r}", n)


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
