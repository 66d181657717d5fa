"""bugloop's own rules for Python: bugs no rule of the well-kept analyzers catches, found in the
syntax tree alone (the code is parsed, never imported or run). Prints SARIF 2.1.0.

Run by the sandbox's python3 as `python3 -I -S -B bugloop_python.py -- FILE...`: isolated, so
nothing in the checked repository (a module named `ast`, a `sitecustomize`, PYTHON* variables)
is loaded in place of the standard library.

BLP001 index-past-end: a sequence read at `len(seq)`, which is one past its last index and
always raises IndexError when reached: `seq[len(seq)]`, or `seq[i]` where `i` runs up to
`len(seq)` (`for i in range(..., len(seq) + 1)`, `range(len(seq), -1, -1)`, in a loop or a
comprehension). A read the code guards (a comparison with the index in the loop, a `try`
around it, a way out of the loop) or a sequence the loop changes is left alone: the rule says
only what is certain.

A file it cannot read, decode or parse gets a `not-checked` result instead of none: a file
passed over in silence would be a way past the rule.
"""

import ast
import io
import json
import re
import sys
import tokenize

# A result saying a file was not checked (at line 0, about the whole file): bugloop lists the
# file as not checked by this tool and the review as incomplete, never as clean.
NOT_CHECKED = "not-checked"

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
    """The same expression, written alike (names compared directly; a dump only between nodes
    of one kind, so that a large literal is not dumped for every subscript)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, ast.Name):
        return a.id == b.id
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
                and isinstance(index_of(node), ast.Name)
                and index_of(node).id == index
                and same(node.value, seq)
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


def python_lines(source):
    """The source's lines as Python's parser counts them (a lone carriage return ends one too),
    each with its end."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n|$)", source)


def quoted(lines, node):
    """The code of `node` on one line, at most 60 characters (an expression can be any size),
    without backticks, which would end the code span it is shown in. Read from the node's
    offsets (bytes of UTF-8 within its lines): `ast.get_source_segment` takes minutes on a
    line of a megabyte."""
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        code = lines[first].encode()[node.col_offset : node.end_col_offset].decode(errors="replace")
    else:
        head = lines[first].encode()[node.col_offset :].decode(errors="replace")
        tail = lines[last].encode()[: node.end_col_offset].decode(errors="replace")
        code = " ".join([head, *lines[first + 1 : min(last, first + 4)], tail])
    text = " ".join(code[:200].split()).replace("`", "'")
    return text if len(text) <= 60 else text[:59] + "…"


def message(lines, read, index, loop):
    text = lambda node: quoted(lines, node)
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


def result(path, place, text, numbers):
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
                        "startLine": numbers[place.lineno - 1],
                        "startColumn": place.col_offset + 1,
                        "endLine": numbers[place.end_lineno - 1],
                        "endColumn": place.end_col_offset + 1,
                    },
                }
            }
        ],
    }


def not_checked(path, why):
    return {
        "ruleId": NOT_CHECKED,
        "level": "note",
        "message": {"text": f"bugloop-python did not check it: {why}"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": path}}}],
    }


def git_lines(source):
    """For each line as Python counts them (a lone carriage return ends one too), its number as
    git counts lines (by line feeds alone), so that a hit lands on the line the diff shows."""
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", source)]
    numbers, feeds, seen = [], 0, 0
    for start in starts:
        feeds += source.count("\n", seen, start)
        seen = start
        numbers.append(feeds + 1)
    return numbers


def check(path):
    """The results for one file: its hits, or one result saying why it was not checked (it
    cannot be read or decoded, Python cannot parse it, or it nests deeper than the rule can
    follow). Never nothing for a file the rule did not read: that would be a way past it."""
    version = "%d.%d" % sys.version_info[:2]
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as error:
        return [not_checked(path, f"it cannot be read ({error.strerror})")]
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        source = data.decode(encoding)
        tree = ast.parse(source, filename=path)
    except SyntaxError as error:
        where = f" at line {error.lineno}" if error.lineno else ""
        return [not_checked(path, f"Python {version} cannot parse it (a syntax error{where})")]
    except (UnicodeDecodeError, LookupError, ValueError):
        return [not_checked(path, f"Python {version} cannot read it as source (its encoding)")]
    except (RecursionError, MemoryError):
        return [not_checked(path, "it nests deeper than Python's parser goes")]
    try:
        found = {}
        for place, read, index, loop in hits(tree):
            found.setdefault((place.lineno, place.col_offset), (place, read, index, loop))
        lines, numbers = python_lines(source), git_lines(source)
        return [
            result(path, place, message(lines, read, index, loop), numbers)
            for _, (place, read, index, loop) in sorted(found.items(), key=lambda item: item[0])
        ]
    except RecursionError:
        return [not_checked(path, "its expressions nest deeper than the rule follows")]


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
