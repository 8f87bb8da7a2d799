"""Write tensorlib/data/workbook_prose.txt, the corpus the tokenizer chapter trains on: the
workbook's own prose, frozen. Run once; the file is committed and never rewritten when the
notebooks change (tensorlib.data.prose pins its SHA-256), so stored outputs stay stable.

    python scripts/freeze_prose.py

It takes, in this order, the markdown cells of the teacher's notebooks (notebook order), the
README and docs/*.md (name order), with fenced code blocks and HTML comments removed and runs
of blank lines collapsed, then the docstring of every module of the package (path order). The
text is the project's own, under its MIT license.
"""

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCED = re.compile(r"^```.*?^```[^\n]*\n?", re.MULTILINE | re.DOTALL)
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def prose_of(markdown: str) -> str:
    text = COMMENT.sub("", FENCED.sub("", markdown))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def main() -> None:
    parts = []
    for path in sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        parts += [prose_of("".join(cell["source"])) for cell in cells
                  if cell["cell_type"] == "markdown"]
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        parts.append(prose_of(path.read_text(encoding="utf-8")))
    for path in sorted((ROOT / "tensorlib").rglob("*.py")):
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        if docstring:
            parts.append(docstring.strip())
    text = "\n\n".join(part for part in parts if part) + "\n"
    target = ROOT / "tensorlib" / "data" / "workbook_prose.txt"
    target.write_text(text, encoding="utf-8")
    print(f"{target.relative_to(ROOT)}: {len(text.encode()):,} bytes, {len(text):,} characters")


if __name__ == "__main__":
    main()
