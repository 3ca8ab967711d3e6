/* Opening the files a user names (mtlab/files.h): the kind of file is checked before open(),
 * which would block on a FIFO without a writer, and again on the descriptor. */
#include "mtlab/files.h"
#include "mtlab/error.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a non-regular file is, for "PATH: a FIFO (named pipe), not a regular file". */
static const char *kind_name(mode_t mode)
{
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

static int allowed(const char *path, mode_t mode, int kind)
{
    if (S_ISREG(mode) || (kind == MT_FILE_STREAM && S_ISFIFO(mode))) return 0;
    if (S_ISDIR(mode)) return mt_error("%s: is a directory, not a file", path);
    return mt_error("%s: %s, not a regular file", path, kind_name(mode));
}

int mt_file_check(const char *path, int kind)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return mt_error("%s: %s", path, strerror(errno));
    return allowed(path, sb.st_mode, kind);
}

int mt_file_open(const char *path, int kind)
{
    if (mt_file_check(path, kind)) return -1;
    /* O_NONBLOCK: a FIFO put in the file's place since the check cannot block the open */
    struct stat sb;
    int fd =
        open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | (kind == MT_FILE_STREAM ? 0 : O_NONBLOCK));
    if (fd < 0) return mt_error("%s: %s", path, strerror(errno));
    int rc = fstat(fd, &sb) != 0 ? mt_error("%s: %s", path, strerror(errno))
                                 : allowed(path, sb.st_mode, kind);
    if (rc) {
        close(fd);
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0 && (flags & O_NONBLOCK)) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}

FILE *mt_file_fopen(const char *path, int kind)
{
    int fd = mt_file_open(path, kind);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        mt_error("%s: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

int mt_file_map(const char *path, void **map, size_t *size)
{
    *map = NULL;
    *size = 0;
    int fd = mt_file_open(path, MT_FILE_REGULAR);
    if (fd < 0) return -1;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        mt_error("%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    size_t n = (size_t)sb.st_size;
    if (n > 0) {
        void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            mt_error("%s: cannot map %zu bytes: %s", path, n, strerror(errno));
            close(fd);
            return -1;
        }
        *map = m;
    }
    close(fd);
    *size = n;
    return 0;
}

char *mt_path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = mt_xmalloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}
