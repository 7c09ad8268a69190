// getrusage-based peak RSS for the RSS benchmarks (convert_bench,
// safetensors_import_rss).
#include "bench/peak_rss.h"

#include <sys/resource.h>

namespace slimpack::bench {

ProcessUsage ReadProcessUsage() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  ProcessUsage usage;
  usage.peak_rss_kb = ru.ru_maxrss;
  usage.cpu_seconds = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                      ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  return usage;
}

int RssLimitExitCode(long peak_rss_kb, long max_rss_mb) {
  return max_rss_mb > 0 && peak_rss_kb > max_rss_mb * 1024 ? 2 : 0;
}

}  // namespace slimpack::bench
