"""MkDocs hook: links from a page to repository files outside ``docs/``.

A page links a repository file outside ``docs/`` (``../BENCHMARKS.md``,
``../clients/go/README.md#tls-and-tokens``) by its relative path, so the link works where
the markdown is read in the repository. The site holds only ``docs/``: MkDocs would report
such a link as broken. This hook checks each one instead, and fails a strict build (a
warning) when the file does not exist or, for a markdown file, when the anchor names none of
its headings (GitHub's anchors: lower case, punctuation dropped, spaces as dashes). In the
site the link becomes the file's path in code formatting, or a link into the repository
when ``repo_url`` is set.

A section that moved from ``README.md`` into the guide keeps its old anchor working through
:data:`MOVED`, for the pages that are never rewritten (the decision records): such a link is
pointed at the section's page in the site.
"""

from __future__ import annotations

import logging
import posixpath
import re
from functools import cache
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

log = logging.getLogger(f"mkdocs.plugins.{__name__}")

#: ``<repository path>#<anchor>`` of a section that left README.md → its page in docs/.
MOVED = {
    "README.md#topic-creation-by-source-connectors":
        "connectors.md#topic-creation-by-source-connectors",
}

#: A code span (left alone) or an inline link that is not an image.
_SPAN_OR_LINK = re.compile(
    r"(?P<code>(?P<ticks>`+).+?(?P=ticks))"
    r"|(?<!!)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)",
    re.DOTALL,
)
_FENCE = re.compile(r"^\s*(```|~~~)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$")


def on_page_markdown(
    markdown: str, /, *, page: Page, config: MkDocsConfig, files: Files
) -> str:
    root = Path(config.config_file_path).resolve().parent
    docs_dir = Path(config.docs_dir).resolve()
    source = Path(page.file.abs_src_path or docs_dir / page.file.src_uri).resolve()
    return "".join(
        text if code else _SPAN_OR_LINK.sub(
            lambda match: _rewrite(match, source, root, docs_dir, page, config), text
        )
        for code, text in _chunks(markdown)
    )


def _chunks(markdown: str) -> list[tuple[bool, str]]:
    """The text, unchanged, cut into prose and fenced code blocks: (is code, text)."""
    chunks: list[tuple[bool, str]] = []
    current: list[str] = []
    fence: str | None = None
    for line in markdown.splitlines(keepends=True):
        opening = _FENCE.match(line)
        if fence is None and opening is not None:
            chunks.append((False, "".join(current)))
            current, fence = [line], opening.group(1)
            continue
        current.append(line)
        if fence is not None and line.strip().startswith(fence):
            chunks.append((True, "".join(current)))
            current, fence = [], None
    chunks.append((fence is not None, "".join(current)))
    return chunks


def _rewrite(
    match: re.Match[str], source: Path, root: Path, docs_dir: Path, page: Page,
    config: MkDocsConfig,
) -> str:
    target = match.group("target")
    if match.group("code") is not None or target is None or target.startswith("#"):
        return match.group(0)
    if _SCHEME.match(target):
        return match.group(0)
    path, _, anchor = target.partition("#")
    resolved = (source.parent / path).resolve()
    if resolved == docs_dir or docs_dir in resolved.parents or root not in resolved.parents:
        return match.group(0)  # a page of the site (MkDocs checks it), or outside the repo
    relative = resolved.relative_to(root).as_posix()
    if not resolved.exists():
        log.warning("%s links %s, which is not in the repository", page.file.src_uri, relative)
        return match.group(0)
    if anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
        moved = MOVED.get(f"{relative}#{anchor}")
        if moved is None:
            log.warning("%s links %s#%s, a heading %s does not have", page.file.src_uri,
                        relative, anchor, relative)
            return match.group(0)
        here = posixpath.dirname(page.file.src_uri)
        return f"[{match.group('text')}]({posixpath.relpath(moved, here or '.')})"
    text = match.group("text")
    shown = relative + ("/" if resolved.is_dir() else "")
    if config.repo_url:
        url = f"{config.repo_url.rstrip('/')}/blob/HEAD/{shown}" + (f"#{anchor}" if anchor else "")
        return f"[{text}]({url})"
    if text.strip("`") == shown.rstrip("/") or text.strip("`") == shown:
        return f"`{shown}`"
    return f"{text} (`{shown}`)"


@cache
def _anchors(document: Path) -> frozenset[str]:
    """The anchors GitHub gives the headings of a markdown file."""
    seen: dict[str, int] = {}
    anchors: set[str] = set()
    fenced = False
    for line in document.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        heading = None if fenced else _HEADING.match(line)
        if heading is None:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group("title").strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return frozenset(anchors)
