# A hostile target (issue 16): maps DIR/libpython3.11.so.1.0, an ELF file
# that claims four million section headers: a 256 MB file of holes, 8 KB on
# disk.  A reader that believes it allocates for every one.
import mmap
import os
import struct
import sys

path = os.path.join(sys.argv[1], "libpython3.11.so.1.0")
count, shoff = 4000000, 0x1000
with open(path, "wb") as f:
    f.write(b"\x7fELF" + bytes([2, 1, 1]) + bytes(9))
    f.write(struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 64, shoff, 0, 64, 56, 1, 64, 0, 0))
    f.write(struct.pack("<IIQQQQQQ", 1, 4, 0, 0, 0, 0x1000, 0x1000, 0x1000))
    f.seek(shoff)
    # e_shnum 0: the count is section header 0's sh_size
    f.write(struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, count, 0, 0, 0, 0))
    f.truncate(shoff + count * 64)
lib = open(path, "rb")
image = mmap.mmap(lib.fileno(), 4096, prot=mmap.PROT_READ)


def work(n):
    i = 0
    while i < n:
        i += 1


print("ready", flush=True)
work(1 << 62)    # never returns: a dump always finds work() on the stack
