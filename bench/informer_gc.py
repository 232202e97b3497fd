"""What the cyclic garbage collector costs an informer's first list, and what freezing each page saves.

    python bench/informer_gc.py                     # 50,000 bindings, pages of 500
    python bench/informer_gc.py --bindings 20000

Each mode runs in a fresh interpreter: it decodes N Karmada v1.19-shaped ResourceBindings (the scale benchmark's,
`bench/reconcile_scale.py`, with managedFields as the apiserver returns them) from JSON pages of LIST_PAGE_SIZE and
caches each in the loop's cached form (`controllers/manager.py` CACHED_FORMS), as `controllers/loop/informer.py` does:

- `collector`: Python's collector as it comes, the peer;
- `settled`: `settle_long_lived()` after each page, as the informer does;
- `off`: no collector at all, the floor.

Printed: seconds per mode, and each over the floor. The numbers are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MODES = ("collector", "settled", "off")


def page_json(page_size: int) -> bytes:
    from bench.reconcile_scale import binding, status

    items = []
    for index in range(page_size):
        obj = binding(f"job-{index:05d}", 300)
        obj.update(status("Healthy"))
        obj["metadata"]["resourceVersion"] = str(index)
        obj["metadata"]["managedFields"] = [
            {"manager": manager, "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}
            for manager in ("karmada-controller-manager", "karmada-scheduler", "failover-relay")
        ]
        items.append(obj)
    return json.dumps({"items": items, "metadata": {}}).encode()


def one_mode(mode: str, bindings: int) -> float:
    from controllers.loop.informer import LIST_PAGE_SIZE, settle_long_lived
    from controllers.manager import CACHED_FORMS
    from failover.core.api import RESOURCE_BINDINGS

    transform = CACHED_FORMS[RESOURCE_BINDINGS.kind]
    page = page_json(LIST_PAGE_SIZE)
    if mode == "off":
        gc.disable()
    cache = {}
    started = time.perf_counter()
    for number in range(bindings // LIST_PAGE_SIZE):
        for index, item in enumerate(json.loads(page)["items"]):
            cache[f"{number}/{index}"] = transform(item)
        if mode == "settled":
            settle_long_lived()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bindings", type=int, default=50_000, help="bindings to decode and cache (50000)")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # one mode, in the child interpreter
    args = parser.parse_args(argv)
    if args.bindings < 1:
        print("--bindings must be at least 1", file=sys.stderr)
        return 2
    if args.mode:
        print(json.dumps(one_mode(args.mode, args.bindings)))
        return 0
    seconds = {}
    for mode in MODES:
        child = subprocess.run(
            [sys.executable, __file__, "--bindings", str(args.bindings), "--mode", mode],
            capture_output=True,
            text=True,
            check=True,
        )
        seconds[mode] = json.loads(child.stdout)
    print(f"{args.bindings} bindings decoded and cached in pages, CPython {sys.version.split()[0]}:\n")
    print("| collector | seconds | over no collector |")
    print("|---|---|---|")
    for mode in MODES:
        print(f"| {mode} | {seconds[mode]:.2f} | {seconds[mode] / seconds['off']:.2f}x |")
    print(f"\ncollector / settled: {seconds['collector'] / seconds['settled']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
