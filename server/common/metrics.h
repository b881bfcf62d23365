// The server's counters and histograms, and their Prometheus text form.
#ifndef TICKWHEEL_SERVER_COMMON_METRICS_H_
#define TICKWHEEL_SERVER_COMMON_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace tickwheel::server {

// A histogram of millisecond values with fixed buckets (0.5 ms .. 60 s).
// Thread safety: Observe from any thread; lock-free.
class MsHistogram {
 public:
  static constexpr std::array<double, 16> kBounds = {
      0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000,
      30000, 60000};
  void Observe(double ms);
  // Appends the Prometheus lines for metric `name` (with `help`).
  void Render(std::string& out, const char* name, const char* help) const;
  // The smallest bucket bound with at least `q` of observations below it
  // (an upper bound on the quantile); +Inf as 1e300.
  double QuantileUpperBound(double q) const;

  // The observations per bucket so far (the last is over the last bound).
  using Buckets = std::array<std::uint64_t, kBounds.size() + 1>;
  Buckets Snapshot() const;
  // The `q` quantile of `buckets` (e.g. the difference of two snapshots),
  // interpolated linearly within its bucket as Prometheus'
  // histogram_quantile does; the last bound past it; 0 for no observation.
  static double Quantile(const Buckets& buckets, double q);

 private:
  std::array<std::atomic<std::uint64_t>, kBounds.size() + 1> buckets_{};
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> sum_us_{0};
};

// Everything /metrics shows. Counters only go up.
struct Metrics {
  std::atomic<std::uint64_t> created{0};
  std::atomic<std::uint64_t> fired{0};  // attempts started
  std::atomic<std::uint64_t> delivered{0};
  std::atomic<std::uint64_t> retried{0};
  std::atomic<std::uint64_t> failed{0};  // became dead letters
  std::atomic<std::uint64_t> cancelled{0};
  std::atomic<std::uint64_t> rescheduled{0};
  // Attempts of timers found `delivering` (in flight when a process stopped).
  std::atomic<std::uint64_t> duplicates_after_recovery{0};
  // Attempts whose request was sent but whose answer never came (timeout,
  // connection lost): the receiver may have processed them.
  std::atomic<std::uint64_t> attempts_unanswered{0};
  std::atomic<std::uint64_t> fenced_writes{0};          // refused: shard not owned
  std::atomic<std::uint64_t> store_write_failures{0};   // claims/outcomes to write again
  std::atomic<std::uint64_t> waiting_for_nats{0};       // NATS timers left pending
  std::atomic<std::uint64_t> http_requests{0};
  std::atomic<std::uint64_t> http_client_errors{0};  // 4xx answered
  std::atomic<std::uint64_t> http_unauthenticated{0};  // 401 answered
  MsHistogram delivery_latency;  // request sent -> response read
  MsHistogram lateness;          // due time -> attempt claimed (wall clock)
  MsHistogram store_write;       // one write (incl. waiting for the fsync)
  std::atomic<std::uint64_t> store_writes{0};     // atomic writes (groups)
  std::atomic<std::uint64_t> store_mutations{0};  // state changes in them

  // Schedules (server/schedule/): occurrences their planning created, that
  // fired (claimed for their first attempt), and that it skipped, by reason.
  std::atomic<std::uint64_t> occurrences_planned{0};
  std::atomic<std::uint64_t> occurrences_fired{0};
  std::atomic<std::uint64_t> occurrences_skipped_overlap{0};
  std::atomic<std::uint64_t> occurrences_skipped_catch_up{0};
  std::atomic<std::uint64_t> occurrences_skipped_dst{0};
  // Planning lag: from a planned occurrence's due time to the write that
  // claimed it and planned the next one.
  MsHistogram planning_lag;

  // Renders everything; `gauges` appends the live gauges (pending, in
  // window, ...) in Prometheus form.
  std::string Render(const std::function<void(std::string&)>& gauges) const;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_COMMON_METRICS_H_
