"""Every document the code cites is in the repository, and every docs/ link resolves.

A contributor who clones the repository must be able to follow each reference: a ``*.md``
path in a docstring or comment, a ``§N.N`` section of a document under ``docs/``, a link
of README.md or ARCHITECTURE.md into ``docs/``, a module path named by a document, and
any ``*.py`` file named by the package's code or a document (a bare name, ``pager.py``, is
found in whichever folder holds it).

Usage: ``.venv/bin/python -m pytest -q tests/test_docs.py``
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CODE_DIRS = ("svc_frames", "tests", "benchmarks")
TOP_DOCS = ("README.md", "ARCHITECTURE.md")

MD_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md)\b")
SECTION = re.compile(r"(docs/[\w.-]+\.md) §(\d+(?:\.\d+)*)")
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
DOCS_PATH = re.compile(r"(?<![\w/.-])(docs/[\w./-]*[\w/])")
MODULE_PATH = re.compile(r"(?<![\w/.-])(svc_frames/[\w/]*\w(?:\.py)?)")
PY_NAME = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*\w+\.py)\b")
HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.M)
HEADING_NUMBER = re.compile(r"^(\d+(?:\.\d+)*)\.? ")


def code_files() -> list[Path]:
    # this file names broken references on purpose, to show the patterns see them
    return sorted(p for d in CODE_DIRS for p in (REPO / d).rglob("*.py")
                  if p.resolve() != Path(__file__).resolve())


def doc_files() -> list[Path]:
    return sorted((REPO / "docs").glob("*.md"))


def python_files() -> list[str]:
    """Every ``*.py`` of the repository (its virtual environment left out), by path."""
    return sorted(p.relative_to(REPO).as_posix() for p in REPO.rglob("*.py")
                  if not p.relative_to(REPO).parts[0].startswith("."))


def missing_python(text: str, files: list[str]) -> list[str]:
    """The ``*.py`` names in ``text`` that no file of ``files`` is (or ends with)."""
    return sorted({m for m in PY_NAME.findall(text)
                   if not any(f == m or f.endswith("/" + m) for f in files)})


def rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)


def slug(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading (GitHub's rule)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def sections(doc: Path) -> set[str]:
    """The section numbers of a document's headings (``## 4.5 Remote login`` -> ``4.5``)."""
    out = set()
    for heading in HEADING.findall(doc.read_text(encoding="utf-8")):
        m = HEADING_NUMBER.match(heading)
        if m:
            out.add(m.group(1))
    return out


def anchors(doc: Path) -> set[str]:
    return {slug(h) for h in HEADING.findall(doc.read_text(encoding="utf-8"))}


def link_problem(source: Path, target: str) -> str | None:
    """Why a relative link from ``source`` does not resolve, or None when it does."""
    if re.match(r"[a-z]+:", target):  # an absolute URL: not ours to check
        return None
    path_part, _, anchor = target.partition("#")
    dest = (source.parent / path_part).resolve() if path_part else source
    if not dest.exists():
        return f"{rel(source)}: link {target!r} points to a missing file"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
        return f"{rel(source)}: link {target!r} names no heading of {rel(dest)}"
    return None


def test_the_service_documents_are_in_the_repository() -> None:
    for name in ("service-interface.md", "hosted-behaviour.md", "README.md"):
        assert (REPO / "docs" / name).is_file(), f"docs/{name} is missing"


