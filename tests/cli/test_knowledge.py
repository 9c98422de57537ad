"""`maxkernel knowledge`: add documents, search them the way the agents do, record and list lessons.
Each test uses its own store file (--store) so nothing touches the user's cache."""
import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The exact text JAX 0.10.2 raised when exporting a kernel with a (7, 128) block for TPU.
BLOCK_SHAPE_ERROR = (
    "ValueError: The Pallas TPU lowering currently requires that the last two dimensions of your "
    "block shape are divisible by 8 and 128 respectively, or be equal to the respective dimensions "
    "of the overall array. Block spec for args[0] in pallas_call copy_kernel at /tmp/collect.py:14 "
    "has block shape (Blocked(block_size=7), Blocked(block_size=128)), array shape (56, 256), and "
    "index_map { lambda ; a:i32[] b:i32[]. let  in (a, b) }, in memory space "
    "<MemorySpace.DEFAULT: 'default'>."
)


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def knowledge(store, *args, env=None):
    return subprocess.run([maxkernel(), "knowledge", *map(str, args), "--store", str(store)],
                          check=False, capture_output=True, text=True, timeout=60, env=env)


def search_json(store, *args):
    result = knowledge(store, "search", *args, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["passages"]


def write_notes(folder):
    folder.mkdir()
    (folder / "tiling.md").write_text("# Team tiling notes\n## Walrus trick\nUse walrus tiles for v5e.\n"
                                      "## Otter layout\nOtter layout keeps lanes dense.\n")
    (folder / "sub").mkdir()
    (folder / "sub" / "memo.txt").write_text("The narwhal memo about megacore splits.\n")
    (folder / "sub" / "kernel.py").write_text("def pelican_kernel(x_ref, o_ref):\n    o_ref[...] = x_ref[...]\n")
    (folder / "ignored.json").write_text('{"platypus": 1}')
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "platypus.md").write_text("# Platypus\nplatypus in a hidden folder\n")


def test_add_reports_indexed_then_unchanged_then_changed(tmp_path):
    store = tmp_path / "s.sqlite"
    notes = tmp_path / "notes"
    write_notes(notes)
    first = knowledge(store, "add", notes, "--format", "json")
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert data["indexed"] == 3 and data["unchanged"] == 0 and data["failed"] == 0
    assert data["chunks"] == 4  # two sections + the memo + the function
    assert {Path(d["source"]).name for d in data["documents"]} == {"tiling.md", "memo.txt", "kernel.py"}

    again = knowledge(store, "add", notes)
    assert again.returncode == 0
    assert "indexed 0 document(s) (0 chunks), 3 unchanged" in again.stdout

    (notes / "tiling.md").write_text("# Team tiling notes\n## Heron trick\nHeron tiles only now.\n")
    changed = knowledge(store, "add", notes)
    assert "indexed 1 document(s) (1 chunks), 2 unchanged" in changed.stdout
    assert search_json(store, "walrus", "--kind", "user") == []
    heron = search_json(store, "heron")
    assert [p["heading"] for p in heron] == ["Heron trick"]
    assert heron[0]["title"] == "Team tiling notes" and heron[0]["kind"] == "user"
    assert search_json(store, "platypus", "--kind", "user") == []  # .json files are not indexed


def test_search_shows_title_source_score_snippet(tmp_path):
    store = tmp_path / "s.sqlite"
    passages = search_json(store, "accumulator float32 scratch", "--limit", "3")
    assert 1 <= len(passages) <= 3
    top = passages[0]
    assert top["source"] == "bundled/optimization_strategies.md"
    assert "f32 VMEM scratch" in top["heading"]
    assert "[" in top["snippet"] and top["text"]
    assert [p["score"] for p in passages] == sorted((p["score"] for p in passages), reverse=True)

    text = knowledge(store, "search", "accumulator", "float32", "scratch", "--limit", "1")
    assert text.returncode == 0
    lines = text.stdout.splitlines()
    assert lines[0].startswith("1. Catalogue of Pallas TPU optimisation strategies > ")
    assert "(score " in lines[0]
    assert lines[1].strip() == "bundled/optimization_strategies.md"


def test_real_block_shape_error_retrieves_the_block_shape_passage_first(tmp_path):
    passages = search_json(tmp_path / "s.sqlite", BLOCK_SHAPE_ERROR)
    assert passages, "nothing retrieved for a real lowering error"
    assert "divisible by 8 and 128" in passages[0]["heading"]


