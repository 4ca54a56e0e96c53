"""Rewrites the entries (*.gstep) of a gacc-run step cache so that their CRC
still matches but their contents are wrong, for step-cache.test:

  step_cache_entry.py garble DIR    every object file's bytes become "junk"
  step_cache_entry.py hugesize DIR  the first object's size reads 2^64 - 1

The format is lib/Runner/StepCache.cpp's: a magic line, sections
"<tag> <size>\\n<bytes>\\n", then "crc <8 hex digits>\\n" over all before.
"""

import glob
import os
import sys
import zlib


def sections(body, pos):
    while pos < len(body):
        newline = body.index(b"\n", pos)
        tag, size = body[pos:newline].split(b" ")
        size = int(size)
        yield tag, body[newline + 1:newline + 1 + size]
        pos = newline + 1 + size + 1


def rewrite(path, mode):
    data = open(path, "rb").read()
    magic_end = data.index(b"\n") + 1
    body = data[:-13]
    out = bytearray(data[:magic_end])
    first = True
    for tag, payload in sections(body, magic_end):
        if tag == b"object" and mode == "garble":
            payload = b"junk"
        if tag == b"object" and mode == "hugesize" and first:
            first = False
            out += b"object 18446744073709551615\n" + payload + b"\n"
            continue
        out += tag + b" " + str(len(payload)).encode() + b"\n" + payload + b"\n"
    out += b"crc %08x\n" % zlib.crc32(bytes(out))
    with open(path, "wb") as f:
        f.write(out)


def main():
    mode, directory = sys.argv[1], sys.argv[2]
    paths = glob.glob(os.path.join(directory, "*.gstep"))
    if not paths:
        sys.exit(f"no *.gstep in {directory}")
    for path in paths:
        rewrite(path, mode)


if __name__ == "__main__":
    main()
