"""DESIGN.md invariant 7: imports point down the pipeline, and there are no import cycles.

Sources are parsed with `ast`, never imported. Layers, bottom to top:

  base      unigrad/dtype.py, config.py, helpers.py, flavor.py: importable by anyone; they import only each other
            (helpers nothing, config helpers, dtype helpers and config (and flavor, in a function), flavor
            helpers, config and dtype)
  ir        may import base, ir
  pipeline  may import base, ir, pipeline
  render    may import base, ir, pipeline, render
  runtime   may import base, ir, pipeline, render, runtime
  top       unigrad/__init__.py, tensor.py, gradient.py, function.py, nn/: may import anything

A module not named above (a new unigrad/foo.py) counts as top: lower layers may not import it until it is
given a layer here. Direction is checked on every import, wherever it sits (inside functions and under
`if TYPE_CHECKING:` too). Cycles are checked on the imports that run at import time: module level, class
bodies, `if`/`try`/`with` blocks; not function bodies and not `if TYPE_CHECKING:` blocks.
"""

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "unigrad"
PACKAGE_DIR = Path(__file__).resolve().parent.parent / PACKAGE

LEVEL = {"base": 0, "ir": 1, "pipeline": 2, "render": 3, "runtime": 4, "top": 5}
LAYER_PACKAGES = ("ir", "pipeline", "render", "runtime")
TOP_MODULES = ("tensor", "gradient", "function", "nn")
# base modules and the base modules each one may import
# (dtype reads the flavor's default int in a function body, after both modules loaded: no cycle at import time)
BASE_IMPORTS = {
    "helpers": set(),
    "config": {"helpers"},
    "dtype": {"helpers", "config", "flavor"},
    "flavor": {"helpers", "config", "dtype"},
}
# names that are submodules of the package even before their file exists
KNOWN_SUBMODULES = set(LAYER_PACKAGES) | set(TOP_MODULES) | set(BASE_IMPORTS)


@dataclass(frozen=True)
class Import:
    target: str  # dotted module name, resolved
    lineno: int
    runs_at_import: bool  # False inside a function body or an `if TYPE_CHECKING:` block


def layer_of(module: str) -> str:
    parts = module.split(".")
    assert parts[0] == PACKAGE, module
    if len(parts) == 1:
        return "top"  # the package __init__
    if parts[1] in BASE_IMPORTS:
        return "base"
    if parts[1] in LAYER_PACKAGES:
        return parts[1]
    return "top"  # tensor, gradient, function, nn, and anything not yet classified


