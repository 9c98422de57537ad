"""The load bench's documents and its typing model (stdlib only, deterministic per seed).

Documents: generated Pallas modules (bench/lsp_latency/corpus_gen.py, a few kernels each, some
with a deliberate MK001 error) plus copies of tests/optimize/kernels/scale_rows.py, each with its
own scale constant, whose in-file task lets Test, Profile and Auto run on them.

Typing: a burst opens a new line after a kernel's `def`, types a phrase one character per
keystroke, deletes it again with backspaces and then removes the line, so every document returns
to its original text and its size stays bounded over a long run (memory growth then means the
server keeps something it should not). In task documents the phrase is a comment, so a job that
starts mid-burst still sees a valid task.
"""
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "bench" / "lsp_latency"))
import corpus_gen  # noqa: E402

TASK_KERNEL = ROOT / "tests" / "optimize" / "kernels" / "scale_rows.py"
CODE_PHRASE = "row_scale = 1.0 / 8"
COMMENT_PHRASE = "# try BLOCK_ROWS = 16"


class Document:
    def __init__(self, name, text, has_task):
        self.name = name
        self.text_at_open = text
        self.lines = text.split("\n")
        self.has_task = has_task
        self.version = 1
        self.uri = None  # set once written to disk

    def text(self):
        return "\n".join(self.lines)

    def def_lines(self):
        return [n for n, line in enumerate(self.lines) if line.startswith("def _") and "kernel" in line]

    def call_positions(self):
        """(line, character) on the `pallas_call` token of every call site."""
        return [(n, line.index("pallas_call") + 3) for n, line in enumerate(self.lines) if "pl.pallas_call(" in line]

    def apply(self, start, end, text):
        """Replaces the range (line, character)..(line, character) by text (ASCII only, so UTF-16
        columns are code points)."""
        (l0, c0), (l1, c1) = start, end
        merged = self.lines[l0][:c0] + text + self.lines[l1][c1:]
        self.lines[l0:l1 + 1] = merged.split("\n")


def generate_documents(seed, n_docs, n_task_docs, lines_per_doc):
    docs = []
    for i in range(n_task_docs):
        scale = 3.0 + 0.25 * (i + 1)
        text = TASK_KERNEL.read_text().replace("* 3.0", f"* {scale}")
        docs.append(Document(f"task_{i:02d}.py", text, True))
    for i in range(n_docs - n_task_docs):
        n_kernels = 2 + i % 3
        text, _ = corpus_gen.generate(seed + i, n_kernels, lines_per_doc, n_bad=1 if i % 4 == 0 else 0)
        docs.append(Document(f"module_{i:02d}.py", text, False))
    return docs


class Typist:
    """Yields one incremental change per keystroke, spread over the documents: each burst stays in
    one document; the next burst picks a document at random."""

    def __init__(self, docs, seed):
        self.docs = docs
        self.rng = random.Random(seed)
        self.steps = iter(())
        self.current = None

    def _burst(self, doc):
        line = self.rng.choice(doc.def_lines())
        end_of_def = len(doc.lines[line])
        indent = "    "
        phrase = COMMENT_PHRASE if doc.has_task else CODE_PHRASE
        yield (line, end_of_def), (line, end_of_def), "\n" + indent
        for col, ch in enumerate(phrase):
            at = (line + 1, len(indent) + col)
            yield at, at, ch
        for col in range(len(indent) + len(phrase), len(indent), -1):
            yield (line + 1, col - 1), (line + 1, col), ""
        yield (line, end_of_def), (line + 1, len(indent)), ""

    def keystroke(self):
        """Applies the next change to its document; returns (doc, change params)."""
        while True:
            for start, end, text in self.steps:
                doc = self.current
                doc.apply(start, end, text)
                doc.version += 1
                change = {"range": {"start": {"line": start[0], "character": start[1]},
                                    "end": {"line": end[0], "character": end[1]}}, "text": text}
                return doc, {"textDocument": {"uri": doc.uri, "version": doc.version}, "contentChanges": [change]}
            self.current = self.rng.choice(self.docs)
            self.steps = self._burst(self.current)
