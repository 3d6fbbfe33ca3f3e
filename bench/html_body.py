"""HTML body cost: nh3's sanitiser and inscriptis's HTML-to-text against hostile shapes and sizes.

Each case runs in its own child process so its peak resident size is its own; prints, per shape and size,
the HTML's length, the CPU seconds of ``nh3.clean`` (with ``ingress.htmlbody``'s rules) and of
``inscriptis.get_text``, and the growth of the peak resident set (MiB). The figures size
``HTML_BODY_MAX_CHARS`` and ``HTML_NESTING_MAX`` in ``budgets.py`` (docs/performance.md, "HTML bodies").

    PYTHONPATH=src .venv/bin/python bench/html_body.py [SHAPE ...]
"""

from __future__ import annotations

import subprocess
import sys

#: shape -> sizes (repetitions of the shape's unit)
SHAPES: dict[str, tuple[int, ...]] = {
    "paragraphs": (10_000, 50_000, 100_000),
    "table_rows": (10_000, 20_000, 60_000),
    "unclosed_div": (256, 5_000, 20_000, 60_000),
    "unclosed_b": (50_000,),
    "unclosed_li": (50_000,),
}

CHILD = r"""
import json, resource, sys, time
from mailnode.ingress import htmlbody
shape, n = sys.argv[1], int(sys.argv[2])
unit = {"paragraphs": "<p>hello <b>world</b> <a href='https://x.test/'>link</a></p>\n",
        "table_rows": "<tr><td>a</td><td>b</td></tr>", "unclosed_div": "<div>", "unclosed_b": "<b>x",
        "unclosed_li": "<li>x"}[shape]
html = ("<table>" if shape == "table_rows" else "") + unit * n
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.process_time()
htmlbody.sanitise(html, message_id="msg_1", parts_by_cid={}, remote_images=False)
sanitise = time.process_time() - start
start = time.process_time()
htmlbody.to_text(html)
text = time.process_time() - start
growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(json.dumps({"shape": shape, "n": n, "chars": len(html), "sanitise_s": round(sanitise, 3),
                  "to_text_s": round(text, 3), "growth_mib": round(growth, 1)}))
"""


def main(shapes: list[str]) -> None:
    """Run each shape's sizes in a child and print one JSON line per case."""
    for shape in shapes or list(SHAPES):
        for n in SHAPES[shape]:
            out = subprocess.run([sys.executable, "-c", CHILD, shape, str(n)], capture_output=True, text=True,
                                 check=True, timeout=600)
            print(out.stdout.strip())


if __name__ == "__main__":
    main(sys.argv[1:])
