/*
 * ilk_fs.h — what DistributedLock asks of the file system that Swift's Glibc module does not
 * export.
 *
 *   ilk_fs_type(path, &type)   statfs(2)'s f_type (the file system's magic number, e.g.
 *                              0xEF53 for ext2/3/4, 0x6969 for NFS, 0x65735546 for FUSE) of
 *                              the file system holding `path`. Returns 0, or -1 with errno set.
 *                              Elsewhere than Linux: -1 with errno ENOSYS.
 *   ilk_rename_exchange(a, b)  renameat2(2) with RENAME_EXCHANGE (Linux 3.15): atomically
 *                              swaps the entries at a and b, both of which must exist (ENOENT
 *                              otherwise); no instant sees either name empty. Returns 0, or
 *                              -1 with errno set: EINVAL or ENOSYS where the file system or the
 *                              kernel cannot do it (NFS among them), ENOSYS elsewhere than Linux.
 */
#ifndef ILK_FS_H
#define ILK_FS_H

#include <errno.h>
#include <stdint.h>

#if defined(__linux__)
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>
#endif

static inline int ilk_fs_type(const char *path, int64_t *type) {
#if defined(__linux__)
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    *type = (int64_t)info.f_type;
    return 0;
#else
    (void)path;
    (void)type;
    errno = ENOSYS;
    return -1;
#endif
}

static inline int ilk_rename_exchange(const char *a, const char *b) {
#if defined(__linux__) && defined(SYS_renameat2)
    /* RENAME_EXCHANGE is (1 << 1) in <linux/fs.h>; the raw system call avoids glibc >= 2.28. */
    return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 1u << 1);
#else
    (void)a;
    (void)b;
    errno = ENOSYS;
    return -1;
#endif
}

#endif /* ILK_FS_H */
