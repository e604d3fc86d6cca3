#!/usr/bin/env python3
"""make-ico.py OUT.ico PNG... — a Windows icon file holding the given PNG images as they are.

ICO files may hold PNG-compressed images (Windows Vista and later, and Wine, read them): a 6-byte
header, one 16-byte directory entry per image, then the PNG files. Each PNG's size comes from its
IHDR chunk; a side of 256 is written as 0, as the format says. Used for lorascope.exe's icon
resource (app/CMakeLists.txt) from the PNGs that scripts/render-icons.sh renders.
"""
import struct
import sys


def png_size(data, name):
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        sys.exit(f"make-ico: {name} is not a PNG file")
    width, height = struct.unpack(">II", data[16:24])
    if not (1 <= width <= 256 and 1 <= height <= 256):
        sys.exit(f"make-ico: {name} is {width}x{height}; an icon image is at most 256x256")
    return width, height


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: make-ico.py OUT.ico PNG...")
    images = []
    for name in sys.argv[2:]:
        with open(name, "rb") as f:
            data = f.read()
        images.append((png_size(data, name), data))
    out = bytearray(struct.pack("<HHH", 0, 1, len(images)))
    offset = 6 + 16 * len(images)
    for (width, height), data in images:
        out += struct.pack("<BBBBHHII", width % 256, height % 256, 0, 0, 1, 32, len(data), offset)
        offset += len(data)
    for _, data in images:
        out += data
    with open(sys.argv[1], "wb") as f:
        f.write(out)


if __name__ == "__main__":
    main()
