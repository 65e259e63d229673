"""Print code lines per module under unigrad/ (not blank, not comment-only, not docstring), sorted by path.

Usage: python tools/linecount.py [PACKAGE_DIR]   (default: unigrad/ next to this tools/ folder)
"""

import ast
import io
import sys
import tokenize
from pathlib import Path

# tokens that never make a line count as code
NON_CODE = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
NON_CODE |= {tokenize.ENCODING, tokenize.ENDMARKER}


def docstring_lines(tree: ast.AST) -> set[int]:
    """Line numbers covered by module, class and function docstrings."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) or not node.body:
            continue
        first = node.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def code_lines(source: str) -> int:
    """Count lines holding at least one code token, not counting docstrings."""
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in NON_CODE:
            lines.update(range(tok.start[0], tok.end[0] + 1))  # multi-line strings count every line
    try:
        lines -= docstring_lines(ast.parse(source))
    except SyntaxError:
        pass  # a file being edited may not parse; count it with its docstrings
    return len(lines)


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent / "unigrad"
    files = sorted(root.rglob("*.py")) if root.is_dir() else []
    if not files:
        print(f"no Python files under {root}")
        return 0
    rows = []
    for path in files:
        try:
            count = code_lines(path.read_text(encoding="utf-8"))
        except (tokenize.TokenError, SyntaxError, UnicodeDecodeError) as e:
            print(f"warning: could not tokenize {path}: {e}", file=sys.stderr)
            continue
        rows.append((path.relative_to(root.parent).as_posix(), count))
    width = max(len(name) for name, _ in rows + [("total", 0)])
    print(f"{'module':<{width}}  {'lines':>6}")
    print(f"{'-' * width}  {'-' * 6}")
    for name, count in rows:
        print(f"{name:<{width}}  {count:>6}")
    print(f"{'-' * width}  {'-' * 6}")
    print(f"{'total':<{width}}  {sum(count for _, count in rows):>6}   ({len(rows)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
