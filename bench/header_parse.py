"""Header parsing cost: ``policy.default.header_factory`` and ``decode_header`` against hostile sizes.

Each case runs in its own child process so its peak resident size is its own; prints, per shape and size,
the value's length, the CPU seconds of the one call and the growth of the peak resident set (MiB) over the
child's baseline. The figures size the ``PARSE_HEADER_*`` budgets in ``budgets.py`` (docs/performance.md,
"Header parsing").

    .venv/bin/python bench/header_parse.py [SHAPE ...]
"""

from __future__ import annotations

import json
import subprocess
import sys

#: shape -> (function, header name, sizes)
SHAPES: dict[str, tuple[str, str, tuple[int, ...]]] = {
    "subject_encoded_words": ("header_factory", "Subject", (250, 500, 1000, 2000, 4000)),
    "to_encoded_entries": ("header_factory", "To", (250, 500, 1000, 2000, 4000)),
    "to_plain_entries": ("header_factory", "To", (250, 500, 1000, 2000, 4000)),
    "unstructured_plain_kib": ("header_factory", "References", (16, 64, 256, 1024)),
    "decode_header_words": ("decode_header", "Subject", (1000, 5000, 20000, 100000)),
}

CHILD = r"""
import json, resource, sys, time
from email import policy
from email.header import decode_header
shape, n, function, name = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
if shape in ("subject_encoded_words", "decode_header_words"):
    value = " ".join(["=?utf-8?Q?=41=42?="] * n)
elif shape == "to_encoded_entries":
    value = ", ".join(f"=?utf-8?B?QUFB?= <u{i}@x.test>" for i in range(n))
elif shape == "to_plain_entries":
    value = ", ".join(f"u{i}@x.test" for i in range(n))
else:
    value = " ".join(f"<r{i}@x.test>" for i in range(n * 1024 // 13))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.process_time()
if function == "header_factory":
    policy.default.header_factory(name, value)
else:
    decode_header(value)
seconds = time.process_time() - start
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(json.dumps({"chars": len(value), "cpu_s": round(seconds, 3), "rss_growth_mib": round(grown, 1)}))
"""


def main(argv: list[str]) -> None:
    shapes = argv or list(SHAPES)
    for shape in shapes:
        function, name, sizes = SHAPES[shape]
        for n in sizes:
            out = subprocess.run([sys.executable, "-c", CHILD, shape, str(n), function, name],
                                 capture_output=True, text=True, timeout=600, check=True)
            figures = json.loads(out.stdout)
            print(f"{shape:24} n={n:>7} chars={figures['chars']:>9} cpu={figures['cpu_s']:>7.3f}s "
                  f"growth={figures['rss_growth_mib']:>7.1f} MiB", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
