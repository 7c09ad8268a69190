// CHECK for our own invariants only (never for file contents, which are
// validated and returned as a Status). Debian 12's Abseil has no absl/log.
#ifndef SLIMPACK_SUPPORT_CHECK_H_
#define SLIMPACK_SUPPORT_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__,        \
                   __LINE__, #cond);                                     \
      std::abort();                                                      \
    }                                                                    \
  } while (0)

#endif  // SLIMPACK_SUPPORT_CHECK_H_