def test_hostile_queries_are_answered_not_crashed(tmp_path):
    store = tmp_path / "s.sqlite"
    for query in ['"', '(((', 'NEAR(a b', '* OR AND', "col:x'); DROP TABLE documents; --", "^^^"]:
        result = knowledge(store, "search", query, "--format", "json")
        assert result.returncode == 0, (query, result.stderr)
        assert isinstance(json.loads(result.stdout)["passages"], list)
    assert search_json(store, "megacore")  # the store still works


def test_files_that_are_not_utf8_still_index_and_print(tmp_path):
    store = tmp_path / "s.sqlite"
    latin1 = tmp_path / "latin1.md"
    latin1.write_bytes(b"# Notes\n\xe9t\xe9 caf\xe9 zebu tiles\n")
    assert knowledge(store, "add", latin1).returncode == 0
    for fmt in ("json", "text"):
        r = knowledge(store, "search", "zebu", "--format", fmt)
        assert r.returncode == 0, r.stderr
    assert json.loads(knowledge(store, "search", "zebu", "--format", "json").stdout)["passages"]


def test_lessons_are_listed_best_first_and_filtered(tmp_path):
    store = tmp_path / "s.sqlite"
    for cls, strategy, effect, target in [("matmul", "bigger tiles", "1.4", "v5e"),
                                          ("matmul", "bf16 inputs", "2.5", "v5e"),
                                          ("matmul", "deeper buffering", "0.8", "v5e"),
                                          ("matmul", "256 tiles", "1.9", "v6e"),
                                          ("reduction", "f32 scratch", "1.2", "v5e")]:
        r = knowledge(store, "record-lesson", "--class", cls, "--strategy", strategy,
                      "--effect", effect, "--target", target, "--run", "r1")
        assert r.returncode == 0, r.stderr
    listed = knowledge(store, "lessons", "--class", "matmul", "--target", "v5e", "--format", "json")
    lessons = json.loads(listed.stdout)["lessons"]
    assert [l["strategy"] for l in lessons] == ["bf16 inputs", "bigger tiles", "deeper buffering"]
    assert all(l["kernel_class"] == "matmul" and l["target"] == "v5e" for l in lessons)
    everything = json.loads(knowledge(store, "lessons", "--format", "json").stdout)["lessons"]
    assert len(everything) == 5
    text = knowledge(store, "lessons", "--class", "reduction").stdout
    assert text.startswith("1.20x  reduction on v5e: f32 scratch")
    assert "no lessons recorded" in knowledge(store, "lessons", "--class", "attention").stdout


def test_concurrent_first_uses_of_a_new_store_all_succeed(tmp_path):
    store = tmp_path / "shared.sqlite"
    procs = [subprocess.Popen([maxkernel(), "knowledge", "search", "megacore", "--store", str(store),
                               "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(6)]
    results = [(p.communicate(timeout=60), p.returncode) for p in procs]
    for (out, err), rc in results:
        assert rc == 0, err
        assert json.loads(out)["passages"], "a racing process saw a half-indexed corpus"
    # Exactly one copy of each bundled passage: the corpus was indexed once.
    tops = [json.loads(out)["passages"][0]["heading"] for (out, _), _ in results]
    assert len(set(tops)) == 1
    listed = search_json(store, "megacore", "--limit", "50")
    assert len({(p["source"], p["heading"], p["text"]) for p in listed}) == len(listed)


def test_default_store_comes_from_the_environment(tmp_path):
    env = dict(os.environ, MAXKERNEL_STORE=str(tmp_path / "env.sqlite"))
    r = subprocess.run([maxkernel(), "knowledge", "record-lesson", "--class", "scan",
                        "--strategy", "blocked scan", "--effect", "1.1"],
                       check=False, capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "env.sqlite").exists()


def test_bad_usage_is_a_clear_error(tmp_path):
    store = tmp_path / "s.sqlite"
    cases = [
        (("add", tmp_path / "missing"), "no such file or directory"),
        (("add",), "needs at least one PATH"),
        (("search",), "needs a QUERY"),
        (("search", "x", "--limit", "abc"), "--limit"),
        (("search", "x", "--format", "xml"), "--format"),
        (("frobnicate",), "unknown subcommand"),
        (("record-lesson", "--class", "matmul", "--strategy", "s", "--effect", "-2"), "must be > 0"),
        (("record-lesson", "--class", "matmul"), "needs --class, --strategy and --effect"),
    ]
    for args, message in cases:
        r = knowledge(store, *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert message in r.stderr, (args, r.stderr)
    (tmp_path / "data.json").write_text("{}")
    r = knowledge(store, "add", tmp_path / "data.json")
    assert r.returncode == 2 and "not a .md, .txt or .py file" in r.stderr
    r = knowledge(tmp_path / "is_a_dir_not_a_db" / "..", "search", "x")
    assert r.returncode == 2 and "knowledge store" in r.stderr
