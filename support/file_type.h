// Names a file's type for errors such as "x.npz: is a FIFO, not a regular
// file". (The standalone loader keeps its own copy: it depends on the C++
// standard library only.)
#ifndef SLIMPACK_SUPPORT_FILE_TYPE_H_
#define SLIMPACK_SUPPORT_FILE_TYPE_H_

#include <sys/types.h>

namespace slimpack::support {

// "a directory", "a symbolic link", "a FIFO", "a character device",
// "a block device", "a socket", else "a special file".
const char* FileTypeName(mode_t mode);

}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_FILE_TYPE_H_
