"""bugloop's own rules for Python: bugs no rule of the well-kept analyzers catches, found in the
syntax tree alone (the code is parsed, never imported or run). Prints SARIF 2.1.0.

Run by the sandbox's python3 as `python3 -I -S -B bugloop_python.py -- FILE...`: isolated, so
nothing in the checked repository (a module named `ast`, a `sitecustomize`, PYTHON* variables)
is loaded in place of the standard library.

BLP001 index-past-end: a sequence read at `len(seq)`, which is one past its last index and
always raises IndexError when reached: `seq[len(seq)]`, or `seq[i]` where `i` runs up to
`len(seq)` (`for i in range(..., len(seq) + 1)`, `range(len(seq), -1, -1)`, in a loop or a
comprehension). A read the code guards (a comparison with the index in the loop, a `try`
around it) or a sequence the loop changes is left alone: the rule says only what is certain.
"""

import ast
import json
import sys

MAX_BYTES = 1 << 20

RULES = [
    {
        "id": "BLP001",
        "name": "index-past-end",
        "shortDescription": {"text": "A sequence read one past its last index"},
        "fullDescription": {
            "text": "An index that reaches len(seq) reads past the end of seq and raises IndexError."
        },
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["correctness"]},
    }
]


def same(a, b):
    return ast.dump(a) == ast.dump(b)


def len_of(node):
    """The sequence `node` is `len(...)` of, else None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "len"
        and len(node.args) == 1
        and not node.keywords
    ):
        return node.args[0]
    return None


def constant_int(node):
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def len_plus(node):
    """(seq, k) when `node` is `len(seq)` (k = 0) or `len(seq) + k` / `k + len(seq)`."""
    seq = len_of(node)
    if seq is not None:
        return seq, 0
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        for left, right in ((node.left, node.right), (node.right, node.left)):
            seq, k = len_of(left), constant_int(right)
            if seq is not None and k is not None:
                return seq, k
    return None


def past_end_range(call):
    """The sequence a `range(...)` call's values reach `len(...)` of, else None."""
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "range"
        and not call.keywords
        and 1 <= len(call.args) <= 3
        and not any(isinstance(a, ast.Starred) for a in call.args)
    ):
        return None
    args = call.args
    step = constant_int(args[2]) if len(args) == 3 else 1
    if step is None or step == 0:
        return None
    if step > 0:
        found = len_plus(args[-1] if len(args) == 1 else args[1])
        # Up to `len(seq) + k - 1`: past the end when k >= 1 (with a step of 1; a larger step
        # may jump over len(seq), so only `+ 1` with step 1 is certain).
        if found and found[1] >= 1 and step == 1:
            return found[0]
        return None
    if len(args) >= 2:
        found = len_plus(args[0])
        # Counting down from `len(seq) + k`: the first value is past the end when k >= 0.
        if found and found[1] >= 0:
            return found[0]
    return None


def names_in(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def changes(body_nodes, seq, index):
    """Whether the code assigns the index or the sequence, compares the index with anything,
    calls a method of the sequence (append, pop, ...), catches errors or may leave the loop
    early: then the read may be guarded or never reached, and nothing is certain."""
    for top in body_nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Compare) and index in names_in(node):
                return True
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if index in names_in(target) or any(same(t, seq) for t in ast.walk(target)):
                        return True
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and same(node.func.value, seq)
            ):
                return True
            # A guard, or a way out of the loop before its end.
            if isinstance(node, (ast.Try, ast.IfExp, ast.Break, ast.Return, ast.Raise)):
                return True
            if type(node).__name__ == "TryStar":
                return True
    return False


def index_of(subscript):
    """What a subscript indexes with (Python 3.8 wraps it in `ast.Index`)."""
    inner = subscript.slice
    return inner.value if type(inner).__name__ == "Index" else inner


def reads(body_nodes, seq, index):
    """The reads `seq[index]` in the code."""
    for top in body_nodes:
        for node in ast.walk(top):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Load)
                and same(node.value, seq)
                and isinstance(index_of(node), ast.Name)
                and index_of(node).id == index
            ):
                yield node


def hits(tree):
    """(read, index, loop) for each read past the end: the subscript, the name of the index
    that reaches len(seq) (None for `seq[len(seq)]`), and the range it runs through. Reported
    where the fix goes: at the range (a loop's first read past the end names it), else at the
    read."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            found = len_plus(index_of(node))
            if found and found[1] >= 0 and same(found[0], node.value):
                yield node, node, None, None
        loops = []
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            loops.append((node.target.id, node.iter, node.body))
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            for generator in node.generators:
                if isinstance(generator.target, ast.Name) and not generator.ifs:
                    loops.append((generator.target.id, generator.iter, parts))
        for index, iterator, body in loops:
            seq = past_end_range(iterator)
            if seq is None or changes(body, seq, index):
                continue
            for read in reads(body, seq, index):
                yield iterator, read, index, iterator


def quoted(source, node):
    """The code of `node` on one line, at most 60 characters (an expression can be any size)."""
    text = " ".join((ast.get_source_segment(source, node) or "...").split())
    return text if len(text) <= 60 else text[:59] + "…"


def message(source, read, index, loop):
    text = lambda node: quoted(source, node)
    seq = text(read.value)
    if index is None:
        return (
            f"`{text(read)}` reads one past the end of `{seq}` and always raises IndexError: "
            f"len({seq}) is one more than its last index"
        )
    return (
        f"`{text(read)}` reads one past the end of `{seq}` and raises IndexError: `{index}` "
        f"reaches len({seq}) in `{text(loop)}`, one more than its last index"
    )


def result(path, place, text):
    return {
        "ruleId": "BLP001",
        "ruleIndex": 0,
        "level": "error",
        "message": {"text": text},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": path},
                    "region": {
                        "startLine": place.lineno,
                        "startColumn": place.col_offset + 1,
                        "endLine": place.end_lineno,
                        "endColumn": place.end_col_offset + 1,
                    },
                }
            }
        ],
    }


def check(path):
    """The results for one file; a file that cannot be read or parsed has none (ruff reports a
    syntax error, and a file of another language is not this rule set's)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            return []
        source = data.decode("utf-8")
        tree = ast.parse(source, filename=path)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = {}
    for place, read, index, loop in hits(tree):
        found.setdefault((place.lineno, place.col_offset), (place, read, index, loop))
    return [
        result(path, place, message(source, read, index, loop))
        for _, (place, read, index, loop) in sorted(found.items(), key=lambda item: item[0])
    ]


def main(argv):
    files = argv[argv.index("--") + 1 :] if "--" in argv else argv
    results = []
    for path in files:
        results.extend(check(path))
    log = {
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [
            {
                "tool": {"driver": {"name": "bugloop-python", "rules": RULES}},
                "results": results,
            }
        ],
    }
    json.dump(log, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