def module_name(path: Path, package_dir: Path) -> str:
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def resolve_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module named by `from <...> import`, absolute or relative to the importing module's package."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    if node.level - 1 > len(package) - 1:
        raise ValueError(f"{module}: relative import beyond the top-level package (line {node.lineno})")
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def collect_imports(module: str, is_package: bool, source: str, known: set[str]) -> list[Import]:
    """Every import of a unigrad module in `source`; `from pkg import name` targets pkg.name when it is a module."""
    found: list[Import] = []

    def add(target: str, lineno: int, runs: bool) -> None:
        if target == PACKAGE or target.startswith(PACKAGE + "."):
            found.append(Import(target, lineno, runs))

    def visit(node: ast.AST, runs: bool) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno, runs)
        elif isinstance(node, ast.ImportFrom):
            base = resolve_from(module, is_package, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in known or (base == PACKAGE and alias.name in KNOWN_SUBMODULES):
                    add(sub, node.lineno, runs)
                else:
                    add(base, node.lineno, runs)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for child in ast.iter_child_nodes(node):
                visit(child, False)
        elif isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.body:
                visit(child, False)
            for child in node.orelse:
                visit(child, runs)
        else:
            for child in ast.iter_child_nodes(node):
                visit(child, runs)

    visit(ast.parse(source, filename=module), True)
    return found


def allowed(importer: str, target: str) -> bool:
    src, dst = layer_of(importer), layer_of(target)
    if src == "base":
        return dst == "base" and target.split(".")[1] in BASE_IMPORTS[importer.split(".")[1]]
    return dst == "base" or LEVEL[dst] <= LEVEL[src]


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module, or a module importing itself (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return cycles


def check(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """sources: module name -> (source, is_package). Returns every violation, one line each."""
    known = set(sources)
    errors: list[str] = []
    graph: dict[str, set[str]] = {m: set() for m in sources}
    for module, (source, is_package) in sorted(sources.items()):
        try:
            imports = collect_imports(module, is_package, source, known)
        except (SyntaxError, ValueError) as e:
            errors.append(f"{module}: cannot check imports: {e}")
            continue
        for imp in imports:
            if not allowed(module, imp.target):
                errors.append(
                    f"{module} (layer {layer_of(module)}) imports {imp.target} (layer {layer_of(imp.target)})"
                    f" at line {imp.lineno}"
                )
            if imp.runs_at_import and imp.target in known:
                graph[module].add(imp.target)
    for cycle in find_cycles(graph):
        errors.append("import cycle among: " + ", ".join(cycle))
    return errors


def package_sources(package_dir: Path = PACKAGE_DIR) -> dict[str, tuple[str, bool]]:
    return {
        module_name(path, package_dir): (path.read_text(encoding="utf-8"), path.name == "__init__.py")
        for path in sorted(package_dir.rglob("*.py"))
    }


# ---- the real package


def test_imports_point_down_the_pipeline():
    errors = check(package_sources())
    assert not errors, "import rule violations:\n" + "\n".join(errors)


# The core (Tensor and its api mixins, gradients, @function) sits below unigrad.nn: nn builds on it, never the
# reverse, not even inside a function. ir/pipeline/render/runtime are kept off nn by the layer rules above.
CORE_PREFIXES = ("unigrad.api", "unigrad.tensor", "unigrad.gradient", "unigrad.function")
# core modules that still reach into unigrad.nn, to be moved out (none: torch's top-level spellings of nn.functional
# live in unigrad/torch_nn_functions.py, above nn)
CORE_IMPORTS_NN_PENDING: set[str] = set()


def core_modules_importing_nn(sources: dict[str, tuple[str, bool]]) -> dict[str, list[int]]:
    """core module -> the lines where it imports unigrad.nn or a submodule of it (anywhere in the file)."""
    known = set(sources)
    found: dict[str, list[int]] = {}
    for module, (source, is_package) in sorted(sources.items()):
        if not any(module == p or module.startswith(p + ".") for p in CORE_PREFIXES):
            continue
        for imp in collect_imports(module, is_package, source, known):
            if imp.target == "unigrad.nn" or imp.target.startswith("unigrad.nn."):
                found.setdefault(module, []).append(imp.lineno)
    return found


def test_core_never_imports_nn():
    found = core_modules_importing_nn(package_sources())
    wrong = {m: lines for m, lines in found.items() if m not in CORE_IMPORTS_NN_PENDING}
    assert not wrong, f"core modules importing unigrad.nn (module: lines): {wrong}"
    stale = CORE_IMPORTS_NN_PENDING - set(found)
    assert not stale, f"no longer import unigrad.nn: drop them from CORE_IMPORTS_NN_PENDING: {sorted(stale)}"


def test_core_never_imports_nn_checker():
    sources = mods(
        unigrad__api__math="def f():\n    from unigrad.nn.functional import prelu\n",
        unigrad__api__reduce="from unigrad import nn\n",
        unigrad__tensor="import unigrad.nn\n",
        unigrad__nn__init="from unigrad.tensor import Tensor\n",
        unigrad__nn__functional="",
    )
    found = core_modules_importing_nn(sources)
    assert found == {"unigrad.api.math": [2], "unigrad.api.reduce": [1], "unigrad.tensor": [1]}


# ---- the checker itself, on synthetic sources


def mods(**modules: str) -> dict[str, tuple[str, bool]]:
    """mods(unigrad__ir__uop="...") -> {"unigrad.ir.uop": ("...", False)}; a name ending in __init is a package."""
    out = {}
    for key, source in modules.items():
        name = key.replace("__", ".")
        is_package = name.endswith(".init") or name == "init"
        name = name.removesuffix(".init") if is_package else name
        out[name] = (source, is_package)
    return out


def test_checker_reports_ir_importing_runtime():
    errors = check(mods(unigrad__ir__uop="from unigrad.runtime import Device\n", unigrad__runtime__init=""))
    assert len(errors) == 1 and "unigrad.ir.uop (layer ir) imports unigrad.runtime (layer runtime)" in errors[0]
    errors = check(mods(unigrad__ir__uop="import unigrad.runtime.ops_cpu\n"))
    assert len(errors) == 1 and "imports unigrad.runtime.ops_cpu" in errors[0]


def test_checker_resolves_relative_imports():
    # from unigrad/ir/uop.py, `..runtime` is unigrad.runtime; from unigrad/ir/__init__.py, `.` is unigrad.ir
    errors = check(mods(unigrad__ir__uop="from ..runtime import ops_cpu\n", unigrad__runtime__ops_cpu=""))
    assert len(errors) == 1 and "imports unigrad.runtime.ops_cpu" in errors[0]
    good = mods(unigrad__ir__init="from . import uop\nfrom .. import dtype\n", unigrad__ir__uop="", unigrad__dtype="")
    assert check(good) == []
    errors = check(mods(unigrad__pipeline__optimize__search="from ...render import c\n", unigrad__render__c=""))
    assert len(errors) == 1 and "optimize.search (layer pipeline) imports unigrad.render.c (layer render)" in errors[0]


def test_checker_forbids_top_layer_below_top():
    for source in ("from unigrad import Tensor\n", "from unigrad.tensor import Tensor\n", "from .. import nn\n"):
        errors = check(mods(unigrad__runtime__realize=source))
        assert len(errors) == 1 and "(layer top)" in errors[0], source
    assert check(mods(unigrad__tensor="from unigrad.runtime import Device\nfrom .ir.uop import UOp\n")) == []


def test_checker_base_modules():
    assert check(mods(unigrad__dtype="from unigrad.helpers import x\nfrom .config import y\n")) == []
    errors = check(mods(unigrad__helpers="from unigrad.dtype import dtypes\n"))
    assert len(errors) == 1 and "unigrad.helpers (layer base) imports unigrad.dtype" in errors[0]
    errors = check(mods(unigrad__config="from unigrad.ir.ops import Ops\n"))
    assert len(errors) == 1 and "imports unigrad.ir.ops (layer ir)" in errors[0]
    assert check(mods(unigrad__ir__ops="from unigrad.dtype import DType\nfrom ..config import Context\n")) == []


def test_checker_finds_cycles_at_import_time_only():
    cyclic = mods(unigrad__ir__a="from . import b\n", unigrad__ir__b="from unigrad.ir.a import f\n")
    assert check(cyclic) == ["import cycle among: unigrad.ir.a, unigrad.ir.b"]
    deferred = mods(unigrad__ir__a="from . import b\n", unigrad__ir__b="def f():\n    from unigrad.ir.a import g\n")
    assert check(deferred) == []
    typing_only = mods(
        unigrad__ir__a="from . import b\n",
        unigrad__ir__b="from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from unigrad.ir.a import g\n",
    )
    assert check(typing_only) == []


def test_nn_backed_torch_functions_are_listed_where_unigrad_finds_them():
    """unigrad.__getattr__ resolves torch.conv2d & co. from torch_functions.NN_FUNCTIONS without importing nn: the
    list names exactly what torch_nn_functions defines."""
    import unigrad
    from unigrad import torch_nn_functions
    from unigrad.api import torch_functions

    assert sorted(torch_functions.NN_FUNCTIONS) == sorted(torch_nn_functions.__all__)
    assert all(getattr(unigrad, name) is getattr(torch_nn_functions, name) for name in torch_functions.NN_FUNCTIONS)
