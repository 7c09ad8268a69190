// The commit slimpack was built from, recorded in every manifest's
// producer.commit so an artifact names the code that made it: "<sha>",
// "<sha>-dirty" (uncommitted changes in the build's checkout) or "unknown"
// (built outside a git checkout). Generated at build time by
// cmake/SourceCommit.cmake.
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_SOURCE_COMMIT_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_SOURCE_COMMIT_H_

namespace slimpack::shard_writer {

const char* SourceCommit();

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_SOURCE_COMMIT_H_
