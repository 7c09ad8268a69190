// Peak resident set size and CPU time of the running benchmark process, and
// the --max-rss-mb verdict the RSS benchmarks share (their .sh drivers run
// each measurement in a fresh process, so the peak is the measured step's).
#ifndef SLIMPACK_BENCH_PEAK_RSS_H_
#define SLIMPACK_BENCH_PEAK_RSS_H_

namespace slimpack::bench {

struct ProcessUsage {
  long peak_rss_kb = 0;      // getrusage ru_maxrss (KiB on Linux)
  double cpu_seconds = 0.0;  // user + system
};

// getrusage(RUSAGE_SELF) so far.
ProcessUsage ReadProcessUsage();

// The benchmark's exit code: 2 when a limit is set (max_rss_mb > 0) and the
// peak exceeds it, else 0. The drivers treat 2 as "over budget".
int RssLimitExitCode(long peak_rss_kb, long max_rss_mb);

}  // namespace slimpack::bench

#endif  // SLIMPACK_BENCH_PEAK_RSS_H_
