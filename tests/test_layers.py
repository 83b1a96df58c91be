"""The package's layers point one way: a module imports only modules of its own layer or
of a lower one (every import counted, as tests/test_server_imports.py reads them: top
level, inside functions and under ``TYPE_CHECKING`` alike). ARCHITECTURE.md, "Layers",
says what each layer holds and why."""

from __future__ import annotations

import ast

import pytest
from test_server_imports import ROOT, import_graph

#: Lowest first. A module belongs to the first layer one of whose prefixes names it or a
#: package above it; every module of svc_frames must belong to one.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # query: filters validated and encoded without the application; filters: the builder
    ("base", ("errors", "keys", "names", "kinds", "arrowcols", "joins", "schema", "query",
              "filters", "progress")),
    ("http", ("http",)),
    # the records carried by http/, and what resolves a target or a field among them
    # (labels: the name a field's column shows, which field lookup accepts too; query.prepare:
    # filters prepared against the schema, their fields looked up)
    ("records", ("records", "lookup", "query.prepare", "labels")),
    # frames, and how they show themselves (display: by shape, below frames.py)
    ("frames", ("frames", "display")),
    ("read", ("read", "catalog")),
    ("writeback", ("writeback", "assets")),
    # undo: a write-back run reversed through write_back
    ("undo", ("undoing",)),
    ("saved", ("saved", "application")),
    # read_object(cache=) loads through the cache, which refreshes: the public loaders sit
    # with the refresh they open; the mirror keeps the application's memory by refreshing
    ("refresh", ("refreshing", "mirroring", "loaders")),
    # restore: a mirror's history written back through undo's machinery
    ("restore", ("restoring",)),
    # cli: the package cli/ (one module per subcommand, and what they share), all of it top
    ("top", ("cli", "demo", "reviewing", "widgets", "plot", "testing", "")),
]

#: The longest a module may be (ARCHITECTURE.md, "one room per idea"); the local service
#: (``server/``) is exempt.
MAX_LINES = 600

#: The local service: beside the toolkit, not in its stack. It imports only the base;
#: only the top (the CLI, the demo, testing helpers) imports it.
SERVER = "server"


def layer_of(module: str) -> int:
    """The index in LAYERS of ``svc_frames.<module>`` (``""``: the package itself)."""
    name = module.removeprefix("svc_frames").removeprefix(".")
    best: tuple[int, int] | None = None   # (prefix length, layer): the longest prefix wins
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if name == p or (p and name.startswith(p + ".")):
                if best is None or len(p) > best[0]:
                    best = (len(p), i)
    if best is None:
        raise AssertionError(f"{module} is in no layer of tests/test_layers.py: add it")
    return best[1]


def is_server(module: str) -> bool:
    return module == f"svc_frames.{SERVER}" or module.startswith(f"svc_frames.{SERVER}.")


def offending(graph: dict[str, set[str]]) -> list[str]:
    """Every import that runs up a layer (or across to the service), as a sentence."""
    out = []
    top = len(LAYERS) - 1
    for mod in sorted(graph):
        for dep in sorted(graph[mod]):
            if is_server(mod):
                if not is_server(dep) and layer_of(dep) != 0:
                    out.append(f"{mod} (the local service) imports {dep} "
                               f"({LAYERS[layer_of(dep)][0]}): the service imports only "
                               "the base")
                continue
            if is_server(dep):
                if layer_of(mod) != top:
                    out.append(f"{mod} ({LAYERS[layer_of(mod)][0]}) imports {dep}: only "
                               "the top layer imports the local service")
                continue
            if layer_of(dep) > layer_of(mod):
                out.append(f"{mod} ({LAYERS[layer_of(mod)][0]}) imports {dep} "
                           f"({LAYERS[layer_of(dep)][0]}): up a layer")
    return out


def test_every_module_has_a_layer() -> None:
    for mod in import_graph():
        if not is_server(mod):
            layer_of(mod)


def test_no_import_runs_up_a_layer() -> None:
    bad = offending(import_graph())
    assert not bad, "imports that run up a layer:\n" + "\n".join(bad)


def test_the_transport_knows_nothing_of_records() -> None:
    """http/ sends requests: filters, sorts, keys and records are the records layer's."""
    graph = import_graph()
    for mod, deps in graph.items():
        if mod.startswith("svc_frames.http"):
            assert not {d for d in deps if d.removeprefix("svc_frames.").split(".")[0]
                        in ("query", "keys", "filters", "schema")}, mod


@pytest.mark.parametrize(("graph", "expected"), [
    ({"svc_frames.frames": {"svc_frames.read.rawpages"}, "svc_frames.read.rawpages": set()},
     "svc_frames.frames (frames) imports svc_frames.read.rawpages (read): up a layer"),
    ({"svc_frames.http.client": {"svc_frames.server.app"}, "svc_frames.server.app": set()},
     "svc_frames.http.client (http) imports svc_frames.server.app: only the top layer "
     "imports the local service"),
    ({"svc_frames.server.store": {"svc_frames.frames"}, "svc_frames.frames": set()},
     "svc_frames.server.store (the local service) imports svc_frames.frames (frames): "
     "the service imports only the base"),
])
def test_the_checker_names_the_offending_import(graph: dict[str, set[str]],
                                                expected: str) -> None:
    assert offending(graph) == [expected]


def test_the_checker_allows_imports_down_and_within() -> None:
    assert offending({"svc_frames.read.pager": {"svc_frames.frames", "svc_frames.read.keyset",
                                                "svc_frames.errors"},
                      "svc_frames.cli.serve": {"svc_frames.server.service"}}) == []


def test_every_module_of_the_cli_is_top() -> None:
    """The CLI is a package: each of its modules sits at the top (may import the service)."""
    top = len(LAYERS) - 1
    cli = [m for m in import_graph() if m.startswith("svc_frames.cli.")]
    assert {"svc_frames.cli.serve", "svc_frames.cli.registry"} <= set(cli)
    assert all(layer_of(m) == top for m in cli)


def test_no_module_outside_the_service_runs_over_the_limit() -> None:
    """A module over ``MAX_LINES`` holds several ideas: split it, one room per idea."""
    long = {str(p.relative_to(ROOT.parent)): n for p in ROOT.rglob("*.py")
            if not p.relative_to(ROOT).parts[0] == SERVER
            and (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_private_name_is_imported_from_another_module() -> None:
    """A name with a leading underscore belongs to its module: another module that needs
    it needs it public (named and documented), not reached into."""
    reached = [f"{path.relative_to(ROOT.parent)}: {node.module}.{alias.name}"
               for path in ROOT.rglob("*.py")
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.ImportFrom)
               for alias in node.names
               if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert not reached, f"private names imported across modules: {reached}"
