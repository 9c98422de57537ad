"""A large file is first parsed only where its kernels are, and the full parse follows off the main
loop. With the full parse held (a test method), the transcript shows: the first diagnostics,
lenses and hovers come from the partial tree; an edit inside a kernel is seen at once; an edit in
a helper the first parse left out is seen when the full parse is adopted, which publishes again;
the result equals a full parse of the same text. When the kernels' statements are many, they are
parsed and analysed as two halves side by side, and edits reach both; the kernels' bodies, which
those halves read as blank, are read by the first edit."""
import time

KERNEL = '''CONFIG_{i} = {{"rows": 1024, "block": {block}}}


def copy_kernel_{i}(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def copy_{i}(x):
    return pl.pallas_call(
        copy_kernel_{i},
        out_shape=jax.ShapeDtypeStruct((1024, 1024), jnp.float32),
        grid=(CONFIG_{i}["rows"] // CONFIG_{i}["block"],),
        in_specs=[pl.BlockSpec((CONFIG_{i}["block"], 1024), lambda r: (r, 0))],
        out_specs=pl.BlockSpec((CONFIG_{i}["block"], 1024), lambda r: (r, 0)),
    )(x)


'''

HELPER = '''def helper_{j}(shape, start={j}):
    """The product of `shape`'s dims times `start`."""
    total = start
    for dim in shape:
        total *= int(dim)
    return total


'''

# A site typed into a helper: its block of 100 rows is illegal (MK001).
TYPED_SITE = '''    bad = pl.pallas_call(
        copy_kernel_0,
        out_shape=jax.ShapeDtypeStruct((1024, 1024), jnp.float32),
        grid=(8,),
        in_specs=[pl.BlockSpec((128, 1024), lambda r: (r, 0))],
        out_specs=pl.BlockSpec((100, 1024), lambda r: (r, 0)),
    )
'''

KERNELS = 8


def large_module(kernels=KERNELS, illegal=(3,), helpers=40):
    """About 55 KB: eight kernels, one with an illegal block, between many helpers."""
    parts = ["import jax\nimport jax.numpy as jnp\nfrom jax.experimental import pallas as pl\n\n\n"]
    j = 0
    for i in range(kernels):
        for _ in range(helpers):
            parts.append(HELPER.format(j=j))
            j += 1
        parts.append(KERNEL.format(i=i, block=100 if i in illegal else 128))
    text = "".join(parts)
    assert len(text) > 48 * 1024, len(text)
    return text


def line_of(text, needle, start=0):
    return next(n for n, line in enumerate(text.splitlines()) if n >= start and needle in line)


def codes_and_lines(diags):
    return sorted((d["code"], d["range"]["start"]["line"]) for d in diags)


def partly_parsed(client):
    return client.request("maxkernel/status")["result"]["partlyParsedDocuments"]


def reopened_unparsed(client):
    return client.request("maxkernel/status")["result"]["reopenedUnparsed"]


def split_first_parses(client):
    return client.request("maxkernel/status")["result"]["splitFirstParses"]


def position(text, offset):
    return {"line": text.count("\n", 0, offset), "character": offset - (text.rfind("\n", 0, offset) + 1)}


def replace(client, uri, version, text, start, end, new):
    """Sends one incremental change of text[start:end]; returns the new text."""
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": version},
        "contentChanges": [{"range": {"start": position(text, start), "end": position(text, end)},
                            "text": new}]})
    return text[:start] + new + text[end:]


def test_a_large_file_is_analysed_from_its_kernels_first_then_from_the_full_parse(ready, tmp_path):
    client = ready
    text = large_module()
    uri = (tmp_path / "library.py").as_uri()
    assert client.request("maxkernel/test/holdFullParses", {"hold": True})["result"] == {"held": True}
    client.open(uri, text)
    bad_block = line_of(text, "out_specs=pl.BlockSpec((CONFIG_3", line_of(text, "def copy_3("))
    first = client.diagnostics(uri, version=1)
    assert codes_and_lines(first) == [("MK001", bad_block)], first
    assert partly_parsed(client) == 1

    # Lenses and hovers answer from the partial tree.
    lenses = client.request("textDocument/codeLens", {"textDocument": {"uri": uri}})["result"]
    test_lines = sorted(lens["range"]["start"]["line"] for lens in lenses if lens["command"]["title"] == "Test")
    assert test_lines == [line_of(text, "pl.pallas_call(", line_of(text, f"def copy_{i}(")) for i in range(KERNELS)]
    call = line_of(text, "pl.pallas_call(", line_of(text, "def copy_5("))
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": {"line": call, "character": 16}})
    assert "copy_kernel_5" in hover["result"]["contents"]["value"]

    # An edit in a kernel's statement is analysed at once: kernel 3's block becomes legal.
    offset = text.index('CONFIG_3 = {"rows": 1024, "block": 100}') + len('CONFIG_3 = {"rows": 1024, "block": 1')
    text = replace(client, uri, 2, text, offset, offset + 2, "28")  # 100 -> 128
    assert client.diagnostics(uri, version=2) == []

    # A site typed into a helper the first parse left out waits for the full parse.
    helper = text.index("    return total\n", text.index("def helper_60("))
    text = replace(client, uri, 3, text, helper, helper, TYPED_SITE)
    assert client.diagnostics(uri, version=3) == []
    assert partly_parsed(client) == 1

    client.request("maxkernel/test/holdFullParses", {"hold": False})
    adopted = client.diagnostics(uri, version=3)
    typed_block = line_of(text, "out_specs=pl.BlockSpec((100, 1024)", line_of(text, "def helper_60("))
    assert codes_and_lines(adopted) == [("MK001", typed_block)], adopted
    assert partly_parsed(client) == 0

    # The same text parsed in full from scratch gives the same diagnostics.
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 4},
                                             "contentChanges": [{"text": text}]})
    assert client.diagnostics(uri, version=4) == adopted