@pytest.mark.parametrize("path", code_files(), ids=rel)
def test_every_cited_document_exists(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    missing = sorted({m for m in MD_PATH.findall(text) if not (REPO / m).is_file()})
    assert not missing, f"{rel(path)} cites documents not in the repository: {missing}"


@pytest.mark.parametrize("path", code_files(), ids=rel)
def test_every_cited_section_exists(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    bad = sorted({f"{doc} §{num}" for doc, num in SECTION.findall(text)
                  if (REPO / doc).is_file() and num not in sections(REPO / doc)})
    assert not bad, f"{rel(path)} cites sections that no heading carries: {bad}"


@pytest.mark.parametrize("name", TOP_DOCS)
def test_top_level_links_into_docs_resolve(name: str) -> None:
    source = REPO / name
    text = source.read_text(encoding="utf-8")
    problems = [p for t in MD_LINK.findall(text) if t.startswith("docs/")
                if (p := link_problem(source, t))]
    problems += [f"{name}: {m!r} does not exist" for m in DOCS_PATH.findall(text)
                 if not (REPO / m).exists()]
    bad_sections = [f"{name}: {d} §{n}" for d, n in SECTION.findall(text)
                    if (REPO / d).is_file() and n not in sections(REPO / d)]
    assert not problems + bad_sections, problems + bad_sections


@pytest.mark.parametrize("doc", doc_files(), ids=rel)
def test_links_and_module_paths_in_docs_resolve(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    problems = [p for t in MD_LINK.findall(text) if (p := link_problem(doc, t))]
    problems += [f"{rel(doc)}: {m!r} does not exist" for m in MODULE_PATH.findall(text)
                 if not (REPO / m).exists()]
    assert not problems, problems


def test_every_named_python_file_exists() -> None:
    """A module named in the package's docstrings and comments, in docs/, README.md or
    ARCHITECTURE.md is a file of the repository (a renamed or removed module leaves none
    behind)."""
    files = python_files()
    named = [*sorted((REPO / "svc_frames").rglob("*.py")), *doc_files(),
             *(REPO / name for name in TOP_DOCS)]
    bad = {rel(p): m for p in named
           if (m := missing_python(p.read_text(encoding="utf-8"), files))}
    assert not bad, f"files named that do not exist: {bad}"


def test_the_checks_catch_a_broken_reference(tmp_path: Path) -> None:
    """The patterns above do see what they must refuse (so the tests can fail)."""
    assert MD_PATH.findall("see interface.md 2.1 and docs/x.md") == ["interface.md", "docs/x.md"]
    assert SECTION.findall("(docs/service-interface.md §4.4 rules 1-2)") == [
        ("docs/service-interface.md", "4.4")]
    assert "4.4" in sections(REPO / "docs" / "service-interface.md")
    assert "9.9" not in sections(REPO / "docs" / "service-interface.md")
    page = tmp_path / "page.md"
    page.write_text("# 1. Top: first\n", encoding="utf-8")
    assert link_problem(page, "#1-top-first") is None
    assert link_problem(page, "#2-missing") is not None
    assert link_problem(page, "nowhere.md") is not None
    assert MODULE_PATH.findall("in `svc_frames/server/app.py` and svc_frames/kinds/") == [
        "svc_frames/server/app.py", "svc_frames/kinds"]
    files = ["svc_frames/read/pager.py", "svc_frames/kinds/dates.py"]
    assert missing_python("pager.py, read/pager.py, kinds/dates.py and decoder.py",
                          files) == ["decoder.py"]


MEASURED = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
MEASURE_WORDS = re.compile(r"\b(measured|median|took|best of)\b", re.I)


def dated_measurements(text: str) -> list[str]:
    """Lines holding a date and a measuring word: a figure of one day, which belongs in
    docs/benchmarks.md (or its history), not in a comment that outlives it."""
    return [line.strip() for line in text.splitlines()
            if MEASURED.search(line) and MEASURE_WORDS.search(line)]


def test_no_dated_measurement_in_the_package() -> None:
    """Figures live in docs/benchmarks.md and docs/benchmark-history.md: the package's
    comments and docstrings say why, not what one day measured."""
    bad = {rel(p): found for p in sorted((REPO / "svc_frames").rglob("*.py"))
           if (found := dated_measurements(p.read_text(encoding="utf-8")))}
    assert not bad, f"dated measurements in code (move them to docs/): {bad}"


def test_the_dated_measurement_check_sees_one() -> None:
    assert dated_measurements("x = 1  # measured 2026-11-23: median 2.71 s\n")
    assert not dated_measurements('Usage: ``as_of("app.duckdb", "2026-11-27 18:00")``\n')
