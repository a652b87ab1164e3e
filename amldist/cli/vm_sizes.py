"""``amldist vm-sizes [NAME ...] [--infiniband] [--format text|json]``: the VM size catalog.

``amldist skus`` is the same command (an alias: Azure calls the sizes SKUs too).

Without names it lists the catalog; with names it looks each one up (a size the
catalog lacks is shown as a guess, marked ``?``). Exit 2 when a name is not a VM
size name at all.
"""

from __future__ import annotations

import json
import sys

from amldist.errors import UserError  # loaded by cli.main already

_COLUMNS = ("name", "gpus", "gpu", "gpu mem", "ib", "vcpus", "caveats")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "vm-sizes", aliases=["skus"],
        help="list Azure VM sizes: GPUs, GPU model, InfiniBand",
        description="List the VM size catalog, or look sizes up by name (case-insensitive, "
        "'Standard_' optional; sizes the catalog lacks are guessed from the name).",
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="sizes to look up (default: the whole catalog)")
    parser.add_argument("--infiniband", action="store_true", help="only sizes with InfiniBand usable by NCCL/MPI")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.set_defaults(func=run)


def _row(size) -> tuple[str, ...]:
    return (
        size.name + ("?" if size.guess else ""),
        "?" if size.gpus is None else str(size.gpus),
        size.gpu_model or "-",
        f"{size.gpu_memory_gb} GB" if size.gpu_memory_gb else "-",
        "yes" if size.infiniband else "no",
        "?" if size.vcpus is None else str(size.vcpus),
        "; ".join(size.caveats),
    )


def format_table(sizes) -> str:
    rows = [_COLUMNS, *(_row(s) for s in sizes)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def run(args) -> int:
    from amldist.rules import vm_sizes  # here: every sub-command module is imported to build the parser

    if args.names:
        sizes = []
        for name in args.names:
            size = vm_sizes.lookup(name)
            if size is None:
                raise UserError(
                    f"{name!r} is not an Azure VM size name",
                    hint="sizes look like Standard_NC24rs_v3; run 'amldist vm-sizes' for the catalog",
                )
            sizes.append(size)
    else:
        sizes = vm_sizes.all_sizes()
    if args.infiniband:
        sizes = [s for s in sizes if s.infiniband]
    if args.format == "json":
        json.dump([s.to_dict() for s in sizes], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_table(sizes))
    return 0
