# SPDX-License-Identifier: MIT
# A process whose /proc/PID/maps is as large as the kernel lets it be:
# COUNT one-page maps of files whose paths are LEN (default 3984)
# characters long, in turn over DISTINCT names (hard links of one file),
# e.g. 60000 maps of one path: a maps file of 243 MB.  NAME_MAX is 255, so
# the path is a chain of 250-character directories under DIR.  Prints
# "ready" once mapped, then sleeps until killed.
#
#   longmaps.py DIR COUNT DISTINCT [LEN]
import ctypes
import os
import sys
import time


def main():
    base, count, distinct = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    path_len = int(sys.argv[4]) if len(sys.argv) > 4 else 3984
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    os.makedirs(base, exist_ok=True)
    dfd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    length = len(os.path.abspath(base))
    # directories of up to 250 characters until the file name fits in 250
    while path_len - length - 1 > 250:
        comp = "d" * min(250, path_len - length - 1 - 1 - 20)
        os.mkdir(comp, dir_fd=dfd)
        nfd = os.open(comp, os.O_RDONLY | os.O_DIRECTORY, dir_fd=dfd)
        os.close(dfd)
        dfd = nfd
        length += len(comp) + 1
    name_len = path_len - length - 1
    names = ["%08d" % i + "f" * (name_len - 8) for i in range(distinct)]
    fd = os.open(names[0], os.O_RDWR | os.O_CREAT, 0o600, dir_fd=dfd)
    os.ftruncate(fd, 4096)
    os.close(fd)
    for n in names[1:]:
        os.link(names[0], n, src_dir_fd=dfd, dst_dir_fd=dfd)
    for i, n in enumerate(names):
        fd = os.open(n, os.O_RDONLY, dir_fd=dfd)
        for _ in range(count // distinct + (i < count % distinct)):
            # MAP_SHARED, PROT_READ: the same page at offset 0 each time,
            # so no two maps merge into one
            if libc.mmap(None, 4096, 1, 1, fd, 0) in (None, ctypes.c_void_p(-1).value):
                sys.exit("mmap: %s" % os.strerror(ctypes.get_errno()))
        os.close(fd)
    os.close(dfd)
    print("ready", flush=True)
    while True:
        time.sleep(1)


main()