def test_a_small_file_is_parsed_in_full_at_once(ready, tmp_path):
    client = ready
    client.request("maxkernel/test/holdFullParses", {"hold": True})
    uri = (tmp_path / "small.py").as_uri()
    text = "from jax.experimental import pallas as pl\n\n\n" + "".join(HELPER.format(j=j) for j in range(20))
    client.open(uri, text)
    assert client.diagnostics(uri, version=1) == []
    assert partly_parsed(client) == 0


def full_parse_adopted(client, timeout=10):
    """Asks the server until no document is partly parsed (each answer is a turn of its loop)."""
    deadline = time.monotonic() + timeout
    while partly_parsed(client) != 0:
        assert time.monotonic() < deadline, "the full parse was never adopted"


def close(client, uri):
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []  # a closed document's diagnostics are cleared


def test_a_large_file_reopened_unchanged_keeps_its_full_tree(ready, tmp_path):
    client = ready
    text = large_module()
    uri = (tmp_path / "library.py").as_uri()
    client.open(uri, text)
    first = client.diagnostics(uri, version=1)
    full_parse_adopted(client)

    # From here on no full parse finishes: a reopen that parsed again would stay partly parsed.
    client.request("maxkernel/test/holdFullParses", {"hold": True})
    close(client, uri)
    client.open(uri, text, version=2)
    assert client.diagnostics(uri, version=2) == first
    assert partly_parsed(client) == 0 and reopened_unparsed(client) == 1

    # The kept tree takes edits: a site typed into a helper is seen at once.
    helper = text.index("    return total\n", text.index("def helper_60("))
    edited = replace(client, uri, 3, text, helper, helper, TYPED_SITE)
    typed_block = line_of(edited, "out_specs=pl.BlockSpec((100, 1024)", line_of(edited, "def helper_60("))
    bad_block = line_of(edited, "out_specs=pl.BlockSpec((CONFIG_3", line_of(edited, "def copy_3("))
    assert codes_and_lines(client.diagnostics(uri, version=3)) == sorted([("MK001", typed_block),
                                                                          ("MK001", bad_block)])

    # Reopened with another text than it was closed with: parsed afresh, its kernels first.
    close(client, uri)
    client.open(uri, text, version=4)
    assert client.diagnostics(uri, version=4) == first
    assert partly_parsed(client) == 1 and reopened_unparsed(client) == 1


def test_a_large_file_reopened_before_its_full_parse_keeps_its_partial_tree(ready, tmp_path):
    client = ready
    text = large_module()
    uri = (tmp_path / "library.py").as_uri()
    client.request("maxkernel/test/holdFullParses", {"hold": True})
    client.open(uri, text)
    first = client.diagnostics(uri, version=1)
    close(client, uri)
    client.open(uri, text, version=2)
    assert client.diagnostics(uri, version=2) == first
    assert partly_parsed(client) == 1 and reopened_unparsed(client) == 1
    # Two full parses wait now (the closed document's and the reopened one's): the first adopted,
    # the other let go; the diagnostics stay those of the text.
    client.request("maxkernel/test/holdFullParses", {"hold": False})
    full_parse_adopted(client)
    edited = replace(client, uri, 3, text, 0, 0, "# edited after the adoption\n")
    bad_block = line_of(edited, "out_specs=pl.BlockSpec((CONFIG_3", line_of(edited, "def copy_3("))
    assert codes_and_lines(client.diagnostics(uri, version=3)) == [("MK001", bad_block)]
    assert partly_parsed(client) == 0


