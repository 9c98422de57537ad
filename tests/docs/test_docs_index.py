"""docs/README.md is the index of docs/: it links every page, and every link resolves; each page
opens (after its title) with a paragraph saying what it is for, not with a heading, a table, a
list or a command to run."""
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted(p for p in DOCS.glob("*.md") if p.name != "README.md")


def test_the_index_links_every_page_and_nothing_missing():
    index = (DOCS / "README.md").read_text()
    linked = set(re.findall(r"\]\(([^)#]+\.md)\)", index))
    assert linked == {p.name for p in PAGES}


def test_every_page_opens_with_what_it_is_for():
    for page in [DOCS / "README.md", *PAGES]:
        lines = [line for line in page.read_text().splitlines() if line.strip()]
        assert lines[0].startswith("# "), page.name
        opening = lines[1]
        assert not opening.startswith(("#", "|", "```", "- ", "* ", "1.", "<", "$ ")), (page.name, opening)
        assert len(opening.split()) >= 5, (page.name, opening)
