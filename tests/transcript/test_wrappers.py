"""A kernel called through the project's own pallas_call wrapper, defined in another file of the
workspace: the real server finds the wrapper module under the workspace folder, gives the site its
lenses and checks, and follows edits of the wrapper module."""
import os

import pytest

from lsp_client import default_capabilities

WRAPPER = '''from jax.experimental import pallas as pl


def pallas_call(kernel, *args, **kwargs):
    return pl.pallas_call(kernel, *args, **kwargs)
'''

# The same module, but the function runs a kernel of its own: no longer a wrapper.
NOT_A_WRAPPER = '''from jax.experimental import pallas as pl


def own_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def pallas_call(kernel, *args, **kwargs):
    return pl.pallas_call(own_kernel, *args, **kwargs)
'''

KERNEL = '''import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from pkg import block


def copy_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def copy():
    x = jnp.zeros((1024, 1024), jnp.float32)
    return block.pallas_call(
        copy_kernel,
        out_shape=jax.ShapeDtypeStruct((1024, 1024), jnp.float32),
        grid=(8,),
        in_specs=[pl.BlockSpec((100, 1024), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((128, 1024), lambda i: (i, 0)),
    )(x)
'''


def line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


@pytest.fixture
def workspace(tmp_path, client):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "block.py").write_text(WRAPPER)
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "copy.py").write_text(KERNEL)
    client.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(),
                                  "workspaceFolders": [{"uri": tmp_path.as_uri(), "name": "ws"}],
                                  "capabilities": default_capabilities()})
    client.notify("initialized", {})
    return tmp_path


def change_all(client, uri, version, text):
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                             "contentChanges": [{"text": text}]})


def test_kernel_behind_a_wrapper_in_another_file(client, workspace):
    uri = (workspace / "kernels" / "copy.py").as_uri()
    client.open(uri, KERNEL)
    diags = client.diagnostics(uri, version=1)
    assert [(d["code"], d["range"]["start"]["line"]) for d in diags] == [
        ("MK001", line_of(KERNEL, "pl.BlockSpec((100, 1024)"))], diags

    call_line = line_of(KERNEL, "block.pallas_call(")
    lenses = client.request("textDocument/codeLens", {"textDocument": {"uri": uri}})["result"]
    titles = [lens["command"]["title"] for lens in lenses]
    assert "Test" in titles and "Profile" in titles, titles
    assert all(lens["range"]["start"]["line"] == call_line for lens in lenses)

    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": {"line": call_line, "character": 14}})
    assert "copy_kernel" in hover["result"]["contents"]["value"]

    # Editing the open wrapper module re-analyses the kernel file: no wrapper, no site.
    wrapper_uri = (workspace / "pkg" / "block.py").as_uri()
    client.open(wrapper_uri, WRAPPER)
    assert [d["code"] for d in client.diagnostics(uri, version=1)] == ["MK001"]  # same text
    change_all(client, wrapper_uri, 2, NOT_A_WRAPPER)
    assert client.diagnostics(uri, version=1) == []
    lenses = client.request("textDocument/codeLens", {"textDocument": {"uri": uri}})["result"]
    assert not any(lens["command"]["title"] == "Test" for lens in lenses), lenses

    # And back.
    change_all(client, wrapper_uri, 3, WRAPPER)
    diags = client.diagnostics(uri, version=1)
    assert [d["code"] for d in diags] == ["MK001"]


# A kernel library outside the workspace re-exports pallas_call as `block.pallas_call`, as public
# GPU/Triton kernel libraries do: no file of the workspace describes it.
LIBRARY_KERNEL = '''import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import kernel_lib.block as block
import kernel_lib.util as util


def copy_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def copy(x):
    return block.pallas_call(
        copy_kernel,
        out_shape=jax.ShapeDtypeStruct((1024, 1024), jnp.float32),
        grid=(8,),
        in_specs=[pl.BlockSpec((128, 1024), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((128, 1024), lambda i: (i, 0)),
    )(x)


def helper(x):
    return util.pallas_call_helper(copy_kernel, x)
'''


def test_pallas_call_of_a_library_module_outside_the_workspace(client, workspace):
    uri = (workspace / "kernels" / "library.py").as_uri()
    client.open(uri, LIBRARY_KERNEL)
    assert client.diagnostics(uri, version=1) == []
    call_line = line_of(LIBRARY_KERNEL, "block.pallas_call(")
    lenses = client.request("textDocument/codeLens", {"textDocument": {"uri": uri}})["result"]
    titles = [lens["command"]["title"] for lens in lenses]
    assert "Test" in titles and "Profile" in titles, titles
    # Only the pallas_call site has lenses: `util.pallas_call_helper` is not one.
    assert {lens["range"]["start"]["line"] for lens in lenses} == {call_line}, lenses

    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": {"line": call_line, "character": 14}})
    text = hover["result"]["contents"]["value"]
    assert "copy_kernel" in text and "kernel_lib.block.pallas_call" in text, text