def test_many_kernels_are_parsed_in_two_halves_and_edits_reach_both(ready, tmp_path):
    client = ready
    kernels = 40  # about 19 KB of kernels' statements: enough to cut in two
    text = large_module(kernels=kernels, illegal=(3, 28), helpers=10)
    uri = (tmp_path / "library.py").as_uri()
    client.request("maxkernel/test/holdFullParses", {"hold": True})
    client.open(uri, text)

    def bad_block(text, i):
        return line_of(text, f"out_specs=pl.BlockSpec((CONFIG_{i}", line_of(text, f"def copy_{i}("))

    first = client.diagnostics(uri, version=1)
    assert codes_and_lines(first) == [("MK001", bad_block(text, 3)), ("MK001", bad_block(text, 28))]
    assert split_first_parses(client) == 1 and partly_parsed(client) == 1
    # Every kernel has its lens, in order, and a hover in either half names its kernel.
    lenses = client.request("textDocument/codeLens", {"textDocument": {"uri": uri}})["result"]
    test_lines = [lens["range"]["start"]["line"] for lens in lenses if lens["command"]["title"] == "Test"]
    assert test_lines == [line_of(text, "pl.pallas_call(", line_of(text, f"def copy_{i}(")) for i in range(kernels)]
    for i in (1, 30):
        call = line_of(text, "pl.pallas_call(", line_of(text, f"def copy_{i}("))
        hover = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                      "position": {"line": call, "character": 16}})
        assert f"copy_kernel_{i}" in hover["result"]["contents"]["value"]

    # Edits in either half are analysed at once: kernel 28's block made legal, kernel 30's not
    # (each edit moves what follows it).
    def set_block(text, version, i, old, new):
        at = text.index(f'CONFIG_{i} = {{"rows": 1024, "block": {old}}}') + len(f'CONFIG_{i} = {{"rows": 1024, "block": ')
        return replace(client, uri, version, text, at, at + 3, new)

    text = set_block(text, 2, 28, 100, "64")
    assert codes_and_lines(client.diagnostics(uri, version=2)) == [("MK001", bad_block(text, 3))]
    text = set_block(text, 3, 30, 128, "36")
    assert codes_and_lines(client.diagnostics(uri, version=3)) == [("MK001", bad_block(text, 3)),
                                                                   ("MK001", bad_block(text, 30))]
    text = set_block(text, 4, 3, 100, "64")
    assert codes_and_lines(client.diagnostics(uri, version=4)) == [("MK001", bad_block(text, 30))]
    assert partly_parsed(client) == 1

    # Closed and reopened unchanged before the full parse: both halves are kept.
    close(client, uri)
    client.open(uri, text, version=5)
    reopened = client.diagnostics(uri, version=5)
    assert codes_and_lines(reopened) == [("MK001", bad_block(text, 30))]
    assert reopened_unparsed(client) == 1 and split_first_parses(client) == 1

    # The full parse adopted: a site typed into a helper neither half holds is seen.
    client.request("maxkernel/test/holdFullParses", {"hold": False})
    full_parse_adopted(client)
    helper = text.index("    return total\n", text.index("def helper_200("))
    text = replace(client, uri, 6, text, helper, helper, TYPED_SITE)
    typed_block = line_of(text, "out_specs=pl.BlockSpec((100, 1024)", line_of(text, "def helper_200("))
    adopted = client.diagnostics(uri, version=6)
    assert codes_and_lines(adopted) == sorted([("MK001", bad_block(text, 30)), ("MK001", typed_block)])
    # The same text parsed in full from scratch gives the same diagnostics.
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 7},
                                             "contentChanges": [{"text": text}]})
    assert client.diagnostics(uri, version=7) == adopted


def skipped_body_first_parses(client):
    return client.request("maxkernel/status")["result"]["skippedBodyFirstParses"]


def test_kernel_bodies_the_first_parse_read_as_blank_are_read_by_the_first_edit(ready, tmp_path):
    client = ready
    kernels = 40
    text = large_module(kernels=kernels, illegal=(3,), helpers=10)
    uri = (tmp_path / "library.py").as_uri()
    client.request("maxkernel/test/holdFullParses", {"hold": True})
    client.open(uri, text)
    bad_block = line_of(text, "out_specs=pl.BlockSpec((CONFIG_3", line_of(text, "def copy_3("))
    first = client.diagnostics(uri, version=1)
    assert codes_and_lines(first) == [("MK001", bad_block)]
    assert split_first_parses(client) == 1 and skipped_body_first_parses(client) == 1

    # A site typed into a kernel's body, which the first parse read as blank: seen at once.
    body = text.index("    o_ref[...] = x_ref[...]\n", text.index("def copy_kernel_30(")) + len("    o_ref[...] = x_ref[...]\n")
    text = replace(client, uri, 2, text, body, body, TYPED_SITE)
    typed_block = line_of(text, "out_specs=pl.BlockSpec((100, 1024)", line_of(text, "def copy_kernel_30("))
    in_kernel = client.diagnostics(uri, version=2)
    assert codes_and_lines(in_kernel) == sorted([("MK001", bad_block), ("MK001", typed_block)])
    assert partly_parsed(client) == 1

    # The full parse adopted: the same diagnostics, and a fresh full parse agrees.
    client.request("maxkernel/test/holdFullParses", {"hold": False})
    full_parse_adopted(client)
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3},
                                             "contentChanges": [{"text": text}]})
    assert client.diagnostics(uri, version=3) == in_kernel
