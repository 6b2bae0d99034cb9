/*
 * ilk_fs.h — what DistributedLock asks of the file system that Swift's Glibc module does not
 * export.
 *
 *   ilk_fs_type(path, &type)   statfs(2)'s f_type (the file system's magic number, e.g.
 *                              0xEF53 for ext2/3/4, 0x6969 for NFS, 0x65735546 for FUSE) of
 *                              the file system holding `path`. Returns 0, or -1 with errno set.
 *                              Elsewhere than Linux: -1 with errno ENOSYS.
 */
#ifndef ILK_FS_H
#define ILK_FS_H

#include <errno.h>
#include <stdint.h>

#if defined(__linux__)
#include <sys/vfs.h>
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

#endif /* ILK_FS_H */
