"""Applying LSP TextEdits to a str the way an editor does: positions are UTF-16 code units, and
the edits of one TextDocumentEdit all refer to the text before any of them."""


def _offset(lines, pos):
    """The str index of an LSP position in `lines` (text.splitlines(keepends=True))."""
    line = pos["line"]
    if line >= len(lines):
        return sum(len(l) for l in lines)
    base = sum(len(l) for l in lines[:line])
    units, i, text = 0, 0, lines[line]
    while i < len(text) and units < pos["character"]:
        units += 2 if ord(text[i]) > 0xFFFF else 1
        i += 1
    return base + i


def apply_text_edits(text, edits):
    """The text after `edits` (a list of LSP TextEdit); they must not overlap."""
    lines = text.splitlines(keepends=True)
    spans = sorted(((_offset(lines, e["range"]["start"]), _offset(lines, e["range"]["end"]), e["newText"])
                    for e in edits), key=lambda s: s[0])
    for (_, end, _), (start, _, _) in zip(spans, spans[1:]):
        assert end <= start, f"overlapping edits: {edits}"
    for start, end, new in reversed(spans):
        text = text[:start] + new + text[end:]
    return text
