#include "tickwheel/internal/worker_pool.h"

namespace tickwheel::internal {

void ReportCallbackError(const std::function<void(std::exception_ptr)>& on_error,
                         const char* who, std::exception_ptr error) noexcept {
  if (on_error) {
    on_error(error);
    return;
  }
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: callback threw: %s\n", who, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: callback threw a non-exception\n", who);
  }
}

}  // namespace tickwheel::internal
