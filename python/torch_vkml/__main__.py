"""``python -m torch_vkml <command>``: ``doctor`` diagnoses the Vulkan set-up.

(The benchmarks are ``python -m torch_vkml.bench``.)
"""

from __future__ import annotations

import sys

from . import _doctor

COMMANDS = {"doctor": _doctor.main}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        asked = argv[:1] in (["-h"], ["--help"])
        print(
            "usage: python -m torch_vkml doctor [--json] [--no-smoke]\n"
            "  doctor  check the Vulkan loader, drivers and devices, with fixes",
            file=sys.stdout if asked else sys.stderr,
        )
        return 0 if asked else 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
