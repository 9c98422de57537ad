"""`maxkernel report` on a real run store written by the demo helper: the page it writes, where it
writes it, --latest / --list, and clear errors for unknown runs, missing stores and bad usage."""

import html
import re
from html.parser import HTMLParser

from conftest import run_cli

PLANTED = "<script>alert(1)</script>"


class Collector(HTMLParser):
    """Checks the page parses and collects tags, node ids in the graph and the best row text."""

    def __init__(self):
        super().__init__()
        self.tags = []
        self.graph_nodes = set()
        self.meta = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if tag == "g" and "data-node" in attrs:
            self.graph_nodes.add(int(attrs["data-node"]))
        if tag == "meta":
            self.meta.append(attrs)


def parse(text):
    collector = Collector()
    collector.feed(text)
    collector.close()
    return collector


def test_report_by_id_writes_a_safe_self_contained_page(demo_store, tmp_path):
    store, run_id = demo_store
    out = tmp_path / "out" / "report.html"
    out.parent.mkdir()
    done = run_cli("report", run_id, "-o", out, "--store", store)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)
    page = out.read_text(encoding="utf-8")
    doc = parse(page)
    assert "script" not in doc.tags
    assert "<script" not in page.lower()
    assert html.escape(PLANTED, quote=True).replace("&#x27;", "&#39;") in page
    csp = [m for m in doc.meta if m.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]["content"]
    assert doc.graph_nodes == set(range(6))
    best = re.search(r"<tr><th>best speedup</th><td>(.*?)</td></tr>", page, re.DOTALL)
    assert (
        best and "1.42x" in best.group(1) and "predicted (model, v5e)" in best.group(1)
    )
    assert '<span class="add">+BLOCK_ROWS = 32</span>' in page
    assert "https://" not in page and "<link" not in page


def test_default_output_name_is_in_the_working_directory(demo_store, tmp_path):
    store, run_id = demo_store
    work = tmp_path / "work"
    work.mkdir()
    done = run_cli("report", run_id, "--store", store, cwd=work)
    assert done.returncode == 0, done.stderr
    expected = work / f"maxkernel-report-{run_id}.html"
    assert done.stdout.strip() == str(expected)
    assert expected.is_file() and expected.stat().st_size > 1000


def test_latest_and_list(demo_store, tmp_path):
    store, run_id = demo_store
    done = run_cli(
        "report", "--latest", "--store", store, "-o", tmp_path / "latest.html"
    )
    assert done.returncode == 0, done.stderr
    assert run_id in (tmp_path / "latest.html").read_text(encoding="utf-8")
    listed = run_cli("report", "--list", "--store", store)
    assert listed.returncode == 0 and run_id in listed.stdout


def test_unknown_run_is_a_clear_error(demo_store, tmp_path):
    store, run_id = demo_store
    done = run_cli("report", "r-does-not-exist", "--store", store, cwd=tmp_path)
    assert done.returncode == 1
    assert "no run 'r-does-not-exist'" in done.stderr
    assert run_id in done.stderr  # it names the runs that do exist
    assert not list(tmp_path.glob("maxkernel-report-*.html"))


def test_missing_store_is_not_created(tmp_path):
    store = tmp_path / "nothing.sqlite"
    done = run_cli("report", "--latest", "--store", store)
    assert done.returncode == 1
    assert "no run store" in done.stderr
    assert not store.exists()


def test_bad_usage_exits_2(demo_store):
    store, run_id = demo_store
    assert run_cli("report", "--store", store).returncode == 2
    assert run_cli("report", run_id, "--latest", "--store", store).returncode == 2
    assert run_cli("report", run_id, "--bogus").returncode == 2
    assert run_cli("report", run_id, "-o").returncode == 2
