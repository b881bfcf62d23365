// SPDX-License-Identifier: Apache-2.0
#include "store/rocksdb_logger.h"

#include <chrono>
#include <ctime>

namespace tickwheel::server {

void StdioLogger::Logv(const char* format, va_list ap) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                          now.time_since_epoch()).count() % 1000000;
  std::tm tm{};
  localtime_r(&seconds, &tm);
  char stamp[64];
  std::snprintf(stamp, sizeof stamp, "%04d/%02d/%02d-%02d:%02d:%02d.%06lld ",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                tm.tm_sec, static_cast<long long>(micros));
  std::lock_guard lock(mutex_);
  std::fputs(stamp, file_);
  std::vfprintf(file_, format, ap);
  std::fputc('\n', file_);
  std::fflush(file_);  // errors (a full disk) are dropped with the line
}

}  // namespace tickwheel::server
