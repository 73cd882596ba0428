#!/usr/bin/env python3
"""Bit layouts of the mlx5 firmware interface, computed from the kernel's mlx5_ifc.h.

The interface header describes each command and context as a struct of big-endian bit fields
(`u8 name[width]`, nested structs, unions). This prints where a field sits, so that cx-model and
our drivers can state layouts as checked facts:

  (HEADER is include/linux/mlx5/mlx5_ifc.h of the kernel tree; its siblings are read too)
  ifc_layout.py HEADER cmd_hca_cap log_max_qp          -> bit offset, width, byte/bit position
  ifc_layout.py HEADER query_hca_cap_in --dump         -> every field of a layout
  ifc_layout.py HEADER --size init_hca_in              -> size in bits and bytes
  ifc_layout.py HEADER --verify                        -> compare with reserved_at_<off> names
                                                          (a few are misnamed upstream; a parser
                                                          bug shows as many)
"""

import re
import sys

FIELD = re.compile(r"^\s*(?:u8|(struct|union)\s+mlx5_ifc_(\w+)_bits)\s+(\w+)((?:\[\w+\])*)\s*;")
START = re.compile(r"^(struct|union)\s+mlx5_ifc_(\w+)_bits\s*\{")


CONST = re.compile(r"^\s*(?:#define\s+)?(MLX5_\w+)\s*=?\s*(0x[0-9a-fA-F]+|\d+)\b")


def parse(path):
    types = {}
    consts = {}
    cur = None
    for line in open(path, encoding="utf-8", errors="replace"):
        c = CONST.match(line)
        if c:
            consts[c.group(1)] = int(c.group(2), 0)
        m = START.match(line)
        if m:
            cur = (m.group(2), m.group(1), [])
            continue
        if cur is None:
            continue
        if line.startswith("};"):
            types[cur[0]] = (cur[1], cur[2])
            cur = None
            continue
        f = FIELD.match(line)
        if f:
            kind, sub, name, dims = f.groups()
            count = None
            for d in re.findall(r"\[(\w+)\]", dims):
                try:
                    n = consts[d] if d in consts else int(d, 0)
                except ValueError:
                    n = 0  # a size given by an expression; layouts using it are not sized
                count = n if count is None else count * n
            cur[2].append((name, sub if kind else None, count))
    return types


def size_of(types, name, memo={}):
    if name in memo:
        return memo[name]
    kind, fields = types[name]
    sizes = [field_size(types, f) for f in fields]
    memo[name] = sum(sizes) if kind == "struct" else max(sizes, default=0)
    return memo[name]


def field_size(types, f):
    name, sub, count = f
    if sub is None:
        return count
    return size_of(types, sub) * (count or 1)


def walk(types, name, base=0, prefix=""):
    kind, fields = types[name]
    off = 0
    for f in fields:
        size = field_size(types, f)
        fname, sub, count = f
        yield prefix + fname, base + off, size
        if sub is not None and count is None and not fname.startswith("reserved"):
            yield from walk(types, sub, base + off, prefix + fname + ".")
        if kind == "struct":
            off += size


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    # Some layouts are defined in sibling headers (mlx5_ifc_fpga.h, ...).
    import glob
    import os
    types = {}
    for h in sorted(glob.glob(os.path.join(os.path.dirname(sys.argv[1]), "mlx5_ifc*.h"))):
        types.update(parse(h))
    types.update(parse(sys.argv[1]))
    args = sys.argv[2:]
    if args[0] == "--size":
        bits = size_of(types, args[1])
        print(f"{args[1]}: {bits} bits, {bits // 8} bytes")
        return 0
    if args[0] == "--verify":
        # Reserved fields are named after their offset (reserved_at_<hex>): check every one.
        bad = 0
        for t in types:
            for fname, off, _ in walk(types, t):
                m = re.search(r"(?:^|\.)reserved_at_([0-9a-f]+)$", fname)
                if m and "." not in fname and int(m.group(1), 16) != off:
                    bad += 1
                    print(f"{t}.{fname}: computed {off:#x}")
        print(f"{len(types)} layouts, {bad} reserved-field offsets disagree")
        return 1 if bad else 0
    name = args[0]
    if name not in types:
        print(f"no layout mlx5_ifc_{name}_bits", file=sys.stderr)
        return 1
    fields = list(walk(types, name))
    if len(args) > 1 and args[1] == "--dump":
        for fname, off, size in fields:
            if not fname.split(".")[-1].startswith("reserved"):
                print(f"{off:#07x} {size:#6x}  byte {off // 8:#06x} bit {off % 32:2}  {fname}")
        return 0
    for want in args[1:]:
        hits = [(o, s) for f, o, s in fields if f == want]
        if not hits:
            print(f"{name}: no field {want}", file=sys.stderr)
            return 1
        off, size = hits[0]
        # Position as the C accessors see it: the 32-bit big-endian word, and the shift from its LSB.
        print(f"{name}.{want}: bit {off:#x}, width {size}, dword {off // 32} (byte {off // 32 * 4:#x}), "
              f"shift {32 - (off % 32) - size if size <= 32 else 0}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
