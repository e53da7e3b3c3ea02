#!/usr/bin/env python3
"""Checks that a markdown op table (docs/ir.md's) is the op table `lazyjit-dump --list-ops` prints.

usage: lazyjit-dump --list-ops | check-op-doc.py DOC.md           (exit 1 and a diff if they differ)
       lazyjit-dump --list-ops | check-op-doc.py --write DOC.md   (rewrite DOC.md's table from it)

--list-ops prints one op per line, its columns at least two spaces apart (no value holds two
spaces in a row), under a header line. DOC.md's table is the block of lines starting with `|`
whose first line is the markdown form of that header. Each row is rendered as
`| `UnaryOps.EXP2` | 1 | no argument | ... |`: the op and the function names in backticks, a
missing value as `-`. The table `| argument | text fields |` names every argument kind the ops
have, and no other.
"""
import difflib
import re
import sys

CODE_COLUMNS = {"op", "libm", "NVPTX"}


def list_ops_rows(text):
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        sys.exit("check-op-doc: no --list-ops output on stdin")
    rows = [re.split(r" {2,}", line.rstrip()) for line in lines]
    header = rows[0]
    for i, row in enumerate(rows[1:], 2):
        if len(row) != len(header):
            sys.exit(f"check-op-doc: --list-ops line {i} has {len(row)} columns, the header {len(header)}: "
                     f"{lines[i - 1]!r}")
    return header, rows[1:]


def markdown(header, rows):
    def cell(column, value):
        return f"`{value}`" if column in CODE_COLUMNS and value != "-" else value

    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        out.append("| " + " | ".join(cell(c, v) for c, v in zip(header, row)) + " |")
    return out


def find_table(doc_lines, header_line):
    for start, line in enumerate(doc_lines):
        if line.rstrip() == header_line:
            end = start
            while end < len(doc_lines) and doc_lines[end].startswith("|"):
                end += 1
            return start, end
    return None


def main(argv):
    write = "--write" in argv
    paths = [a for a in argv if a != "--write"]
    if len(paths) != 1:
        sys.exit(__doc__)
    path = paths[0]
    header, rows = list_ops_rows(sys.stdin.read())
    want = markdown(header, rows)
    with open(path, encoding="utf-8") as f:
        doc = f.read().splitlines()
    where = find_table(doc, want[0])
    if where is None:
        print(f"{path}: no op table (a line '{want[0]}')", file=sys.stderr)
        return 1
    start, end = where
    have = [line.rstrip() for line in doc[start:end]]
    ok = True
    # every argument kind an op has is in the table of text fields, and no other
    kinds = {row[header.index("argument")] for row in rows}
    fields = find_table(doc, "| argument | text fields |")
    documented = set()
    if fields:
        documented = {line.split("|")[1].strip() for line in doc[fields[0] + 2:fields[1]]}
    if documented != kinds:
        print(f"{path}: the table of the arguments' text fields lacks {sorted(kinds - documented)} and has "
              f"{sorted(documented - kinds)}, which no op takes", file=sys.stderr)
        ok = False
    if have == want:
        print(f"{path}: the op table matches --list-ops ({len(rows)} ops, {len(kinds)} argument kinds)")
    elif write:
        doc[start:end] = want
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(doc) + "\n")
        print(f"{path}: op table rewritten from --list-ops ({len(rows)} ops)")
    else:
        print(f"{path}:{start + 1}: the op table differs from `lazyjit-dump --list-ops` (Ops.def); "
              f"regenerate it with `lazyjit-dump --list-ops | {sys.argv[0]} --write {path}`:", file=sys.stderr)
        sys.stderr.writelines(line + "\n" for line in difflib.unified_diff(
            have, want, f"{path} (the table)", "--list-ops", lineterm="", n=0))
        ok = False
    return 0 if ok else 1

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
