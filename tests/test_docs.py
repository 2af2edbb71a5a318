"""The README stays a front door (at most 150 lines) and every relative link in it and in docs/ resolves: to an
existing file and, with a #fragment, to a heading of that file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")
MAX_README_LINES = 150


def links(text: str) -> list[str]:
    """The link targets of a Markdown text, outside code blocks and code spans (a link's text may be a code span)."""
    return LINK.findall(CODE.sub("code", FENCE.sub("", text)))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, inline code marks and punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^a-z0-9 _-]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", FENCE.sub("", text), re.M)}


def test_the_readme_has_at_most_150_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines, above the bound {MAX_README_LINES}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in links(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not ours to check
            continue
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file.read_text(encoding="utf-8")):
            broken.append(f"{target}: no heading with the anchor #{fragment} in {file.name}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_link_checker_sees_links_and_anchors() -> None:
    text = "[a](docs/x.md) [`code`](y.md#z) `[not](a.md)`\n```\n[no](b.md)\n```\n## CP-SAT against HiGHS (`x y`)\n"
    assert links(text) == ["docs/x.md", "y.md#z"]
    assert anchors(text) == {"cp-sat-against-highs-x-y"}
